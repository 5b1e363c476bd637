// The stage list's walks (models/stage_list.h) on stages that only record what they are asked:
// the forward in list order, the backward in reverse with each span reported once and in
// decreasing order, a stage that adds into a later stage's parameters run just before that
// stage's backward (sharing: all), the modes of a two-stage phase (a skipped stage neither runs
// nor adds metric inputs, a frozen one runs its forward and drops its gradients), which
// parameters a list freezes, and a list whose declarations are out of order refused. With a side
// stream (on the CPU: inline), a trained stage whose backward splits runs its own part first and
// its shared part at its place, its reports held until then.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "models/stage_list.h"

using namespace electra;

namespace {

// A stage declaring `params` parameters of 4 elements, logging its calls into `log`.
class Recorder : public UpdateStage {
 public:
  Recorder(ModelBuilder& b, std::string name, int params, std::vector<std::string>& log)
      : name_(std::move(name)), log_(log) {
    begin_span(b);
    for (int i = 0; i < params; ++i) b.param(str_cat(name_, i), {4}, ParamKind::kBias);
    end_span(b);
  }
  void forward(Context&, const Corruption&, ForwardContext&) override {
    log_.push_back("forward " + name_);
  }
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready) override {
    log_.push_back("backward " + name_);
    UpdateStage::backward(ctx, saved, ready);
  }
  void drop_gradients(Context&) override { log_.push_back("drop " + name_); }
  void mean_inputs(const Corruption&, MeanInputs&) const override {
    log_.push_back("mean inputs " + name_);
  }

 protected:
  std::string name_;
  std::vector<std::string>& log_;
};

// A Recorder whose backward splits (UpdateStage::splits_backward): the own part reports the span.
class SplitRecorder : public Recorder {
 public:
  using Recorder::Recorder;
  bool splits_backward() const override { return true; }
  void backward(Context& ctx, const ForwardContext& saved, const GradientsReady& ready) override {
    backward_own(ctx, saved, ready);
    backward_shared(ctx, saved, ready);
  }
  void backward_own(Context& ctx, const ForwardContext&, const GradientsReady& ready) override {
    log_.push_back("own " + name_);
    report(ctx, ready, span());
  }
  void backward_shared(Context&, const ForwardContext&, const GradientsReady&) override {
    log_.push_back("shared " + name_);
  }
};

struct Fixture {
  Fixture()
      : acts(Arena::counting("activations", Device::CPU)), b(weights, acts, {}, Device::CPU) {}
  ModelWeights weights;
  Arena acts;
  ModelBuilder b;
  std::vector<std::string> log;
  std::vector<std::string> spans;
  Context ctx = Context::cpu(1, Precision::F32);
  GradientsReady ready = [this](Context&, ParamSpan s) {
    spans.push_back(std::to_string(s.first) + "-" + std::to_string(s.end));
  };

  // The forward, then the backward with `ready` (and `side`).
  void walk(const StageList& list, SideStream* side = nullptr) {
    const Corruption c;
    ForwardContext saved;
    list.forward(ctx, c, saved);
    list.backward(ctx, saved, ready, side);
  }
};

}  // namespace

TEST_CASE("the backward walks the list in reverse; spans arrive from the end", "[stage_list]") {
  Fixture f;
  Recorder tables(f.b, "tables", 2, f.log), generator(f.b, "generator", 3, f.log),
      discriminator(f.b, "discriminator", 3, f.log);
  const StageList list({{&tables}, {&generator}, {&discriminator}});
  f.walk(list);
  CHECK(f.log == std::vector<std::string>{"forward tables", "forward generator",
                                          "forward discriminator", "backward discriminator",
                                          "backward generator", "backward tables"});
  CHECK(f.spans == std::vector<std::string>{"5-8", "2-5", "0-2"});
}

TEST_CASE("a stage that adds into a later one's parameters runs its backward just before it",
          "[stage_list]") {
  // sharing: all: the discriminator declares the tied encoder, the generator then its head only;
  // the generator forwards first, and its backward must precede the discriminator's.
  Fixture f;
  Recorder tables(f.b, "tables", 1, f.log), discriminator(f.b, "discriminator", 3, f.log),
      generator(f.b, "generator", 1, f.log), adversary(f.b, "adversary", 1, f.log);
  generator.set_adds_into(discriminator);
  const StageList list({{&tables}, {&generator}, {&discriminator}, {&adversary}});
  f.walk(list);
  CHECK(f.log == std::vector<std::string>{"forward tables", "forward generator",
                                          "forward discriminator", "forward adversary",
                                          "backward adversary", "backward generator",
                                          "backward discriminator", "backward tables"});
  CHECK(f.spans == std::vector<std::string>{"5-6", "4-5", "1-4", "0-1"});
}

TEST_CASE("a list declared out of order is refused", "[stage_list]") {
  Fixture f;
  Recorder a(f.b, "a", 1, f.log), b(f.b, "b", 1, f.log);
  CHECK_THROWS_WITH(StageList({{&b}, {&a}}), Catch::Contains("declares its parameters before"));
}

TEST_CASE("a phase's modes: skipped, frozen and trained stages", "[stage_list]") {
  Fixture f;
  Recorder tables(f.b, "tables", 1, f.log), generator(f.b, "generator", 2, f.log),
      discriminator(f.b, "discriminator", 2, f.log);
  SECTION("stage 1: the discriminator is skipped") {
    const StageList list({{&tables}, {&generator}, {&discriminator, StageMode::kSkip}});
    f.walk(list);
    list.mean_inputs(Corruption{}, MeanInputs{});
    CHECK(f.log == std::vector<std::string>{"forward tables", "forward generator",
                                            "backward generator", "backward tables",
                                            "mean inputs tables", "mean inputs generator"});
    CHECK(f.spans == std::vector<std::string>{"3-5", "1-3", "0-1"});
    const std::vector<ParamInfo>& params = f.weights.store.params();
    CHECK(list.frozen(f.weights.store, params[4]));
    CHECK(list.frozen(f.weights.store, params[3]));
    CHECK_FALSE(list.frozen(f.weights.store, params[2]));
    CHECK_FALSE(list.frozen(f.weights.store, params[0]));
  }
  SECTION("stage 2: the tables and the generator are frozen") {
    const StageList list(
        {{&tables, StageMode::kFrozen}, {&generator, StageMode::kFrozen}, {&discriminator}});
    f.walk(list);
    CHECK(f.log == std::vector<std::string>{"forward tables", "forward generator",
                                            "forward discriminator", "backward discriminator",
                                            "drop generator", "drop tables"});
    CHECK(f.spans == std::vector<std::string>{"3-5", "1-3", "0-1"});
    const std::vector<ParamInfo>& params = f.weights.store.params();
    CHECK(list.frozen(f.weights.store, params[0]));
    CHECK(list.frozen(f.weights.store, params[2]));
    CHECK_FALSE(list.frozen(f.weights.store, params[3]));
  }
}

TEST_CASE("without a ready callback the walk reports nothing and still runs", "[stage_list]") {
  Fixture f;
  Recorder tables(f.b, "tables", 1, f.log);
  const StageList list({{&tables}});
  ForwardContext saved;
  list.backward(f.ctx, saved, GradientsReady{});
  CHECK(f.log == std::vector<std::string>{"backward tables"});
  CHECK(f.spans.empty());
}

TEST_CASE("with a side stream a split backward's own part runs first, its shared part in place",
          "[stage_list]") {
  SECTION("trained: split, its report held until its place in the walk") {
    Fixture g;
    Recorder t(g.b, "tables", 1, g.log);
    SplitRecorder gen(g.b, "generator", 2, g.log);
    Recorder disc(g.b, "discriminator", 2, g.log), adv(g.b, "adversary", 1, g.log);
    const StageList list({{&t}, {&gen}, {&disc}, {&adv}});
    SideStream side(g.ctx);
    g.walk(list, &side);
    CHECK(g.log == std::vector<std::string>{
                       "forward tables", "forward generator", "forward discriminator",
                       "forward adversary", "own generator", "backward adversary",
                       "backward discriminator", "shared generator", "backward tables"});
    // The serial walk's order: adversary, discriminator, generator (held), tables.
    CHECK(g.spans == std::vector<std::string>{"5-6", "3-5", "1-3", "0-1"});
  }
  SECTION("without a side stream: its backward, in turn") {
    Fixture g;
    Recorder t(g.b, "tables", 1, g.log);
    SplitRecorder gen(g.b, "generator", 2, g.log);
    Recorder disc(g.b, "discriminator", 2, g.log);
    g.walk(StageList({{&t}, {&gen}, {&disc}}));
    CHECK(g.log == std::vector<std::string>{"forward tables", "forward generator",
                                            "forward discriminator", "backward discriminator",
                                            "own generator", "shared generator",
                                            "backward tables"});
    CHECK(g.spans == std::vector<std::string>{"3-5", "1-3", "0-1"});
  }
  SECTION("frozen: not split (it has no backward)") {
    Fixture g;
    Recorder t(g.b, "tables", 1, g.log);
    SplitRecorder gen(g.b, "generator", 2, g.log);
    Recorder disc(g.b, "discriminator", 2, g.log);
    SideStream side(g.ctx);
    g.walk(StageList({{&t, StageMode::kFrozen}, {&gen, StageMode::kFrozen}, {&disc}}), &side);
    CHECK(g.log == std::vector<std::string>{"forward tables", "forward generator",
                                            "forward discriminator", "backward discriminator",
                                            "drop generator", "drop tables"});
  }
}

TEST_CASE("a refusal between the fork and the join propagates out of a split walk",
          "[stage_list]") {
  // The discriminator's backward throws (as a loss gradient that is unset does); the walk joins
  // the side stream before the exception leaves it (on the CPU the join is a no-op: this checks
  // the control flow; the GPU is where the join matters).
  class Refusing : public Recorder {
   public:
    using Recorder::Recorder;
    void backward(Context&, const ForwardContext&, const GradientsReady&) override {
      throw Error("refused");
    }
  };
  Fixture f;
  Recorder t(f.b, "tables", 1, f.log);
  SplitRecorder gen(f.b, "generator", 2, f.log);
  Refusing disc(f.b, "discriminator", 2, f.log);
  SideStream side(f.ctx);
  CHECK_THROWS_WITH(f.walk(StageList({{&t}, {&gen}, {&disc}}), &side), Catch::Contains("refused"));
  CHECK(f.log == std::vector<std::string>{"forward tables", "forward generator",
                                          "forward discriminator", "own generator"});
  CHECK(f.spans.empty());  // the own part's reports were held, never made
}
