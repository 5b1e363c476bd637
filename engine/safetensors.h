// safetensors I/O (the format HF transformers reads and writes):
//   [u64 little-endian N][N bytes of JSON header, space padded][data]
// header: {"<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
//          "__metadata__": {"key": "value", ...}}; offsets are relative to the start of the data.
//
// Reading validates everything a hostile or truncated file could get wrong and throws UserError
// naming the file and the tensor. Writing goes to a temporary file in the same directory, is
// flushed to disk and renamed over the target, so an interrupted or failed write (full disk)
// never leaves a half-written file behind nor touches the previous one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace electra {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as in the file: F32, F16, BF16, F64, I64, I32, U16, ...
  std::vector<int64_t> shape;
  size_t offset = 0;  // into the data section
  size_t nbytes = 0;

  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file; throws UserError naming the file on any problem.
  static SafetensorsFile read(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The entry called `name`, or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;
  const uint8_t* data(const SafetensorsEntry& entry) const { return data_.data() + entry.offset; }

  // Converts a floating-point entry (F32, F64, F16, BF16) to f32 into `out` (numel values).
  void read_f32(const SafetensorsEntry& entry, float* out) const;

 private:
  std::string path_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::vector<uint8_t> data_;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;  // CPU tensor; f32, f64, bf16, f16, i32 or u16
};

// Writes the tensors (in the given order) atomically to `path`. Throws UserError naming the path
// when the directory is missing or the write fails; the previous file at `path` is kept then.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes `contents` to `path` through a temporary file and a rename (the same guarantees).
void write_file_atomic(const std::string& path, const std::string& contents);

// Throws UserError "<path>: tensor '<name>' holds a non-finite value (<v>) at index i" unless all
// n values are finite: a checkpoint with NaN or Inf is refused when written and when read.
void require_finite(const std::string& path, const std::string& name, const float* values,
                    int64_t n);

// safetensors' dtype string for a DType ("F32", "BF16", ...).
const char* safetensors_dtype(DType dtype);

}  // namespace electra
