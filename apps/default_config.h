// Where a command finds a default config (configs/<name>) when --config is not given. In order:
//   1. $ELECTRA_CONFIG_DIR/<name>
//   2. <binary dir>/../share/electra-engine/configs/<name>   (an installed binary)
//   3. configs/<name> in the binary's directory or one of its parents (a build tree inside the
//      source tree: build/cpu/apps/electra finds the repository's configs/)
//   4. configs/<name> in the current directory or one of its parents (inside a checkout)
// The caller prints which file it used; nothing is read from a place the user cannot see.
#pragma once

#include <string>

namespace electra::apps {

// The first existing candidate above, and how it was found ("$ELECTRA_CONFIG_DIR", "next to the
// binary", "in the current repository"). UserError listing the places tried when there is none.
struct DefaultConfig {
  std::string path;
  std::string found;
};
DefaultConfig find_default_config(const std::string& name);

}  // namespace electra::apps
