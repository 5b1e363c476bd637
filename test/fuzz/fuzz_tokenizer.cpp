// Fuzz harness: the WordPiece tokenizer (data/tokenizer.h) on arbitrary bytes (ill-formed UTF-8
// included), alone and as a pair split at the first tab, with test/fixtures/small_vocab.txt.
#include <string_view>

#include "data/tokenizer.h"
#include "data/vocab.h"
#include "engine/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const electra::data::Vocab vocab =
      electra::data::Vocab::load(ELECTRA_SOURCE_DIR "/test/fixtures/small_vocab.txt");
  static electra::data::Tokenizer lower(vocab, true), cased(vocab, false);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    lower.encode(text);
    const size_t tab = text.find('\t');
    const std::string_view a = text.substr(0, tab);
    const std::string_view b = tab == std::string_view::npos ? "" : text.substr(tab + 1);
    cased.encode_pair(a, b, 3 + size % 64);
    cased.encode_single(a, 2 + size % 16);
  } catch (const electra::UserError&) {
  }
  return 0;
}
