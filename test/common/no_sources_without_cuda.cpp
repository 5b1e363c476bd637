// The one source of a GPU test executable whose own sources are all .cu, in a build without CUDA:
// the executable is then only test/common/gpu_main.cpp's main(), which reports the skip.
