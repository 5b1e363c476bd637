// The optimizer's CPU reference, and the device-independent parts shared with the CUDA path (the
// segment table and the argument checks).
#include <algorithm>
#include <cmath>

#include "engine/device.h"
#include "kernels/simd_cpu.h"
#include "kernels/weight_update.h"

namespace electra {
namespace {

int64_t block_count(int64_t size) {
  return (size + kOptimChunk - 1) / kOptimChunk;
}

size_t aligned(size_t bytes) {
  return (bytes + Arena::kAlignment - 1) / Arena::kAlignment * Arena::kAlignment;
}

}  // namespace

size_t segment_table_bytes(const std::vector<ParamSegment>& segments) {
  int64_t blocks = 0;
  for (const ParamSegment& s : segments) blocks += block_count(s.size);
  return aligned(segments.size() * kSegFields * 4) + aligned(segments.size() * 4) +
         aligned(static_cast<size_t>(blocks) * 2 * 4);
}

SegmentTable make_segment_table(Context& ctx, Arena& arena,
                                const std::vector<ParamSegment>& segments, int64_t num_params) {
  ELECTRA_CHECK(arena.device() == ctx.device(), "make_segment_table: arena ", arena.name(),
                " is not on ", device_name(ctx.device()));
  ELECTRA_CHECK(num_params < (int64_t{1} << 31), "make_segment_table: ", num_params,
                " parameters exceed the int32 offsets of the table");
  std::vector<int32_t> fields, blocks;
  std::vector<float> lr_mult;
  int64_t end = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    const ParamSegment& seg = segments[s];
    ELECTRA_CHECK(seg.offset >= end && seg.size >= 0 && seg.offset + seg.size <= num_params,
                  "make_segment_table: segment ", s, " [", seg.offset, ", +", seg.size,
                  ") overlaps the previous one or leaves [0, ", num_params, ")");
    end = seg.offset + seg.size;
    const int64_t first = static_cast<int64_t>(blocks.size()) / 2, count = block_count(seg.size);
    fields.insert(fields.end(),
                  {static_cast<int32_t>(seg.offset), static_cast<int32_t>(seg.size),
                   seg.decay ? 1 : 0, static_cast<int32_t>(first), static_cast<int32_t>(count)});
    lr_mult.push_back(seg.lr_mult);
    for (int64_t c = 0; c < count; ++c) {
      blocks.insert(blocks.end(), {static_cast<int32_t>(s), static_cast<int32_t>(c * kOptimChunk)});
    }
  }
  SegmentTable table;
  table.num_segments = static_cast<int64_t>(segments.size());
  table.num_blocks = static_cast<int64_t>(blocks.size()) / 2;
  table.num_params = num_params;
  table.segments = arena.alloc<int32_t>({table.num_segments, kSegFields});
  table.lr_mult = arena.alloc<float>({table.num_segments});
  table.blocks = arena.alloc<int32_t>({table.num_blocks, 2});
  if (table.num_segments > 0) {
    copy_tensor(ctx.stream(), table.segments,
                Tensor::view_of(fields.data(), Device::CPU, {table.num_segments, kSegFields}));
    copy_tensor(ctx.stream(), table.lr_mult,
                Tensor::view_of(lr_mult.data(), Device::CPU, {table.num_segments}));
  }
  if (table.num_blocks > 0) {
    copy_tensor(ctx.stream(), table.blocks,
                Tensor::view_of(blocks.data(), Device::CPU, {table.num_blocks, 2}));
  }
  return table;
}

void check_optimizer_args(const char* op, const SegmentTable& table,
                          std::initializer_list<const Tensor*> flat_buffers, const Tensor* hyper,
                          const Tensor& norm) {
  check_tensor(table.segments, {table.num_segments, kSegFields}, DType::I32, op);
  check_tensor(table.lr_mult, {table.num_segments}, DType::F32, op);
  check_tensor(table.blocks, {table.num_blocks, 2}, DType::I32, op);
  for (const Tensor* t : flat_buffers) check_tensor(*t, {table.num_params}, DType::F32, op);
  if (hyper != nullptr) check_tensor(*hyper, {kNumHyper}, DType::F32, op);
  check_tensor(norm, {1}, DType::F32, op);
}

void check_optimizer_workspace(const char* op, const Tensor& workspace, int64_t floats) {
  check_dtype(workspace, DType::F32, op);
  ELECTRA_CHECK(workspace.numel() >= floats, op, ": workspace ", workspace.str(), " < ", floats,
                " floats");
}

}  // namespace electra

namespace electra::cpu {
namespace {

// Views of one segment's fields in the host table.
struct SegmentView {
  int64_t offset, size;
  bool decay;
  float lr_mult;
};

SegmentView segment(const SegmentTable& table, int64_t s) {
  const int32_t* f = table.segments.ptr<int32_t>() + s * kSegFields;
  return {f[kSegOffset], f[kSegSize], f[kSegDecay] != 0, table.lr_mult.ptr<float>()[s]};
}

double sum_squares(const float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

// grad_norm's segments per round: one task per segment sums its squares in order into a slot of
// a stack array, then the slots are added to the total in segment order (the same sums at any
// thread count, and those of one thread).
constexpr int64_t kNormSegmentsPerRound = 256;

// p[i] -= step * adam_update(...) for i in [begin, end): whole vectors of lanes, then the rest
// one by one. Each lane performs adam_update's operations in its order without fusing (the vector
// ops are the IEEE ones, correctly rounded), so every element has the bits of the scalar formula.
void adamw_range(const AdamCoeffs& c, float step, bool decay, float* p, const float* g, float* m,
                 float* v, int64_t begin, int64_t end) {
  const Vec clip = Vec::broadcast(c.clip), beta1 = Vec::broadcast(c.beta1),
            beta2 = Vec::broadcast(c.beta2), one_minus_beta1 = Vec::broadcast(1.0f - c.beta1),
            one_minus_beta2 = Vec::broadcast(1.0f - c.beta2), m_scale = Vec::broadcast(c.m_scale),
            v_scale = Vec::broadcast(c.v_scale), eps = Vec::broadcast(c.eps),
            weight_decay = Vec::broadcast(c.weight_decay), lr = Vec::broadcast(step);
  int64_t i = begin;
  for (; i + Vec::kLanes <= end; i += Vec::kLanes) {
    const Vec gc = clip * Vec::load(g + i);
    const Vec mi = beta1 * Vec::load(m + i) + one_minus_beta1 * gc;
    const Vec vi = beta2 * Vec::load(v + i) + one_minus_beta2 * gc * gc;
    const Vec pi = Vec::load(p + i);
    Vec update = (mi * m_scale) / (Vec::sqrt(vi * v_scale) + eps);
    if (decay) update = update + weight_decay * pi;
    mi.store(m + i);
    vi.store(v + i);
    (pi - lr * update).store(p + i);
  }
  for (; i < end; ++i) p[i] -= step * adam_update(c, p[i], g[i], m[i], v[i], decay);
}

// AdamW is element-wise: one task per block of the segment table (kOptimChunk elements of one
// segment).
void step_adamw(Context& ctx, const AdamStep& op, const AdamCoeffs& c) {
  const SegmentTable& table = op.table;
  float *p = op.params.ptr<float>(), *pm = op.m.ptr<float>(), *pv = op.v.ptr<float>();
  const float* g = op.grads.ptr<float>();
  const int32_t* blocks = table.blocks.ptr<int32_t>();
  ctx.parallel_for(table.num_blocks, [&](int64_t block) {
    const SegmentView seg = segment(table, blocks[2 * block]);
    if (seg.lr_mult == 0.0f) return;  // frozen
    const float step = c.lr * seg.lr_mult;
    const int64_t begin = seg.offset + blocks[2 * block + 1];
    const int64_t end = std::min(begin + kOptimChunk, seg.offset + seg.size);
    adamw_range(c, step, seg.decay, p, g, pm, pv, begin, end);
  });
}

// LAMB: one task per segment (its trust ratio needs the whole segment's sums, in order).
void step_lamb(Context& ctx, const AdamStep& op, const AdamCoeffs& c) {
  const SegmentTable& table = op.table;
  float *p = op.params.ptr<float>(), *pm = op.m.ptr<float>(), *pv = op.v.ptr<float>();
  const float* g = op.grads.ptr<float>();
  ctx.parallel_for(table.num_segments, [&](int64_t s) {
    const SegmentView seg = segment(table, s);
    if (seg.lr_mult == 0.0f) return;  // frozen
    const int64_t end = seg.offset + seg.size;
    // Pass 1 advances the moments and measures ||p|| and ||update||; pass 2 recomputes the update
    // from the new moments (as the CUDA kernel does) and applies it.
    double p_sq = 0, u_sq = 0;
    for (int64_t i = seg.offset; i < end; ++i) {
      const float u = adam_update(c, p[i], g[i], pm[i], pv[i], seg.decay);
      p_sq += static_cast<double>(p[i]) * p[i];
      u_sq += static_cast<double>(u) * u;
    }
    const float ratio = p_sq > 0 && u_sq > 0 ? static_cast<float>(std::sqrt(p_sq / u_sq)) : 1.0f;
    const float step = c.lr * seg.lr_mult * ratio;
    for (int64_t i = seg.offset; i < end; ++i) {
      p[i] -= step * adam_direction(c, p[i], pm[i], pv[i], seg.decay);
    }
  });
}

}  // namespace

}  // namespace electra::cpu

namespace electra {

void GradNorm::cpu(Context& ctx) const {
  const float* g = grads.ptr<float>();
  double total = 0;
  for (int64_t first = 0; first < table.num_segments; first += cpu::kNormSegmentsPerRound) {
    const int64_t count = std::min(cpu::kNormSegmentsPerRound, table.num_segments - first);
    double sq[cpu::kNormSegmentsPerRound];
    ctx.parallel_for(count, [&](int64_t k) {
      const cpu::SegmentView seg = cpu::segment(table, first + k);
      sq[k] = cpu::sum_squares(g + seg.offset, seg.size);
    });
    for (int64_t k = 0; k < count; ++k) {
      total += sq[k];
      if (segment_norms.data != nullptr)
        segment_norms.ptr<float>()[first + k] = static_cast<float>(std::sqrt(sq[k]));
    }
  }
  norm.ptr<float>()[0] = static_cast<float>(std::sqrt(total));
  if (record.acc.data != nullptr) {
    record_norm(record.acc.ptr<double>(), record.row, record.non_finite, norm.ptr<float>()[0]);
  }
  if (schedule.lr_table.data != nullptr) {
    advance_schedule(schedule.lr_table.ptr<float>(), schedule.lr_table.numel(),
                     schedule.counter.ptr<int32_t>(), schedule.hyper.ptr<float>());
  }
}

void AdamStep::cpu(Context& ctx) const {
  const AdamCoeffs c = adam_coeffs(hyper.ptr<float>(), norm.ptr<float>()[0], bias_correction);
  if (c.skip) return;
  if (lamb) {
    cpu::step_lamb(ctx, *this, c);
  } else {
    cpu::step_adamw(ctx, *this, c);
  }
}

}  // namespace electra
