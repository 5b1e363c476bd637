// What one pre-training update launches on a GPU, counted on the CPU (engine/launch_counter.h):
// the ops' declarations (kernels/op_call.h) added up over a dry run of the Trainer's update, per
// model part. The ELECTRA-Small numbers are pinned exactly, so that a fusion (or a split) changes
// them on purpose: update them with the change, from the table this test prints.
// launch_count_gpu_test checks the declarations against the GPU.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/communicator.h"
#include "engine/launch_counter.h"
#include "engine/op_profiler.h"
#include "engine/timer.h"
#include "models/host_transfer.h"
#include "test/train/small_run.h"
#include "test/train/tiny_run.h"
#include "train/trainer.h"

using namespace electra;

namespace Catch {
template <>
struct StringMaker<Launches> {
  static std::string convert(const Launches& l) {
    return "{kernels " + std::to_string(l.kernels) + ", library calls " +
           std::to_string(l.library_calls) + ", memsets " + std::to_string(l.memsets) + "}";
  }
};
}  // namespace Catch

namespace {

// One update of `trainer` with `observer` installed.
void observed_update(Trainer& trainer, OpObserver* observer) {
  const ObserveOps observe(observer);
  trainer.update();
}

// One dry-run update of `run`'s Trainer on a CPU context of the GPU's precision, counted.
void count_update(const test::SmallRun& run, LaunchCounter& counter) {
  Context ctx = Context::cpu(1, Precision::BF16);
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, test::SmallRun::kVocabHash,
                              static_cast<uint32_t>(run.config.train.seq_len));
  Trainer trainer(ctx, *comm, run.config, SpecialTokens{}, shards);
  observed_update(trainer, &counter);
}

}  // namespace

TEST_CASE("an ELECTRA-Small update (seq 128, batch 128) launches 357 times", "[launches]") {
  const test::SmallRun run("launch_count");
  // The GPU's precision (a CPU run is f32): bf16 activations, so the weights' bf16 compute copy
  // is cast once per micro-batch. Nothing runs, so the CPU never sees a bf16 tensor.
  Context ctx = Context::cpu(1, Precision::BF16);
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, test::SmallRun::kVocabHash,
                              static_cast<uint32_t>(run.config.train.seq_len));
  Trainer trainer(ctx, *comm, run.config, SpecialTokens{}, shards);
  REQUIRE(trainer.local_accumulation() == 1);
  LaunchCounter counter(/*dry_run=*/true);
  const Stopwatch watch;
  observed_update(trainer, &counter);
  std::printf("ELECTRA-Small update, seq 128, batch 128 (counted in %.3f s):\n%s", watch.seconds(),
              counter.table().c_str());

  // Per encoder layer of the discriminator (models/encoder.cpp, self_attention.cpp,
  // feed_forward.cpp, layer_norm.cpp), every linear's bias fused into cuBLASLt's epilogue:
  //   forward   4 GEMMs (QKV, attention output, FFN in, FFN out), flash attention 1, bias-GELU 1,
  //             2 residual LayerNorms 1 each                          = 4 kernels, 4 library calls
  //   backward  4 GEMMs (dx of each), bias-GELU 1, flash attention 1 (its dK dV blocks and dQ
  //             blocks, each computing the D it reads, in one grid), 2 residual LayerNorms 1
  //             each, which also add the bias gradients of the attention output and FFN out
  //             linears                                             = 4 kernels, 4 library calls
  // and once per encoder (models/encoder.h, linear_stack.h: the weight-gradient group is all 12
  // layers by default) the weight gradients of the 4 linears as one strided-batched GEMM each and
  // the QKV bias gradient as one grouped launch                     = 1 kernel, 4 library calls.
  // (A bias gradient, bias-GELU and LayerNorm backward each add their column sums in the launch
  // that writes the partials: kernels/column_sum.cuh.)
  // 16 per layer, 12 layers, + 5: 97 kernels and 100 library calls per encoder.
  // The generator's layers are the same but for two forwards and a backward, each one kernel at
  // its width (H = 64, F = 256): the attention output (output GEMM, residual LayerNorm:
  // kernels/output_layernorm.h) and the FFN block (FFN in GEMM, bias-GELU, FFN out GEMM, residual
  // LayerNorm: kernels/ffn_forward.h; backward residual LayerNorm, FFN out dX GEMM, bias-GELU,
  // FFN in dX GEMM: kernels/ffn_backward.h): forward the QKV GEMM, flash attention 1, the
  // attention output 1, the FFN block 1 = 3 kernels, 1 library call; backward the FFN block 1,
  // the attention output's residual LayerNorm 1 and dX GEMM, flash attention 1, the QKV dX GEMM
  // = 3 kernels, 2 library calls; 9 per layer, 12 layers, + 5: 73 kernels and 40 library calls.
  // Generator MLM head (models/mlm_head.cpp): forward gather, dense GEMM, bias-GELU, LayerNorm,
  // vocabulary GEMM = 3 + 2; backward 2 vocabulary GEMMs, bias gradient 1, LayerNorm 1,
  // bias-GELU 1, 2 dense GEMMs, scatter 1 (writing every row of the encoder's output gradient,
  // 0 where no slot points: no memset before it) = 4 + 4.
  CHECK(counter.part("generator") == Launches{.kernels = 73 + 7, .library_calls = 40 + 6});
  // Discriminator head: forward dense GEMM, bias-GELU, prediction GEMM = 1 + 2; backward 2
  // prediction GEMMs, bias gradient 1, bias-GELU 1, 2 dense GEMMs = 2 + 4.
  CHECK(counter.part("discriminator") == Launches{.kernels = 97 + 3, .library_calls = 100 + 6});
  // Each model's embeddings (models/embeddings.cpp; E = 128 is projected to its width): forward
  // lookup + LayerNorm + dropout 1 (embedding.h: one block of it also sorts the B T = 16384 token
  // keys for the backward), projection GEMM; backward 2 projection GEMMs, bias gradient 1,
  // LayerNorm 1 (with the dropout's backward applied to dy as it reads it), lookup gradient 1 (the
  // run sums on the forward's sorted keys, beside the position and segment sums; one launch per
  // sort tile of up to 32768 tokens): 4 kernels and 3 library calls, twice.
  CHECK(counter.part("embeddings") == Launches{.kernels = 2 * 4, .library_calls = 2 * 3});
  // The gradient norm 1 (its last block adds the blocks' sums, records the norm in the metrics and
  // advances the schedule), AdamW 1.
  CHECK(counter.part("optimizer") == Launches{.kernels = 2});
  // Between the models: next micro-step (which also zeroes the metrics at an update's first
  // micro-batch), masking, the bf16 weights' cast, loss normalisers, softmax-CE with sampling,
  // replacement, the discriminator's loss 1 (its last block adds the counts), metrics; the memset
  // of the gradients.
  CHECK(counter.part(kOtherPart) == Launches{.kernels = 8, .memsets = 1});
  CHECK(counter.total() == Launches{.kernels = 198, .library_calls = 158, .memsets = 1});
  CHECK(counter.total().total() == 357);
}

TEST_CASE("with model.attention flash_ds each layer's backward adds its dQ GEMMs", "[launches]") {
  test::SmallRun run("launch_count_flash_ds");
  run.config.model.discriminator.attention = AttentionImpl::kFlashDsGemm;
  LaunchCounter counter(/*dry_run=*/true);
  count_update(run, counter);
  // The flash backward stays one kernel, and dQ = dS K is min(heads, B) strided-batched GEMMs
  // (kernels/attention.h): 4 a layer in the discriminator (4 heads), 1 in the generator (1 head),
  // over 12 layers each: 357 + 12 (4 + 1).
  CHECK(counter.total() == Launches{.kernels = 198, .library_calls = 158 + 12 * 5, .memsets = 1});
}

TEST_CASE("with model.attention flash_short each layer's attention stays one kernel each way",
          "[launches]") {
  test::SmallRun run("launch_count_flash_short");
  run.config.model.discriminator.attention = AttentionImpl::kFlashShort;
  LaunchCounter counter(/*dry_run=*/true);
  count_update(run, counter);
  // Its forward and one-pass backward (bf16, T <= 128, d = 64: one block per head) or, elsewhere,
  // v2's: one kernel each way either way, so the update launches what the default does.
  CHECK(counter.total() == Launches{.kernels = 198, .library_calls = 158, .memsets = 1});
  CHECK(counter.total().total() == 357);
}

TEST_CASE("with model.fused_layers false the generator's blocks run as separate ops",
          "[launches]") {
  test::SmallRun run("launch_count_unfused_layers");
  run.config.model.discriminator.fused_layers = false;
  LaunchCounter counter(/*dry_run=*/true);
  count_update(run, counter);
  // Per generator layer (H = 64), each fused block's one kernel becomes its ops: the FFN forward
  // two GEMMs, bias-GELU and the residual LayerNorm (+1 kernel, +2 library calls); the attention
  // output a GEMM and the residual LayerNorm (+1 library call); the FFN backward the residual
  // LayerNorm backward, two GEMMs and bias-GELU's backward (+1 kernel, +2 library calls):
  // 357 + 12 (2 + 5).
  CHECK(counter.part("generator") ==
        Launches{.kernels = 73 + 7 + 12 * 2, .library_calls = 40 + 6 + 12 * 5});
  CHECK(counter.total() ==
        Launches{.kernels = 198 + 12 * 2, .library_calls = 158 + 12 * 5, .memsets = 1});
}

TEST_CASE("with train.overlap_generator the update launches the same kernels", "[launches]") {
  test::SmallRun run("launch_count_overlap");
  run.config.train.overlap_generator = true;
  LaunchCounter counter(/*dry_run=*/true);
  count_update(run, counter);
  // The generator's backward moves to a second stream (on the GPU), split in two, no launch added:
  // the fork and the join are events (edges of the captured graph), not launches.
  CHECK(counter.part("generator") == Launches{.kernels = 73 + 7, .library_calls = 40 + 6});
  CHECK(counter.total() == Launches{.kernels = 198, .library_calls = 158, .memsets = 1});
}

TEST_CASE("a dry run counts what a run launches", "[launches]") {
  const test::TinyRun run("launch_count_dry");
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  std::vector<std::string> tables;
  for (const bool dry_run : {false, true}) {
    Context ctx = Context::cpu(3, Precision::F32);
    Trainer trainer(ctx, *comm, run.config(), test::kTinyTokens, shards);
    trainer.init_weights();
    LaunchCounter counter(dry_run);
    observed_update(trainer, &counter);
    CHECK(counter.total().total() > 0);
    tables.push_back(counter.table());
  }
  CHECK(tables[0] == tables[1]);
}

TEST_CASE("observed updates compute the bits unobserved updates compute", "[launches]") {
  const test::TinyRun run("launch_count_bits");
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  std::vector<std::vector<float>> params;
  for (const int observer : {0, 1, 2}) {
    Context ctx = Context::cpu(3, Precision::F32);
    Trainer trainer(ctx, *comm, run.config(), test::kTinyTokens, shards);
    trainer.init_weights();
    LaunchCounter counter(/*dry_run=*/false);
    OpProfiler profiler(ctx);
    OpObserver* const observers[] = {nullptr, &counter, &profiler};
    for (int update = 0; update < 2; ++update) observed_update(trainer, observers[observer]);
    profiler.collect();
    if (observer == 2) CHECK(profiler.op_ms() > 0);
    params.push_back(download_as<float>(ctx, trainer.model().store().flat_params()));
  }
  REQUIRE(params[0].size() == params[1].size());
  CHECK(std::memcmp(params[0].data(), params[1].data(), params[0].size() * sizeof(float)) == 0);
  CHECK(std::memcmp(params[0].data(), params[2].data(), params[0].size() * sizeof(float)) == 0);
}
