#include "data/squad.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/squad_text.h"
#include "engine/error.h"
#include "engine/input_file.h"
#include "engine/log.h"

namespace electra {
namespace {

using nlohmann::json;

// obj[key] as T, or a UserError naming the source and the JSON location.
template <class T>
T get(const json& obj, const char* key, std::string_view source, const std::string& where) {
  ELECTRA_USER_CHECK(obj.is_object() && obj.contains(key), source, ": ", where, ": missing '", key,
                     "'");
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception& e) {
    throw UserError(
        str_cat(source, ": ", where, ": '", key, "' has the wrong type (", e.what(), ")"));
  }
}

// obj[key] as a character offset: an integer in [0, 2^31) (nlohmann would truncate 45.7 to 45 and
// 4294967341 to 45 without a word).
int32_t get_offset(const json& obj, const char* key, std::string_view source,
                   const std::string& where) {
  ELECTRA_USER_CHECK(obj.is_object() && obj.contains(key), source, ": ", where, ": missing '", key,
                     "'");
  const json& v = obj.at(key);
  ELECTRA_USER_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 &&
                         v.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                     source, ": ", where, ": '", key,
                     "' must be a character offset (an integer in [0, 2^31)), got ", v.dump());
  return static_cast<int32_t>(v.get<int64_t>());
}

const json& get_array(const json& obj, const char* key, std::string_view source,
                      const std::string& where) {
  ELECTRA_USER_CHECK(obj.is_object() && obj.contains(key) && obj.at(key).is_array(), source, ": ",
                     where, ": missing array '", key, "'");
  return obj.at(key);
}

// " ".join(text.split()).lower(): the run_squad answer check compares lowercased texts with
// whitespace runs collapsed.
std::string squeeze_lower(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char32_t cp : decode_utf8(text, "answer")) {
    if (is_python_space(cp)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    append_utf8(out, lower_code_point(cp));
  }
  return out;
}

// Fills start_word/end_word from the first answer; false when the answer text is not found in its
// doc tokens (the run_squad "Could not find answer" case).
bool locate_answer(SquadExample& ex, std::string_view source) {
  const SquadAnswer& answer = ex.answers.front();
  const size_t length = decode_utf8(answer.text, "answer").size();
  const std::vector<int32_t>& offsets = ex.char_to_word_offset();
  const size_t n = offsets.size();
  ELECTRA_USER_CHECK(
      length > 0 && answer.char_start >= 0 && static_cast<size_t>(answer.char_start) + length <= n,
      source, ": question ", ex.id, ": answer '", answer.text, "' at ", answer.char_start,
      " lies outside its context of ", n, " characters");
  ex.start_word = offsets[answer.char_start];
  ex.end_word = offsets[answer.char_start + length - 1];
  if (ex.start_word < 0) {  // the answer starts in leading whitespace: no word to point at
    ex.start_word = ex.end_word = -1;
    return false;
  }
  std::string actual;
  for (int32_t w = ex.start_word; w <= ex.end_word; ++w) {
    actual += (w == ex.start_word ? "" : " ") + ex.doc_tokens()[w];
  }
  return squeeze_lower(actual).find(squeeze_lower(answer.text)) != std::string::npos;
}

}  // namespace

void split_doc_tokens(std::string_view context, std::vector<std::string>& doc_tokens,
                      std::vector<int32_t>& char_to_word_offset) {
  doc_tokens.clear();
  char_to_word_offset.clear();
  bool prev_is_whitespace = true;
  for (char32_t cp : decode_utf8(context, "context")) {
    if (is_squad_whitespace(cp)) {
      prev_is_whitespace = true;
    } else {
      if (prev_is_whitespace) doc_tokens.emplace_back();
      append_utf8(doc_tokens.back(), cp);
      prev_is_whitespace = false;
    }
    char_to_word_offset.push_back(static_cast<int32_t>(doc_tokens.size()) - 1);
  }
}

SquadDataset parse_squad(std::string_view json_text, std::string_view source,
                         const SquadReadOptions& options) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw UserError(str_cat(source, ": invalid JSON: ", e.what()));
  }
  SquadDataset out;
  const json& data = get_array(root, "data", source, "top level");
  for (size_t a = 0; a < data.size(); ++a) {
    const std::string at_article = str_cat("data[", a, "]");
    const json& paragraphs = get_array(data[a], "paragraphs", source, at_article);
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string at_paragraph = str_cat(at_article, ".paragraphs[", p, "]");
      const json& paragraph = paragraphs[p];
      auto shared = std::make_shared<SquadParagraph>();
      shared->context = get<std::string>(paragraph, "context", source, at_paragraph);
      split_doc_tokens(shared->context, shared->doc_tokens, shared->char_to_word_offset);
      const json& qas = get_array(paragraph, "qas", source, at_paragraph);
      for (size_t q = 0; q < qas.size(); ++q) {
        const std::string at_qa = str_cat(at_paragraph, ".qas[", q, "]");
        SquadExample ex;
        ex.id = get<std::string>(qas[q], "id", source, at_qa);
        ex.question = get<std::string>(qas[q], "question", source, at_qa);
        ex.paragraph = shared;
        if (qas[q].contains("is_impossible")) {
          ex.is_impossible = get<bool>(qas[q], "is_impossible", source, at_qa);
        }
        const json& answers = get_array(qas[q], "answers", source, at_qa);
        for (size_t k = 0; k < answers.size() && !ex.is_impossible; ++k) {
          const std::string at_answer = str_cat(at_qa, ".answers[", k, "]");
          ex.answers.push_back({get<std::string>(answers[k], "text", source, at_answer),
                                get_offset(answers[k], "answer_start", source, at_answer)});
        }
        if (options.training) {
          ELECTRA_USER_CHECK(ex.is_impossible || ex.answers.size() == 1, source, ": question ",
                             ex.id, ": a training question needs exactly one answer, it has ",
                             ex.answers.size());
        }
        if (!ex.answers.empty() && !locate_answer(ex, source) && options.training) {
          log_warn(source, ": question ", ex.id, ": answer '", ex.answers.front().text,
                   "' does not match the context's words; skipped");
          ++out.skipped;
          continue;
        }
        out.examples.push_back(std::move(ex));
      }
    }
  }
  return out;
}

SquadDataset read_squad(const std::filesystem::path& path, const SquadReadOptions& options) {
  require_regular_file(path.string(), "SQuAD JSON file");
  std::ifstream in(path, std::ios::binary);
  ELECTRA_USER_CHECK(in, "cannot open ", path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_squad(buffer.str(), path.string(), options);
}

}  // namespace electra
