// The `electra` command line: one file per subcommand, each registered in commands.cpp.
// A subcommand returns its exit code; a UserError escaping it is printed by main() on one line
// ("electra <cmd>: error: ...") with exit code 2, any other exception with exit code 1.
#pragma once

#include <string>
#include <vector>

namespace electra::apps {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

// Every subcommand, in the order `electra --help` lists them.
const std::vector<Command>& commands();

int cmd_version(const std::vector<std::string>& args);
int cmd_build_vocab(const std::vector<std::string>& args);
int cmd_build_data(const std::vector<std::string>& args);
int cmd_info(const std::vector<std::string>& args);
int cmd_pretrain(const std::vector<std::string>& args);
int cmd_finetune(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);
int cmd_encode(const std::vector<std::string>& args);
int cmd_score(const std::vector<std::string>& args);
int cmd_pretrain_eval(const std::vector<std::string>& args);
int cmd_mlm_eval(const std::vector<std::string>& args);

}  // namespace electra::apps
