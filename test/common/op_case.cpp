// The op harness's modes without a test framework: host and device bindings of a case and one GPU
// parity run (op_case.h). The Catch2 side is op_harness.cpp, the benchmark bench/op_bench.cu.
#include "test/common/op_case.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "engine/arena.h"
#include "engine/bf16.h"
#include "engine/device.h"
#include "engine/error.h"
#include "engine/launch_counter.h"
#include "test/common/error_locus.h"
#include "test/common/launch_capture.h"
#include "test/common/test_util.h"

namespace electra::test {

// A tensor on the CPU in the dtype of its kind for a mode, owning its storage.
struct HostTensor {
  std::vector<double> f64;
  std::vector<float> f32;
  std::vector<uint16_t> b16;  // bf16 bits
  std::vector<int32_t> i32;
  Tensor view;
  std::vector<double> to_f64() const;
};

// Every tensor of `c` on the CPU: f64 for the gradient check (act == F64), else the f32
// reference of a GPU run in `act`. Written outputs and workspaces start at 0, accumulated outputs
// at their values.
struct HostRun {
  std::vector<HostTensor> tensors;
  Args args;
};
HostRun bind_host(const OpCase& c, const std::vector<std::vector<double>>& values, DType act);

// dtype of a spec in a GPU run of activation dtype `act`.
DType device_dtype(Kind kind, DType act);

Fill constant(double v) {
  return {.make = [v](size_t n, uint64_t) { return std::vector<double>(n, v); }};
}

Fill fixed(std::vector<double> values) {
  return {.make = [values = std::move(values)](size_t, uint64_t) { return values; }};
}

int64_t TensorSpec::numel() const {
  return shape_elements(dims);
}

TensorSpec TensorSpec::with_tol(Tol t) const {
  TensorSpec s = *this;
  s.tol = t;
  return s;
}

TensorSpec TensorSpec::bits() const {
  TensorSpec s = *this;
  s.compare = Compare::kBits;
  return s;
}

TensorSpec TensorSpec::relative(Tol t) const {
  TensorSpec s = *this;
  s.compare = Compare::kRelative;
  s.tol = t;
  return s;
}

TensorSpec TensorSpec::zeros_agree() const {
  TensorSpec s = *this;
  s.same_zeros = true;
  return s;
}

TensorSpec TensorSpec::f32_bits() const {
  TensorSpec s = *this;
  s.bits_in_f32 = true;
  return s;
}

TensorSpec TensorSpec::nonzero() const {
  TensorSpec s = *this;
  s.some_nonzero = true;
  return s;
}

TensorSpec TensorSpec::nonfinite() const {
  TensorSpec s = *this;
  s.nonfinite_agree = true;
  return s;
}

TensorSpec TensorSpec::checked(Check fn) const {
  TensorSpec s = *this;
  s.check = std::move(fn);
  return s;
}

TensorSpec TensorSpec::only_in(DType dtype) const {
  TensorSpec s = *this;
  s.compared_in.push_back(dtype);
  return s;
}

TensorSpec TensorSpec::located_as(std::vector<int64_t> view) const {
  TensorSpec s = *this;
  s.locus_dims = std::move(view);
  ELECTRA_CHECK(shape_elements(s.locus_dims) == numel(), "op case: ", name, "'s locus shape has ",
                shape_elements(s.locus_dims), " elements, not ", numel());
  return s;
}

bool TensorSpec::compared(DType act) const {
  return role == Role::kOutput &&
         (compared_in.empty() ||
          std::find(compared_in.begin(), compared_in.end(), act) != compared_in.end());
}

TensorSpec TensorSpec::any_dtype(std::string why) const {
  TensorSpec s = *this;
  s.any_dtype_because = std::move(why);
  return s;
}

TensorSpec TensorSpec::any_shape(std::string why) const {
  TensorSpec s = *this;
  s.any_shape_because = std::move(why);
  return s;
}

TensorSpec input(std::string name, std::vector<int64_t> dims, Fill fill, Kind kind) {
  return TensorSpec{
      .name = std::move(name), .dims = std::move(dims), .kind = kind, .fill = std::move(fill)};
}

TensorSpec param(std::string name, std::vector<int64_t> dims, Fill fill) {
  return input(std::move(name), std::move(dims), std::move(fill), Kind::kParam);
}

TensorSpec output(std::string name, std::vector<int64_t> dims, Kind kind) {
  return TensorSpec{
      .name = std::move(name), .dims = std::move(dims), .kind = kind, .role = Role::kOutput};
}

TensorSpec upstream(std::string name, std::string of, std::vector<int64_t> dims, Kind kind,
                    Fill fill) {
  TensorSpec s = input(std::move(name), std::move(dims), std::move(fill), kind);
  s.upstream_of = std::move(of);
  return s;
}

TensorSpec grad(std::string name, std::string of, std::vector<int64_t> dims, Kind kind) {
  TensorSpec s = output(std::move(name), std::move(dims), kind);
  s.grad_of = std::move(of);
  return s;
}

TensorSpec grad_acc(std::string name, std::string of, std::vector<int64_t> dims, Kind kind) {
  TensorSpec s = grad(std::move(name), std::move(of), std::move(dims), kind);
  s.accumulates = true;
  return s;
}

TensorSpec updated(std::string name, std::vector<int64_t> dims, Fill fill, Kind kind) {
  TensorSpec s = input(std::move(name), std::move(dims), std::move(fill), kind);
  s.role = Role::kOutput;
  s.accumulates = true;
  return s;
}

TensorSpec workspace(std::string name, int64_t floats) {
  return TensorSpec{
      .name = std::move(name), .dims = {floats}, .kind = Kind::kF32, .role = Role::kWorkspace};
}

TensorSpec workspace(std::string name, std::vector<int64_t> dims, Kind kind) {
  return TensorSpec{.name = std::move(name),
                    .dims = std::move(dims),
                    .kind = kind,
                    .role = Role::kWorkspace,
                    .cpu_workspace = true};
}

const Tensor& Args::operator[](std::string_view name) const {
  for (const auto& [n, t] : named_) {
    if (n == name) {
      if (log_ != nullptr) log_->emplace_back(n);
      return t;
    }
  }
  throw Error(str_cat("op case: no tensor named '", name, "'"));
}

void Args::replace(std::string_view name, Tensor t) {
  for (auto& [n, held] : named_) {
    if (n == name) {
      held = t;
      return;
    }
  }
  throw Error(str_cat("op case: no tensor named '", name, "'"));
}

std::vector<std::vector<double>> make_values(const OpCase& c) {
  std::vector<std::vector<double>> values(c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorSpec& s = c.tensors[i];
    if (s.role == Role::kWorkspace || (s.role == Role::kOutput && !s.accumulates)) continue;
    const size_t n = static_cast<size_t>(s.numel());
    const uint64_t seed = c.seed * 1000 + i;
    if (s.fill.make) {
      values[i] = s.fill.make(n, seed);
      ELECTRA_CHECK(values[i].size() == n, "op case ", c.name(), ": fill of ", s.name, " made ",
                    values[i].size(), " values for ", n);
    } else if (s.kind == Kind::kI32) {
      const std::vector<int32_t> ints =
          random_ints(n, seed, static_cast<int32_t>(s.fill.lo), static_cast<int32_t>(s.fill.hi));
      values[i].assign(ints.begin(), ints.end());
    } else {
      values[i] = random_vector<double>(n, seed, s.fill.lo, s.fill.hi, s.fill.away_from_zero);
    }
  }
  return values;
}

DType device_dtype(Kind kind, DType act) {
  switch (kind) {
    case Kind::kAct:
      return act;
    case Kind::kParam:
      return act == DType::F64 ? DType::F64 : DType::F32;
    case Kind::kF32:
      return DType::F32;
    case Kind::kBF16:
      return DType::BF16;
    case Kind::kF64:
      return DType::F64;
    case Kind::kI32:
      return DType::I32;
  }
  return DType::F32;
}

namespace {

Tensor shaped(void* data, DType dtype, Device device, const std::vector<int64_t>& dims) {
  ELECTRA_CHECK(dims.size() <= static_cast<size_t>(kMaxRank), "op case: rank ", dims.size());
  Tensor t{.data = data, .dtype = dtype, .device = device, .rank = static_cast<int>(dims.size())};
  for (size_t i = 0; i < dims.size(); ++i) t.shape[i] = dims[i];
  return t;
}

float rounded_to(double v, DType dtype) {
  const float f = static_cast<float>(v);
  return dtype == DType::BF16 ? bf16_to_float(float_to_bf16(f)) : f;
}

// The values as the CPU reference of a GPU run in `act` stores them.
HostTensor host_tensor(const TensorSpec& s, const std::vector<double>& v, DType act) {
  HostTensor h;
  const size_t n = static_cast<size_t>(s.numel());
  const bool have = !v.empty();
  const DType stored = device_dtype(s.kind, act);
  void* data = nullptr;
  if (stored == DType::F64) {
    h.f64 = have ? v : std::vector<double>(n, 0.0);
    data = h.f64.data();
  } else if (stored == DType::I32) {
    h.i32.resize(n, 0);
    for (size_t i = 0; have && i < n; ++i) h.i32[i] = static_cast<int32_t>(v[i]);
    data = h.i32.data();
  } else if (s.kind == Kind::kBF16) {
    h.b16.resize(n, 0);
    for (size_t i = 0; have && i < n; ++i) h.b16[i] = float_to_bf16(static_cast<float>(v[i])).bits;
    data = h.b16.data();
  } else {
    // f32 reference storage; an activation of a bf16 run holds what the GPU reads.
    h.f32.resize(n, 0.0f);
    const DType seen = s.kind == Kind::kAct ? act : DType::F32;
    for (size_t i = 0; have && i < n; ++i) h.f32[i] = rounded_to(v[i], seen);
    data = h.f32.data();
  }
  const DType view_dtype = s.kind == Kind::kBF16  ? DType::BF16
                           : stored == DType::F64 ? DType::F64
                           : stored == DType::I32 ? DType::I32
                                                  : DType::F32;
  h.view = shaped(data, view_dtype, Device::CPU, s.dims);
  return h;
}

std::vector<double> widen(const Tensor& t, const std::vector<float>& f32,
                          const std::vector<uint16_t>& b16, const std::vector<int32_t>& i32,
                          const std::vector<double>& f64) {
  switch (t.dtype) {
    case DType::F64:
      return f64;
    case DType::F32:
      return {f32.begin(), f32.end()};
    case DType::I32:
      return {i32.begin(), i32.end()};
    case DType::BF16: {
      std::vector<double> out(b16.size());
      for (size_t i = 0; i < b16.size(); ++i) out[i] = bf16_to_float(bf16{b16[i]});
      return out;
    }
    default:
      throw Error(str_cat("op case: no host storage for ", dtype_name(t.dtype)));
  }
}

size_t aligned(size_t bytes) {
  return (bytes + Arena::kAlignment - 1) / Arena::kAlignment * Arena::kAlignment;
}

// A device tensor's contents widened to double.
std::vector<double> download_f64(Context& ctx, const Tensor& t) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> f32;
  std::vector<uint16_t> b16;
  std::vector<int32_t> i32;
  std::vector<double> f64;
  void* host = nullptr;
  if (t.dtype == DType::F64) {
    f64.resize(n);
    host = f64.data();
  } else if (t.dtype == DType::F32) {
    f32.resize(n);
    host = f32.data();
  } else if (t.dtype == DType::BF16) {
    b16.resize(n);
    host = b16.data();
  } else {
    ELECTRA_CHECK(t.dtype == DType::I32, "op case: cannot download ", t.str());
    i32.resize(n);
    host = i32.data();
  }
  copy_tensor(ctx.stream(), shaped(host, t.dtype, Device::CPU, {t.numel()}),
              shaped(t.data, t.dtype, t.device, {t.numel()}));
  return widen(t, f32, b16, i32, f64);
}

// The reference value as the GPU's output dtype holds it.
double as_stored(double v, DType dtype) {
  if (dtype == DType::I32 || dtype == DType::F64 || std::isnan(v)) return v;
  return rounded_to(v, dtype);
}

std::string compare(const OpCase& c, const TensorSpec& s, DType act, const std::vector<double>& got,
                    const std::vector<double>& want, DType stored) {
  std::ostringstream fail;
  fail << s.name << ": ";
  const double tol = (s.tol ? *s.tol : c.tol).of(act);
  if (s.check) {
    const std::string why = s.check(got, want, tol);
    if (why.empty()) return {};
    fail << why << " (" << c.tol_reason << ")";
    return fail.str();
  }
  if (s.compare == Compare::kBits || (s.bits_in_f32 && act == DType::F32)) {
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < got.size(); ++i) {
      const double w = as_stored(want[i], stored);
      const bool same = got[i] == w || (std::isnan(got[i]) && std::isnan(w));
      if (!same && first < 0) first = static_cast<int64_t>(i);
      differ += !same;
    }
    if (differ == 0) return {};
    fail << differ << " elements differ from the reference's bits (first at " << first << ": got "
         << got[first] << ", want " << as_stored(want[first], stored) << ")";
    return fail.str();
  }
  if (s.nonfinite_agree) {
    // The non-finite elements must match in class; they then leave the comparison of the rest.
    std::vector<double> got_finite = got, want_finite = want;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isfinite(want[i])) continue;
      if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) {
        fail << "element " << i << " is " << got[i] << ", the reference's " << want[i];
        return fail.str();
      }
      got_finite[i] = want_finite[i] = 0;
    }
    TensorSpec finite = s;
    finite.nonfinite_agree = false;
    return compare(c, finite, act, got_finite, want_finite, stored);
  }
  const double err =
      s.compare == Compare::kNormwise ? normwise_error(got, want) : max_relative_error(got, want);
  if (err < tol) return {};
  fail << (s.compare == Compare::kNormwise ? "normwise" : "relative") << " error " << err
       << " >= " << tol << " (" << c.tol_reason << ")";
  return fail.str();
}

// Copies `values` into the device tensor t of spec s in a GPU run of dtype `dtype` (copy_tensor
// waits for the copy).
void upload_values(Context& ctx, const Tensor& t, const TensorSpec& s,
                   const std::vector<double>& values, DType dtype) {
  HostTensor h = host_tensor(s, values, dtype);
  if (t.dtype == DType::BF16 && h.view.dtype == DType::F32) {
    h.b16.resize(h.f32.size());
    for (size_t k = 0; k < h.f32.size(); ++k) h.b16[k] = float_to_bf16(h.f32[k]).bits;
    h.view = shaped(h.b16.data(), DType::BF16, Device::CPU, s.dims);
  }
  copy_tensor(ctx.stream(), t, h.view);
}

size_t position(const OpCase& c, std::string_view name) {
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    if (c.tensors[i].name == name) return i;
  }
  throw Error(str_cat("op case ", c.name(), ": no tensor named '", name, "'"));
}

// `values` as a GPU run in `dtype` reads them (rounded to the dtype of each tensor there), for an
// f64 reference.
std::vector<std::vector<double>> as_device_sees(const OpCase& c,
                                                std::vector<std::vector<double>> values,
                                                DType dtype) {
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const DType seen = device_dtype(c.tensors[i].kind, dtype);
    if (seen != DType::F32 && seen != DType::BF16) continue;
    for (double& v : values[i]) v = rounded_to(v, seen);
  }
  return values;
}

int reference_threads() {
  // The references give the same bits at any thread count (docs/ARCHITECTURE.md, CPU threads).
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

}  // namespace

const TensorSpec& OpCase::spec(std::string_view name) const {
  return tensors[position(*this, name)];
}

std::vector<double> HostTensor::to_f64() const {
  return widen(view, f32, b16, i32, f64);
}

HostRun bind_host(const OpCase& c, const std::vector<std::vector<double>>& values, DType act) {
  HostRun run;
  run.tensors.reserve(c.tensors.size());
  run.args.set_act(act);
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorSpec& s = c.tensors[i];
    run.tensors.push_back(host_tensor(s, values[i], act));
    const bool bound = s.role != Role::kWorkspace || s.cpu_workspace;
    run.args.add(s.name, bound ? run.tensors.back().view : Tensor{});
  }
  return run;
}

void round_to_act(const Tensor& t, DType act) {
  if (act != DType::BF16) return;
  float* v = t.ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = rounded_to(v[i], act);
}

size_t device_bytes(const OpCase& c, DType dtype) {
  size_t bytes = 0;
  for (const TensorSpec& s : c.tensors) {
    bytes += aligned(static_cast<size_t>(s.numel()) * dtype_size(device_dtype(s.kind, dtype)));
  }
  return bytes;
}

Args bind_device(Context& ctx, Arena& arena, const OpCase& c,
                 const std::vector<std::vector<double>>& values, DType dtype) {
  Args args;
  args.set_act(dtype);
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorSpec& s = c.tensors[i];
    const DType stored = device_dtype(s.kind, dtype);
    const Tensor flat = arena.alloc(stored, {s.numel()});
    const Tensor t = shaped(flat.data, stored, flat.device, s.dims);
    if (values[i].empty()) {
      poison_tensor(ctx.stream(), t);
    } else {
      upload_values(ctx, t, s, values[i], dtype);
    }
    args.add(s.name, t);
  }
  return args;
}

std::vector<std::string> parity(const OpCase& c, DType dtype, Context& device) {
  const std::vector<std::vector<double>> values = make_values(c);
  Context cpu = Context::cpu(c.seed, Precision::F32, reference_threads());
  HostRun ref = c.reference_f64 ? bind_host(c, as_device_sees(c, values, dtype), DType::F64)
                                : bind_host(c, values, dtype);
  if (c.reference) {
    c.reference(cpu, ref.args);
  } else {
    c.forward(cpu, ref.args);
    if (c.backward) c.backward(cpu, ref.args);
  }

  Arena arena("op_case", device.device(), device_bytes(c, dtype) + Arena::kAlignment);
  const Args dev = bind_device(device, arena, c, values, dtype);
  auto run_device = [&] {
    c.forward(device, dev);
    if (c.backward) c.backward(device, dev);
  };
  run_device();

  std::vector<std::string> failures;
  std::vector<std::vector<double>> first(c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorSpec& s = c.tensors[i];
    if (!s.compared(dtype)) continue;
    const Tensor& t = dev[s.name];
    first[i] = download_f64(device, t);
    const std::vector<double> want = ref.tensors[i].to_f64();
    const std::string failure = compare(c, s, dtype, first[i], want, t.dtype);
    if (!failure.empty()) {
      failures.push_back(failure + "; " +
                         error_locus(first[i], want, s.locus_dims.empty() ? s.dims : s.locus_dims));
    }
    if (s.some_nonzero && std::all_of(want.begin(), want.end(), [](double v) { return v == 0; })) {
      failures.push_back(
          str_cat(s.name, ": the reference is all 0: the inputs do not exercise it"));
    }
    if (s.same_zeros) {
      // A zero on one side only is a mask difference when the other side is not within the
      // comparison's bound of 0 (tol times the reference's largest magnitude). A kept value can
      // round to exactly 0 when its terms cancel: in f32 about one element in 2^24 (e.g.
      // gamma x_hat == -beta), at a place that moves with an ulp of the inputs, so two
      // implementations of 25M elements each have about one, in different places (the
      // embedding's 64x512x768 case on the 2026-11-27 H100 run: "2 elements are 0 on one side").
      double scale = 0;
      for (const double w : want) scale = std::max(scale, std::abs(w));
      const double tol = (s.tol ? *s.tol : c.tol).of(dtype);
      int64_t differ = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        const double got_k = first[i][k];
        differ += (got_k == 0) != (want[k] == 0) &&
                  std::max(std::abs(got_k), std::abs(want[k])) > tol * scale;
      }
      if (differ > 0) {
        failures.push_back(str_cat(s.name, ": ", differ, " elements are 0 on one side only"));
      }
    }
  }
  // Again from the same starting values: an accumulated output restarts from them, the written
  // outputs and the workspaces are poisoned again. On a GPU each op call of this run is recorded
  // into a graph of its own and its nodes checked against what the op declares
  // (launch_capture.h), at every case's shapes and dtypes: the launch count that
  // launch_count_test pins is the sum of these declarations. Not with an empty tensor (an op
  // with nothing to do may launch less).
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorSpec& s = c.tensors[i];
    if (s.accumulates) {
      upload_values(device, dev[s.name], s, values[i], dtype);
    } else if (s.role != Role::kInput) {
      poison_tensor(device.stream(), dev[s.name]);
    }
  }
#if ELECTRA_WITH_CUDA
  const bool any_empty = std::any_of(c.tensors.begin(), c.tensors.end(),
                                     [](const TensorSpec& s) { return s.numel() == 0; });
  if (device.is_cuda() && !any_empty) {
    LaunchCapture capture;
    {
      const ObserveOps observe(&capture);
      run_device();
    }
    for (const std::string& m : capture.mismatches) failures.push_back("launches: " + m);
  } else {
    run_device();
  }
#else
  run_device();
#endif
  if (c.deterministic) {
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const TensorSpec& s = c.tensors[i];
      if (!s.compared(dtype)) continue;
      const std::vector<double> again = download_f64(device, dev[s.name]);
      if (std::memcmp(again.data(), first[i].data(), again.size() * sizeof(double)) != 0) {
        failures.push_back(str_cat(s.name, ": a second run from the same inputs differs"));
      }
    }
  }
  return failures;
}

std::vector<std::string> gpu_parity(const OpCase& c, DType dtype) {
  Context device = Context::cuda(0, c.seed);
  return parity(c, dtype, device);
}

ContractCheck contract_check(const OpCase& c) {
  Context cpu = Context::cpu(c.seed);
  // In the dtypes of an f32 GPU run, or of the gradient check for a case run only there.
  HostRun run = bind_host(c, make_values(c), (c.modes & kGpu) != 0 ? DType::F32 : DType::F64);
  // A dry run: run_op checks its arguments, and nothing runs (a wrong call that passes its
  // check() reaches no kernel here; on a device it would).
  LaunchCounter dry_run(/*dry_run=*/true);
  const ObserveOps observe(&dry_run);
  std::vector<std::string> forward_reads, backward_reads;
  run.args.record_reads(&forward_reads);
  c.forward(cpu, run.args);
  run.args.record_reads(&backward_reads);
  if (c.backward) c.backward(cpu, run.args);
  run.args.record_reads(nullptr);
  auto named = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  ContractCheck check;
  for (const TensorSpec& s : c.tensors) {
    const bool in_forward = named(forward_reads, s.name);
    if (s.role == Role::kWorkspace) continue;
    if (!in_forward && !named(backward_reads, s.name)) continue;
    const Tensor good = run.args[s.name];
    Tensor longer = good, retyped = good;
    if (good.rank > 0 && s.any_shape_because.empty()) longer.shape[good.rank - 1] += 1;
    if (s.any_dtype_because.empty()) {
      retyped.dtype = good.dtype == DType::F32 ? DType::F64 : DType::F32;
    }
    // 8 bytes an element: room for either variant in any dtype.
    std::vector<double> storage(static_cast<size_t>(longer.numel()) + 1);
    for (Tensor bad : {longer, retyped}) {
      if (bad.rank == good.rank && bad.shape == good.shape && bad.dtype == good.dtype) continue;
      bad.data = storage.data();
      Args args = run.args;
      args.replace(s.name, bad);
      ++check.tried;
      try {
        in_forward ? c.forward(cpu, args) : c.backward(cpu, args);
        check.accepted.push_back(str_cat(s.name, " as ", bad.str(), " (not ", good.str(), "): the ",
                                         in_forward ? "forward" : "backward", " accepted it"));
      } catch (const Error&) {
        // refused, as it should be
      }
    }
  }
  return check;
}

std::vector<GradientCheck> gradient_checks(const OpCase& c) {
  ELECTRA_CHECK(!c.tensors.empty() && c.forward, "op case ", c.name(), ": nothing to check");
  const std::vector<std::vector<double>> values = make_values(c);
  Context ctx = Context::cpu(c.seed);
  HostRun run = bind_host(c, values, DType::F64);
  std::vector<std::pair<size_t, size_t>> weighted;  // (output, upstream) positions
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    if (c.tensors[i].upstream_of.empty()) continue;
    weighted.emplace_back(position(c, c.tensors[i].upstream_of), i);
  }
  ELECTRA_CHECK(!weighted.empty(), "op case ", c.name(), ": no upstream(...) tensor for a loss");
  auto weighted_loss = [&] {
    c.forward(ctx, run.args);
    long double sum = 0;
    for (const auto& [o, u] : weighted) {
      sum += compensated_weighted_sum(run.tensors[o].f64, run.tensors[u].f64);
    }
    return sum;
  };
  // Subtracted before rounding to double (test_util.h, compensated_weighted_sum).
  const long double base = weighted_loss();
  auto loss = [&] { return static_cast<double>(weighted_loss() - base); };
  // An op whose forward also writes its gradients (a loss) has no backward.
  if (c.backward) c.backward(ctx, run.args);
  // The gradients, before any perturbed forward can overwrite them; an accumulated one is what
  // the op added to its random starting values (so a gradient written instead of added fails).
  std::vector<std::vector<double>> analytic(c.tensors.size());
  for (size_t g = 0; g < c.tensors.size(); ++g) {
    if (c.tensors[g].grad_of.empty()) continue;
    analytic[g] = run.tensors[g].f64;
    if (!c.tensors[g].accumulates) continue;
    for (size_t k = 0; k < analytic[g].size(); ++k) analytic[g][k] -= values[g][k];
  }
  std::vector<GradientCheck> checks;
  for (size_t g = 0; g < c.tensors.size(); ++g) {
    const TensorSpec& s = c.tensors[g];
    if (s.grad_of.empty()) continue;
    std::vector<double>& x = run.tensors[position(c, s.grad_of)].f64;
    checks.push_back({s.grad_of, gradcheck(x, analytic[g], loss, kGradcheckStep, c.max_checks)});
  }
  return checks;
}

}  // namespace electra::test
