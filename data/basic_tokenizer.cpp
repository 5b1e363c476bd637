#include "data/basic_tokenizer.h"

#include <utf8proc.h>

#include <array>

#include "data/utf8.h"
#include "engine/error.h"

namespace electra::data {
namespace {

enum class Ascii : uint8_t { kDrop, kSpace, kPunct, kChar };

constexpr std::array<Ascii, 128> make_ascii_classes() {
  std::array<Ascii, 128> c{};
  for (int b = 0; b < 128; ++b) {
    if (b == '\t' || b == '\n' || b == '\r' || b == ' ') {
      c[b] = Ascii::kSpace;
    } else if (b < 0x20 || b == 0x7F) {
      c[b] = Ascii::kDrop;
    } else if ((b >= 33 && b <= 47) || (b >= 58 && b <= 64) || (b >= 91 && b <= 96) ||
               (b >= 123 && b <= 126)) {
      c[b] = Ascii::kPunct;
    } else {
      c[b] = Ascii::kChar;
    }
  }
  return c;
}
constexpr std::array<Ascii, 128> kAscii = make_ascii_classes();

inline void end_word(WordList& out) {
  const auto end = static_cast<uint32_t>(out.bytes.size());
  if (end != (out.ends.empty() ? 0u : out.ends.back())) out.ends.push_back(end);
}

inline void append(char32_t cp, WordList& out) {
  char buf[4];
  out.bytes.append(buf, static_cast<size_t>(encode_utf8(cp, buf)));
}

bool is_other(utf8proc_category_t cat) {
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CN;
}

bool is_space(utf8proc_category_t cat) {
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_punctuation(char32_t cp, utf8proc_category_t cat) {
  if (cp < 128) return kAscii[cp] == Ascii::kPunct;
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

utf8proc_category_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

}  // namespace

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void BasicTokenizer::add_code_point(char32_t cp, WordList& out) const {
  const utf8proc_category_t cat = category(cp);
  if (cp == kReplacementChar || is_other(cat)) return;
  if (is_space(cat)) {
    end_word(out);
    return;
  }
  const bool cjk = is_cjk_ideograph(cp);
  if (cjk) end_word(out);
  // Normalise: NFD, drop Mn, lowercase; then each resulting character is classified again,
  // because the pre-tokenizer sees the normalised text (U+1FEF decomposes to '`', a punctuation).
  utf8proc_int32_t decomposed[16];
  utf8proc_ssize_t n = 1;
  decomposed[0] = static_cast<utf8proc_int32_t>(cp);
  if (lowercase_) {
    int boundclass = 0;
    n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), decomposed, 16,
                                UTF8PROC_DECOMPOSE, &boundclass);
    ELECTRA_CHECK(n >= 1 && n <= 16, "utf8proc_decompose_char(", static_cast<uint32_t>(cp),
                  ") returned ", n);
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) {
    char32_t d = static_cast<char32_t>(decomposed[k]);
    if (lowercase_) {
      if (category(d) == UTF8PROC_CATEGORY_MN) continue;
      d = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(d)));
    }
    const utf8proc_category_t dcat = category(d);
    if (is_punctuation(d, dcat)) {
      end_word(out);
      append(d, out);
      end_word(out);
    } else if (is_space(dcat)) {
      end_word(out);
    } else {
      append(d, out);
    }
  }
  if (cjk) end_word(out);
}

size_t BasicTokenizer::split(std::string_view text, WordList& out) const {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t invalid = 0;
  size_t i = 0;
  end_word(out);  // words never continue across calls
  while (i < n) {
    const unsigned char b = s[i];
    if (b < 0x80) {
      switch (kAscii[b]) {
        case Ascii::kChar:
          out.bytes.push_back(static_cast<char>(lowercase_ && b >= 'A' && b <= 'Z' ? b + 32 : b));
          break;
        case Ascii::kSpace:
          end_word(out);
          break;
        case Ascii::kPunct:
          end_word(out);
          out.bytes.push_back(static_cast<char>(b));
          end_word(out);
          break;
        case Ascii::kDrop:
          break;
      }
      ++i;
      continue;
    }
    bool bad = false;
    const char32_t cp = decode_utf8(s, n, i, &bad);
    if (bad) {
      ++invalid;
      continue;
    }
    add_code_point(cp, out);
  }
  end_word(out);
  return invalid;
}

bool is_blank_line(std::string_view line) {
  const auto* s = reinterpret_cast<const unsigned char*>(line.data());
  size_t i = 0;
  while (i < line.size()) {
    const unsigned char b = s[i];
    if (b < 0x80) {
      // Python's str.strip() removes \t \n \v \f \r, \x1c-\x1f and space.
      if (!(b == ' ' || (b >= '\t' && b <= '\r') || (b >= 0x1C && b <= 0x1F))) return false;
      ++i;
      continue;
    }
    bool bad = false;
    const char32_t cp = decode_utf8(s, line.size(), i, &bad);
    if (bad || !(cp == 0x85 || is_space(category(cp)))) return false;
  }
  return true;
}

}  // namespace electra::data
