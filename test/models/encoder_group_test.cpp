// The encoder's weight gradients in groups of layers (models/encoder.h, linear_stack.h): the CPU
// computes the same bits at any group size, every layer is reported ready only once its gradients
// are final, and the fixed parameter stride the batched calls rely on is checked.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "engine/launch_counter.h"
#include "models/linear_stack.h"
#include "test/models/tiny_pretrainer.h"

using namespace electra;

namespace {

// The tiny model with 5 layers (groups of 2 leave a remainder of 1) and dropout on.
ElectraConfig five_layers(int group, Sharing sharing) {
  ElectraConfig c =
      sharing == Sharing::kAll ? test::tiny_tied_config(0.1f) : test::tiny_electra_config(0.1f);
  c.discriminator.layers = 5;
  c.discriminator.weight_grad_group = group;
  return c;
}

struct Reported {
  ParamSpan span;
  std::vector<float> grads;  // the span's gradients when it was reported
};

// Two accumulated micro-steps of the tiny pretrainer; every report records its span's gradients
// as they were when reported (the second micro-step's reports are the final ones).
struct Run {
  std::vector<float> grads;
  std::vector<Reported> reports;
};

Run run(int group, Sharing sharing) {
  Context ctx = Context::cpu(3);
  PretrainOptions options = test::tiny_options();
  options.sharing = sharing;
  ElectraPretrainer model(ctx, five_layers(group, sharing), options);
  model.init_weights(ctx, 1);
  const HostBatch batch = test::tiny_batch();
  const Tensor& g = model.store().flat_grads();
  const auto offset = [&](size_t index) {
    const auto& params = model.store().params();
    return index < params.size() ? params[index].offset : g.numel();
  };
  Run r;
  const GradientsReady ready = [&](Context&, ParamSpan span) {
    const float* p = g.ptr<float>();
    r.reports.push_back(
        Reported{span, std::vector<float>(p + offset(span.first), p + offset(span.end))});
  };
  model.zero_grads(ctx);
  model.step(ctx, batch, 7, 0.5f);
  r.reports.clear();
  model.step(ctx, batch, 8, 0.5f, ready);
  r.grads.assign(g.ptr<float>(), g.ptr<float>() + g.numel());
  // A span reported ready holds its final gradients: nothing writes it afterwards.
  for (const Reported& rep : r.reports) {
    INFO("parameters [" << rep.span.first << ", " << rep.span.end << ")");
    CHECK(std::memcmp(rep.grads.data(), r.grads.data() + offset(rep.span.first),
                      rep.grads.size() * sizeof(float)) == 0);
  }
  return r;
}

}  // namespace

TEST_CASE("the encoder's weight-gradient group changes no bit and no report", "[encoder]") {
  for (const Sharing sharing : {Sharing::kEmbeddings, Sharing::kAll}) {
    const Run all = run(0, sharing);
    CHECK(all.reports.size() > 5);
    for (const int group : {1, 2, 5, 7}) {
      INFO("group " << group << (sharing == Sharing::kAll ? ", sharing: all" : ""));
      const Run other = run(group, sharing);
      REQUIRE(other.grads.size() == all.grads.size());
      CHECK(std::memcmp(other.grads.data(), all.grads.data(), all.grads.size() * sizeof(float)) ==
            0);
      // The same spans in the same order (later with larger groups, never earlier).
      REQUIRE(other.reports.size() == all.reports.size());
      for (size_t i = 0; i < all.reports.size(); ++i) {
        CHECK(other.reports[i].span.first == all.reports[i].span.first);
        CHECK(other.reports[i].span.end == all.reports[i].span.end);
      }
    }
  }
}

// What one micro-step of the 5-layer model launches on a GPU (counted on the CPU).
Launches launches(int group) {
  Context ctx = Context::cpu(1);
  ElectraPretrainer model(ctx, five_layers(group, Sharing::kEmbeddings), test::tiny_options());
  LaunchCounter counter(/*dry_run=*/true);
  const ObserveOps observe(&counter);
  model.step(ctx, test::tiny_batch(), 7);
  return counter.total();
}

TEST_CASE("each group of layers is 4 weight-gradient GEMMs and 1 QKV bias gradient an encoder",
          "[encoder]") {
  // Groups of an encoder of 5 layers: 1 (all), 3 (2, 2, 1), 5 (1 each); two encoders.
  const Launches all = launches(0), pairs = launches(2), single = launches(1);
  CHECK(pairs.library_calls - all.library_calls == 2 * 4 * (3 - 1));
  CHECK(pairs.kernels - all.kernels == 2 * 1 * (3 - 1));
  CHECK(single.library_calls - all.library_calls == 2 * 4 * (5 - 1));
  CHECK(single.kernels - all.kernels == 2 * 1 * (5 - 1));
  CHECK(single.memsets == all.memsets);
}

TEST_CASE("param_stride checks that the layers' parameters are at a fixed stride", "[encoder]") {
  std::vector<float> flat(1000);
  const auto at = [&](int64_t offset) {
    return Tensor::view_of(flat.data() + offset, Device::CPU, {4, 8});
  };
  CHECK(param_stride({at(0), at(100), at(200), at(300)}, "w") == 100);
  CHECK(param_stride({at(0)}, "w") == 0);
  CHECK_THROWS_WITH(param_stride({at(0), at(100), at(250)}, "the QKV projection"),
                    Catch::Contains("internal error: the QKV projection of layer 2") &&
                        Catch::Contains("fixed stride"));
  CHECK_THROWS_WITH(param_stride({at(0), at(16)}, "w"),
                    Catch::Contains("internal error: w of layer 1 is not after layer 0's"));
}
