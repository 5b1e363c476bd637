// PretrainOptions::overlap_generator (train.overlap_generator): the generator's backward is split
// into its own part, run from the start of the backward walk (on the GPU on a second stream,
// beside the discriminator's backward), and its shared part (the gradients of the embedding
// tables, which the discriminator's backward adds into too), run at the generator's place in the
// walk (models/stage_list.h). On the CPU the own part runs first, in program order, so this checks
// what makes the overlap exact: the own part writes nothing the discriminator's backward writes,
// the shared part keeps every shared sum's terms in the serial order (the same bits), and the
// spans reach GradientsReady in the serial order. For every variant with a generator: sharing
// embeddings (with and without the generator's embedding projection), none, gdes and all (a tied
// generator does not split), adversarial training, electra-15, and two-stage training's phases.
// The GPU's second stream is checked by pretrainer_gpu_test and trainer_graph_gpu_test.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

struct Step {
  std::vector<float> grads;
  std::vector<std::pair<size_t, size_t>> spans;  // as GradientsReady received them
  double loss = 0;
};

// One step of micro-step 7 (dropout 0.1: the backward regenerates the masks) from init seed 1.
Step step(const ElectraConfig& config, PretrainOptions options, bool overlap,
          TrainingPhase phase = TrainingPhase::kJoint) {
  Context ctx = Context::cpu(5);
  options.overlap_generator = overlap;
  ElectraPretrainer model(ctx, config, options);
  model.init_weights(ctx, 1);
  model.set_phase(phase);
  Step s;
  model.zero_grads(ctx);
  model.step(ctx, test::tiny_batch(), 7, 1.0f,
             [&s](Context&, ParamSpan span) { s.spans.emplace_back(span.first, span.end); });
  const Tensor& g = model.store().flat_grads();
  s.grads.assign(g.ptr<float>(), g.ptr<float>() + g.numel());
  s.loss = model.metrics(ctx).total_loss;
  return s;
}

void check_same_step(const ElectraConfig& config, const PretrainOptions& options,
                     TrainingPhase phase = TrainingPhase::kJoint) {
  const Step serial = step(config, options, false, phase);
  const Step overlapped = step(config, options, true, phase);
  CHECK(overlapped.grads == serial.grads);
  CHECK(overlapped.spans == serial.spans);
  CHECK(overlapped.loss == serial.loss);
  // Not a vacuous comparison: the step trained something.
  bool nonzero = false;
  for (const float g : serial.grads) nonzero = nonzero || g != 0.0f;
  CHECK(nonzero);
  CHECK_FALSE(serial.spans.empty());
}

// Every variant with an MLM generator, with the phase its step runs in.
struct Variant {
  const char* name;
  ElectraConfig config;
  PretrainOptions options;
  TrainingPhase phase = TrainingPhase::kJoint;
};

std::vector<Variant> variants() {
  const ElectraConfig tiny = test::tiny_electra_config(0.1f);
  const ElectraConfig tied = test::tiny_tied_config(0.1f);
  ElectraConfig projected = tiny;
  projected.discriminator.embedding_size = 8;  // generator H 16 != E 8: a projection
  const PretrainOptions base = test::tiny_options();
  std::vector<Variant> v;
  v.push_back({"sharing: embeddings, the generator without a projection (its H = E)", tiny, base});
  v.push_back({"sharing: embeddings, the generator with a projection", projected, base});
  v.push_back({"sharing: none", tiny, base});
  v.back().options.sharing = Sharing::kNone;
  v.push_back({"sharing: gdes", tiny, base});
  v.back().options.sharing = Sharing::kGdes;
  v.push_back({"sharing: all (the tied generator does not split)", tied, base});
  v.back().options.sharing = Sharing::kAll;
  v.push_back(
      {"adversarial: the own part reads the policy gradient the forward wrote", tiny, base});
  v.back().options.generator_training = GeneratorTraining::kAdversarial;
  v.push_back({"electra-15", tiny, base});
  v.back().options.objective = Objective::kElectra15;
  v.push_back({"two-stage, the generator phase (the discriminator skipped)", tied, base,
               TrainingPhase::kGenerator});
  v.push_back({"two-stage, the discriminator phase (the generator frozen: nothing to split)", tied,
               base, TrainingPhase::kDiscriminator});
  for (size_t i = v.size() - 2; i < v.size(); ++i) v[i].options.training = Training::kTwoStage;
  return v;
}

}  // namespace

TEST_CASE("overlap_generator: the serial backward's gradient bits and reports", "[pretrainer]") {
  for (const Variant& v : variants()) {
    DYNAMIC_SECTION(v.name) {
      check_same_step(v.config, v.options, v.phase);
    }
  }
}
