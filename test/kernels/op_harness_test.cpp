// The op harness (test/common/op_case.h) on the CPU, on gelu_cases.cpp's bias_gelu/15x7 and a
// dropout case: its parity run, with the CPU standing in for the GPU in f32, passes for a correct
// op and names the tensor of every kind of failure (a wrong value, an output left unwritten unless
// it is compared only in another dtype's runs, a mask that differs, bits that differ, an f64
// accumulator updated in place whose non-finite elements compare by class, an output the second
// run leaves unwritten) and where in its shape the failure lies (error_locus.h); the f64
// reference reads the inputs as the device does; its gradient check passes for a correct
// backward and fails for a backward that adds twice; its contract check passes gelu and names
// every wrong call that an op's check() lets through.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>

#include "kernels/dropout.h"
#include "kernels/train_metrics.h"
#include "test/common/error_locus.h"
#include "test/common/op_case.h"

using namespace electra;
using namespace electra::test;

namespace {

// A case of test/kernels/gelu_cases.cpp, linked in: bias + GELU at 15 x 7.
OpCase gelu_case() {
  for (const OpCase& c : op_cases()) {
    if (c.name() == "bias_gelu/15x7") return c;
  }
  FAIL("gelu_cases.cpp has no bias_gelu/15x7");
  return {};
}

// An op whose check() looks at shapes only, for the contract check.
struct ShapeChecked {
  static constexpr const char* kName = "shape_checked";
  In x;
  Out y;
  void check() const { check_same_shape(x, y, kName); }
  void cpu(Context&) const {}
  void cuda(Context&) const {}
};

// One failure line naming `tensor`.
void expect_one_failure_naming(const std::vector<std::string>& failures,
                               const std::string& tensor) {
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].rfind(tensor + ":", 0) == 0);
}

}  // namespace

TEST_CASE("the harness's parity run passes for a correct op and names a wrong output",
          "[op_harness]") {
  const OpCase c = gelu_case();
  Context device = Context::cpu(c.seed);
  CHECK(parity(c, DType::F32, device).empty());

  // The reference's y moved by 1e-3 at one element: a normwise error of at least 2e-4 (|y| < 5),
  // 20 times the f32 tolerance.
  OpCase shifted = c;
  shifted.reference = [c](Context& ctx, const Args& a) {
    c.forward(ctx, a);
    c.backward(ctx, a);
    float* y = a["y"].ptr<float>();
    for (int64_t i = 0; i < a["y"].numel(); ++i) y[i] += 1e-3f * (i == 5);
  };
  const std::vector<std::string> failures = parity(shifted, DType::F32, device);
  expect_one_failure_naming(failures, "y");
  // ...and says where: element 5 of the 15 x 7 output.
  CHECK_THAT(failures[0], Catch::Contains("1 of 105 elements") && Catch::Contains("at [0, 5]") &&
                              Catch::Contains("dim 0 (15): 0; dim 1 (7): 5"));
  // In the finer shape a spec asks for (attention's dqkv as [B, T, 3, heads, d]).
  for (TensorSpec& s : shifted.tensors) {
    if (s.name == "y") s = s.located_as({3, 5, 7});
  }
  CHECK_THAT(parity(shifted, DType::F32, device)[0],
             Catch::Contains("at [0, 0, 5]") && Catch::Contains("dim 2 (7): 5"));
  CHECK_THROWS_WITH(output("z", {15, 7}).located_as({4, 7}),
                    Catch::Contains("z's locus shape has 28 elements, not 105"));
}

TEST_CASE("a failure's locus lists the coordinates of its largest errors as ranges",
          "[op_harness]") {
  CHECK(index_ranges({false, true, true, true, false, true}) == "1-3, 5");
  CHECK(index_ranges({false, false}) == "none");
  CHECK(index_ranges({true, false, true, false, true}, 2) == "0, 2 (+1 more ranges)");

  // A [2, 32, 12] output (a dqkv of H = 4) wrong by 1 in rows 8-15 and 24-31 of batch 1's K slice
  // (columns 4-7), by 0.2 (under a quarter of the largest: rounding) at one element elsewhere.
  const std::vector<int64_t> dims = {2, 32, 12};
  std::vector<double> want(2 * 32 * 12, 0.5), got = want;
  for (int64_t row = 0; row < 32; ++row) {
    for (int64_t col = 4; col < 8; ++col) got[(32 + row) * 12 + col] += row % 16 >= 8 ? 1.0 : 0.0;
  }
  got[0] += 0.2;
  CHECK(error_locus(got, got, dims).empty());
  CHECK(error_locus(got, want, dims) ==
        "64 of 768 elements have an error of at least 1/4 of the largest, 1 at [1, 8, 4] "
        "(got 1.5, want 0.5); dim 0 (2): 1; dim 1 (32): 8-15, 24-31; dim 2 (12): 4-7");

  // An unwritten element (NaN poison) outranks every finite error; NaN against NaN is no error.
  got[3 * 12 + 11] = NAN;
  want[5] = got[5] = NAN;
  CHECK(error_locus(got, want, dims) ==
        "1 of 768 elements non-finite on one side only, the first at [0, 3, 11] (got nan, want "
        "0.5); dim 0 (2): 0; dim 1 (32): 3; dim 2 (12): 11");
  // Dims that do not describe the data: flat indices.
  CHECK_THAT(error_locus(got, want, {5}), Catch::Contains("at [47]"));
}

TEST_CASE("the harness's parity run fails an output left unwritten", "[op_harness]") {
  OpCase c = gelu_case();
  Context device = Context::cpu(c.seed);
  // Written by neither side: the reference's is 0, the device's keeps its NaN poison.
  c.tensors.push_back(output("z", {4}));
  expect_one_failure_naming(parity(c, DType::F32, device), "z");
}

TEST_CASE("the harness compares an output only in the parity runs of its dtypes", "[op_harness]") {
  OpCase c = gelu_case();
  Context device = Context::cpu(c.seed);
  // Unwritten, as above, but compared only in bf16 runs: an f32 run passes it over...
  c.tensors.push_back(output("z", {4}).only_in(DType::BF16));
  CHECK(parity(c, DType::F32, device).empty());
  // ...and one listing f32 too compares it.
  c.tensors.back() = c.tensors.back().only_in(DType::F32);
  expect_one_failure_naming(parity(c, DType::F32, device), "z");
}

TEST_CASE("the harness fails an output asked to be nonzero that the inputs leave at 0",
          "[op_harness]") {
  OpCase c = gelu_case();
  Context device = Context::cpu(c.seed);
  c.tensors.push_back(output("z", {4}).nonzero());
  // z is all 0 in the reference and NaN on the device: two failures, both naming z.
  const std::vector<std::string> failures = parity(c, DType::F32, device);
  REQUIRE(failures.size() == 2);
  CHECK_THAT(failures[0], Catch::StartsWith("z:") && Catch::Contains("error"));
  CHECK_THAT(failures[1], Catch::StartsWith("z:") && Catch::Contains("all 0"));
}

TEST_CASE("the harness compares bits and zero patterns where a case asks", "[op_harness]") {
  const int64_t n = 1000;
  auto site = [](const Context& ctx) {
    return DropoutSite{ctx.rng(RngPurpose::kDropout, 1), dropout_site_offset(1), 0.5f};
  };
  OpCase c{
      .op = "dropout",
      .shape = "test",
      .tensors = {input("x", {n}, {.lo = -1, .hi = 1, .away_from_zero = true}),
                  output("y", {n}).bits().zeros_agree()},
      .forward =
          [site](Context& ctx, const Args& a) {
            run_op(ctx, Dropout{.x = a["x"], .site = site(ctx), .y = Out(a["y"])});
          },
  };
  // Seeded as the reference's context: the same dropout streams.
  Context device = Context::cpu(c.seed);
  CHECK(parity(c, DType::F32, device).empty());

  // Another step's mask: different bits and a different zero pattern (two failures).
  OpCase other = c;
  other.reference = [](Context& ctx, const Args& a) {
    const DropoutSite s{ctx.rng(RngPurpose::kDropout, 2), dropout_site_offset(1), 0.5f};
    run_op(ctx, Dropout{.x = a["x"], .site = s, .y = Out(a["y"])});
  };
  const std::vector<std::string> failures = parity(other, DType::F32, device);
  REQUIRE(failures.size() == 2);
  CHECK_THAT(failures[0], Catch::StartsWith("y:") && Catch::Contains("differ"));
  CHECK_THAT(failures[1], Catch::StartsWith("y:") && Catch::Contains("0 on one side"));

  // A last bit of one element: kBits sees it where the normwise tolerance would not.
  OpCase ulp = c;
  ulp.reference = [c](Context& ctx, const Args& a) {
    c.forward(ctx, a);
    float* y = a["y"].ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      if (y[i] != 0) {
        y[i] = std::nextafter(y[i], 2 * y[i]);
        break;
      }
    }
  };
  expect_one_failure_naming(parity(ulp, DType::F32, device), "y");

  // A dropped element (0 on the device) that the reference holds as a value within the
  // comparison's bound of 0 is a kept value that rounded to 0 (its terms cancelled), not a mask
  // difference; one the reference holds as 0.5 is.
  auto nonzero_at_first_drop = [c](double value) {
    return [c, value](Context& ctx, const Args& a) {
      c.forward(ctx, a);
      float* y = a["y"].ptr<float>();
      for (int64_t i = 0; i < n; ++i) {
        if (y[i] == 0) {
          y[i] = static_cast<float>(value);
          break;
        }
      }
    };
  };
  OpCase cancelled = c, dropped = c;
  cancelled.tensors[1] = output("y", {n}).zeros_agree();
  dropped.tensors[1] = output("y", {n}).zeros_agree();
  cancelled.reference = nonzero_at_first_drop(1e-12);
  dropped.reference = nonzero_at_first_drop(0.5);
  CHECK(parity(cancelled, DType::F32, device).empty());
  const std::vector<std::string> moved = parity(dropped, DType::F32, device);
  REQUIRE(moved.size() == 2);
  CHECK_THAT(moved[0], Catch::StartsWith("y:") && Catch::Contains("error"));
  CHECK_THAT(moved[1], Catch::StartsWith("y:") && Catch::Contains("1 elements are 0 on one side"));
}

TEST_CASE("the harness compares an f64 output updated in place, non-finite elements by class",
          "[op_harness]") {
  // accumulate_loss adds a NaN loss term into row 1 of an accumulator that starts from random
  // values, and counts it in row 2; rows 0 and 3 keep their starting values.
  auto record = [](Context& ctx, const Args& a) {
    run_op(ctx, AccumulateLoss{.loss = a["x"],
                               .weight = 1,
                               .count = 1,
                               .total = {.total = 1, .count = kNoRow, .non_finite = 2},
                               .acc = Out(a["acc"])});
  };
  const TensorSpec acc =
      updated("acc", {4}, {.lo = 0.5, .hi = 4}, Kind::kF64).relative({1e-11, 1e-11});
  OpCase c{
      .op = "accumulate_loss",
      .shape = "test",
      .tensors = {input("x", {1}, constant(NAN), Kind::kF32), acc.nonfinite()},
      .forward = record,
      .dtypes = {DType::F32},
  };
  Context device = Context::cpu(c.seed);
  CHECK(parity(c, DType::F32, device).empty());

  // Without nonfinite(), NaN against NaN is an infinite error.
  OpCase strict = c;
  strict.tensors[1] = acc;
  expect_one_failure_naming(parity(strict, DType::F32, device), "acc");

  // A reference with an infinity where the device has NaN, or a finite row 1e-9 off (>= 2.5e-10
  // relative: the rows are < 4): one failure each, naming the tensor.
  for (const double infinite : {1.0, 0.0}) {
    OpCase wrong = c;
    wrong.reference = [record, infinite](Context& ctx, const Args& a) {
      record(ctx, a);
      double* rows = a["acc"].ptr<double>();
      if (infinite != 0) {
        rows[1] = INFINITY;
      } else {
        rows[3] += 1e-9;
      }
    };
    INFO("reference with " << (infinite != 0 ? "an infinity" : "a finite row off"));
    expect_one_failure_naming(parity(wrong, DType::F32, device), "acc");
  }
}

TEST_CASE("the harness's gradient check passes a correct backward and fails one that adds twice",
          "[op_harness]") {
  const OpCase c = gelu_case();
  const std::vector<GradientCheck> checks = gradient_checks(c);
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].input == "x");
  CHECK(checks[1].input == "b");
  for (const GradientCheck& g : checks) {
    INFO(g.input);
    CHECK(g.result.checked == (g.input == "x" ? 15u * 7 : 7u));
    CHECK(g.result.max_relative_error < 1e-6);
  }

  // db added twice: twice the gradient w.r.t. b (dx is written, so it stays right).
  OpCase twice = c;
  twice.backward = [c](Context& ctx, const Args& a) {
    c.backward(ctx, a);
    c.backward(ctx, a);
  };
  const std::vector<GradientCheck> wrong = gradient_checks(twice);
  REQUIRE(wrong.size() == 2);
  CHECK(wrong[0].result.max_relative_error < 1e-6);
  CHECK(wrong[1].result.max_relative_error > 0.5);
}

TEST_CASE("the harness's second run fails an output that run leaves unwritten", "[op_harness]") {
  const OpCase c = gelu_case();
  Context device = Context::cpu(c.seed);
  // The device writes y on its first run only: the second run finds y poisoned again (NaN), which
  // differs from the first run's bits. The reference runs on a context of its own.
  OpCase once = c;
  auto runs = std::make_shared<int>(0);
  once.forward = [c, runs, &device](Context& ctx, const Args& a) {
    if (&ctx != &device || (*runs)++ == 0) c.forward(ctx, a);
  };
  expect_one_failure_naming(parity(once, DType::F32, device), "y");
}

TEST_CASE("the harness's f64 reference reads the inputs as the device does", "[op_harness]") {
  OpCase c = gelu_case();
  c.reference_f64 = true;
  Context device = Context::cpu(c.seed);
  CHECK(parity(c, DType::F32, device).empty());
  // The reference runs in f64 on the inputs rounded to f32, as the device reads them.
  const std::vector<std::vector<double>> values = make_values(c);
  auto checked = std::make_shared<int>(0);
  c.reference = [values, c, checked](Context& ctx, const Args& a) {
    CHECK(a.act() == DType::F64);
    for (const auto& [name, at] : {std::pair{"x", 0}, std::pair{"b", 1}}) {
      const double seen = a[name].ptr<double>()[3];
      CHECK(seen == static_cast<double>(static_cast<float>(values[at][3])));
      CHECK(seen != values[at][3]);
    }
    ++*checked;
    c.forward(ctx, a);
    c.backward(ctx, a);
  };
  CHECK(parity(c, DType::F32, device).empty());
  CHECK(*checked == 1);
}

TEST_CASE("the harness's contract check passes gelu and names the wrong calls a check() accepts",
          "[op_harness]") {
  // bias_gelu/15x7 names 6 tensors besides its workspace (x, b, y, dy, dx, db); each in a longer
  // shape and another dtype.
  const ContractCheck gelu = contract_check(gelu_case());
  CHECK(gelu.tried == 12);
  CHECK(gelu.accepted.empty());

  OpCase c{.op = "shape_checked",
           .shape = "3x4",
           .tensors = {input("x", {3, 4}), output("y", {3, 4})},
           .forward = [](Context& ctx, const Args& a) {
             run_op(ctx, ShapeChecked{.x = a["x"], .y = Out(a["y"])});
           }};
  // Shapes refused, dtypes not: each tensor's f64 twin is accepted.
  ContractCheck check = contract_check(c);
  CHECK(check.tried == 4);
  REQUIRE(check.accepted.size() == 2);
  CHECK(check.accepted[0].rfind("x as f64[3,4]", 0) == 0);
  CHECK(check.accepted[1].rfind("y as f64[3,4]", 0) == 0);
  // A tensor of any shape is tried in another dtype only.
  c.tensors[1] = c.tensors[1].any_shape("for the test");
  check = contract_check(c);
  CHECK(check.tried == 3);
  CHECK(check.accepted.size() == 2);
}
