// WordPiece vocabulary training (`electra build-vocab`).
//
// The corpus is basic-tokenized (basic_tokenizer.h) and its words counted. Every word starts as its
// characters, the first as "c" and the others as continuations "##c". The alphabet (every such
// symbol) enters the vocabulary first, by decreasing frequency; then, as long as the vocabulary is
// below its size, the most frequent adjacent pair (a, b) (counts weighted by word frequency; ties:
// older symbols first) is merged into one symbol "a" + "b" without its "##" everywhere it occurs,
// as HF tokenizers' WordPieceTrainer does (BPE merges). Google's likelihood score
// count(ab) / (count(a) count(b)) is not used: on small corpora it prefers pairs of rare symbols. A
// pair seen fewer than min_frequency times is never merged. When the alphabet alone exceeds the
// size, only its most frequent symbols are kept (words with other characters become [UNK]).
//
// The vocabulary begins with the special tokens in BERT's order: [PAD], [unused0..N-1], [UNK],
// [CLS], [SEP], [MASK].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/basic_tokenizer.h"
#include "engine/thread_pool.h"

namespace electra::data {

struct VocabTrainerOptions {
  size_t vocab_size = 30522;
  uint64_t min_frequency = 2;
  size_t unused_tokens = 0;  // [unusedK] placeholders after [PAD]
  bool lowercase = true;
  bool progress = false;  // progress lines on stderr
};

// Word frequencies of basic-tokenized text.
class WordCounter {
 public:
  explicit WordCounter(bool lowercase) : lowercase_(lowercase), basic_(lowercase) {}
  void add(std::string_view text);
  // Reads every line of every file (expand_text_inputs order) on `pool`'s threads. The reading
  // (and decompressing) is the calling thread's; the lines are gathered into blocks of
  // kBlockBytes, each block cut into kPieces contiguous line ranges that tasks normalise, split
  // and count into per-piece tables by word hash shard, then kShards tasks add the pieces' tables
  // into the counts in piece order. The partition depends on the text only, and the counts are
  // sums of integers: they are the same at any thread count.
  void add_files(const std::vector<std::string>& files, bool progress, ThreadPool& pool);
  const std::unordered_map<std::string, uint64_t>& counts() const { return counts_; }

  static constexpr size_t kBlockBytes = size_t{4} << 20;
  static constexpr int64_t kPieces = 32, kShards = 32;

 private:
  using Counts = std::unordered_map<std::string, uint64_t>;
  // Counts the lines of block_ (their ends in line_ends_) into shards_.
  void count_block(ThreadPool& pool);

  bool lowercase_;
  BasicTokenizer basic_;
  WordList words_;
  Counts counts_;
  std::string block_;
  std::vector<size_t> line_ends_;
  std::vector<Counts> shards_;  // [kShards] of add_files, added into counts_ at its end
};

// Throws UserError unless vocab_size holds the special tokens (unused_tokens of them included) and
// at least one more. Cheap: call it before reading a corpus (and before building the unused
// tokens, which a size like --unused 100000000000 would take minutes and gigabytes to build).
void validate_vocab_options(const VocabTrainerOptions& options);

// The vocabulary's tokens in id order. Validates the options first (validate_vocab_options).
std::vector<std::string> train_wordpiece_vocab(
    const std::unordered_map<std::string, uint64_t>& word_counts,
    const VocabTrainerOptions& options);

}  // namespace electra::data
