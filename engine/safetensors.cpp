#include "engine/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/bf16.h"
#include "engine/error.h"
#include "engine/input_file.h"

namespace electra {

namespace {

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal half: value = mant * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mant) * 0x1.0p-24f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UserError(str_cat(path, ": not a valid safetensors file: ", what));
}

}  // namespace

int64_t SafetensorsEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::BF16:
      return "BF16";
    case DType::F16:
      return "F16";
    case DType::F64:
      return "F64";
    case DType::I32:
      return "I32";
    case DType::U16:
      return "U16";
  }
  return "?";
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  require_regular_file(path, "safetensors file");
  std::ifstream in(path, std::ios::binary);
  ELECTRA_USER_CHECK(in, path, ": cannot open (", std::strerror(errno), ")");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint8_t size_bytes[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(size_bytes), 8)) {
    fail(path, str_cat("file of ", file_size, " bytes is too short for a header"));
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | size_bytes[i];
  if (header_size > file_size - 8 || header_size > (uint64_t{100} << 20)) {
    fail(path, str_cat("header size ", header_size, " exceeds the file (", file_size, " bytes)"));
  }
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    fail(path, str_cat("header is not JSON (", e.what(), ")"));
  }
  if (!json.is_object()) fail(path, "header is not a JSON object");

  SafetensorsFile file;
  file.path_ = path;
  const uint64_t data_size = file_size - 8 - header_size;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(path, str_cat("metadata '", m.key(), "' is not a string"));
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const auto& spec = it.value();
    const std::string where = str_cat("tensor '", it.key(), "'");
    if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") ||
        !spec.contains("data_offsets")) {
      fail(path, where + " lacks dtype, shape or data_offsets");
    }
    SafetensorsEntry entry;
    entry.name = it.key();
    if (!spec["dtype"].is_string()) fail(path, where + ": dtype is not a string");
    entry.dtype = spec["dtype"].get<std::string>();
    const size_t element = dtype_bytes(entry.dtype);
    if (element == 0) fail(path, str_cat(where, ": unknown dtype '", entry.dtype, "'"));
    if (!spec["shape"].is_array()) fail(path, where + ": shape is not an array");
    // The element count and byte size come from the file: checked for overflow before use (a
    // shape [2^40, 2^40] must not wrap into a size that matches the data).
    uint64_t values = 1;
    for (const auto& d : spec["shape"]) {
      if (!d.is_number_unsigned()) fail(path, where + ": shape has a non-integer or negative dim");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(values, dim, &values) ||
          values > static_cast<uint64_t>(INT64_MAX)) {
        fail(path, where + ": shape has more elements than fit in 63 bits");
      }
      entry.shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(values, uint64_t{element}, &bytes)) {
      fail(path, where + ": shape's byte size overflows 64 bits");
    }
    const auto& offsets = spec["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail(path, where + ": data_offsets is not [begin, end]");
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      fail(path, str_cat(where, ": data [", begin, ", ", end, ") outside the ", data_size,
                         " bytes of data (truncated file?)"));
    }
    if (end - begin != bytes) {
      fail(path,
           str_cat(where, ": ", end - begin, " bytes for ", values, " ", entry.dtype, " values"));
    }
    entry.offset = begin;
    entry.nbytes = end - begin;
    file.entries_.push_back(std::move(entry));
  }
  // Tensors must not overlap (the format requires a dense, disjoint layout).
  std::vector<const SafetensorsEntry*> sorted;
  for (const auto& e : file.entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->offset < sorted[i - 1]->offset + sorted[i - 1]->nbytes) {
      fail(path,
           str_cat("tensors '", sorted[i - 1]->name, "' and '", sorted[i]->name, "' overlap"));
    }
  }
  file.data_.resize(data_size);
  if (!in.read(reinterpret_cast<char*>(file.data_.data()),
               static_cast<std::streamsize>(data_size))) {
    fail(path, "short read");
  }
  return file;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void SafetensorsFile::read_f32(const SafetensorsEntry& entry, float* out) const {
  const uint8_t* src = data(entry);
  const int64_t n = entry.numel();
  if (entry.dtype == "F32") {
    std::memcpy(out, src, entry.nbytes);
  } else if (entry.dtype == "F64") {
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  } else if (entry.dtype == "BF16" || entry.dtype == "F16") {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      out[i] = entry.dtype == "BF16" ? bf16_to_float(bf16{v}) : half_to_float(v);
    }
  } else {
    throw UserError(str_cat(path_, ": tensor '", entry.name, "' has dtype ", entry.dtype,
                            ", expected a floating-point type"));
  }
}

void require_finite(const std::string& path, const std::string& name, const float* values,
                    int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    ELECTRA_USER_CHECK(std::isfinite(values[i]), path, ": tensor '", name,
                       "' holds a non-finite value (", values[i], ") at index ", i,
                       "; a model or optimizer state with NaN or Inf is refused");
  }
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  ELECTRA_USER_CHECK(fs::is_directory(dir), path, ": directory ", dir.string(), " does not exist");
  const std::string temp = str_cat(path, ".tmp.", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ELECTRA_USER_CHECK(fd >= 0, path, ": cannot create ", temp, " (", std::strerror(errno), ")");
  size_t written = 0;
  int error = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temp.c_str());
    throw UserError(str_cat(path, ": write failed (", std::strerror(error),
                            "); the previous file, if any, is unchanged"));
  }
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    ELECTRA_CHECK(t.device == Device::CPU, "write_safetensors: '", name, "' is on ", t.str());
    ELECTRA_CHECK(!header.contains(name), "write_safetensors: duplicate tensor '", name, "'");
    std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + t.rank);
    header[name] = {{"dtype", safetensors_dtype(t.dtype)},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::string contents;
  contents.reserve(8 + json.size() + offset);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) contents.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  contents += json;
  for (const auto& named : tensors) {
    contents.append(static_cast<const char*>(named.tensor.data), named.tensor.nbytes());
  }
  write_file_atomic(path, contents);
}

}  // namespace electra
