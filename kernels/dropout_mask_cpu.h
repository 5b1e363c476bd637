// The dropout masks of dropout_mask.h applied on the host to a run of consecutive elements of a
// site, a chunk of Philox words at a time (philox_fill, vectorized; nothing is allocated):
// dropout_keep's (every CPU op that drops but attention) and attention_keep's (the attention
// probabilities).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/philox_bulk.h"
#include "kernels/dropout_mask.h"

namespace electra::cpu {

// keep <=> uniform01(bits) >= p <=> (bits >> 8) >= ceil(p * 2^24): uniform01 is (bits >> 8) * 2^-24
// exactly, so the float comparison is this integer one.
inline uint32_t dropout_keep_threshold(float p) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 0x1.0p24));
}

// y[i] = keep(first + i) ? x[i] / (1 - p) : 0 for i < n; x may equal y. The stream's step is
// resolved here, once per call (it may live in "device" memory: engine/philox.h).
template <class T>
void apply_dropout_mask(const RngStream& site_stream, uint64_t first, float p, const T* x, T* y,
                        int64_t n) {
  const RngStream stream = site_stream.resolved();
  constexpr int64_t kChunk = 1024;
  const uint32_t threshold = dropout_keep_threshold(p);
  const T scale = T{1} / (T{1} - static_cast<T>(p));
  uint32_t words[kChunk];
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t len = std::min(kChunk, n - c);
    philox_fill(stream, first + static_cast<uint64_t>(c), len, words);
    const T* in = x + c;
    T* out = y + c;
    for (int64_t i = 0; i < len; ++i) out[i] = (words[i] >> 8) >= threshold ? in[i] * scale : T{0};
  }
}

// y[i] = attention_keep(first + i) ? x[i] / (1 - p) : 0 for i < n (elements of one site); x may
// equal y. The stream's step is resolved here, once per call.
template <class T>
void apply_attention_dropout_mask(const RngStream& site_stream, uint64_t first, float p, const T* x,
                                  T* y, int64_t n) {
  const RngStream stream = site_stream.resolved();
  constexpr int64_t kChunk = 2048;  // elements: kChunk / 2 + 1 words
  const uint32_t threshold = attention_keep_threshold(p);
  const T scale = T{1} / (T{1} - static_cast<T>(p));
  uint32_t words[kChunk / 2 + 1];
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t len = std::min(kChunk, n - c);
    // Halves h0 .. h0 + len - 1 of the stream (dropout_mask.h's philox_half_index).
    const uint64_t h0 = philox_half_index(first + static_cast<uint64_t>(c));
    const uint64_t w0 = h0 >> 1;
    philox_fill(stream, w0, static_cast<int64_t>(((h0 + len - 1) >> 1) - w0 + 1), words);
    const T* in = x + c;
    T* out = y + c;
    for (int64_t i = 0; i < len; ++i) {
      const uint64_t h = h0 + static_cast<uint64_t>(i);
      out[i] = half_of(words[(h >> 1) - w0], h) >= threshold ? in[i] * scale : T{0};
    }
  }
}

}  // namespace electra::cpu
