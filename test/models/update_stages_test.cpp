// What the stages do on their own (models/update_stage.h), where the whole-update tests
// (pretrainer_test, pretrainer_gradcheck_test, objective_test, adversarial_test,
// generator_variants_test, two_stage_test) cannot single it out: a frozen table stage zeroes
// exactly its own gradients (padding rows included), the unigram stage refuses a forward without
// counts and counts of another vocabulary, and hands on the corruption's samples when it has
// them, and the adversarial stage refuses to run before the generator's loss.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "models/host_transfer.h"
#include "models/tables_stage.h"
#include "models/unigram_stage.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

// Runs `build` twice, planning then binding (models/model_builder.h), and keeps the bound pass.
class TwoPass {
 public:
  using Build = std::function<void(ModelBuilder&, const ParameterStore&)>;
  TwoPass(Context& ctx, const Build& build) {
    const ModelDTypes dtypes = ModelDTypes::for_precision(ctx.precision());
    Arena counting = Arena::counting("activations", ctx.device());
    ModelBuilder planner(weights_, counting, dtypes, ctx.device());
    build(planner, weights_.store);
    arenas_ = std::make_unique<ModelArenas>(
        allocate_model(weights_, dtypes, ctx.device(), counting.high_water()));
    ModelBuilder binder(weights_, arenas_->activations, dtypes, ctx.device());
    build(binder, weights_.store);
  }
  const ParameterStore& store() const { return weights_.store; }

 private:
  ModelWeights weights_;
  std::unique_ptr<ModelArenas> arenas_;
};

}  // namespace

TEST_CASE("a frozen table stage zeroes its own gradients and no others", "[update_stage]") {
  Context ctx = Context::cpu(1, Precision::F32);
  const ElectraConfig config = test::tiny_electra_config();
  std::unique_ptr<TablesStage> first, second;
  const TwoPass built(ctx, [&](ModelBuilder& b, const ParameterStore& store) {
    first = std::make_unique<TablesStage>(b, store, "discriminator/electra.", config.discriminator,
                                          128);
    second = std::make_unique<TablesStage>(b, store, "generator/electra.", config.generator(), 128);
  });
  const Tensor& grads = built.store().flat_grads();
  float* g = grads.ptr<float>();
  std::fill(g, g + grads.numel(), 1.0f);
  first->drop_gradients(ctx);
  // Its span, up to its last parameter's end; the word table's padding rows (vocabulary 97
  // padded to 128) lie inside it.
  const ParamInfo& last = built.store().params()[first->span().end - 1];
  const int64_t end = last.offset + last.padded_numel();
  REQUIRE(first->span().end == second->span().first);
  for (int64_t i = 0; i < grads.numel(); ++i) {
    if (g[i] != (i < end ? 0.0f : 1.0f)) FAIL("gradient element " << i);
  }
  const ParamInfo& word =
      built.store().info("discriminator/electra.embeddings.word_embeddings.weight");
  CHECK(word.padded_rows == 128);
}

TEST_CASE("the unigram stage needs counts of the vocabulary and hands on fixed samples",
          "[update_stage]") {
  Context ctx = Context::cpu(1, Precision::F32);
  std::unique_ptr<UpdateInputs> in;
  std::unique_ptr<UnigramStage> unigram;
  const TwoPass built(ctx, [&](ModelBuilder& b, const ParameterStore&) {
    b.param("other", {1}, ParamKind::kBias);  // a store needs a parameter to be allocated
    in = std::make_unique<UpdateInputs>(b, 2, 8, 2, 11);
    unigram = std::make_unique<UnigramStage>(b, *in);
  });
  Corruption c;
  ForwardContext saved;
  CHECK_THROWS_WITH(unigram->forward(ctx, c, saved), Catch::Contains("without counts"));
  CHECK_THROWS_WITH(unigram->set_counts(ctx, std::vector<uint64_t>(10, 1)),
                    Catch::Contains("10 tokens for a vocabulary of 11"));
  std::vector<uint64_t> counts(11, 0);
  counts[7] = 5;  // every draw is token 7
  unigram->set_counts(ctx, counts);
  unigram->forward(ctx, c, saved);
  CHECK(download_as<int32_t>(ctx, saved.samples) == std::vector<int32_t>(4, 7));
  Arena fixed("fixed samples", Device::CPU, 1024);
  c.samples = fixed.alloc<int32_t>({4});
  unigram->forward(ctx, c, saved);
  CHECK(saved.samples.data == c.samples.data);
  CHECK(unigram->span().empty());
}

TEST_CASE("the adversarial stage refuses to run before the generator's loss", "[update_stage]") {
  // Its reinforce op rewrites the generator's gradient of the logits in place: without the
  // loss that wrote it, the logits themselves would be taken for the gradient.
  Context ctx = Context::cpu(1, Precision::F64);
  PretrainOptions o = test::tiny_options();
  o.generator_training = GeneratorTraining::kAdversarial;
  ElectraPretrainer model(ctx, test::tiny_electra_config(), o);
  model.init_weights(ctx, 5);
  const HostBatch batch = test::tiny_batch();
  test::FixedStep step(ctx, model, batch, test::tiny_corruption(batch));
  step.feed(ctx);
  const Corruption& c = step.corruption();
  ForwardContext saved;
  saved.pass = DropoutPass{model.rng(ctx, RngPurpose::kDropout), true};
  model.generator_forward(ctx, c, saved.pass);
  CHECK_THROWS_WITH(model.adversarial_loss(ctx, c, saved),
                    Catch::Contains("adversarial_loss: backward without a gradient"));
  model.generator_loss(ctx, c, saved);
  model.discriminator_forward(ctx, c, saved.samples, saved.pass);
  model.discriminator_loss(ctx, c, saved);
  CHECK_NOTHROW(model.adversarial_loss(ctx, c, saved));
}
