#include "engine/yaml_config.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "engine/input_file.h"

namespace electra {

namespace {

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "null";
}

// How many values a config may expand to. Aliases let a few lines name a tree of any size
// (`b: &b [*a, *a]`, doubled per line), so the walk below counts what it visits.
constexpr int kMaxConfigValues = 1 << 16;

// Keys are plain scalars, each once per mapping (yaml-cpp keeps the first of two equal keys and
// drops the second silently; a complex key `? [a, b]` has no dotted name). yaml-cpp lets an alias
// name the mapping it sits in (`a: &a {b: *a}`), a cycle: `open` holds the nodes being walked.
void check_keys_below(const YAML::Node& node, const std::string& name, const std::string& prefix,
                      std::vector<YAML::Node>& open, int& visited) {
  ELECTRA_USER_CHECK(++visited <= kMaxConfigValues, name, ": the config expands to more than ",
                     kMaxConfigValues, " values (nested aliases?)");
  if (!node.IsSequence() && !node.IsMap()) return;
  for (const YAML::Node& ancestor : open) {
    ELECTRA_USER_CHECK(!node.is(ancestor), name, ":", node.Mark().line + 1, ": ",
                       prefix.empty() ? "the document" : "'" + prefix + "'",
                       " contains itself through an alias");
  }
  open.push_back(node);
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) check_keys_below(item, name, prefix, open, visited);
    open.pop_back();
    return;
  }
  std::map<std::string, int> lines;
  for (const auto& item : node) {
    const int line = item.first.Mark().line + 1;
    ELECTRA_USER_CHECK(item.first.IsScalar(), name, ":", line, ": ",
                       prefix.empty() ? "a key" : "a key in '" + prefix + "'", " is ",
                       scalar_text(item.first), "; keys must be plain names");
    const std::string key = item.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const auto [it, first] = lines.emplace(key, line);
    ELECTRA_USER_CHECK(first, name, ":", line, ": duplicate key '", path, "' (first on line ",
                       it->second, ")");
    check_keys_below(item.second, name, path, open, visited);
  }
  open.pop_back();
}

void check_keys(const YAML::Node& node, const std::string& name, const std::string& prefix) {
  std::vector<YAML::Node> open;
  int visited = 0;
  check_keys_below(node, name, prefix, open, visited);
}

}  // namespace

ConfigNode ConfigNode::parse(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(str_cat(name, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  ELECTRA_USER_CHECK(root.IsMap(), name, ": the top level must be a mapping of keys");
  check_keys(root, name, "");
  auto shared = std::make_shared<Shared>();
  shared->file = name;
  return ConfigNode(root, shared, "");
}

ConfigNode ConfigNode::load(const std::string& path) {
  require_regular_file(path, "config");
  std::ifstream in(path);
  ELECTRA_USER_CHECK(in, path, ": cannot open config (", std::strerror(errno), ")");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

std::string ConfigNode::where_value(const std::string& key) const {
  const auto it = shared_->overrides.find(path_of(key));
  return it != shared_->overrides.end() ? "--set " + it->second : where(node_[key]);
}

std::string ConfigNode::where(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return shared_->file;
  return str_cat(shared_->file, ":", mark.line + 1);
}

bool ConfigNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

ConfigNode ConfigNode::section(const std::string& key) {
  shared_->consumed.insert(path_of(key));
  if (!node_.IsMap() || !node_[key].IsDefined() || node_[key].IsNull()) {
    return ConfigNode(YAML::Node(YAML::NodeType::Map), shared_, path_of(key));
  }
  const YAML::Node child = node_[key];
  ELECTRA_USER_CHECK(child.IsMap(), where(child), ": ", path_of(key),
                     ": expected a mapping of keys, got ", scalar_text(child));
  return ConfigNode(child, shared_, path_of(key));
}

template <class T>
T ConfigNode::read(const std::string& key) {
  const YAML::Node value = node_[key];
  shared_->consumed.insert(path_of(key));
  const std::string text = scalar_text(value);
  auto fail = [&](const char* expected) -> T {
    throw UserError(str_cat(where_value(key), ": ", path_of(key), ": expected ", expected,
                            ", got '", text, "'"));
  };
  if (!value.IsScalar()) fail(std::is_same_v<T, std::string> ? "a string" : "a scalar");
  if constexpr (std::is_same_v<T, std::string>) {
    return value.Scalar();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true") return true;
    if (text == "false") return false;
    return fail("true or false");
  } else if constexpr (std::is_unsigned_v<T>) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0 ||
        v > std::numeric_limits<T>::max()) {
      return fail("a non-negative integer");
    }
    return static_cast<T>(v);
  } else if constexpr (std::is_integral_v<T>) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 ||
        v < static_cast<long long>(std::numeric_limits<T>::min()) ||
        v > static_cast<long long>(std::numeric_limits<T>::max())) {
      return fail("an integer");
    }
    return static_cast<T>(v);
  } else {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) return fail("a number");
    return static_cast<T>(v);
  }
}

template int ConfigNode::read<int>(const std::string&);
template int64_t ConfigNode::read<int64_t>(const std::string&);
template uint64_t ConfigNode::read<uint64_t>(const std::string&);
template double ConfigNode::read<double>(const std::string&);
template float ConfigNode::read<float>(const std::string&);
template bool ConfigNode::read<bool>(const std::string&);
template std::string ConfigNode::read<std::string>(const std::string&);

std::string ConfigNode::choice(const std::string& key, const std::string& fallback,
                               const std::vector<std::string>& choices) {
  const std::string value = get<std::string>(key, fallback);
  for (const auto& c : choices) {
    if (c == value) return value;
  }
  std::string allowed;
  for (const auto& c : choices) allowed += (allowed.empty() ? "" : ", ") + c;
  throw UserError(
      str_cat(where_value(key), ": ", path_of(key), ": '", value, "' is not one of: ", allowed));
}

void ConfigNode::finish_node(const YAML::Node& node, const std::string& prefix) const {
  if (!node.IsMap()) return;
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!shared_->consumed.count(path)) {
      throw UserError(str_cat(where(item.first), ": unknown key '", path, "'"));
    }
    if (item.second.IsMap()) finish_node(item.second, path);
  }
}

void ConfigNode::finish() const {
  finish_node(node_, prefix_);
}

void ConfigNode::apply_override(const std::string& assignment, bool create) {
  const size_t eq = assignment.find('=');
  ELECTRA_USER_CHECK(eq != std::string::npos && eq > 0, "--set ", assignment,
                     ": expected section.key=value");
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  YAML::Node node = node_;
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (create && node.IsMap() && (!node[parts[i]].IsDefined() || node[parts[i]].IsNull())) {
      node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    }
    ELECTRA_USER_CHECK(node.IsMap() && node[parts[i]].IsDefined() && node[parts[i]].IsMap(),
                       "--set ", assignment, ": no section '", parts[i], "' in ", shared_->file);
    node.reset(node[parts[i]]);  // rebind; operator= would overwrite the document
  }
  ELECTRA_USER_CHECK(create || node[parts.back()].IsDefined(), "--set ", assignment, ": no key '",
                     path, "' in ", shared_->file);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw UserError(str_cat("--set ", assignment, ": the value is not valid YAML (column ",
                            e.mark.column + 1, ": ", e.msg, ")"));
  }
  check_keys(parsed, "--set " + assignment, path);
  node[parts.back()] = parsed;
  shared_->overrides[path] = assignment;
}

}  // namespace electra
