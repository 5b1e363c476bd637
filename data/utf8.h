// UTF-8 decoding with replacement of ill-formed sequences, as Python's bytes.decode("utf-8",
// errors="replace") does: each maximal subpart of an ill-formed sequence (Unicode 15, section 3.9,
// "U+FFFD substitution of maximal subparts") becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>

namespace electra::data {

constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes the code point starting at s[i] (i < n) and advances i past it. An ill-formed sequence
// yields kReplacementChar, advances past its maximal subpart (at least one byte) and sets *invalid.
inline char32_t decode_utf8(const unsigned char* s, size_t n, size_t& i, bool* invalid) {
  const unsigned char b0 = s[i];
  *invalid = false;
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    ++i;  // a continuation byte or a byte that never starts a sequence (C0, C1, F5..FF)
    *invalid = true;
    return kReplacementChar;
  }
  size_t j = i + 1;
  for (int k = 1; k < len; ++k, ++j) {
    const unsigned char b = j < n ? s[j] : 0;
    const bool ok = j < n && (k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF));
    if (!ok) {
      i = j;  // the maximal subpart is everything valid so far
      *invalid = true;
      return kReplacementChar;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i = j;
  return cp;
}

// Appends the UTF-8 encoding of a valid code point to out (which must have room for 4 bytes);
// returns the number of bytes written.
inline int encode_utf8(char32_t cp, char* out) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace electra::data
