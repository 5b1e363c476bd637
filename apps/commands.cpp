#include "apps/command.h"

namespace electra::apps {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"version", "print the version, the build configuration and the visible GPUs", cmd_version},
  };
  return kCommands;
}

}  // namespace electra::apps
