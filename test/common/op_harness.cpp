// The Catch2 side of the op harness (op_case.h): registers, before main(), one test case per case
// of op_cases() and mode, named <op>/<shape>/<dtype> (<op>/<shape>/contract) and tagged
// [gradcheck], [gpu] or [contract], so that a failure names the op, the shape and the dtype. An
// executable picks its mode with a test spec (test/kernels/CMakeLists.txt: the gradient check runs
// "[gradcheck]" and the contract check "[contract]" under catch_main.cpp, the GPU test "[gpu]"
// under gpu_main.cpp, which skips without a GPU).
#include <catch2/catch.hpp>
#include <set>

#include "test/common/op_case.h"

namespace electra::test {
namespace {

// The f64 gradient check (op_case.h, gradient_checks); the tolerance is expect_gradient's
// (catch_checks.h): 1e-6 relative, central differences of step 1e-5 in f64.
void run_gradcheck(const OpCase& c) {
  const std::vector<GradientCheck> checks = gradient_checks(c);
  CHECK(!checks.empty());
  for (const GradientCheck& g : checks) {
    INFO("gradient w.r.t. " << g.input);
    CHECK(g.result.checked > 0);
    CHECK(g.result.max_relative_error < 1e-6);
  }
}

void run_contract(const OpCase& c) {
  const ContractCheck check = contract_check(c);
  CHECK(check.tried > 0);
  for (const std::string& accepted : check.accepted) FAIL_CHECK(accepted);
}

void run_gpu_parity(const OpCase& c, DType dtype) {
  for (const std::string& failure : gpu_parity(c, dtype)) FAIL_CHECK(failure);
}

// Catch2 v2 calls a test through an ITestInvoker; this one holds a closure over the case.
class CaseInvoker : public Catch::ITestInvoker {
 public:
  explicit CaseInvoker(std::function<void()> run) : run_(std::move(run)) {}
  void invoke() const override { run_(); }

 private:
  std::function<void()> run_;
};

void add_test(const std::string& name, const char* tag, std::function<void()> run) {
  // AutoReg copies the name and tags into the registry.
  const Catch::AutoReg reg(new CaseInvoker(std::move(run)), CATCH_INTERNAL_LINEINFO,
                           Catch::StringRef(), Catch::NameAndTags(name.c_str(), tag));
}

// The contract check binds a case's tensors on the host (twice over for the one it lengthens);
// the benchmark-sized cases (a vocabulary's logits for 20224 rows: 19 GB) are left to the small
// ones, which check the same calls.
constexpr size_t kContractBytes = size_t{64} << 20;

struct Registrar {
  Registrar() {
    std::set<std::string> contracts;  // one per name: cases differing only in dtypes share it
    std::set<std::string> ops, checked;
    for (const OpCase& c : op_cases()) {
      ops.insert(c.op);
      if ((c.modes & kGradcheck) != 0) {
        add_test(c.name() + "/f64", "[gradcheck]", [c] { run_gradcheck(c); });
      }
      if (device_bytes(c, DType::F32) <= kContractBytes && contracts.insert(c.name()).second) {
        add_test(c.name() + "/contract", "[contract]", [c] { run_contract(c); });
        checked.insert(c.op);
      }
      if ((c.modes & kGpu) != 0) {
        for (DType dtype : c.dtypes) {
          add_test(c.name() + "/" + dtype_name(dtype), "[gpu]",
                   [c, dtype] { run_gpu_parity(c, dtype); });
        }
      }
    }
    for (const std::string& op : ops) {
      if (checked.count(op) != 0) continue;
      add_test(op + "/contract", "[contract]", [op] {
        FAIL(op << ": no case within " << (kContractBytes >> 20) << " MiB for the contract check");
      });
    }
  }
};

const Registrar registrar;

}  // namespace
}  // namespace electra::test
