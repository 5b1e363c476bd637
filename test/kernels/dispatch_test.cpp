// run_op (kernels/dispatch.h): every tensor among an op's fields (and the fields of its struct
// fields) is checked against the context's device before the op's own check(), without the op
// listing them (kernels/op_fields.h); unset tensors are passed over; check(ctx) is called for the
// ops that take the context.
#include <catch2/catch.hpp>

#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/dropout.h"
#include "kernels/ffn_backward.h"
#include "kernels/ffn_forward.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/output_layernorm.h"
#include "test/common/test_util.h"

using namespace electra;

namespace {

struct ProbeOptions {
  float scale = 1;
  int repeat = 0;
};

// An op whose check() looks at no tensor: only run_op can refuse a tensor on the wrong device.
struct Probe {
  static constexpr const char* kName = "probe";
  In a;
  ProbeOptions options;
  In b;
  float eps = 0;
  Out y;
  Out optional = Out(Tensor{});
  int* runs = nullptr;

  void check() const {}
  void cpu(Context& /*ctx*/) const { ++*runs; }
  void cuda(Context& /*ctx*/) const { ++*runs; }
};

// The same with a check that takes the context.
struct ProbeWithContext {
  static constexpr const char* kName = "probe_with_context";
  In a;
  Out y;
  Device* checked_on = nullptr;

  void check(const Context& ctx) const { *checked_on = ctx.device(); }
  void cpu(Context& /*ctx*/) const {}
  void cuda(Context& /*ctx*/) const {}
};

// As many fields as fields_of binds, the last ones without a default (Out has none): counted
// from kMaxOpFields + 1 down, this op compiles from no smaller count, so a limit one lower would
// not compile (it once counted such an op as 0 fields, and run_op checked none of its tensors).
struct WideProbe {
  static constexpr const char* kName = "wide_probe";
  In a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14;
  int* runs = nullptr;
  Out y;

  void check() const {}
  void cpu(Context& /*ctx*/) const { ++*runs; }
  void cuda(Context& /*ctx*/) const { ++*runs; }
};

static_assert(detail::field_count<WideProbe>() == detail::kMaxOpFields);
static_assert(detail::field_count<Probe>() == 7);
static_assert(detail::field_count<ProbeWithContext>() == 3);
static_assert(detail::field_count<Dropout>() == 3);
static_assert(detail::field_count<AttentionBackward>() == 9);  // the last two have defaults
static_assert(detail::field_count<ResidualLayerNormBackward>() == 12);  // dbias is optional
static_assert(detail::field_count<Gemm>() == 9);
static_assert(detail::field_count<FfnForward>() == 16);
static_assert(detail::field_count<FfnBackward>() == 8);             // the first is an op
static_assert(detail::field_count<OutputLayerNormForward>() == 4);  // the last is an op

}  // namespace

TEST_CASE("fields_of names every field of an op, in order", "[dispatch]") {
  std::vector<float> values(4);
  int runs = 0;
  const Probe op{.a = test::view(values),
                 .options = {},
                 .b = test::view(values),
                 .eps = 1,
                 .y = Out(test::view(values)),
                 .runs = &runs};
  const auto fields = detail::fields_of(op);
  CHECK(&std::get<0>(fields) == &op.a);
  CHECK(&std::get<1>(fields) == &op.options);
  CHECK(&std::get<2>(fields) == &op.b);
  CHECK(&std::get<3>(fields) == &op.eps);
  CHECK(&std::get<4>(fields) == &op.y);
  CHECK(&std::get<5>(fields) == &op.optional);
  CHECK(&std::get<6>(fields) == &op.runs);
}

TEST_CASE("run_op refuses any In or Out that is not on the context's device", "[dispatch]") {
  Context ctx = Context::cpu();
  std::vector<float> values(4);
  const Tensor here = test::view(values);
  const Tensor elsewhere = Tensor::view_of(values.data(), Device::CUDA, {4});
  int runs = 0;
  const Probe ok{.a = here, .options = {}, .b = here, .eps = 1, .y = Out(here), .runs = &runs};
  run_op(ctx, ok);
  CHECK(runs == 1);

  Probe op = ok;
  SECTION("the first input") {
    op.a = elsewhere;
  }
  SECTION("an input after other fields") {
    op.b = elsewhere;
  }
  SECTION("an output") {
    op.y = Out(elsewhere);
  }
  SECTION("an optional output that is set") {
    op.optional = Out(elsewhere);
  }
  CHECK_THROWS_WITH(run_op(ctx, op), Catch::Contains("probe: tensor f32[4]@cuda is not on cpu"));
  CHECK(runs == 1);  // neither check() nor cpu() ran
}

TEST_CASE("run_op checks the last field of an op with kMaxOpFields fields", "[dispatch]") {
  Context ctx = Context::cpu();
  std::vector<float> values(4);
  const In here = test::view(values);
  int runs = 0;
  WideProbe op{here, here, here, here, here, here, here,  here,
               here, here, here, here, here, here, &runs, Out(here)};
  run_op(ctx, op);
  CHECK(runs == 1);
  op.y = Out(Tensor::view_of(values.data(), Device::CUDA, {4}));
  CHECK_THROWS_WITH(run_op(ctx, op),
                    Catch::Contains("wide_probe: tensor f32[4]@cuda is not on cpu"));
  CHECK(runs == 1);
}

TEST_CASE("run_op passes over an unset tensor and calls check(ctx) where an op takes it",
          "[dispatch]") {
  Context ctx = Context::cpu();
  std::vector<float> values(4);
  int runs = 0;
  run_op(ctx, Probe{.a = test::view(values),
                    .options = {},
                    .b = test::view(values),
                    .eps = 1,
                    .y = Out(test::view(values)),
                    .optional = Out(Tensor{}),
                    .runs = &runs});
  CHECK(runs == 1);

  Device checked_on = Device::CUDA;
  run_op(ctx,
         ProbeWithContext{
             .a = test::view(values), .y = Out(test::view(values)), .checked_on = &checked_on});
  CHECK(checked_on == Device::CPU);
}

TEST_CASE("the ops' tensors are checked without their check() naming them", "[dispatch]") {
  Context ctx = Context::cpu();
  std::vector<float> x(8), y(8), gamma(4), stats(2), ws(64);
  const Tensor elsewhere = Tensor::view_of(ws.data(), Device::CUDA, {64});
  const DropoutSite site{ctx.rng(RngPurpose::kDropout, 0), 0, 0.1f};
  CHECK_THROWS_WITH(run_op(ctx, Dropout{.x = Tensor::view_of(x.data(), Device::CUDA, {8}),
                                        .site = site,
                                        .y = Out(test::view(y))}),
                    Catch::Contains("dropout: tensor"));
  // A workspace the CPU ignores, which no check() looked at before run_op checked every field.
  const LayerNormBackward backward{.dy = test::view(y, {2, 4}),
                                   .x = test::view(x, {2, 4}),
                                   .gamma = test::view(gamma),
                                   .mean = test::view(stats),
                                   .rstd = test::view(stats),
                                   .dx = Out(test::view(y, {2, 4})),
                                   .dgamma = Out(test::view(gamma)),
                                   .dbeta = Out(test::view(gamma)),
                                   .workspace = Out(elsewhere)};
  CHECK_THROWS_WITH(run_op(ctx, backward), Catch::Contains("layernorm_backward: tensor"));
  // A tensor inside a struct field: Gemm's matrices.
  const Gemm gemm{.a = as_matrix(test::view(x, {2, 4})),
                  .b = as_matrix(test::view(y, {4, 2})),
                  .c = as_matrix(Tensor::view_of(ws.data(), Device::CUDA, {2, 2})),
                  .epilogue = {}};
  CHECK_THROWS_WITH(run_op(ctx, gemm),
                    Catch::Contains("matmul: tensor f32[2,2]@cuda is not on cpu"));
}
