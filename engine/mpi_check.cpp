#if ELECTRA_WITH_MPI
#include "engine/mpi_check.h"

namespace electra {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace electra
#endif
