#pragma once
// The math of each elementwise op is written once, as functors that the CPU kernels call and the CUDA
// kernels' device code calls (compiled by nvcc, C++20): the CPU tests check the math the GPU runs.
// Headers under kernels/functors/ depend on nothing but the standard library and fmt-free public
// headers (weir/op_kinds.hpp, weir/lr_schedule.hpp): nvcc cannot compile fmt's format strings.
#if defined(__CUDACC__)
#define WEIR_HOST_DEVICE __host__ __device__
#else
#define WEIR_HOST_DEVICE
#endif

// Templates written for a team of threads a row (functors/softmax.hpp's SerialTeam) call a device
// team's Reduce (device-only) from host-device code, which nvcc would warn about for the host
// instantiations that are never made.
#if defined(__CUDACC__)
#define WEIR_TEAM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define WEIR_TEAM_EXEC_CHECK_DISABLE
#endif
