#include "test/kernels/zero_size_cases.h"

TEST_CASE("Ops with zero elements return without launching on the GPU", "[zero_size][gpu]") {
  electra::Context ctx = electra::Context::cuda(0);
  electra::test::check_zero_size_ops(ctx);
}
