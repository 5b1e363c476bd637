// A small parser for a subcommand's `--flag value`, `--flag value...` and `--switch` options.
// Arguments are applied in order; every error is a one-line UserError that names the offending
// option and ends with "(see 'electra <command> --help')".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace electra::apps {

class ArgParser {
 public:
  // `command` names the subcommand in messages; `usage` is printed for --help / -h.
  ArgParser(const std::string& command, const char* usage);

  // `--flag value`: the next argument, whatever it looks like, is the value.
  ArgParser& value(const std::string& flag, std::function<void(const std::string&)> set);
  // `--flag value [value...]`: one value, then every following argument not starting with "--".
  ArgParser& values(const std::string& flag, std::function<void(const std::string&)> add);
  // `--flag N`: the value as a non-negative integer (see parse_count).
  ArgParser& count(const std::string& flag, std::function<void(uint64_t)> set);
  // `--switch`: no value.
  ArgParser& switch_flag(const std::string& flag, std::function<void()> set);

  // Applies `args` in order. Returns false if --help / -h came first (the usage is then printed
  // to stdout and the command should exit 0); throws UserError for a missing value or an unknown
  // argument.
  [[nodiscard]] bool parse(const std::vector<std::string>& args) const;

  // Throws UserError("<flag> is required (see ...)") unless `given`.
  void require(bool given, const std::string& flag) const;

 private:
  enum class Kind { kValue, kValues, kSwitch };
  struct Option {
    std::string flag;
    Kind kind;
    std::function<void(const std::string&)> apply;
  };

  std::string see_help_;  // "(see 'electra <command> --help')"
  const char* usage_;
  std::vector<Option> options_;
};

// `value` as a non-negative decimal integer; UserError "<flag> expects a non-negative integer,
// got '<value>'" otherwise.
uint64_t parse_count(const std::string& flag, const std::string& value);

}  // namespace electra::apps
