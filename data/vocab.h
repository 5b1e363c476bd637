// A WordPiece vocabulary: the standard vocab.txt, one token per line, the line number (0-based)
// being the id. Continuation pieces start with "##". The five BERT special tokens must be present.
//
// hash() is FNV-1a 64 over the file's bytes (for a Vocab built in memory: over the bytes save()
// writes), so a shard records which vocabulary produced its ids and a reader can refuse another.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/token_table.h"

namespace electra::data {

inline constexpr std::string_view kPadToken = "[PAD]";
inline constexpr std::string_view kUnkToken = "[UNK]";
inline constexpr std::string_view kClsToken = "[CLS]";
inline constexpr std::string_view kSepToken = "[SEP]";
inline constexpr std::string_view kMaskToken = "[MASK]";
inline constexpr std::string_view kContinuationPrefix = "##";

class Vocab {
 public:
  // Throws UserError naming the file (and line) for: unreadable or empty file, an empty line, a
  // duplicate token, a missing special token.
  static Vocab load(const std::string& path);
  // The same checks; `source` names the tokens' origin in error messages.
  static Vocab from_tokens(const std::vector<std::string>& tokens, const std::string& source);

  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  // Writes one token per line (to a temporary file, then renamed).
  void save(const std::string& path) const;

  size_t size() const { return tokens_.size(); }
  std::string_view token(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  // The id of an exact token ("##ing" included), or -1.
  int32_t find(std::string_view token) const;
  // WordPiece lookups: a word-initial piece, or a continuation piece given WITHOUT its "##".
  int32_t find_initial(std::string_view piece) const { return initial_.find(piece); }
  int32_t find_continuation(std::string_view piece) const { return continuation_.find(piece); }
  // The longest piece in bytes (continuations counted without "##"): no longer match can exist.
  size_t max_piece_bytes() const { return max_piece_bytes_; }

  uint64_t hash() const { return hash_; }
  const std::string& source() const { return source_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t mask_id() const { return mask_id_; }

 private:
  Vocab() = default;
  // `bytes` holds the tokens, each followed by '\n' (the canonical file content).
  static Vocab build(std::string bytes, const std::vector<size_t>& line_numbers,
                     const std::string& source);

  std::unique_ptr<char[]> storage_;  // token bytes; the views below point into it
  std::vector<std::string_view> tokens_;
  TokenTable initial_;       // every token, looked up whole
  TokenTable continuation_;  // "##x" tokens, keyed by "x"
  size_t max_piece_bytes_ = 0;
  uint64_t hash_ = 0;
  std::string source_;
  int32_t pad_id_ = -1, unk_id_ = -1, cls_id_ = -1, sep_id_ = -1, mask_id_ = -1;
};

}  // namespace electra::data
