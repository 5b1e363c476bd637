#include "apps/args.h"

#include <cstdio>
#include <exception>
#include <utility>

#include "engine/error.h"

namespace electra::apps {

ArgParser::ArgParser(const std::string& command, const char* usage)
    : see_help_("(see 'electra " + command + " --help')"), usage_(usage) {}

ArgParser& ArgParser::value(const std::string& flag, std::function<void(const std::string&)> set) {
  options_.push_back({flag, Kind::kValue, std::move(set)});
  return *this;
}

ArgParser& ArgParser::values(const std::string& flag, std::function<void(const std::string&)> add) {
  options_.push_back({flag, Kind::kValues, std::move(add)});
  return *this;
}

ArgParser& ArgParser::count(const std::string& flag, std::function<void(uint64_t)> set) {
  return value(flag,
               [flag, set = std::move(set)](const std::string& v) { set(parse_count(flag, v)); });
}

ArgParser& ArgParser::switch_flag(const std::string& flag, std::function<void()> set) {
  options_.push_back({flag, Kind::kSwitch, [set = std::move(set)](const std::string&) { set(); }});
  return *this;
}

bool ArgParser::parse(const std::vector<std::string>& args) const {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage_);
      return false;
    }
    const Option* option = nullptr;
    for (const Option& o : options_) {
      if (o.flag == a) option = &o;
    }
    ELECTRA_USER_CHECK(option != nullptr, "unknown argument '", a, "' ", see_help_);
    if (option->kind == Kind::kSwitch) {
      option->apply(a);
      continue;
    }
    ELECTRA_USER_CHECK(i + 1 < args.size(), a, " needs a value ", see_help_);
    option->apply(args[++i]);
    if (option->kind == Kind::kValues) {
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) option->apply(args[++i]);
    }
  }
  return true;
}

void ArgParser::require(bool given, const std::string& flag) const {
  ELECTRA_USER_CHECK(given, flag, " is required ", see_help_);
}

uint64_t parse_count(const std::string& flag, const std::string& value) {
  size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ELECTRA_USER_CHECK(used == value.size() && !value.empty() && value[0] != '-', flag,
                     " expects a non-negative integer, got '", value, "'");
  return n;
}

}  // namespace electra::apps
