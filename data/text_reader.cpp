#include "data/text_reader.h"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/error.h"
#include "engine/input_file.h"

namespace electra::data {
namespace fs = std::filesystem;

namespace {

bool is_text_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".txt") || name.ends_with(".txt.zst");
}

constexpr size_t kChunk = 1 << 20;

}  // namespace

std::vector<std::string> expand_text_inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    ELECTRA_USER_CHECK(!ec && fs::exists(st), "input '", p, "' does not exist");
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(p)) {
        if (entry.is_regular_file() && is_text_file(entry.path())) {
          found.push_back(entry.path().string());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(p);
    }
  }
  ELECTRA_USER_CHECK(!files.empty(), "no input files (.txt or .txt.zst) found in the inputs given");
  return files;
}

uint64_t total_file_bytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (!ec) total += size;
  }
  return total;
}

struct LineReader::Zstd {
  ZSTD_DCtx* ctx = nullptr;
  std::string in;
  ZSTD_inBuffer input{nullptr, 0, 0};
  size_t last_result = 0;  // 0 when the last frame was complete
  ~Zstd() { ZSTD_freeDCtx(ctx); }
};

LineReader::LineReader(const std::string& path) : path_(path) {
  require_regular_file(path, "text file");
  file_ = std::fopen(path.c_str(), "rb");
  ELECTRA_USER_CHECK(file_ != nullptr, "cannot open '", path, "': ", std::strerror(errno));
  if (path.ends_with(".zst")) {
    zstd_ = std::make_unique<Zstd>();
    zstd_->ctx = ZSTD_createDCtx();
    ELECTRA_CHECK(zstd_->ctx != nullptr, "ZSTD_createDCtx failed");
    zstd_->in.resize(ZSTD_DStreamInSize());
  }
}

LineReader::~LineReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool LineReader::fill() {
  if (eof_) return false;
  const size_t old = buf_.size();
  if (!zstd_) {
    buf_.resize(old + kChunk);
    const size_t got = std::fread(buf_.data() + old, 1, kChunk, file_);
    ELECTRA_USER_CHECK(!std::ferror(file_), "error reading '", path_, "'");
    buf_.resize(old + got);
    file_bytes_ += got;
    text_bytes_ += got;
    if (got == 0) eof_ = true;
    return got > 0;
  }
  Zstd& z = *zstd_;
  while (true) {
    if (z.input.pos == z.input.size) {
      const size_t got = std::fread(z.in.data(), 1, z.in.size(), file_);
      ELECTRA_USER_CHECK(!std::ferror(file_), "error reading '", path_, "'");
      file_bytes_ += got;
      if (got == 0) {
        eof_ = true;
        ELECTRA_USER_CHECK(z.last_result == 0, "'", path_,
                           "' is a truncated zstd stream (its last frame is incomplete)");
        return buf_.size() > old;
      }
      z.input = ZSTD_inBuffer{z.in.data(), got, 0};
    }
    buf_.resize(old + kChunk);
    ZSTD_outBuffer output{buf_.data() + old, kChunk, 0};
    z.last_result = ZSTD_decompressStream(z.ctx, &output, &z.input);
    ELECTRA_USER_CHECK(!ZSTD_isError(z.last_result), "'", path_,
                       "' is not a valid zstd stream: ", ZSTD_getErrorName(z.last_result));
    buf_.resize(old + output.pos);
    text_bytes_ += output.pos;
    if (output.pos > 0) return true;
  }
}

bool LineReader::next(std::string_view& line) {
  while (true) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      line = std::string_view(buf_).substr(pos_, nl - pos_);
      pos_ = nl + 1;
      return true;
    }
    // Keep the partial line, drop what was consumed, read more.
    buf_.erase(0, pos_);
    pos_ = 0;
    if (!fill()) {
      if (buf_.empty()) return false;
      line = buf_;
      pos_ = buf_.size();
      return true;
    }
  }
}

}  // namespace electra::data
