// Text input of the vocabulary trainer and the data builder: .txt or zstd-compressed .txt.zst
// files, or directories of them, read as lines (one paragraph or sentence per line, a blank line
// between documents).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace electra::data {

// Every file named, and every *.txt / *.txt.zst file under each directory named (recursively), in
// sorted order (the order that numbers documents). Throws UserError for a path that does not exist
// or when no input file is found.
std::vector<std::string> expand_text_inputs(const std::vector<std::string>& paths);

// Sum of the on-disk sizes of `files` (the denominator of progress reports).
uint64_t total_file_bytes(const std::vector<std::string>& files);

// Streams the lines of one file, decompressing .zst on the fly. Lines end at '\n', which is not
// part of the line; a last line without '\n' is still returned. Errors (unreadable file, corrupt or
// truncated zstd stream) are UserErrors naming the file.
class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, valid until the next call; false at the end of the file.
  bool next(std::string_view& line);

  uint64_t file_bytes_read() const { return file_bytes_; }  // compressed bytes for .zst
  uint64_t text_bytes_read() const { return text_bytes_; }
  const std::string& path() const { return path_; }

 private:
  // Appends more text to buf_; false at the end of the input.
  bool fill();

  std::string path_;
  std::FILE* file_ = nullptr;
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;  // null for plain text
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t file_bytes_ = 0;
  uint64_t text_bytes_ = 0;
};

}  // namespace electra::data
