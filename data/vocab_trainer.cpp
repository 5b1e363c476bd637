#include "data/vocab_trainer.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <tuple>

#include "data/text_reader.h"
#include "data/vocab.h"
#include "engine/error.h"
#include "engine/timer.h"

namespace electra::data {

void WordCounter::add(std::string_view text) {
  words_.clear();
  basic_.split(text, words_);
  for (size_t i = 0; i < words_.size(); ++i) {
    const std::string_view w = words_[i];
    auto it = counts_.find(std::string(w));
    if (it == counts_.end()) {
      counts_.emplace(std::string(w), 1);
    } else {
      ++it->second;
    }
  }
}

void WordCounter::count_block(ThreadPool& pool) {
  // Piece p: lines [n p / P, n (p + 1) / P) of the block; its words go to table [p][shard].
  struct Piece {
    WordList words;
    std::vector<Counts> tables = std::vector<Counts>(kShards);
  };
  std::vector<Piece> pieces(kPieces);
  const int64_t lines = static_cast<int64_t>(line_ends_.size());
  pool.parallel_for(kPieces, [&](int64_t p) {
    const BasicTokenizer basic(lowercase_);
    Piece& piece = pieces[static_cast<size_t>(p)];
    const std::string_view block(block_);
    for (int64_t l = lines * p / kPieces; l < lines * (p + 1) / kPieces; ++l) {
      const size_t begin = l == 0 ? 0 : line_ends_[static_cast<size_t>(l - 1)];
      piece.words.clear();
      basic.split(block.substr(begin, line_ends_[static_cast<size_t>(l)] - begin), piece.words);
      for (size_t i = 0; i < piece.words.size(); ++i) {
        const std::string_view w = piece.words[i];
        ++piece.tables[std::hash<std::string_view>{}(w) % kShards][std::string(w)];
      }
    }
  });
  pool.parallel_for(kShards, [&](int64_t s) {
    Counts& shard = shards_[static_cast<size_t>(s)];
    for (Piece& piece : pieces) {
      for (const auto& [word, count] : piece.tables[static_cast<size_t>(s)]) shard[word] += count;
    }
  });
  block_.clear();
  line_ends_.clear();
}

void WordCounter::add_files(const std::vector<std::string>& files, bool progress,
                            ThreadPool& pool) {
  Stopwatch clock;
  double last = 0;
  uint64_t bytes = 0;
  shards_.assign(kShards, Counts());
  auto report = [&](uint64_t read) {
    if (!progress || clock.seconds() - last < 2.0) return;
    last = clock.seconds();
    size_t distinct = counts_.size();
    for (const Counts& shard : shards_) distinct += shard.size();
    std::fprintf(stderr, "build-vocab: counting words: %.1f MB read, %zu distinct words\n",
                 static_cast<double>(read) / 1e6, distinct);
  };
  for (const auto& file : files) {
    LineReader reader(file);
    std::string_view line;
    while (reader.next(line)) {
      block_.append(line);
      line_ends_.push_back(block_.size());
      if (block_.size() < kBlockBytes) continue;
      count_block(pool);
      report(bytes + reader.text_bytes_read());
    }
    bytes += reader.text_bytes_read();
  }
  if (!line_ends_.empty()) count_block(pool);
  // The shards hold disjoint words; merge() moves those counts_ lacks (all but words add() saw).
  for (Counts& shard : shards_) {
    counts_.merge(shard);
    for (const auto& [word, count] : shard) counts_[word] += count;
  }
  shards_.clear();
}

namespace {

using Pair = uint64_t;  // (a << 32) | b
inline Pair make_pair_key(uint32_t a, uint32_t b) {
  return (static_cast<uint64_t>(a) << 32) | b;
}

struct Word {
  std::vector<uint32_t> symbols;
  uint64_t count;
};

struct Candidate {
  double score;
  uint64_t count;
  uint32_t a, b;
  // Max-heap order: best score, then larger count, then older (smaller) symbol ids.
  bool operator<(const Candidate& o) const {
    return std::tie(score, count, o.a, o.b) < std::tie(o.score, o.count, a, b);
  }
};

class Trainer {
 public:
  Trainer(const std::unordered_map<std::string, uint64_t>& word_counts,
          const VocabTrainerOptions& options, size_t budget)
      : options_(options), budget_(budget) {
    build_alphabet(word_counts);
  }

  std::vector<std::string> run() {
    for (size_t w = 0; w < words_.size(); ++w) add_word_pairs(static_cast<uint32_t>(w), true);
    for (const auto& [pair, count] : pair_count_) push(pair);
    Stopwatch clock;
    double last = 0;
    while (vocab_.size() < budget_ && !heap_.empty()) {
      const Candidate c = heap_.top();
      heap_.pop();
      const Pair pair = make_pair_key(c.a, c.b);
      const auto it = pair_count_.find(pair);
      if (it == pair_count_.end() || it->second != c.count || score(c.a, c.b) != c.score) {
        continue;  // stale: a fresher entry was pushed when its numbers changed
      }
      merge(c.a, c.b);
      if (options_.progress && clock.seconds() - last >= 2.0) {
        last = clock.seconds();
        std::fprintf(stderr, "build-vocab: %zu / %zu tokens\n", vocab_.size(), budget_);
      }
    }
    return vocab_;
  }

 private:
  uint32_t symbol(const std::string& name) {
    const auto [it, inserted] = symbol_ids_.emplace(name, static_cast<uint32_t>(names_.size()));
    if (inserted) {
      names_.push_back(name);
      symbol_count_.push_back(0);
      symbol_pairs_.emplace_back();
    }
    return it->second;
  }

  void build_alphabet(const std::unordered_map<std::string, uint64_t>& word_counts) {
    // Deterministic word order whatever the hash map's iteration order.
    std::vector<std::pair<std::string_view, uint64_t>> sorted(word_counts.begin(),
                                                              word_counts.end());
    std::sort(sorted.begin(), sorted.end());
    std::unordered_map<std::string, uint64_t> char_freq;
    std::vector<std::vector<std::string>> chars(sorted.size());
    for (size_t w = 0; w < sorted.size(); ++w) {
      const std::string_view word = sorted[w].first;
      for (size_t i = 0; i < word.size();) {
        size_t j = i + 1;
        while (j < word.size() && (static_cast<unsigned char>(word[j]) & 0xC0) == 0x80) ++j;
        std::string sym =
            (i == 0 ? "" : std::string(kContinuationPrefix)) + std::string(word.substr(i, j - i));
        char_freq[sym] += sorted[w].second;
        chars[w].push_back(std::move(sym));
        i = j;
      }
    }
    std::vector<std::pair<std::string, uint64_t>> alphabet(char_freq.begin(), char_freq.end());
    std::sort(alphabet.begin(), alphabet.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    if (alphabet.size() > budget_) alphabet.resize(budget_);
    for (const auto& [name, freq] : alphabet) {
      symbol(name);
      vocab_.push_back(name);
    }
    for (size_t w = 0; w < sorted.size(); ++w) {
      Word word{{}, sorted[w].second};
      bool known = true;
      for (const auto& c : chars[w]) {
        const auto it = symbol_ids_.find(c);
        if (it == symbol_ids_.end()) {
          known = false;
          break;
        }
        word.symbols.push_back(it->second);
      }
      if (!known) continue;
      for (uint32_t s : word.symbols) symbol_count_[s] += word.count;
      words_.push_back(std::move(word));
    }
    merge_stamp_.assign(words_.size(), 0);
  }

  // Merge priority: the pair's count (frequency-based merges, as HF tokenizers' WordPieceTrainer,
  // which trains BPE merges). The likelihood score count(ab) / (count(a) count(b)) of Google's
  // WordPiece favours pairs of rare symbols: on a corpus of a few MB it spent the budget on digit
  // strings and left out "the" and "and", so words became character pieces.
  double score(uint32_t a, uint32_t b) const {
    return static_cast<double>(pair_count_.at(make_pair_key(a, b)));
  }

  void push(Pair pair) {
    const auto it = pair_count_.find(pair);
    if (it == pair_count_.end() || it->second < options_.min_frequency) return;
    const auto a = static_cast<uint32_t>(pair >> 32), b = static_cast<uint32_t>(pair);
    heap_.push(Candidate{score(a, b), it->second, a, b});
  }

  // Adds (or removes) the word's adjacent pairs to the pair statistics.
  void add_word_pairs(uint32_t w, bool add, std::vector<Pair>* touched = nullptr) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const Pair p = make_pair_key(word.symbols[i], word.symbols[i + 1]);
      if (add) {
        auto [it, inserted] = pair_count_.emplace(p, 0);
        it->second += word.count;
        if (inserted) {
          symbol_pairs_[word.symbols[i]].push_back(p);
          symbol_pairs_[word.symbols[i + 1]].push_back(p);
        }
        pair_words_[p].push_back(w);
      } else {
        auto it = pair_count_.find(p);
        it->second -= word.count;
        if (it->second == 0) pair_count_.erase(it);
      }
      if (touched) touched->push_back(p);
    }
  }

  void merge(uint32_t a, uint32_t b) {
    const std::string& nb = names_[b];
    const std::string merged = names_[a] + nb.substr(nb.starts_with(kContinuationPrefix) ? 2 : 0);
    const bool is_new = symbol_ids_.count(merged) == 0;
    const uint32_t ab = symbol(merged);
    if (is_new) vocab_.push_back(merged);
    ++merges_;
    std::vector<Pair> touched;
    std::vector<uint32_t> words = std::move(pair_words_[make_pair_key(a, b)]);
    pair_words_.erase(make_pair_key(a, b));
    for (uint32_t w : words) {
      if (merge_stamp_[w] == merges_) continue;  // listed twice
      merge_stamp_[w] = merges_;
      Word& word = words_[w];
      auto& s = word.symbols;
      bool found = false;
      for (size_t i = 0; i + 1 < s.size(); ++i) found |= s[i] == a && s[i + 1] == b;
      if (!found) continue;  // stale entry: an earlier merge consumed the pair in this word
      add_word_pairs(w, false, &touched);
      size_t out = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          symbol_count_[a] -= word.count;
          symbol_count_[b] -= word.count;
          symbol_count_[ab] += word.count;
          s[out++] = ab;
          ++i;
        } else {
          s[out++] = s[i];
        }
      }
      s.resize(out);
      add_word_pairs(w, true, &touched);
    }
    // Every pair whose count or whose symbols' counts changed gets a fresh heap entry.
    for (uint32_t sym : {a, b}) {
      for (Pair p : symbol_pairs_[sym]) touched.push_back(p);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (Pair p : touched) push(p);
  }

  const VocabTrainerOptions& options_;
  size_t budget_;
  std::vector<std::string> vocab_;  // trained tokens (no special tokens)
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> symbol_ids_;
  std::vector<uint64_t> symbol_count_;
  std::vector<std::vector<Pair>> symbol_pairs_;  // pairs ever seen with the symbol
  std::vector<Word> words_;
  std::vector<uint64_t> merge_stamp_;
  uint64_t merges_ = 0;
  std::unordered_map<Pair, uint64_t> pair_count_;
  std::unordered_map<Pair, std::vector<uint32_t>> pair_words_;
  std::priority_queue<Candidate> heap_;
};

}  // namespace

void validate_vocab_options(const VocabTrainerOptions& options) {
  // [PAD], the unused tokens, [UNK], [CLS], [SEP], [MASK]; compared without forming the sum, which
  // could wrap for a huge --unused.
  ELECTRA_USER_CHECK(
      options.unused_tokens < options.vocab_size && options.vocab_size - options.unused_tokens > 5,
      "--unused ", options.unused_tokens,
      " and the 5 special tokens leave no room for other tokens in --vocab-size ",
      options.vocab_size);
}

std::vector<std::string> train_wordpiece_vocab(
    const std::unordered_map<std::string, uint64_t>& word_counts,
    const VocabTrainerOptions& options) {
  validate_vocab_options(options);
  std::vector<std::string> vocab{std::string(kPadToken)};
  for (size_t i = 0; i < options.unused_tokens; ++i) vocab.push_back(str_cat("[unused", i, "]"));
  for (auto t : {kUnkToken, kClsToken, kSepToken, kMaskToken}) vocab.emplace_back(t);
  ELECTRA_USER_CHECK(!word_counts.empty(), "the corpus has no words to train a vocabulary on");
  Trainer trainer(word_counts, options, options.vocab_size - vocab.size());
  for (auto& t : trainer.run()) vocab.push_back(std::move(t));
  return vocab;
}

}  // namespace electra::data
