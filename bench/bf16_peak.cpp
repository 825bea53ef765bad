// The CPU's bf16 and f32 matmul peak through oneDNN: a square product (default 2048^3, bf16 operands,
// f32 result; and the same in f32), timed in blocks of >= 0.5 s, median of 5. What bench/amp.py
// reports each model's GFLOP/s against. Threads: oneDNN's (OMP_NUM_THREADS). Last line: JSON.
//
//   OMP_NUM_THREADS=1 build/bench/bf16_peak [--size N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

namespace {

using dt = dnnl::memory::data_type;

double MedianGflops(dnnl::engine& engine, dnnl::memory::dim n, dt operands, double* max_error) {
  const dnnl::memory::desc a_desc({n, n}, operands, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc c_desc({n, n}, dt::f32, dnnl::memory::format_tag::ab);
  const dnnl::matmul product(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_desc, a_desc, c_desc), engine));
  dnnl::memory a(a_desc, engine), b(a_desc, engine), c(c_desc, engine);
  // Operands in f32, reordered into the operand type (so bf16 holds the rounded values).
  std::vector<float> host_a(static_cast<std::size_t>(n * n)), host_b(host_a.size());
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  for (float& v : host_a) v = uniform(random);
  for (float& v : host_b) v = uniform(random);
  dnnl::stream stream(engine);
  const dnnl::memory::desc f32_desc({n, n}, dt::f32, dnnl::memory::format_tag::ab);
  dnnl::memory fa(f32_desc, engine, host_a.data()), fb(f32_desc, engine, host_b.data());
  dnnl::reorder(fa, a).execute(stream, fa, a);
  dnnl::reorder(fb, b).execute(stream, fb, b);
  dnnl::reorder(a, fa).execute(stream, a, fa);  // back: the values the product really multiplies
  dnnl::reorder(b, fb).execute(stream, b, fb);
  stream.wait();
  const std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  product.execute(stream, args);
  stream.wait();
  // Check 16 rows against a double reference (relative to the largest of them).
  const float* out = static_cast<const float*>(c.get_data_handle());
  double worst = 0, largest = 0;
  for (dnnl::memory::dim i = 0; i < 16; ++i) {
    for (dnnl::memory::dim j = 0; j < n; ++j) {
      double sum = 0;
      for (dnnl::memory::dim k = 0; k < n; ++k) sum += double{host_a[i * n + k]} * double{host_b[k * n + j]};
      worst = std::max(worst, std::fabs(sum - out[i * n + j]));
      largest = std::max(largest, std::fabs(sum));
    }
  }
  *max_error = worst / largest;
  const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::vector<double> rates;
  for (int block = 0; block < 5; ++block) {
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    do {
      product.execute(stream, args);
      stream.wait();
      ++calls;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 0.5);
    rates.push_back(calls * flop / seconds / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[2];
}

}  // namespace

int main(int argc, char** argv) {
  dnnl::memory::dim n = 2048;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      n = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--size N]\n", argv[0]);
      return 2;
    }
  }
  if (n < 16) {
    std::fprintf(stderr, "bf16_peak: --size must be >= 16, got %ld\n", static_cast<long>(n));
    return 2;
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const char* threads = std::getenv("OMP_NUM_THREADS");
  double bf16_error = 0, f32_error = 0;
  const double bf16 = MedianGflops(engine, n, dt::bf16, &bf16_error);
  const double f32 = MedianGflops(engine, n, dt::f32, &f32_error);
  std::printf("oneDNN matmul %ld^3, OMP_NUM_THREADS %s: bf16 %.1f GFLOP/s, f32 %.1f GFLOP/s (median of 5 blocks of "
              ">= 0.5 s); max relative error %.1e (bf16 inputs, f32 accumulation), %.1e (f32)\n",
              static_cast<long>(n), threads != nullptr ? threads : "unset", bf16, f32, bf16_error, f32_error);
  if (bf16_error > 1e-4 || f32_error > 1e-4) {
    std::fprintf(stderr, "bf16_peak: the products are wrong\n");
    return 1;
  }
  std::printf("{\"bench\": \"bf16_peak\", \"size\": %ld, \"threads\": \"%s\", \"bf16_gflops\": %.2f, \"f32_gflops\": %.2f}\n",
              static_cast<long>(n), threads != nullptr ? threads : "", bf16, f32);
  return 0;
}
