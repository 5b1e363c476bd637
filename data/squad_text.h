// Unicode helpers for SQuAD: SQuAD counts characters (answer_start, char_to_word_offset) in code
// points, as Python does, so texts are decoded from UTF-8 before they are indexed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace electra {

// Code points of a UTF-8 string; throws UserError("<what>: invalid UTF-8 at byte N").
std::vector<char32_t> decode_utf8(std::string_view text, std::string_view what);

void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(const std::vector<char32_t>& cps, size_t begin, size_t end);

// The run_squad document whitespace: space, tab, CR, LF and U+202F (narrow no-break space).
bool is_squad_whitespace(char32_t cp);

// Python's str.isspace() (Unicode White_Space minus a few, plus the ASCII separators 0x1C-0x1F).
bool is_python_space(char32_t cp);

// Python's str.isalnum(): Unicode letters (L*) and numbers (N*).
bool is_python_alnum(char32_t cp);

// Python's str.lower() for one code point (simple case mapping).
char32_t lower_code_point(char32_t cp);

}  // namespace electra
