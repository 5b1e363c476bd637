// Default config discovery (contract in apps/default_config.h).
#include "apps/default_config.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "engine/error.h"

namespace electra::apps {
namespace {
namespace fs = std::filesystem;

// configs/<name> in `dir` or its nearest parent that has it; empty when none does.
std::string search_upwards(fs::path dir, const std::string& name) {
  for (; !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "configs" / name;
    if (fs::is_regular_file(candidate)) return candidate.string();
    if (dir == dir.parent_path()) break;
  }
  return "";
}

}  // namespace

DefaultConfig find_default_config(const std::string& name) {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("ELECTRA_CONFIG_DIR"); env != nullptr && *env != '\0') {
    const fs::path candidate = fs::path(env) / name;
    if (fs::is_regular_file(candidate)) return {candidate.string(), "in $ELECTRA_CONFIG_DIR"};
    tried.push_back(candidate.string());
  }
  std::error_code ec;
  const fs::path binary_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec) {
    const fs::path installed = binary_dir.parent_path() / "share/electra-engine/configs" / name;
    if (fs::is_regular_file(installed)) return {installed.string(), "installed with the binary"};
    tried.push_back(installed.string());
    const std::string tree = search_upwards(binary_dir, name);
    if (!tree.empty()) return {tree, "in the source tree of the binary"};
    tried.push_back(str_cat("configs/", name, " above ", binary_dir.string()));
  }
  const std::string here = search_upwards(fs::current_path(ec), name);
  if (!here.empty()) return {here, "in the current directory's repository"};
  tried.push_back(str_cat("configs/", name, " above the current directory"));
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw UserError(str_cat("no default ", name, " (tried ", list,
                          "): pass --config FILE or set ELECTRA_CONFIG_DIR"));
}

}  // namespace electra::apps
