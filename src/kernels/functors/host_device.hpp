#pragma once
// The math of each elementwise op is written once, as functors that the CPU kernels call and the CUDA
// kernels' device code calls (compiled by nvcc): the CPU tests check the math the GPU runs. Headers
// under kernels/functors/ depend on nothing but the standard library and weir/op_kinds.hpp, and stay
// within C++17.
#if defined(__CUDACC__)
#define WEIR_HOST_DEVICE __host__ __device__
#else
#define WEIR_HOST_DEVICE
#endif
