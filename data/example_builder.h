// The official ELECTRA pre-training example builder (google-research/electra,
// build_pretraining_dataset.py, ExampleBuilder), one document at a time:
//   - sentences (tokenized lines) accumulate until their length reaches the target length, or the
//     document ends; then an example is made from them and the accumulation restarts;
//   - the target length is seq_len, or with probability 0.05 a uniform integer in [5, seq_len],
//     drawn again after every example;
//   - with probability 0.1 the example has one segment (first-segment target 100000), else the
//     first-segment target is (target - 3) / 2: a sentence joins segment A if A is empty, or if it
//     keeps A below that target, or (while B is empty and A is below the target) with probability
//     0.5; every other sentence joins B;
//   - A is cut to seq_len - 2 tokens, B to seq_len - |A| - 3; the record is
//     [CLS] A [SEP] (B [SEP] when B is not empty), padded with [PAD] to seq_len.
// Tokens beyond the cut are dropped, as in the official code.
//
// Randomness: Philox stream (seed, kBuilder) with element index (document << 32) + draw: every draw
// is a function of the document's global index, not of the thread that builds it. The official
// code carries the target length across documents; here each document starts with a fresh draw
// (same distribution), which is what makes documents independent.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/vocab.h"
#include "engine/philox.h"

namespace electra::data {

// One document's tokens: sentence i is tokens[ends[i-1] (or 0), ends[i]).
struct DocumentTokens {
  std::vector<int32_t> tokens;
  std::vector<uint32_t> ends;
  void clear() {
    tokens.clear();
    ends.clear();
  }
};

class ExampleBuilder {
 public:
  // seq_len >= 8; the vocabulary's ids must fit in uint16 (UserError otherwise).
  ExampleBuilder(const Vocab& vocab, uint32_t seq_len, uint64_t seed);

  // Appends the records (seq_len ids each) of document `doc_index` to `out`; returns their number.
  size_t build(const DocumentTokens& doc, uint64_t doc_index, std::vector<uint16_t>& out);

 private:
  struct Draws {
    RngStream stream;
    uint64_t base;
    uint64_t count = 0;
    float uniform() { return uniform01(stream.bits(base + count++)); }
    uint32_t below(uint32_t n) { return uniform_below(stream.bits(base + count++), n); }
  };
  uint32_t draw_target(Draws& rng) const;
  // Makes one record from the sentences [first, last) of `doc`.
  void make_example(const DocumentTokens& doc, size_t first, size_t last, uint32_t target,
                    Draws& rng, std::vector<uint16_t>& out);

  uint32_t seq_len_;
  uint64_t seed_;
  uint16_t pad_, cls_, sep_;
  std::vector<int32_t> a_, b_;  // segment scratch
};

}  // namespace electra::data
