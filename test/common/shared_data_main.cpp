// main() of test executables that need ../shared/data: without it they print one line and exit
// 77, which ctest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  const std::filesystem::path data = std::filesystem::path(ELECTRA_SHARED_DIR) / "data";
  if (!std::filesystem::is_directory(data)) {
    std::printf("skipped: ../shared/data not found (looked at %s)\n", data.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
