// Checks on a path before it is opened for reading. Opening a FIFO blocks until a writer appears
// and reading a directory through an ifstream fails with an unhelpful library error, so every
// reader of a user-given file asks first what the path is (stat() itself never blocks).
#pragma once

#include <string>

namespace electra {

// Throws UserError "<path>: <what> ..." unless `path` names an existing regular file (symbolic
// links followed). `what` says what the file was expected to be, e.g. "vocabulary file".
void require_regular_file(const std::string& path, const char* what = "file");

}  // namespace electra
