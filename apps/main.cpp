// electra: one binary, one subcommand per file (see command.h).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "apps/command.h"
#include "engine/error.h"

namespace {

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: electra <command> [options]\n\ncommands:\n");
  for (const auto& command : electra::apps::commands()) {
    std::fprintf(out, "  %-12s %s\n", command.name, command.summary);
  }
  std::fprintf(out, "\n'electra <command> --help' describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // A write beyond `ulimit -f` then fails with EFBIG and takes the one-line write-error path
  // (temporary files removed, saved files untouched) instead of killing the process silently.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string name = argv[1];
  if (name == "--version") name = "version";
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& command : electra::apps::commands()) {
    if (name != command.name) continue;
    try {
      return command.run(args);
    } catch (const electra::UserError& e) {
      std::fprintf(stderr, "electra %s: error: %s\n", command.name, e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "electra %s: internal error: %s\n", command.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "electra: error: unknown command '%s' (see 'electra --help')\n",
               name.c_str());
  return 2;
}
