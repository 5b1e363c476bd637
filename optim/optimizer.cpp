#include "optim/optimizer.h"

#include <algorithm>
#include <cfloat>

#include "engine/device.h"

namespace electra {
namespace {

size_t aligned(size_t bytes) {
  return (bytes + Arena::kAlignment - 1) / Arena::kAlignment * Arena::kAlignment;
}

// One segment per parameter, in store order (offsets increase, so the table's sort rule holds).
std::vector<ParamSegment> segments_of(const ParameterStore& store,
                                      const Optimizer::LrMultiplier& lr_mult) {
  std::vector<ParamSegment> segments;
  segments.reserve(store.params().size());
  for (const ParamInfo& p : store.params()) {
    segments.push_back({p.offset, p.numel, param_decays(p.kind), lr_mult ? lr_mult(p) : 1.0f});
  }
  return segments;
}

// Workspace floats for the reductions of `kind`; the block count repeats the table's chunking.
int64_t workspace_floats(const std::vector<ParamSegment>& segments, OptimizerKind kind) {
  int64_t blocks = 0;
  for (const ParamSegment& s : segments) blocks += (s.size + kOptimChunk - 1) / kOptimChunk;
  const int64_t lamb = 2 * blocks + static_cast<int64_t>(segments.size());
  return std::max<int64_t>(1, kind == OptimizerKind::kLamb ? lamb : blocks);
}

template <class T>
T checked(T value, bool ok, const char* key, const char* rule) {
  ELECTRA_USER_CHECK(ok, key, " must be ", rule, " (got ", value, ")");
  return value;
}

}  // namespace

OptimizerKind parse_optimizer_kind(const std::string& name) {
  if (name == "adamw") return OptimizerKind::kAdamW;
  if (name == "lamb") return OptimizerKind::kLamb;
  throw UserError(str_cat("unknown optimizer '", name, "' (use adamw or lamb)"));
}

const char* optimizer_kind_name(OptimizerKind kind) {
  return kind == OptimizerKind::kLamb ? "lamb" : "adamw";
}

OptimizerConfig read_optimizer_config(ConfigNode optimizer, ConfigNode schedule,
                                      int64_t total_steps) {
  OptimizerConfig c;
  c.kind = parse_optimizer_kind(optimizer.choice("kind", "adamw", {"adamw", "lamb"}));
  const double lr = optimizer.get<double>("lr", c.schedule.peak);
  c.schedule.peak = checked(lr, lr > 0, "optimizer.lr", "positive");
  const float b1 = optimizer.get<float>("beta1", c.beta1);
  c.beta1 = checked(b1, b1 >= 0 && b1 < 1, "optimizer.beta1", "in [0, 1)");
  const float b2 = optimizer.get<float>("beta2", c.beta2);
  c.beta2 = checked(b2, b2 >= 0 && b2 < 1, "optimizer.beta2", "in [0, 1)");
  const float eps = optimizer.get<float>("eps", c.eps);
  c.eps = checked(eps, eps > 0, "optimizer.eps", "positive");
  const float wd = optimizer.get<float>("weight_decay", c.weight_decay);
  c.weight_decay = checked(wd, wd >= 0, "optimizer.weight_decay", "non-negative");
  const float clip = optimizer.get<float>("max_grad_norm", c.max_grad_norm);
  c.max_grad_norm = checked(clip, clip >= 0, "optimizer.max_grad_norm", "non-negative (0: off)");
  c.bias_correction = optimizer.get<bool>("bias_correction", c.bias_correction);

  c.schedule.kind =
      parse_schedule_kind(schedule.choice("kind", "linear", {"linear", "constant", "cosine"}));
  const int64_t warmup = schedule.get<int64_t>("warmup_steps", c.schedule.warmup_steps);
  c.schedule.warmup_steps = checked(warmup, warmup >= 0, "schedule.warmup_steps", "non-negative");
  ELECTRA_CHECK(total_steps > 0, "read_optimizer_config: total_steps ", total_steps);
  c.schedule.total_steps = total_steps;
  return c;
}

size_t Optimizer::state_bytes(const ParameterStore& store, OptimizerKind kind) {
  const std::vector<ParamSegment> segments = segments_of(store, {});
  const size_t flat = aligned(static_cast<size_t>(store.total_elements()) * sizeof(float));
  return 2 * flat + segment_table_bytes(segments) + aligned(kNumHyper * sizeof(float)) +
         aligned(sizeof(float)) +
         aligned(static_cast<size_t>(workspace_floats(segments, kind)) * sizeof(float));
}

namespace {

// Copies t.numel() values from host memory into t and waits (setup only).
template <class T>
void upload_host(Context& ctx, const Tensor& t, const T* values) {
  upload(ctx.stream(), t, Tensor::view_of(const_cast<T*>(values), Device::CPU, {t.numel()}));
  ctx.synchronize();
}

}  // namespace

size_t Optimizer::schedule_bytes(const OptimizerConfig& config) {
  const size_t entries = static_cast<size_t>(std::max<int64_t>(config.schedule.total_steps, 0)) + 1;
  return aligned(entries * sizeof(float)) + aligned(sizeof(int32_t));
}

Optimizer::Optimizer(Context& ctx, const ParameterStore& store, const OptimizerConfig& config,
                     Arena& state_arena, const LrMultiplier& lr_mult)
    : config_(config), schedule_("schedule", ctx.device(), schedule_bytes(config)) {
  ELECTRA_CHECK(store.allocated(), "Optimizer: the ParameterStore is not allocated");
  ELECTRA_CHECK(store.flat_params().dtype == DType::F32, "Optimizer: the ParameterStore is ",
                dtype_name(store.flat_params().dtype),
                "; the optimizer needs f32 master weights (f64 stores are for gradient checks)");
  ELECTRA_CHECK(store.flat_params().device == ctx.device() && state_arena.device() == ctx.device(),
                "Optimizer: parameters (", store.flat_params().str(), ") and state arena '",
                state_arena.name(), "' must be on ", device_name(ctx.device()));
  params_ = store.flat_params();
  grads_ = store.flat_grads();
  const std::vector<ParamSegment> segments = segments_of(store, lr_mult);
  params_info_ = store.params();
  for (const ParamSegment& segment : segments) lr_mults_.push_back(segment.lr_mult);
  const int64_t n = store.total_elements();
  m_ = state_arena.alloc<float>({n});
  v_ = state_arena.alloc<float>({n});
  table_ = make_segment_table(ctx, state_arena, segments, n);
  hyper_ = state_arena.alloc<float>({kNumHyper});
  norm_ = state_arena.alloc<float>({1});
  workspace_ = state_arena.alloc<float>({workspace_floats(segments, config_.kind)});
  zero_tensor(ctx.stream(), m_);
  zero_tensor(ctx.stream(), v_);
  zero_tensor(ctx.stream(), norm_);
  ELECTRA_CHECK(config_.schedule.total_steps < (int64_t{1} << 31),
                "Optimizer: ", config_.schedule.total_steps,
                " steps do not fit the i32 update counter");
  std::vector<float> lrs(static_cast<size_t>(std::max<int64_t>(config_.schedule.total_steps, 0)) +
                         1);
  for (size_t t = 0; t < lrs.size(); ++t) {
    lrs[t] = static_cast<float>(config_.schedule.at(static_cast<int64_t>(t)));
  }
  lr_table_ = schedule_.alloc<float>({static_cast<int64_t>(lrs.size())});
  counter_ = schedule_.alloc<int32_t>({1});
  upload_host(ctx, lr_table_, lrs.data());
  OptimHyperValues h;
  h.beta1 = config_.beta1;
  h.beta2 = config_.beta2;
  h.eps = config_.eps;
  h.weight_decay = config_.weight_decay;
  h.max_norm = config_.max_grad_norm;
  const std::array<float, kNumHyper> packed = h.packed();
  upload_host(ctx, hyper_, packed.data());
  set_step(ctx, 0);
}

void Optimizer::set_step(Context& ctx, int64_t step) {
  ELECTRA_CHECK(step >= 0 && step < (int64_t{1} << 31), "Optimizer::set_step: step ", step);
  const int32_t count = static_cast<int32_t>(step);
  upload_host(ctx, counter_, &count);
}

void Optimizer::set_frozen(Context& ctx, const ParamPredicate& frozen) {
  std::vector<float> mults = lr_mults_;
  for (size_t s = 0; s < mults.size(); ++s) {
    if (frozen(params_info_[s])) mults[s] = 0.0f;
  }
  if (!mults.empty()) upload_host(ctx, table_.lr_mult, mults.data());
}

void Optimizer::step(Context& ctx, int64_t step) {
  set_step(ctx, step);
  this->step(ctx, no_record());
}

void Optimizer::step(Context& ctx, const NormRecord& record) {
  const ModelPart part("optimizer");  // engine/op_observer.h
  // The norm and its record, then (in the same launch, before adam_step reads them) the
  // schedule's lr and step.
  run_op(
      ctx,
      GradNorm{.grads = grads_,
               .table = table_,
               .workspace = Out(workspace_),
               .norm = Out(norm_),
               .segment_norms = Out(Tensor{}),
               .schedule = {.lr_table = lr_table_, .counter = Out(counter_), .hyper = Out(hyper_)},
               .record = record});
  run_op(ctx, AdamStep{.params = Out(params_),
                       .grads = grads_,
                       .m = Out(m_),
                       .v = Out(v_),
                       .table = table_,
                       .hyper = hyper_,
                       .norm = norm_,
                       .bias_correction = config_.bias_correction,
                       .lamb = config_.kind == OptimizerKind::kLamb,
                       .workspace = Out(workspace_)});
}

float Optimizer::grad_norm(Context& ctx) const {
  float norm = 0;
  download(ctx.stream(), Tensor::view_of(&norm, Device::CPU, {1}), norm_);
  return norm;
}

}  // namespace electra
