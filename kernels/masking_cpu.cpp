#include <algorithm>
#include <array>

#include "kernels/masking.h"

namespace electra::cpu {}  // namespace electra::cpu

namespace electra {

void MaskTokens::cpu(Context&) const {
  const int64_t batch = ids.dim(0), seq = ids.dim(1), slots = positions.dim(1);
  const int32_t* in = ids.ptr<int32_t>();
  int32_t* out = masked_ids.ptr<int32_t>();
  int32_t* pos = positions.ptr<int32_t>();
  int32_t* orig = original.ptr<int32_t>();
  float* w = weights.ptr<float>();
  const RngStream stream = params.stream.resolved();
  const float mask_prob = params.mask_prob.get();
  const uint32_t mask_threshold = probability_threshold(params.mask_token_prob);
  const uint32_t random_threshold =
      probability_threshold(params.mask_token_prob + params.random_token_prob);
  struct Candidate {
    uint32_t key;
    int32_t t;
  };
  // A fixed array (the header bounds T): masking runs every training step, so it must not allocate.
  std::array<Candidate, kMaskingMaxSeqLen> candidates;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* row = in + b * seq;
    int64_t count = 0;
    int non_pad = 0;
    for (int64_t t = 0; t < seq; ++t) {
      const int32_t id = row[t];
      non_pad += id != params.pad_id;
      if (id != params.pad_id && id != params.cls_id && id != params.sep_id) {
        candidates[count++] = {stream.bits(static_cast<uint64_t>(b * seq + t)),
                               static_cast<int32_t>(t)};
      }
    }
    const int64_t k =
        std::min<int64_t>({slots, count, std::max(1, masking_target_count(mask_prob, non_pad))});
    // The k smallest (key, t) pairs: a strict total order, so the set is unique and only it needs
    // ordering (by position, below).
    std::nth_element(candidates.begin(), candidates.begin() + k, candidates.begin() + count,
                     [](const Candidate& a, const Candidate& c) {
                       return a.key != c.key ? a.key < c.key : a.t < c.t;
                     });
    std::sort(candidates.begin(), candidates.begin() + k,
              [](const Candidate& a, const Candidate& c) { return a.t < c.t; });
    std::copy(row, row + seq, out + b * seq);
    for (int64_t s = 0; s < slots; ++s) {
      const int64_t slot = b * slots + s;
      if (s >= k) {
        pos[slot] = 0, orig[slot] = 0, w[slot] = 0.0f;
        continue;
      }
      const int32_t t = candidates[s].t;
      pos[slot] = t, orig[slot] = row[t], w[slot] = 1.0f;
      out[b * seq + t] = masked_token(params, stream, mask_threshold, random_threshold,
                                      static_cast<uint64_t>(b * seq + t), row[t]);
    }
  }
}

}  // namespace electra
