// Tokenizer files of a model directory (contract in data/tokenizer_files.h).
#include "data/tokenizer_files.h"

#include <utf8proc.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/safetensors.h"

namespace electra::data {
namespace {
namespace fs = std::filesystem;

const char* const kVocabFile = "vocab.txt";
const char* const kConfigFile = "tokenizer_config.json";
const char* const kSpecialTokensFile = "special_tokens_map.json";
const char* const kTokenizerJson = "tokenizer.json";

nlohmann::json read_json_object(const fs::path& path) {
  ELECTRA_USER_CHECK(fs::is_regular_file(path), path.string(), ": not a regular file");
  std::ifstream in(path);
  ELECTRA_USER_CHECK(in, path.string(), ": cannot open");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    ELECTRA_USER_CHECK(j.is_object(), path.string(), ": not a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(str_cat(path.string(), ": not valid JSON (", e.what(), ")"));
  }
}

// normalizer.lowercase of a tokenizer.json: BertNormalizer's flag, or a Lowercase step of a
// Sequence; no normalizer keeps case.
bool tokenizer_json_lowercase(const nlohmann::json& normalizer, const std::string& path) {
  if (normalizer.is_null()) return false;
  ELECTRA_USER_CHECK(normalizer.is_object() && normalizer.contains("type"), path,
                     ": normalizer must be an object with a type");
  const std::string type = normalizer.at("type").get<std::string>();
  if (type == "BertNormalizer") {
    const nlohmann::json& flag = normalizer.value("lowercase", nlohmann::json(true));
    ELECTRA_USER_CHECK(flag.is_boolean(), path, ": normalizer.lowercase must be true or false");
    return flag.get<bool>();
  }
  if (type == "Lowercase") return true;
  if (type == "Sequence" && normalizer.contains("normalizers")) {
    for (const nlohmann::json& n : normalizer.at("normalizers")) {
      if (tokenizer_json_lowercase(n, path)) return true;
    }
    return false;
  }
  throw UserError(str_cat(path, ": normalizer type '", type,
                          "' is not BERT's (BertNormalizer, Lowercase or a Sequence of them)"));
}

// The WordPiece vocabulary of a tokenizer.json (model.vocab: token -> id, ids 0..n-1).
Vocab tokenizer_json_vocab(const nlohmann::json& j, const std::string& path) {
  ELECTRA_USER_CHECK(j.contains("model") && j.at("model").is_object(), path, ": no model section");
  const nlohmann::json& model = j.at("model");
  const std::string type = model.value("type", std::string());
  ELECTRA_USER_CHECK(type == "WordPiece", path, ": model.type is '", type,
                     "'; ELECTRA's tokenizer is WordPiece");
  const std::string prefix = model.value("continuing_subword_prefix", std::string("##"));
  ELECTRA_USER_CHECK(prefix == "##", path, ": model.continuing_subword_prefix is '", prefix,
                     "'; the engine's WordPiece uses '##'");
  ELECTRA_USER_CHECK(
      model.contains("vocab") && model.at("vocab").is_object() && !model.at("vocab").empty(), path,
      ": model.vocab must be a non-empty object (token -> id)");
  const nlohmann::json& entries = model.at("vocab");
  std::vector<std::string> tokens(entries.size());
  std::vector<bool> seen(entries.size(), false);
  for (const auto& [token, id] : entries.items()) {
    ELECTRA_USER_CHECK(id.is_number_unsigned() && id.get<uint64_t>() < tokens.size(), path,
                       ": model.vocab['", token, "'] = ", id.dump(), " is not an id in [0, ",
                       tokens.size(), ")");
    const size_t i = id.get<size_t>();
    ELECTRA_USER_CHECK(!seen[i], path, ": model.vocab gives id ", i, " to both '", tokens[i],
                       "' and '", token, "'");
    seen[i] = true;
    tokens[i] = token;
  }
  return Vocab::from_tokens(tokens, path);
}

ModelTokenizer with_casing(Vocab vocab, const fs::path& dir) {
  ModelTokenizer t{std::move(vocab), true, ""};
  const fs::path config = dir / kConfigFile;
  const fs::path json = dir / kTokenizerJson;
  if (fs::exists(config)) {
    const nlohmann::json j = read_json_object(config);
    if (j.contains("do_lower_case")) {
      ELECTRA_USER_CHECK(j.at("do_lower_case").is_boolean(), config.string(),
                         ": do_lower_case must be true or false");
      t.lowercase = j.at("do_lower_case").get<bool>();
      t.casing_source = config.string();
      return t;
    }
  }
  if (fs::exists(json)) {
    const nlohmann::json j = read_json_object(json);
    t.lowercase = tokenizer_json_lowercase(j.value("normalizer", nlohmann::json()), json.string());
    t.casing_source = json.string();
    return t;
  }
  t.lowercase = uncased_vocabulary(t.vocab);
  t.casing_source = str_cat("inferred from ", t.vocab.source());
  return t;
}

}  // namespace

bool uncased_vocabulary(const Vocab& vocab) {
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string_view token = vocab.token(static_cast<int32_t>(id));
    if (token.size() > 1 && token.front() == '[' && token.back() == ']') continue;
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(token.data());
    utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(token.size());
    while (left > 0) {
      utf8proc_int32_t c = 0;
      const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
      if (n <= 0) break;
      // A letter lower-casing changes: a lower-cased text has none. Not every upper-case letter:
      // BERT's uncased vocabulary holds U+211D (double-struck R), which has no lower case.
      if (utf8proc_tolower(c) != c) return false;
      p += n;
      left -= n;
    }
  }
  return true;
}

ModelTokenizer load_model_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  const fs::path vocab_txt = d / kVocabFile;
  const fs::path json = d / kTokenizerJson;
  if (fs::exists(vocab_txt)) return with_casing(Vocab::load(vocab_txt.string()), d);
  ELECTRA_USER_CHECK(fs::exists(json), dir,
                     ": no vocab.txt or tokenizer.json (pass --vocab with the vocab.txt the model "
                     "was trained with)");
  return with_casing(tokenizer_json_vocab(read_json_object(json), json.string()), d);
}

ModelTokenizer load_vocab_tokenizer(const std::string& vocab_path) {
  ELECTRA_USER_CHECK(fs::is_regular_file(vocab_path), vocab_path,
                     ": no such vocabulary file (a vocab.txt, one token per line)");
  return with_casing(Vocab::load(vocab_path), fs::path(vocab_path).parent_path());
}

void write_tokenizer_files(const std::string& dir, const Vocab& vocab, bool lowercase,
                           int64_t model_max_length) {
  vocab.save((fs::path(dir) / kVocabFile).string());
  nlohmann::ordered_json special;
  special["unk_token"] = kUnkToken;
  special["sep_token"] = kSepToken;
  special["pad_token"] = kPadToken;
  special["cls_token"] = kClsToken;
  special["mask_token"] = kMaskToken;
  nlohmann::ordered_json config;
  config["tokenizer_class"] = "ElectraTokenizer";
  config["do_lower_case"] = lowercase;
  config["do_basic_tokenize"] = true;
  config["strip_accents"] = nullptr;
  config["tokenize_chinese_chars"] = true;
  config["model_max_length"] = model_max_length;
  config["clean_up_tokenization_spaces"] = false;
  config.update(special);
  write_file_atomic((fs::path(dir) / kConfigFile).string(), config.dump(2) + "\n");
  write_file_atomic((fs::path(dir) / kSpecialTokensFile).string(), special.dump(2) + "\n");
}

void check_same_vocabulary(const Vocab& given, const Vocab& recorded) {
  // The hash covers the file's bytes: the same tokens with other line endings are the same
  // vocabulary.
  bool same = given.hash() == recorded.hash();
  if (!same && given.size() == recorded.size()) {
    same = true;
    for (size_t id = 0; same && id < given.size(); ++id) {
      same = given.token(static_cast<int32_t>(id)) == recorded.token(static_cast<int32_t>(id));
    }
  }
  char hashes[64];
  std::snprintf(hashes, sizeof hashes, "hash %016llx vs %016llx",
                static_cast<unsigned long long>(given.hash()),
                static_cast<unsigned long long>(recorded.hash()));
  ELECTRA_USER_CHECK(same, given.source(),
                     " is not the vocabulary the checkpoint was trained with, ", recorded.source(),
                     " (", hashes, ", ", given.size(), " vs ", recorded.size(), " tokens)");
}

}  // namespace electra::data
