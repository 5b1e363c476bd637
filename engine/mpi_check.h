// Checking macro for MPI calls. MPI's default handler aborts the job; code that wants exceptions
// sets MPI_ERRORS_RETURN on its communicator and wraps every call in ELECTRA_MPI_CHECK.
#pragma once

#include <mpi.h>

#include "engine/error.h"

namespace electra {
// The MPI error string for `code` (MPI_Error_string).
std::string mpi_error_string(int code);
}  // namespace electra

#define ELECTRA_MPI_CHECK(call)                                                                    \
  do {                                                                                             \
    int electra_status_ = (call);                                                                  \
    if (electra_status_ != MPI_SUCCESS) {                                                          \
      ::electra::throw_api_failure("MPI", #call, electra_status_, "MPI error",                     \
                                   ::electra::mpi_error_string(electra_status_).c_str(), __FILE__, \
                                   __LINE__);                                                      \
    }                                                                                              \
  } while (0)
