// Strict YAML configuration reading: every key is declared by the code that consumes it, so an
// unknown key, a wrong type or a missing file is a UserError naming the file, the dotted key and
// the line, e.g. "configs/small.yaml:12: optimizer.lr: expected a number, got 'fast'".
//
// Usage:
//   ConfigNode root = ConfigNode::load(path);              // or ::parse(text, name)
//   ConfigNode opt = root.section("optimizer");
//   double lr = opt.get<double>("lr", 5e-4);               // optional with default
//   int steps = root.require<int>("steps");                // required
//   root.finish();  // throws for any key that was present but never read, naming it
// Overrides `--set a.b=c` are applied with apply_override() before reading.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/error.h"

namespace electra {

class ConfigNode {
 public:
  static ConfigNode load(const std::string& path);
  static ConfigNode parse(const std::string& text, const std::string& name);

  // Applies "section.key=value" (value parsed as YAML scalar); the key path must already exist in
  // the document, so a typo in an override is an error too, unless `create` (for a key the caller
  // knows, in a section the file may lack: tasks.mnli.epochs). An invalid value is reported as
  // that --set, not as a line of the file.
  void apply_override(const std::string& assignment, bool create = false);

  // A nested mapping; an absent section reads as empty (all defaults).
  ConfigNode section(const std::string& key);
  bool has(const std::string& key) const;

  template <class T>
  T get(const std::string& key, const T& fallback) {
    return has(key) ? read<T>(key) : fallback;
  }
  template <class T>
  T require(const std::string& key) {
    ELECTRA_USER_CHECK(has(key), where(node_), ": missing required key '", path_of(key), "'");
    return read<T>(key);
  }
  // A string restricted to `choices`.
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices);

  // Throws UserError for the first key of this node (and of sections taken from it) never read.
  void finish() const;

 private:
  struct Shared {
    std::string file;
    std::set<std::string> consumed;                // dotted paths of keys read
    std::map<std::string, std::string> overrides;  // dotted path -> the --set that gave its value
  };
  ConfigNode(YAML::Node node, std::shared_ptr<Shared> shared, std::string prefix)
      : node_(std::move(node)), shared_(std::move(shared)), prefix_(std::move(prefix)) {}

  template <class T>
  T read(const std::string& key);
  std::string path_of(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  std::string where(const YAML::Node& node) const;
  // where() the value of `key` came from: its --set, or its line in the file.
  std::string where_value(const std::string& key) const;
  void finish_node(const YAML::Node& node, const std::string& prefix) const;

  YAML::Node node_;
  std::shared_ptr<Shared> shared_;
  std::string prefix_;
};

}  // namespace electra
