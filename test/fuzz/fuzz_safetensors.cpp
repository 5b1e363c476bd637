// Fuzz harness: the safetensors reader (engine/safetensors.h), and f32 conversion of every
// floating-point tensor it accepts.
#include <vector>

#include "engine/error.h"
#include "engine/safetensors.h"
#include "test/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = electra::fuzz::write_input(data, size, ".safetensors");
  try {
    const electra::SafetensorsFile file = electra::SafetensorsFile::read(path);
    std::vector<float> values;
    for (const electra::SafetensorsEntry& e : file.entries()) {
      if (e.dtype != "F32" && e.dtype != "F64" && e.dtype != "F16" && e.dtype != "BF16") continue;
      values.resize(static_cast<size_t>(e.numel()));
      file.read_f32(e, values.data());
    }
  } catch (const electra::UserError&) {
  }
  return 0;
}
