#include "data/vocab.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "data/fnv.h"
#include "engine/error.h"
#include "engine/input_file.h"
#include "engine/safetensors.h"

namespace electra::data {

Vocab Vocab::load(const std::string& path) {
  require_regular_file(path, "vocabulary file");
  std::ifstream in(path, std::ios::binary);
  ELECTRA_USER_CHECK(in.good(), "cannot open vocabulary file '", path, "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ELECTRA_USER_CHECK(!bytes.empty(), "vocabulary file '", path, "' is empty");
  // Canonicalise line endings (CRLF -> LF, final newline) but hash the file as it is on disk.
  std::string canonical;
  std::vector<size_t> line_numbers;
  size_t start = 0, line = 1;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    size_t stop = end;
    if (stop > start && bytes[stop - 1] == '\r') --stop;
    canonical.append(bytes, start, stop - start);
    canonical.push_back('\n');
    line_numbers.push_back(line++);
    start = end + 1;
  }
  Vocab vocab = build(std::move(canonical), line_numbers, path);
  vocab.hash_ = fnv1a64(bytes.data(), bytes.size());
  return vocab;
}

Vocab Vocab::from_tokens(const std::vector<std::string>& tokens, const std::string& source) {
  std::string bytes;
  std::vector<size_t> line_numbers;
  for (const auto& t : tokens) {
    ELECTRA_USER_CHECK(t.find('\n') == std::string::npos, source, ": token ", line_numbers.size(),
                       " contains a newline");
    bytes += t;
    bytes.push_back('\n');
    line_numbers.push_back(line_numbers.size() + 1);
  }
  return build(std::move(bytes), line_numbers, source);
}

Vocab Vocab::build(std::string bytes, const std::vector<size_t>& line_numbers,
                   const std::string& source) {
  ELECTRA_USER_CHECK(!line_numbers.empty(), "vocabulary '", source, "' is empty");
  Vocab v;
  v.source_ = source;
  v.hash_ = fnv1a64(bytes.data(), bytes.size());
  v.storage_ = std::make_unique<char[]>(bytes.size());
  std::memcpy(v.storage_.get(), bytes.data(), bytes.size());
  std::vector<std::pair<std::string_view, int32_t>> all, continuation;
  size_t start = 0;
  for (size_t i = 0; i < line_numbers.size(); ++i) {
    const size_t end = bytes.find('\n', start);
    const std::string_view token(v.storage_.get() + start, end - start);
    ELECTRA_USER_CHECK(!token.empty(), source, ":", line_numbers[i], ": empty token");
    v.tokens_.push_back(token);
    all.emplace_back(token, static_cast<int32_t>(i));
    start = end + 1;
  }
  // Duplicates are user errors: find them before the table (whose check is an invariant) does.
  std::unordered_map<std::string_view, size_t> first_line;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto [it, inserted] = first_line.emplace(all[i].first, line_numbers[i]);
    ELECTRA_USER_CHECK(inserted, source, ":", line_numbers[i], ": duplicate token '", all[i].first,
                       "' (first at line ", it->second, ")");
  }
  v.initial_.build(all);
  for (const auto& [token, id] : all) {
    if (token.size() > kContinuationPrefix.size() && token.starts_with(kContinuationPrefix)) {
      const std::string_view piece = token.substr(kContinuationPrefix.size());
      continuation.emplace_back(piece, id);
      v.max_piece_bytes_ = std::max(v.max_piece_bytes_, piece.size());
    } else {
      v.max_piece_bytes_ = std::max(v.max_piece_bytes_, token.size());
    }
  }
  v.continuation_.build(continuation);
  const auto special = [&](std::string_view name) {
    const int32_t id = v.initial_.find(name);
    ELECTRA_USER_CHECK(id >= 0, "vocabulary '", source, "' has no special token ", name);
    return id;
  };
  v.pad_id_ = special(kPadToken);
  v.unk_id_ = special(kUnkToken);
  v.cls_id_ = special(kClsToken);
  v.sep_id_ = special(kSepToken);
  v.mask_id_ = special(kMaskToken);
  return v;
}

int32_t Vocab::find(std::string_view token) const {
  return initial_.find(token);
}

void Vocab::save(const std::string& path) const {
  std::string text;
  for (const auto& t : tokens_) {
    text += t;
    text += '\n';
  }
  write_file_atomic(path, text);
}

}  // namespace electra::data
