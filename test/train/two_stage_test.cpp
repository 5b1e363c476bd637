// Two-stage training (training: two-stage, docs/OBJECTIVES.md) on the CPU, tiny: the generator
// stage leaves every discriminator parameter (and its moments) bit-identical with weight decay
// on, and runs no discriminator; the switch copies the generator's encoder exactly; the
// discriminator stage leaves every generator parameter (the shared tables included)
// bit-identical; a run stopped in stage 1,
// at the switch or in stage 2 and resumed from its checkpoint equals the uninterrupted run bit
// for bit. On a GPU (two_stage_gpu_test): the same run replayed from CUDA graphs equals the eager
// run bit for bit in f32 (a stage-1 graph must not be replayed in stage 2).
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/communicator.h"
#include "models/host_transfer.h"
#include "test/train/tiny_run.h"
#include "train/trainer.h"

using namespace electra;

namespace {

constexpr int64_t kGeneratorSteps = 3;
constexpr int64_t kSteps = 6;

// The tiny run with a generator of the discriminator's size (multiplier 1, 1 head, FFN 4 x H)
// and two-stage training: updates 1-3 the generator, 4-6 the discriminator.
PretrainConfig two_stage_config(const test::TinyRun& run) {
  PretrainConfig c = run.config();
  c.model.generator_multiplier = 1.0;
  c.model.discriminator.heads = 1;
  c.model.discriminator.ffn = 4 * c.model.discriminator.hidden;
  c.train.steps = kSteps;
  c.optimizer.schedule.total_steps = kSteps;
  c.training = Training::kTwoStage;
  c.generator_steps = kGeneratorSteps;
  return c;
}

std::vector<float> read(Context& ctx, const Tensor& t) {
  return download_as<float>(ctx, t);
}

}  // namespace

#ifndef ELECTRA_TRAINER_TEST_GPU

namespace {

// Whether every element of `param` is the same in a and b (flat parameter buffers).
bool same(const std::vector<float>& a, const std::vector<float>& b, const ParamInfo& param) {
  return std::memcmp(a.data() + param.offset, b.data() + param.offset,
                     static_cast<size_t>(param.numel) * sizeof(float)) == 0;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("two-stage: stage 1 trains the generator alone, stage 2 the discriminator alone",
          "[two_stage]") {
  const test::TinyRun run("two_stage_freeze");
  Context ctx = Context::cpu(3, Precision::F32);
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  const PretrainConfig config = two_stage_config(run);
  REQUIRE(config.optimizer.weight_decay > 0);
  Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
  trainer.init_weights();
  ElectraPretrainer& model = trainer.model();
  const ParameterStore& store = model.store();
  REQUIRE(model.phase() == TrainingPhase::kGenerator);
  const std::vector<float> init = read(ctx, store.flat_params());

  // Stage 1: the discriminator's parameters (not the shared tables) are frozen; its gradients
  // stay 0 (its backward does not run), its moments 0, its loss is not computed.
  int frozen = 0;
  for (int64_t i = 0; i < kGeneratorSteps; ++i) {
    trainer.update();
    const UpdateReport report = trainer.metrics();
    CHECK(report.metrics.disc_loss == 0);
    CHECK(report.metrics.gen_loss > 0);
    const std::vector<float> grads = read(ctx, store.flat_grads());
    const std::vector<float> zeros(grads.size(), 0.0f);
    const std::vector<float> m = read(ctx, trainer.optimizer().m());
    const std::vector<float> v = read(ctx, trainer.optimizer().v());
    const std::vector<float> now = read(ctx, store.flat_params());
    for (const ParamInfo& p : store.params()) {
      INFO(p.name);
      const bool disc = model.frozen_in(TrainingPhase::kGenerator, p);
      CHECK(disc == (starts_with(p.name, "discriminator/") &&
                     !starts_with(p.name, "discriminator/electra.embeddings.")));
      if (disc) {
        ++frozen;
        CHECK(same(now, init, p));
        CHECK(same(grads, zeros, p));
        CHECK(same(m, zeros, p));
        CHECK(same(v, zeros, p));
      }
    }
  }
  CHECK(frozen > 0);
  // The rest trained (the first update's learning rate is 0: warm-up; the key bias has an
  // exactly zero gradient: softmax is invariant to it).
  const std::vector<float> after_stage1 = read(ctx, store.flat_params());
  for (const ParamInfo& p : store.params()) {
    INFO(p.name);
    if (!model.frozen_in(TrainingPhase::kGenerator, p) &&
        p.name.find("key.bias") == std::string::npos) {
      CHECK_FALSE(same(after_stage1, init, p));
    }
  }

  // Stage 2: the switch copies the generator's encoder over the discriminator's (checked
  // exactly on the pretrainer in "the switch copies ..."); then every generator parameter stays
  // bit-identical and the discriminator trains with its BCE.
  for (int64_t i = kGeneratorSteps; i < kSteps; ++i) {
    trainer.update();
    CHECK(model.phase() == TrainingPhase::kDiscriminator);
    const UpdateReport report = trainer.metrics();
    CHECK(report.metrics.disc_loss > 0);
    const std::vector<float> now = read(ctx, store.flat_params());
    const std::vector<float> grads = read(ctx, store.flat_grads());
    const std::vector<float> zeros(grads.size(), 0.0f);
    for (const ParamInfo& p : store.params()) {
      INFO(p.name);
      const bool gen = model.frozen_in(TrainingPhase::kDiscriminator, p);
      // The generator, its (shared) embedding tables included.
      CHECK(gen == (starts_with(p.name, "generator/") ||
                    starts_with(p.name, "discriminator/electra.embeddings.")));
      if (gen) {
        CHECK(same(now, after_stage1, p));
        CHECK(same(grads, zeros, p));
      } else if (p.name.find("key.bias") == std::string::npos) {
        CHECK_FALSE(same(now, after_stage1, p));
      }
    }
  }
}

TEST_CASE("two-stage: the switch copies the generator's encoder exactly", "[two_stage]") {
  for (const Sharing sharing : {Sharing::kEmbeddings, Sharing::kNone}) {
    INFO("sharing " << sharing_name(sharing));
    Context ctx = Context::cpu(3, Precision::F32);
    ElectraConfig config = test::tiny_electra_config();
    config.generator_multiplier = 1.0;
    config.discriminator.heads = 1;
    config.discriminator.ffn = 4 * config.discriminator.hidden;
    PretrainOptions options = test::tiny_options();
    options.training = Training::kTwoStage;
    options.sharing = sharing;
    ElectraPretrainer model(ctx, config, options);
    model.init_weights(ctx, 3);
    const ParameterStore& store = model.store();
    const std::vector<float> before = read(ctx, store.flat_params());
    model.init_discriminator_from_generator(ctx);
    const std::vector<float> after = read(ctx, store.flat_params());
    int copied = 0;
    for (const ParamInfo& p : store.params()) {
      INFO(p.name);
      if (starts_with(p.name, "generator/electra.")) {
        const ParamInfo& d =
            store.info("discriminator/electra." + p.name.substr(std::strlen("generator/electra.")));
        CHECK(std::memcmp(after.data() + d.offset, before.data() + p.offset,
                          static_cast<size_t>(p.numel) * sizeof(float)) == 0);
        // Random weights differ between the models: the copy changed them (biases and LayerNorm
        // start equal).
        if (d.kind == ParamKind::kWeight) CHECK_FALSE(same(before, after, d));
        ++copied;
      }
    }
    // Every discriminator parameter without a generator namesake (the head) and every generator
    // parameter keeps its value.
    for (const ParamInfo& p : store.params()) {
      const bool target = starts_with(p.name, "discriminator/electra.") &&
                          store.contains("generator/electra." +
                                         p.name.substr(std::strlen("discriminator/electra.")));
      if (!target) CHECK(same(before, after, p));
    }
    // Projection: none (E = 16 != H = 32: one, with the layers); 2 layers x 16 tensors.
    CHECK(copied >= 2 * 16);
    if (sharing == Sharing::kNone) {
      CHECK(store.contains("generator/electra.embeddings.word_embeddings.weight"));
    }
  }
}

TEST_CASE("two-stage: a generator stage runs no discriminator and refuses joint-only use",
          "[two_stage]") {
  Context ctx = Context::cpu(3, Precision::F32);
  ElectraConfig config = test::tiny_electra_config();
  PretrainOptions options = test::tiny_options();
  ElectraPretrainer joint(ctx, config, options);
  CHECK_THROWS_WITH(joint.set_phase(TrainingPhase::kGenerator),
                    Catch::Contains("needs two-stage training"));
  options.training = Training::kTwoStage;
  ElectraPretrainer model(ctx, config, options);
  model.init_weights(ctx, 3);
  model.set_phase(TrainingPhase::kGenerator);
  const HostBatch batch = test::tiny_batch();
  model.zero_grads(ctx);
  model.step(ctx, batch, 0);
  const StepMetrics m = model.metrics(ctx);
  CHECK(m.disc_loss == 0);
  CHECK(m.replaced_fraction == 0);
  CHECK(m.gen_loss > 0);
  // The reported spans still cover every parameter, from the end towards 0 (grad_sync's rule).
  std::vector<ParamSpan> spans;
  model.zero_grads(ctx);
  model.step(ctx, batch, 1, 1.0f, [&](Context&, ParamSpan s) { spans.push_back(s); });
  REQUIRE_FALSE(spans.empty());
  CHECK(spans.front().end == model.store().params().size());
  for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].end == spans[i - 1].first);
  CHECK(spans.back().first == 0);
}

TEST_CASE("two-stage: a run resumed in stage 1, at the switch or in stage 2 is bit-exact",
          "[two_stage]") {
  const test::TinyRun run("two_stage_resume");
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  PretrainConfig config = two_stage_config(run);
  config.checkpoint.every = 0;
  config.checkpoint.keep = 0;
  auto straight = [&]() {
    Context ctx = Context::cpu(3, Precision::F32);
    Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
    trainer.init_weights();
    for (int64_t i = 0; i < kSteps; ++i) trainer.update();
    return read(ctx, trainer.model().store().flat_params());
  };
  const std::vector<float> reference = straight();
  for (const int64_t stop : {int64_t{2}, kGeneratorSteps, int64_t{5}}) {
    INFO("stopped after update " << stop);
    std::string checkpoint;
    {
      Context ctx = Context::cpu(3, Precision::F32);
      Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
      trainer.init_weights();
      for (int64_t i = 0; i < stop; ++i) trainer.update();
      checkpoint = trainer.save(nullptr);
    }
    Context ctx = Context::cpu(3, Precision::F32);
    Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
    trainer.load(checkpoint, read_trainer_state(checkpoint));
    CHECK(trainer.model().phase() ==
          (stop > kGeneratorSteps ? TrainingPhase::kDiscriminator : TrainingPhase::kGenerator));
    for (int64_t i = stop; i < kSteps; ++i) trainer.update();
    CHECK(read(ctx, trainer.model().store().flat_params()) == reference);
  }
}

#else

TEST_CASE("two-stage updates replayed from CUDA graphs equal eager updates", "[two_stage]") {
  const test::TinyRun run("two_stage_gpu");
  std::unique_ptr<Communicator> comm = make_single_communicator();
  const data::ShardSet shards({run.shard}, 0x97, 16);
  auto run_updates = [&](bool graphs) {
    Context ctx = Context::cuda(0, 3, Precision::F32);
    PretrainConfig config = two_stage_config(run);
    config.train.cuda_graph = graphs;
    Trainer trainer(ctx, *comm, config, test::kTinyTokens, shards);
    trainer.init_weights();
    for (int64_t i = 0; i < kSteps; ++i) trainer.update();
    return read(ctx, trainer.model().store().flat_params());
  };
  CHECK(run_updates(true) == run_updates(false));
}

#endif
