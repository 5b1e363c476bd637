// The CPU path gives the same bits at any thread count: whole pre-training updates
// (masking, both models forward and backward with dropout, gradient accumulation, clipping,
// AdamW or LAMB) and whole fine-tuning updates run at 1, 2 and 3 threads, and every parameter,
// every optimizer moment and the metrics are compared bit for bit. The shapes are small but cut
// every parallel kernel into several tasks (GEMM tiles, rows, (batch, head) blocks, column blocks
// of the reductions, optimizer blocks).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/shard.h"
#include "engine/communicator.h"
#include "engine/device.h"
#include "models/finetune_model.h"
#include "models/host_transfer.h"
#include "optim/layerwise_lr.h"
#include "test/common/test_util.h"
#include "train/trainer.h"

using namespace electra;

namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 300, kSeqLen = 64;
const SpecialTokens kTokens{0, 1, 2, 3};

// Two layers, H = 64 (4 heads), E = 32 (projected), generator H = 32, dropout 0.1.
ElectraConfig model_config() {
  ElectraConfig c;
  EncoderConfig& d = c.discriminator;
  d.vocab_size = kVocab;
  d.embedding_size = 32;
  d.hidden = 64;
  d.layers = 2;
  d.heads = 4;
  d.ffn = 128;
  d.max_positions = kSeqLen;
  d.hidden_dropout = 0.1f;
  d.attention_dropout = 0.1f;
  c.generator_multiplier = 0.5;
  return c;
}

// Sequence i: [CLS] words [SEP] words [SEP] then padding; lengths vary.
std::vector<int32_t> sequence(int64_t i) {
  const std::vector<int32_t> words = test::random_ints(kSeqLen, 100 + i, 4, kVocab - 1);
  const int64_t length = kSeqLen - (i * 7) % 20, middle = length / 2;
  std::vector<int32_t> ids(kSeqLen, kTokens.pad);
  for (int64_t t = 0; t < length; ++t) ids[t] = words[t];
  ids[0] = kTokens.cls;
  ids[middle] = kTokens.sep;
  ids[length - 1] = kTokens.sep;
  return ids;
}

// A shard of 16 sequences in a directory of its own.
struct Run {
  fs::path dir;
  std::string shard;

  Run()
      : dir(fs::temp_directory_path() /
            ("electra_thread_determinism_test_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    shard = (dir / "data.bin").string();
    data::ShardHeader h;
    h.seq_len = kSeqLen;
    h.vocab_size = kVocab;
    h.vocab_hash = 0x300;
    h.pad_id = kTokens.pad;
    h.cls_id = kTokens.cls;
    h.sep_id = kTokens.sep;
    h.mask_id = kTokens.mask;
    data::ShardWriter writer(shard, h);
    for (int64_t i = 0; i < 16; ++i) {
      const std::vector<int32_t> ids = sequence(i);
      writer.add(std::vector<uint16_t>(ids.begin(), ids.end()));
    }
    writer.finish();
  }
  ~Run() { fs::remove_all(dir); }

  // 2 micro-batches of 4 per update, clipping on.
  PretrainConfig config(OptimizerKind kind) const {
    PretrainConfig c;
    c.model = model_config();
    c.train.batch_size = 8;
    c.train.micro_batch_size = 4;
    c.train.seq_len = kSeqLen;
    c.train.steps = 10;
    c.train.seed = 11;
    c.train.precision = Precision::F32;
    c.optimizer.schedule.peak = 1e-3;
    c.optimizer.schedule.warmup_steps = 1;
    c.optimizer.schedule.total_steps = c.train.steps;
    c.optimizer.max_grad_norm = 1.0;
    c.optimizer.kind = kind;
    c.log_every = 3;
    c.checkpoint.dir = (dir / "run").string();
    c.train.set_ranks(1);
    return c;
  }
};

// Everything an update changes, as raw bytes.
struct Snapshot {
  std::vector<float> params, moments;
  std::vector<double> metrics;
};

void check_same_bits(const Snapshot& a, const Snapshot& b, int threads) {
  INFO(threads << " threads against 1");
  REQUIRE(a.params.size() == b.params.size());
  REQUIRE(a.moments.size() == b.moments.size());
  REQUIRE(a.metrics.size() == b.metrics.size());
  CHECK(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(a.moments.data(), b.moments.data(), a.moments.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(a.metrics.data(), b.metrics.data(), a.metrics.size() * sizeof(double)) == 0);
}

Snapshot pretrain_updates(const Run& run, int threads, OptimizerKind kind) {
  Context ctx = Context::cpu(3, Precision::F32, threads);
  REQUIRE(ctx.threads() == threads);
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x300, kSeqLen);
  Trainer trainer(ctx, *comm, run.config(kind), kTokens, shards);
  trainer.init_weights();
  Snapshot s;
  for (int update = 0; update < 3; ++update) trainer.update();
  const UpdateReport report = trainer.metrics();
  s.metrics = {report.metrics.total_loss, report.metrics.gen_loss, report.metrics.disc_loss,
               report.grad_norm};
  s.params = download_as<float>(ctx, trainer.model().store().flat_params());
  s.moments = download_as<float>(ctx, trainer.optimizer().m());
  const std::vector<float> v = download_as<float>(ctx, trainer.optimizer().v());
  s.moments.insert(s.moments.end(), v.begin(), v.end());
  return s;
}

FinetuneBatch finetune_batch() {
  FinetuneBatch b;
  for (int64_t i = 0; i < 6; ++i) {
    const std::vector<int32_t> ids = sequence(i);
    b.ids.insert(b.ids.end(), ids.begin(), ids.end());
    const int64_t middle = (kSeqLen - (i * 7) % 20) / 2;
    for (int64_t t = 0; t < kSeqLen; ++t) b.segment_ids.push_back(t > middle ? 1 : 0);
    b.labels.push_back(static_cast<int32_t>(i % 3));
  }
  return b;
}

Snapshot finetune_updates(int threads) {
  Context ctx = Context::cpu(5, Precision::F32, threads);
  FinetuneOptions o;
  o.batch = 6;
  o.seq_len = kSeqLen;
  TaskHeadConfig head;
  head.kind = TaskKind::kClassification;
  head.num_labels = 3;
  head.dropout = 0.1f;
  ElectraFinetuner model(ctx, model_config().discriminator, head, o);
  model.init_weights(ctx, 4);
  OptimizerConfig c;
  c.weight_decay = 0.01;
  c.max_grad_norm = 1.0;
  c.schedule = LrSchedule{ScheduleKind::kLinear, 1e-3, 1, 10};
  Arena state("state", Device::CPU, Optimizer::state_bytes(model.store(), c.kind));
  Optimizer opt(ctx, model.store(), c, state,
                layerwise_lr_multiplier(LayerwiseLrDecay{0.8, 2, false}));
  const FinetuneBatch batch = finetune_batch();
  Snapshot s;
  for (int t = 0; t < 3; ++t) {
    model.zero_grads(ctx);
    model.step(ctx, batch, static_cast<uint32_t>(t));
    opt.step(ctx, t);
  }
  const FinetuneOutputs out = model.forward(ctx, batch);
  s.metrics = {out.loss};
  s.params = download_as<float>(ctx, model.store().flat_params());
  s.moments = download_as<float>(ctx, opt.m());
  const std::vector<float> v = download_as<float>(ctx, opt.v());
  s.moments.insert(s.moments.end(), v.begin(), v.end());
  return s;
}

}  // namespace

TEST_CASE("pre-training updates are bit-identical at 1, 2 and 3 threads", "[threads]") {
  const Run run;
  for (OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kLamb}) {
    INFO((kind == OptimizerKind::kLamb ? "LAMB" : "AdamW"));
    const Snapshot one = pretrain_updates(run, 1, kind);
    CHECK(std::isfinite(one.metrics[0]));
    for (int threads : {2, 3}) check_same_bits(one, pretrain_updates(run, threads, kind), threads);
  }
}

TEST_CASE("fine-tuning updates are bit-identical at 1, 2 and 3 threads", "[threads]") {
  const Snapshot one = finetune_updates(1);
  CHECK(std::isfinite(one.metrics[0]));
  for (int threads : {2, 3}) check_same_bits(one, finetune_updates(threads), threads);
}
