#include "test/kernels/zero_size_cases.h"

TEST_CASE("Ops with zero elements return without work on the CPU", "[zero_size]") {
  electra::Context ctx = electra::Context::cpu();
  electra::test::check_zero_size_ops(ctx);
}
