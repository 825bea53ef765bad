// conv2d: kernels against a CPU reference, bad inputs, and finite-difference gradients.
#include <doctest/doctest.h>
