// Fuzz harness: the SQuAD JSON reader (data/squad.h), in training mode (one answer per
// question, answers located in the context) and evaluation mode (the first byte decides).
#include <string_view>

#include "data/squad.h"
#include "engine/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  electra::SquadReadOptions options;
  options.training = data[0] % 2 == 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    electra::parse_squad(text, "fuzz.json", options);
  } catch (const electra::UserError&) {
  }
  return 0;
}
