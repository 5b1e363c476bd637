// The op observer hook of run_op (kernels/dispatch.h, engine/op_observer.h): an observer sees each
// call with the op's declared launches (one kernel when it declares none), FLOPs and bytes (the
// op's tensors when it states none) and the model part; a dry run counts without running; an op
// called inside an observed op belongs to it; zero_tensor is one memset of the current part; and
// the launch counter and the CPU profiler add these up.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/launch_counter.h"
#include "engine/op_profiler.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

// One kernel (no declaration); counts its runs.
struct Plain {
  static constexpr const char* kName = "plain";
  In x;
  Out y;
  int* runs = nullptr;

  void check() const {}
  void cpu(Context& /*ctx*/) const { ++*runs; }
  void cuda(Context& /*ctx*/) const { ++*runs; }
};

// Declares two kernels and a library call, its FLOPs and a label, and runs a Plain inside.
struct Compound {
  static constexpr const char* kName = "compound";
  In x;
  Out y;
  int* runs = nullptr;

  void check() const {}
  Launches launches() const { return {.kernels = 2, .library_calls = 1}; }
  double flops() const { return 1e6; }
  std::string label() const { return "4x1"; }
  void cpu(Context& ctx) const { run_op(ctx, Plain{.x = x, .y = y, .runs = runs}); }
  void cuda(Context& ctx) const { cpu(ctx); }
};

// Records what it sees; runs the ops unless told otherwise.
struct Recorder final : OpObserver {
  bool run = true;
  std::vector<OpCall> calls;
  int after_calls = 0;
  std::vector<std::string> memset_parts;

  bool before(Context&, const OpCall& call) override {
    calls.push_back(call);
    return run;
  }
  void after(Context&, const OpCall&) override { ++after_calls; }
  void memset(size_t) override { memset_parts.emplace_back(current_model_part()); }
};

}  // namespace

TEST_CASE("an observer sees each op call with its declarations and part", "[observer]") {
  Context ctx = Context::cpu();
  std::vector<float> x(4), y(4);
  int runs = 0;
  Recorder recorder;
  {
    const ObserveOps observe(&recorder);
    run_op(ctx, Plain{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
    const ModelPart outer("generator");
    {
      const ModelPart inner("embeddings");
      run_op(ctx, Compound{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
    }
    zero_tensor(ctx.stream(), test::view(y));
  }
  run_op(ctx, Plain{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});  // unobserved

  // The Plain inside Compound ran but was not reported: Compound's declaration covers it.
  CHECK(runs == 3);
  REQUIRE(recorder.calls.size() == 2);
  CHECK(recorder.after_calls == 2);
  const OpCall& plain = recorder.calls[0];
  CHECK(std::string(plain.name) == "plain");
  CHECK(plain.launches == Launches{.kernels = 1});
  CHECK(plain.flops == 0);
  CHECK(plain.bytes == 32);  // x and y, 4 f32 each
  CHECK(std::string(plain.part) == kOtherPart);
  const OpCall& compound = recorder.calls[1];
  CHECK(compound.launches == Launches{.kernels = 2, .library_calls = 1});
  CHECK(compound.flops == 1e6);
  CHECK(compound.label == "4x1");
  CHECK(std::string(compound.part) == "embeddings");
  CHECK(recorder.memset_parts == std::vector<std::string>{"generator"});
  CHECK(op_observer() == nullptr);
  CHECK(std::string(current_model_part()) == kOtherPart);
}

// op_of: an observer reads the op's own fields, and only as the op's type.
TEST_CASE("an observer reads the op of a call as its own type", "[observer]") {
  struct Reader final : OpObserver {
    std::vector<const void*> plain_x;
    int compounds = 0;
    bool before(Context&, const OpCall& call) override {
      if (const Plain* op = op_of<Plain>(call)) plain_x.push_back(op->x.data);
      if (op_of<Compound>(call) != nullptr) ++compounds;
      return true;
    }
    void after(Context&, const OpCall&) override {}
    void memset(size_t) override {}
  };
  Context ctx = Context::cpu();
  std::vector<float> x(4), y(4);
  int runs = 0;
  Reader reader;
  {
    const ObserveOps observe(&reader);
    run_op(ctx, Plain{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
    run_op(ctx, Compound{.x = test::view(y), .y = Out(test::view(x)), .runs = &runs});
  }
  CHECK(reader.plain_x == std::vector<const void*>{x.data()});  // not Compound's Plain
  CHECK(reader.compounds == 1);
}

TEST_CASE("a dry run counts an op without running it", "[observer]") {
  Context ctx = Context::cpu();
  std::vector<float> x(4), y(4);
  int runs = 0;
  Recorder recorder;
  recorder.run = false;
  {
    const ObserveOps observe(&recorder);
    run_op(ctx, Compound{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
  }
  CHECK(runs == 0);
  CHECK(recorder.calls.size() == 1);
  CHECK(recorder.after_calls == 0);
}

TEST_CASE("a GEMM declares one cuBLASLt call and its epilogue kernel", "[observer]") {
  // 16-byte aligned storage: a bias there is fused into cuBLASLt's epilogue.
  alignas(16) float a[8] = {}, b[8] = {}, c[4] = {}, pre[4] = {}, bias[3] = {};
  const Tensor ta = Tensor::view_of(a, Device::CPU, {2, 4});
  const Tensor tb = Tensor::view_of(b, Device::CPU, {2, 4});
  const Tensor tc = Tensor::view_of(c, Device::CPU, {2, 2});
  const Tensor tpre = Tensor::view_of(pre, Device::CPU, {2, 2});
  const Tensor aligned_bias = Tensor::view_of(bias, Device::CPU, {2});
  const Tensor unaligned_bias = Tensor::view_of(bias + 1, Device::CPU, {2});
  Gemm g{
      .a = as_matrix(ta), .b = as_matrix(tb), .c = as_matrix(tc), .trans_b = true, .epilogue = {}};
  CHECK(g.launches() == Launches{.library_calls = 1});
  CHECK(g.flops() == 2 * 2 * 2 * 4);
  CHECK(g.label() == "2x2x4 NT");
  g.epilogue.bias = &aligned_bias;
  CHECK(g.launches() == Launches{.library_calls = 1});
  g.epilogue.bias = &unaligned_bias;
  CHECK(g.launches() == Launches{.kernels = 1, .library_calls = 1});
  g.epilogue.bias = &aligned_bias;
  g.epilogue.gelu_pre = &tpre;
  CHECK(g.launches() == Launches{.kernels = 1, .library_calls = 1});
  CHECK(g.label() == "2x2x4 NT +bias +gelu");
}

TEST_CASE("the launch counter and the profiler add the calls up per part", "[observer]") {
  Context ctx = Context::cpu();
  std::vector<float> x(4), y(4);
  int runs = 0;
  LaunchCounter counter(/*dry_run=*/false);
  OpProfiler profiler(ctx);
  for (OpObserver* observer : std::vector<OpObserver*>{&counter, &profiler}) {
    const ObserveOps observe(observer);
    run_op(ctx, Plain{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
    const ModelPart part("generator");
    for (int i = 0; i < 3; ++i) {
      run_op(ctx, Compound{.x = test::view(x), .y = Out(test::view(y)), .runs = &runs});
    }
    zero_tensor(ctx.stream(), test::view(y));
  }
  profiler.collect();
  CHECK(runs == 8);
  CHECK(counter.part(kOtherPart) == Launches{.kernels = 1});
  CHECK(counter.part("generator") == Launches{.kernels = 6, .library_calls = 3, .memsets = 1});
  CHECK(counter.total().total() == 11);
  REQUIRE(counter.ops().size() == 3);
  CHECK(counter.ops()[1].op == "compound");
  CHECK(counter.ops()[1].calls == 3);
  CHECK(counter.table().find("generator      (all)") != std::string::npos);

  REQUIRE(profiler.rows().size() == 3);
  const OpProfiler::Row& compound = profiler.rows()[1];
  CHECK(compound.op == "compound");
  CHECK(compound.label == "4x1");
  CHECK(compound.calls == 3);
  CHECK(compound.flops == 3e6);
  CHECK(compound.launches == Launches{.kernels = 6, .library_calls = 3});
  CHECK(compound.ms >= 0);
  CHECK(profiler.rows()[2].op == "memset");
  CHECK(profiler.op_ms() >= compound.ms);
  const std::string table = profiler.table(1.0);
  CHECK(table.find("compound") != std::string::npos);
  CHECK(table.find("(outside ops)") != std::string::npos);
}
