// The GLUE TSV dialect: fields separated by TAB only (no CSV quoting: RTE and QNLI contain
// unbalanced `"`), lines ended by LF or CRLF, the last line possibly without a newline, and an
// optional UTF-8 byte-order mark at the start of the file (MRPC).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace electra {

struct TsvRow {
  size_t line = 0;  // 1-based line number in the file, for error messages
  std::vector<std::string> fields;
};

// Splits one line (without its line ending) on TAB; "" gives one empty field.
std::vector<std::string> split_tsv_line(std::string_view line);

// Splits a whole file's contents into rows: strips a leading BOM, drops the CR of CRLF, and does
// not produce a row for the empty text after a final newline. Every other line, empty or not, is a
// row.
std::vector<TsvRow> split_tsv(std::string_view contents);

// Reads and splits a file; throws UserError naming the path when it cannot be read.
std::vector<TsvRow> read_tsv(const std::filesystem::path& path);

}  // namespace electra
