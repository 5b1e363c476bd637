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

Optimizer::Optimizer(Context& ctx, const ParameterStore& store, const OptimizerConfig& config,
                     Arena& state_arena, const LrMultiplier& lr_mult)
    : config_(config) {
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
}

void Optimizer::step(Context& ctx, int64_t step, float grad_scale) {
  ELECTRA_CHECK(step >= 0, "Optimizer::step: negative step ", step);
  ELECTRA_CHECK(grad_scale > 0 && grad_scale <= FLT_MAX, "Optimizer::step: grad_scale ",
                grad_scale);
  OptimHyperValues h;
  h.lr = static_cast<float>(lr_at(step));
  h.step = static_cast<float>(step + 1);
  h.beta1 = config_.beta1;
  h.beta2 = config_.beta2;
  h.eps = config_.eps;
  h.weight_decay = config_.weight_decay;
  h.max_norm = config_.max_grad_norm;
  h.grad_scale = grad_scale;
  hyper_host_ = h.packed();
  copy_tensor(ctx.stream(), hyper_, Tensor::view_of(hyper_host_.data(), Device::CPU, {kNumHyper}));
  electra::grad_norm(ctx, grads_, table_, workspace_, norm_, Tensor{});
  if (config_.kind == OptimizerKind::kLamb) {
    lamb_step(ctx, params_, grads_, m_, v_, table_, hyper_, norm_, config_.bias_correction,
              workspace_);
  } else {
    adamw_step(ctx, params_, grads_, m_, v_, table_, hyper_, norm_, config_.bias_correction);
  }
}

float Optimizer::grad_norm(Context& ctx) const {
  float norm = 0;
  copy_tensor(ctx.stream(), Tensor::view_of(&norm, Device::CPU, {1}), norm_);
  return norm * hyper_host_[kHyperGradScale];
}

}  // namespace electra
