// weight_update: global gradient norm, AdamW and LAMB over the flat f32 parameter buffer.
//
// Parameters p, gradients g and the moments m, v are f32 [P] buffers with one layout. A segment
// table describes the parameters in it: (offset, size, weight-decay flag, lr multiplier for
// layer-wise LR decay). Elements outside every segment are neither counted nor updated.
// The table also cuts every segment into chunks of kOptimChunk elements ("blocks"): one CUDA block
// per chunk, so a block never straddles two segments and per-segment sums are sums of whole blocks.
//
// Hyper-parameters live in a small f32 tensor on the context's device (layout OptimHyper), so a
// CUDA graph can replay the step while the schedule rewrites lr and step in place: nothing in the
// update is a host value except the bias-correction switch. The schedule's advance writes lr and
// step from an update counter and a learning-rate table in device memory, so an update needs no
// upload:
//   hyper[kHyperLr] = lr_table[min(counter, S - 1)],  hyper[kHyperStep] = counter + 1,
//   counter += 1                       (lr_table f32 [S], counter i32 [1])
// grad_norm does it (when given the schedule) after the norm, in the same launch: the optimizer
// step is grad_norm, then adam_step, which reads lr and step. grad_norm may also record the norm
// into a metrics accumulator (kernels/train_metrics.h; rows the caller's):
//   acc[row] = norm (stored, not added),   acc[non_finite] += 1 when norm is not finite
//
// grad_norm (deterministic two-pass reduction, one launch):
//   segment_norm[s] = sqrt(sum_{i in s} g_i^2),   norm = sqrt(sum_s segment_norm[s]^2)
//   Pass 1: each block sums its chunk's squares in f32 (fixed tree) into workspace[block].
//   Pass 2: the block that finishes pass 1 last (a ticket counter: kernels/column_sum.cuh,
//   last_arrival) adds each segment's block partials in f64, in block order, then the segments in
//   a fixed tree; the result is rounded to f32 once. The order depends on the table alone, never
//   on which block arrives last.
//
// adam_step, AdamW (the official ELECTRA AdamWeightDecayOptimizer by default):
//   n      = norm                                                    (read from the device)
//   clip   = max_norm > 0 && n > max_norm ? max_norm / n : 1
//   g'     = clip * g
//   m      = b1 m + (1 - b1) g'            v = b2 v + (1 - b2) g'^2
//   update = m / (sqrt(v) + eps)           [bias_correction: m / (1 - b1^t), v / (1 - b2^t)]
//   update += wd * p                       (segments with the decay flag only)
//   p     -= lr * lr_mult[s] * update
// adam_step with lamb: the same moments and update, then the per-segment trust ratio
//   r_s = ||p_s|| / ||update_s|| (1 when either is 0),   p -= lr * lr_mult[s] * r_s * update
// with ||p_s|| taken before the step. The gradients are never modified (zeroing them is the
// caller's job).
// Frozen segments: lr_mult[s] == 0 freezes segment s: neither its parameters nor its moments
// change (not even by weight decay; two-stage pre-training freezes one model this way,
// Optimizer::set_frozen). A frozen segment's gradient still counts in the global norm.
// Overflow: when norm is not finite (an Inf or NaN gradient, or an overflowing sum of squares)
// both steps leave parameters and moments untouched, decided on the device from the norm (no
// host sync).
//
// Dtypes: everything f32 on both devices (optimizer state is f32 by design). The CPU reference
// accumulates norms in f64.
#pragma once

#include <array>
#include <cfloat>
#include <cmath>
#include <vector>

#include "engine/arena.h"
#include "kernels/dispatch.h"
#include "kernels/train_metrics.h"

namespace electra {

constexpr int kOptimChunk = 4096;  // elements per block of the segment table

// One parameter (or group of parameters sharing the flags) inside the flat buffer.
struct ParamSegment {
  int64_t offset = 0;
  int64_t size = 0;
  bool decay = true;     // weight decay applies (false for LayerNorm and biases)
  float lr_mult = 1.0f;  // layer-wise LR decay factor; 0: frozen (see the top of this file)
};

// Layout of the segment-table tensors (int32 offsets: the buffer holds < 2^31 values).
enum SegmentField : int {
  kSegOffset = 0,
  kSegSize = 1,
  kSegDecay = 2,
  kSegFirstBlock = 3,
  kSegBlockCount = 4,
  kSegFields = 5,
};

struct SegmentTable {
  Tensor segments;  // i32 [S, kSegFields]
  Tensor lr_mult;   // f32 [S]
  Tensor blocks;    // i32 [num_blocks, 2]: segment, first element of the chunk within the segment
  int64_t num_segments = 0;
  int64_t num_blocks = 0;
  int64_t num_params = 0;  // P, the size of the flat buffers
};

// Bytes of arena the table for these segments takes (with the arena's 256-byte alignment).
size_t segment_table_bytes(const std::vector<ParamSegment>& segments);
// Builds the table on the host and copies it into tensors from `arena` (on ctx's device). Setup
// time only: it allocates and synchronises. Segments must be sorted by offset, must not overlap
// and must lie inside [0, num_params) (empty segments are allowed); throws Error otherwise.
SegmentTable make_segment_table(Context& ctx, Arena& arena,
                                const std::vector<ParamSegment>& segments, int64_t num_params);

// The hyper-parameter tensor: f32 [kNumHyper] on the context's device.
enum OptimHyper : int {
  kHyperLr = 0,
  kHyperStep = 1,  // t, counted from 1 (only read with bias correction)
  kHyperBeta1 = 2,
  kHyperBeta2 = 3,
  kHyperEps = 4,
  kHyperWeightDecay = 5,
  kHyperMaxNorm = 6,  // global-norm clipping threshold; <= 0 disables clipping
  kNumHyper = 7,
};

// Host-side values of the hyper-parameter tensor, with the official ELECTRA defaults.
struct OptimHyperValues {
  float lr = 0;
  float step = 1;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  float weight_decay = 0.01f;
  float max_norm = 1.0f;
  std::array<float, kNumHyper> packed() const {
    return {lr, step, beta1, beta2, eps, weight_decay, max_norm};
  }
};

// The per-step scalars of the Adam update, derived from the hyper tensor and the global norm.
struct AdamCoeffs {
  float beta1, beta2, eps, weight_decay, lr;
  float clip;              // clip factor: g' = clip * g
  float m_scale, v_scale;  // 1 / (1 - beta^t) with bias correction, 1 without
  bool skip;               // norm not finite: no update at all
};

ELECTRA_HD AdamCoeffs adam_coeffs(const float* hyper, float norm, bool bias_correction) {
  AdamCoeffs c;
  c.beta1 = hyper[kHyperBeta1];
  c.beta2 = hyper[kHyperBeta2];
  c.eps = hyper[kHyperEps];
  c.weight_decay = hyper[kHyperWeightDecay];
  c.lr = hyper[kHyperLr];
  // norm >= 0, so this is false exactly for Inf and NaN.
  c.skip = !(norm <= FLT_MAX);
  const float max_norm = hyper[kHyperMaxNorm];
  c.clip = max_norm > 0.0f && norm > max_norm ? max_norm / norm : 1.0f;
  c.m_scale = 1.0f;
  c.v_scale = 1.0f;
  if (bias_correction) {
    const float t = hyper[kHyperStep];
    c.m_scale = 1.0f / (1.0f - powf(c.beta1, t));
    c.v_scale = 1.0f / (1.0f - powf(c.beta2, t));
  }
  return c;
}

// One element's update from its (already advanced) moments, before lr and the trust ratio.
ELECTRA_HD float adam_direction(const AdamCoeffs& c, float p, float m, float v, bool decay) {
  float update = (m * c.m_scale) / (sqrtf(v * c.v_scale) + c.eps);
  if (decay) update += c.weight_decay * p;
  return update;
}

// Advances one element's moments with the clipped gradient and returns its update.
ELECTRA_HD float adam_update(const AdamCoeffs& c, float p, float g, float& m, float& v,
                             bool decay) {
  const float gc = c.clip * g;
  m = c.beta1 * m + (1.0f - c.beta1) * gc;
  v = c.beta2 * v + (1.0f - c.beta2) * gc * gc;
  return adam_direction(c, p, m, v, decay);
}

// The elements of a chunk [begin, end) that the CUDA AdamW kernel moves in 16-byte vectors when
// element 0 of its flat buffers is 16-byte aligned: [body.begin, body.end), both multiples of 4,
// the first multiple of 4 at or after begin to the last whole vector before end. The rest, the
// head [begin, body.begin) and the tail [body.end, end), fewer than 4 elements each, takes scalar
// accesses (segments start at any offset). A chunk too short for one aligned vector (at most 6
// elements) is all head: body.begin == body.end == end.
struct VectorBody {
  int64_t begin, end;
};
ELECTRA_HD VectorBody vector_body(int64_t begin, int64_t end) {
  const int64_t first = (begin + 3) / 4 * 4;  // the first multiple of 4 at or after begin
  if (end - first < 4) return {end, end};
  return {first, first + (end - first) / 4 * 4};
}

// Workspace floats: grad_norm needs num_blocks; adam_step with lamb needs 2 * num_blocks +
// num_segments.
inline int64_t grad_norm_workspace_size(const SegmentTable& table) {
  return table.num_blocks;
}
inline int64_t lamb_workspace_size(const SegmentTable& table) {
  return 2 * table.num_blocks + table.num_segments;
}

// Throws Error unless the table, the flat buffers, the hyper tensor and the norm fit together
// (their devices are run_op's check).
void check_optimizer_args(const char* op, const SegmentTable& table,
                          std::initializer_list<const Tensor*> flat_buffers, const Tensor* hyper,
                          const Tensor& norm);
// Throws Error unless workspace is an f32 tensor with at least `floats` values.
void check_optimizer_workspace(const char* op, const Tensor& workspace, int64_t floats);

// The learning-rate schedule in device memory (the top of this file): lr_table f32 [S > 0],
// counter i32 [1] (updates done), hyper f32 [kNumHyper].
struct ScheduleState {
  In lr_table;
  Out counter, hyper;
};

// No schedule to advance.
inline ScheduleState no_schedule() {
  return {.lr_table = Tensor{}, .counter = Out(Tensor{}), .hyper = Out(Tensor{})};
}

// The schedule's advance (the top of this file), on either device.
ELECTRA_HD void advance_schedule(const float* lr_table, int64_t entries, int32_t* counter,
                                 float* hyper) {
  const int32_t t = *counter;
  hyper[kHyperLr] = lr_table[t < entries ? t : entries - 1];
  hyper[kHyperStep] = static_cast<float>(t + 1);
  *counter = t + 1;
}

// Where grad_norm records the norm (the top of this file): acc f64 holding rows `row` and
// `non_finite` (kNoRow: not recorded); an unset acc: no record.
struct NormRecord {
  Out acc;
  int row = kNoRow;
  int non_finite = kNoRow;
};

inline NormRecord no_record() {
  return {.acc = Out(Tensor{}), .row = kNoRow, .non_finite = kNoRow};
}

// The record (the top of this file), on either device. norm >= 0, so !(norm <= FLT_MAX) is true
// exactly for Inf and NaN (as in adam_coeffs).
ELECTRA_HD void record_norm(double* acc, int row, int non_finite, float norm) {
  if (row >= 0) acc[row] = norm;
  if (non_finite >= 0) acc[non_finite] += !(norm <= FLT_MAX) ? 1.0 : 0.0;
}

// norm: f32 [1]; segment_norms: f32 [S], or an unset Tensor{} (data == nullptr) to skip them.
// workspace: f32 with grad_norm_workspace_size(table) values (CUDA only; the CPU ignores it).
// schedule: advanced after the norm, or no_schedule(); record: where the norm is recorded, or
// no_record().
struct GradNorm {
  static constexpr const char* kName = "grad_norm";
  In grads;
  SegmentTable table;
  Out workspace, norm, segment_norms;
  ScheduleState schedule;
  NormRecord record;

  void check(const Context& ctx) const {
    check_optimizer_args(kName, table, {&grads}, nullptr, norm);
    if (segment_norms.data != nullptr) {
      check_tensor(segment_norms, {table.num_segments}, DType::F32, "grad_norm segment_norms");
    }
    if (ctx.is_cuda()) {
      check_optimizer_workspace(kName, workspace, grad_norm_workspace_size(table));
    }
    if (schedule.lr_table.data != nullptr || schedule.counter.data != nullptr ||
        schedule.hyper.data != nullptr) {
      check_dtype(schedule.lr_table, DType::F32, "grad_norm schedule lr_table");
      ELECTRA_CHECK(schedule.lr_table.numel() > 0, "grad_norm: empty schedule lr_table");
      check_tensor(schedule.counter, {1}, DType::I32, "grad_norm schedule counter");
      check_tensor(schedule.hyper, {kNumHyper}, DType::F32, "grad_norm schedule hyper");
    }
    if (record.acc.data != nullptr) {
      check_metrics_acc(record.acc, {record.row, record.non_finite}, "grad_norm record acc");
    }
  }
  // The blocks' sums of squares, the last block to finish adding them (and advancing the
  // schedule, recording the norm): one launch, also without blocks (the norm is then 0).
  Launches launches() const { return {.kernels = 1}; }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

// adam_step: params, m, v are updated in place (unless norm is not finite); hyper: f32
// [kNumHyper]; norm: f32 [1] from grad_norm. With lamb, each segment's step is scaled by its trust
// ratio; workspace: f32 with lamb_workspace_size(table) values for LAMB on CUDA, unused (an unset
// Tensor{}) otherwise: the CPU finishes one segment before the next and AdamW needs no sums.
struct AdamStep {
  static constexpr const char* kName = "adam_step";
  Out params;
  In grads;
  Out m, v;
  SegmentTable table;
  In hyper, norm;
  bool bias_correction = false;
  bool lamb = false;
  Out workspace;

  void check(const Context& ctx) const {
    check_optimizer_args(kName, table, {&params, &grads, &m, &v}, &hyper, norm);
    if (lamb && ctx.is_cuda()) {
      check_optimizer_workspace(kName, workspace, lamb_workspace_size(table));
    }
  }
  // AdamW: one kernel; LAMB: moments, trust ratios, update (weight_update.cu).
  Launches launches() const { return {.kernels = table.num_blocks == 0 ? 0 : (lamb ? 3 : 1)}; }
  // AdamW reads p, g, m, v and writes p, m, v; LAMB's moments pass reads p, g, m, v and writes
  // m, v, its update pass reads p, m, v and writes p: 7 and 10 f32 passes over the parameters.
  double bytes() const { return (lamb ? 10.0 : 7.0) * static_cast<double>(params.nbytes()); }
  void cpu(Context& ctx) const;
  void cuda(Context& ctx) const;
};

}  // namespace electra
