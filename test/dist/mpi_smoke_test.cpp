// Two ranks under mpirun: an all-reduce gives the same sum everywhere, and a failing MPI call
// surfaces as electra::Error through ELECTRA_MPI_CHECK instead of aborting the job.
#include <cstdio>
#include <string>

#include "engine/mpi_check.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, passed = 0, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto check = [&](bool ok, const char* what) {
    ok ? ++passed : ++failed;
    if (!ok) std::printf("rank %d FAIL: %s\n", rank, what);
  };

  check(size == 2, "two ranks");
  double value = rank + 1.5, sum = 0;
  ELECTRA_MPI_CHECK(MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  check(sum == 1.5 + 2.5, "all-reduce sum");

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::string message;
  try {
    ELECTRA_MPI_CHECK(MPI_Send(&value, 1, MPI_DOUBLE, size + 5, 0, MPI_COMM_WORLD));
  } catch (const electra::Error& e) {
    message = e.what();
  }
  check(message.find("MPI call `MPI_Send") != std::string::npos, "failed call throws Error");
  check(message.find("mpi_smoke_test.cpp:") != std::string::npos, "error names the file");

  int all_failed = 0;
  MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%d passed, %d failed\n", passed, all_failed);
  MPI_Finalize();
  return all_failed == 0 ? 0 : 1;
}
