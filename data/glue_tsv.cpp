#include "data/glue_tsv.h"

#include <fstream>
#include <sstream>

#include "engine/error.h"

namespace electra {

std::vector<std::string> split_tsv_line(std::string_view line) {
  std::vector<std::string> fields;
  size_t begin = 0;
  while (true) {
    const size_t tab = line.find('\t', begin);
    if (tab == std::string_view::npos) {
      fields.emplace_back(line.substr(begin));
      return fields;
    }
    fields.emplace_back(line.substr(begin, tab - begin));
    begin = tab + 1;
  }
}

std::vector<TsvRow> split_tsv(std::string_view contents) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (contents.substr(0, kBom.size()) == kBom) contents.remove_prefix(kBom.size());
  std::vector<TsvRow> rows;
  size_t begin = 0;
  size_t line = 1;
  while (begin < contents.size()) {
    size_t end = contents.find('\n', begin);
    const size_t next = end == std::string_view::npos ? contents.size() : end + 1;
    if (end == std::string_view::npos) end = contents.size();
    std::string_view text = contents.substr(begin, end - begin);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    rows.push_back(TsvRow{line, split_tsv_line(text)});
    begin = next;
    ++line;
  }
  return rows;
}

std::vector<TsvRow> read_tsv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  ELECTRA_USER_CHECK(in, "cannot open ", path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  ELECTRA_USER_CHECK(!in.bad(), "error reading ", path.string());
  return split_tsv(buffer.str());
}

}  // namespace electra
