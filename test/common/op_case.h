// One description of an op (an OpCase) that the harness runs in every mode: the f64 gradient
// check against central differences, GPU parity against the CPU reference, and the benchmark
// (after ggml's tests/test-backend-ops.cpp and CTranslate2's tests/ops_test.cc).
//
// A case names its tensors once (shape, dtype kind, role, how inputs are made) and says how to
// run the op on any context from those names:
//
//   OpCase{.op = "layernorm", .shape = "15x7",
//          .tensors = {input("x", {n, h}), param("gamma", {h}, {0.5, 1.5}), ...,
//                      output("y", {n, h}), upstream("dy", "y", {n, h}),
//                      grad("dx", "x", {n, h}), ...},
//          .forward = [](Context& ctx, const Args& a) {
//            run_op(ctx, LayerNormForward{.x = a["x"], ..., .y = Out(a["y"]), ...});
//          },
//          .backward = ...};
//
// The harness allocates every tensor on the mode's device in the mode's dtype (Kind), fills the
// inputs from their seeded Fill, poisons the device's outputs (NaN) so that an unwritten element
// fails, runs forward then backward (a loss has no backward: its forward writes the gradients),
// and compares. Modes:
//   gradcheck (CPU, f64): loss = sum over upstream tensors u of u . output(u), computed with
//     a compensated sum; the backward runs with dy = u; each grad(...) (for grad_acc(...): what
//     the backward added to its random starting values) is compared with central differences of
//     the loss w.r.t. its input.
//   gpu parity (per dtype in `dtypes`): the CPU reference in f32 (f64 for `reference_f64`) on the
//     inputs as the GPU sees them (rounded to bf16 for kAct tensors of a bf16 run) against the GPU
//     in that dtype;
//     accumulated outputs start from the same random values on both; then the device runs again
//     from the same start (written outputs and workspaces poisoned again, so that an element the
//     second run leaves unwritten fails), each op call recorded into a CUDA graph of its own
//     whose kernels and library calls must be what the op declares (launch_capture.h), and
//     `deterministic` cases must give the same bits in both runs.
//   contract (CPU, every case, in the dtypes of an f32 GPU run, or of the gradient check for a
//     case run only there): each tensor the forward or the backward names (workspaces aside),
//     in turn given one more element in its last dim, then another dtype, must make the op's
//     check() throw (an observer keeps anything from running), so that a wrong call
//     never reaches a kernel on either device;
//   bench (bf16 by default): parity first (a failure stops the benchmark), then the median time
//     of the forward and the backward over a working set of copies larger than L2.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/arena.h"
#include "engine/context.h"
#include "engine/tensor.h"
#include "test/common/test_util.h"

namespace electra::test {

// The dtype a tensor gets in each mode: gradcheck / CPU reference / GPU run of dtype D.
enum class Kind {
  kAct,    // activation: f64 / f32 / D (its reference values rounded to D first)
  kParam,  // parameter, its gradient, statistics: f64 / f32 / f32
  kF32,    // f32 in every mode (the op requires f32 even in an f64 gradient check)
  kBF16,   // bf16 in the reference and on the GPU (no gradient check)
  kF64,    // f64 in every mode (a cumulative table, a metrics accumulator)
  kI32,    // integers in every mode
};

enum class Role { kInput, kOutput, kWorkspace };

// How a GPU output is compared with the CPU reference.
enum class Compare {
  kNormwise,  // max |got - want| / max |want| < tol (sums whose terms cancel)
  kRelative,  // elementwise max_relative_error < tol
  kBits,      // got equals the reference rounded to the output's dtype, bit for bit
};

// Seeded input values: uniform in [lo, hi) (integers in [lo, hi] for kI32), optionally pushed
// |x| >= 0.1 max(|lo|, |hi|) away from 0 (test_util.h's random_vector); or `make(n, seed)`.
struct Fill {
  double lo = -1, hi = 1;
  bool away_from_zero = false;
  std::function<std::vector<double>(size_t n, uint64_t seed)> make{};
};

// Fills of given values: every element `v`; exactly `values` (n must be their number).
Fill constant(double v);
Fill fixed(std::vector<double> values);

// Tolerances of a GPU run against the reference, per activation dtype.
struct Tol {
  double f32 = 0, bf16 = 0;
  double of(DType dtype) const { return dtype == DType::BF16 ? bf16 : f32; }
};

struct TensorSpec {
  std::string name{};
  std::vector<int64_t> dims{};
  Kind kind = Kind::kAct;
  Role role = Role::kInput;
  Fill fill{};                // inputs, and the starting values of accumulated outputs
  std::string upstream_of{};  // an input holding dLoss/d(output named here)
  std::string grad_of{};      // an output holding dLoss/d(input named here)
  bool accumulates = false;   // the op adds (+=) into this output
  Compare compare = Compare::kNormwise;
  std::optional<Tol> tol{};      // overrides the case's
  bool same_zeros = false;       // GPU and reference agree on which elements are exactly 0 (except
                                 // where the other side is within the comparison's bound of 0)
  bool bits_in_f32 = false;      // compared bit for bit in an f32 run, by `compare` otherwise
  bool some_nonzero = false;     // the reference has a nonzero element (the inputs exercise it)
  bool nonfinite_agree = false;  // NaN where the reference has NaN, the same infinity where it
                                 // has one; the finite elements compared by `compare`
  // Replaces `compare` where a tensor's parts are judged differently (attention's dQ and dK
  // normwise, dV elementwise): why `got` fails against `want` at tolerance `tol`, empty if not.
  using Check = std::function<std::string(const std::vector<double>& got,
                                          const std::vector<double>& want, double tol)>;
  Check check{};
  // The shape a failure's locus is reported in (error_locus.h), when finer than `dims`: the same
  // elements row-major, e.g. attention's dqkv [B, T, 3H] as [B, T, 3, heads, d], so that a locus
  // names the Q, K or V part and the head. Empty: `dims`.
  std::vector<int64_t> locus_dims{};
  // A workspace the CPU side is given too (workspace(name, dims, kind)).
  bool cpu_workspace = false;
  // The parity runs that compare this output (empty: all): an output the op writes only at some
  // activation dtypes (attention's saved keep bits, bf16 only).
  std::vector<DType> compared_in{};
  // Why the contract check (contract_check) does not try this tensor in a longer shape (an op
  // that takes it in any shape) or in another dtype (the CPU takes f32 and f64 alike): empty,
  // it tries both.
  std::string any_shape_because{}, any_dtype_because{};

  int64_t numel() const;
  TensorSpec with_tol(Tol t) const;
  TensorSpec bits() const;
  TensorSpec relative(Tol t) const;
  TensorSpec zeros_agree() const;
  TensorSpec f32_bits() const;
  TensorSpec nonzero() const;
  TensorSpec nonfinite() const;
  TensorSpec checked(Check fn) const;
  TensorSpec only_in(DType dtype) const;
  TensorSpec located_as(std::vector<int64_t> dims) const;
  bool compared(DType act) const;
  TensorSpec any_shape(std::string why) const;
  TensorSpec any_dtype(std::string why) const;
};

// The spec helpers the cases are written with.
TensorSpec input(std::string name, std::vector<int64_t> dims, Fill fill = {},
                 Kind kind = Kind::kAct);
TensorSpec param(std::string name, std::vector<int64_t> dims, Fill fill = {});
TensorSpec output(std::string name, std::vector<int64_t> dims, Kind kind = Kind::kAct);
// dLoss/d(of): an input of the backward (the gradient check's loss weights).
TensorSpec upstream(std::string name, std::string of, std::vector<int64_t> dims,
                    Kind kind = Kind::kAct, Fill fill = {});
// dLoss/d(of), written (=) by the backward.
TensorSpec grad(std::string name, std::string of, std::vector<int64_t> dims,
                Kind kind = Kind::kAct);
// dLoss/d(of), accumulated (+=) by the backward into random starting values (the gradient check
// takes what was added).
TensorSpec grad_acc(std::string name, std::string of, std::vector<int64_t> dims,
                    Kind kind = Kind::kParam);
// An output the op updates in place (adds to, or reads then rewrites: optimizer state, a metrics
// accumulator): it starts from its Fill on both sides, as an accumulated gradient does.
TensorSpec updated(std::string name, std::vector<int64_t> dims, Fill fill = {},
                   Kind kind = Kind::kParam);
// f32 scratch of the GPU kernels; the CPU reference gets an unset Tensor{} (it ignores it).
TensorSpec workspace(std::string name, int64_t floats);
// A workspace of both sides in the dtype of `kind`, never compared: state whose dtype follows the
// op's dtype on the CPU (attention's probabilities and scratch, f64 in the gradient check).
TensorSpec workspace(std::string name, std::vector<int64_t> dims, Kind kind);

// The tensors of one run by name, and the activation dtype the run emulates (f64 in the gradient
// check, the GPU's dtype in parity runs).
class Args {
 public:
  const Tensor& operator[](std::string_view name) const;
  DType act() const { return act_; }

  void add(std::string name, Tensor t) { named_.emplace_back(std::move(name), t); }
  // The tensor named `name` replaced by t (contract_check's wrong shapes and dtypes).
  void replace(std::string_view name, Tensor t);
  void set_act(DType dtype) { act_ = dtype; }
  // Records the names read through operator[] (the benchmark's ideal traffic), until nullptr.
  void record_reads(std::vector<std::string>* log) const { log_ = log; }

 private:
  std::vector<std::pair<std::string, Tensor>> named_;
  DType act_ = DType::F32;
  mutable std::vector<std::string>* log_ = nullptr;
};

using Run = std::function<void(Context& ctx, const Args& args)>;

enum Mode : unsigned { kGradcheck = 1, kGpu = 2, kBench = 4 };

struct OpCase {
  std::string op{};     // names the tests (<op>/<shape>/<dtype>) and the benchmark's RESULT op
  std::string shape{};  // e.g. "15x7" or "small_16384x256"
  std::vector<TensorSpec> tensors{};
  Run forward{};
  Run backward{};   // optional
  Run reference{};  // optional: the CPU reference of a parity run when it is not forward then
                    // backward (it sees args.act(): the GPU's dtype, or F64 with reference_f64)
  unsigned modes = kGradcheck | kGpu;
  std::vector<DType> dtypes = {DType::F32, DType::BF16};  // of the GPU parity runs
  Tol tol = {1e-5, 2e-2};
  // Why the tolerance is what it is (printed with a failure).
  std::string tol_reason =
      "f32: a few ulps of reordered f32 sums; bf16: the output rounded to "
      "8 bits (2^-9 relative) plus the reference's own f32 rounding";
  uint64_t seed = 1;          // contexts (dropout streams) and inputs
  size_t max_checks = 0;      // gradient check: coordinates per input (0 = all)
  bool deterministic = true;  // a second GPU run gives the same bits
  DType bench_dtype = DType::BF16;
  // The case the benchmark validates before timing, where the benchmark's shape would make the
  // CPU reference take minutes (a few rows of it); default: the case itself.
  std::function<OpCase()> bench_validation{};
  // What the benchmark times as the forward when the forward has a step it must not time
  // (softmax_xent's copy of its logits into the buffer it overwrites); default: forward.
  Run bench_forward{};
  // The benchmark's ideal bytes of the forward (backward = false) or the backward, where they
  // are not every tensor the pass names once (a table read only at the rows its ids touch).
  std::function<double(DType dtype, bool backward)> bench_bytes{};
  // The useful FLOPs of the forward (backward = false) or the backward on the benchmark's tensors,
  // for an op whose roofline is the GEMM rate (attention); default: none (memory-bound).
  std::function<double(const Args& args, bool backward)> bench_flops{};
  // The RESULT op names <bench_op>_fwd / _bwd where another program writes rows to pair with
  // (bench/attention_sdpa_baseline.py); default: <op>_fwd_<dtype> / <op>_bwd_<dtype>.
  std::string bench_op{};
  // Another implementation of the op, timed as the baseline `baseline_impl` (attention's version
  // 1 beside flash): the case this returns is validated by its parity run, then its forward and
  // backward are timed on this case's tensors (it names the same ones); default: none.
  std::string baseline_impl{};
  std::function<OpCase()> baseline_case{};
  // The parity run's CPU reference in f64 on the inputs as the GPU sees them (act() is F64 in
  // it), for tolerances derived against the exact result rather than the f32 reference's.
  bool reference_f64 = false;

  std::string name() const { return op + "/" + shape; }
  const TensorSpec& spec(std::string_view name) const;
};

// The cases of one op: each <op>_cases.cpp defines it, and the harness's executables (gradient
// check, GPU test, benchmark) call it.
std::vector<OpCase> op_cases();

// Host values of a case, one vector per tensor in spec order: inputs and the starting values of
// accumulated outputs from their Fill, seeded by the case and the tensor's position; empty for
// written outputs and workspaces.
std::vector<std::vector<double>> make_values(const OpCase& c);

// One parity run of `c` in `dtype` on `device` against the CPU reference; returns one line per
// failed comparison (empty: passed). The device is a GPU but for the harness's own test
// (op_harness_test.cpp, the CPU against itself in f32).
std::vector<std::string> parity(const OpCase& c, DType dtype, Context& device);
// parity() on CUDA device 0 (a context seeded with the case's seed).
std::vector<std::string> gpu_parity(const OpCase& c, DType dtype);

// The contract check of a case (see above): how many wrong calls it made, and one line per wrong
// call an op accepted (none: passed).
struct ContractCheck {
  int tried = 0;
  std::vector<std::string> accepted;
};
ContractCheck contract_check(const OpCase& c);

// The f64 gradient check of a case, one result per grad(...) tensor: loss = sum over upstream
// tensors u of u . output(u), as a compensated sum with the unperturbed loss subtracted; central
// differences with step kGradcheckStep, over c.max_checks coordinates of the input (0 = all).
inline constexpr double kGradcheckStep = 1e-5;
struct GradientCheck {
  std::string input;
  GradcheckResult result;
};
std::vector<GradientCheck> gradient_checks(const OpCase& c);

// The bytes a GPU run of `c` in `dtype` allocates (every tensor, 256-byte aligned).
size_t device_bytes(const OpCase& c, DType dtype);

// Every tensor of `c` allocated on `arena`'s device in dtype `dtype`: inputs uploaded, written
// outputs and workspaces poisoned, accumulated outputs uploaded from their starting values.
Args bind_device(Context& ctx, Arena& arena, const OpCase& c,
                 const std::vector<std::vector<double>>& values, DType dtype);

// Rounds a CPU f32 tensor in place to what a GPU tensor of dtype `act` holds (bf16: to 8 bits;
// f32, f64: unchanged): for references that store an intermediate in the activation dtype.
void round_to_act(const Tensor& t, DType act);

}  // namespace electra::test
