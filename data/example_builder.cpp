#include "data/example_builder.h"

#include <algorithm>

#include "engine/error.h"

namespace electra::data {

ExampleBuilder::ExampleBuilder(const Vocab& vocab, uint32_t seq_len, uint64_t seed)
    : seq_len_(seq_len),
      seed_(seed),
      pad_(static_cast<uint16_t>(vocab.pad_id())),
      cls_(static_cast<uint16_t>(vocab.cls_id())),
      sep_(static_cast<uint16_t>(vocab.sep_id())) {
  ELECTRA_USER_CHECK(seq_len >= 8, "seq_len must be at least 8, got ", seq_len);
  ELECTRA_USER_CHECK(vocab.size() <= 65536, "vocabulary '", vocab.source(), "' has ", vocab.size(),
                     " tokens; shards store uint16 ids (at most 65536)");
}

uint32_t ExampleBuilder::draw_target(Draws& rng) const {
  // Python's random.randint(5, seq_len) is inclusive at both ends.
  if (rng.uniform() < 0.05f) return 5 + rng.below(seq_len_ - 4);
  return seq_len_;
}

void ExampleBuilder::make_example(const DocumentTokens& doc, size_t first, size_t last,
                                  uint32_t target, Draws& rng, std::vector<uint16_t>& out) {
  const size_t first_target = rng.uniform() < 0.1f ? 100000 : (target - 3) / 2;
  a_.clear();
  b_.clear();
  for (size_t s = first; s < last; ++s) {
    const uint32_t begin = s == 0 ? 0 : doc.ends[s - 1];
    const size_t len = doc.ends[s] - begin;
    const bool to_a = a_.empty() || a_.size() + len < first_target ||
                      (b_.empty() && a_.size() < first_target && rng.uniform() < 0.5f);
    auto& seg = to_a ? a_ : b_;
    seg.insert(seg.end(), doc.tokens.begin() + begin, doc.tokens.begin() + doc.ends[s]);
  }
  a_.resize(std::min<size_t>(a_.size(), seq_len_ - 2));
  const size_t room_b = seq_len_ >= a_.size() + 3 ? seq_len_ - a_.size() - 3 : 0;
  b_.resize(std::min(b_.size(), room_b));
  const size_t start = out.size();
  out.push_back(cls_);
  out.insert(out.end(), a_.begin(), a_.end());
  out.push_back(sep_);
  if (!b_.empty()) {
    out.insert(out.end(), b_.begin(), b_.end());
    out.push_back(sep_);
  }
  out.resize(start + seq_len_, pad_);
}

size_t ExampleBuilder::build(const DocumentTokens& doc, uint64_t doc_index,
                             std::vector<uint16_t>& out) {
  ELECTRA_CHECK(doc_index < (1ull << 32), "document index ", doc_index, " exceeds 2^32");
  Draws rng{RngStream{seed_, RngPurpose::kBuilder, 0, 0}, doc_index << 32};
  uint32_t target = draw_target(rng);
  size_t made = 0, first = 0, length = 0;
  for (size_t s = 0; s < doc.ends.size(); ++s) {
    length += doc.ends[s] - (s == 0 ? 0 : doc.ends[s - 1]);
    if (length >= target) {
      make_example(doc, first, s + 1, target, rng, out);
      ++made;
      first = s + 1;
      length = 0;
      target = draw_target(rng);
    }
  }
  if (length > 0) {  // the document's end flushes what has accumulated
    make_example(doc, first, doc.ends.size(), target, rng, out);
    ++made;
  }
  return made;
}

}  // namespace electra::data
