/* Measured single-precision FMA peak of one core, for benchmarks/bench.sh:
 * 12 independent AVX2 FMA chains (enough to cover the FMA latency on two
 * pipes), in L1-free registers.  Prints GFLOP/s (2 flops per lane).
 *
 *   cc -O2 benchmarks/fma-peak.c -o fma-peak && ./fma-peak
 *
 * Built without -mavx2: the kernel has a target attribute and runs only
 * when the CPU has AVX2 and FMA (prints 0 otherwise).
 *
 *   ./fma-peak avx512
 *
 * does the same with 512-bit vectors (the AVX-512 GEMM kernels of
 * lib/backends/cpu/cpu-gemm.c; prints 0 without AVX-512F). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

__attribute__ ((target ("avx2,fma"))) static double
fma_loop (long n)
{
  __m256 a[12];
  __m256 x = _mm256_set1_ps (1.0000001f), y = _mm256_set1_ps (0.9999999f);
  float sink = 0.f;

  for (int i = 0; i < 12; i++)
    a[i] = _mm256_set1_ps ((float) i);
  for (long k = 0; k < n; k++) {
#define F(i) a[i] = _mm256_fmadd_ps (a[i], x, y);
    F (0) F (1) F (2) F (3) F (4) F (5) F (6) F (7) F (8) F (9) F (10) F (11)
#undef F
  }
  for (int i = 0; i < 12; i++)
    sink += _mm256_cvtss_f32 (a[i]);
  return sink;
}

__attribute__ ((target ("avx512f"))) static double
fma_loop512 (long n)
{
  __m512 a[12];
  __m512 x = _mm512_set1_ps (1.0000001f), y = _mm512_set1_ps (0.9999999f);
  float sink = 0.f;

  for (int i = 0; i < 12; i++)
    a[i] = _mm512_set1_ps ((float) i);
  for (long k = 0; k < n; k++) {
#define F(i) a[i] = _mm512_fmadd_ps (a[i], x, y);
    F (0) F (1) F (2) F (3) F (4) F (5) F (6) F (7) F (8) F (9) F (10) F (11)
#undef F
  }
  for (int i = 0; i < 12; i++)
    sink += _mm512_cvtss_f32 (a[i]);
  return sink;
}
#endif

int
main (int argc, char **argv)
{
#if defined(__x86_64__) || defined(__i386__)
  struct timespec t0, t1;
  long n = 100000000;
  double s, best = 0.0, sink = 0.0;
  int wide = argc > 1 && strcmp (argv[1], "avx512") == 0;
  double lanes = wide ? 32.0 : 16.0; /* flops per FMA */

  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx2") || !__builtin_cpu_supports ("fma")
      || (wide && !__builtin_cpu_supports ("avx512f"))) {
    printf ("0\n");
    return 0;
  }
  for (int rep = 0; rep < 3; rep++) {
    clock_gettime (CLOCK_MONOTONIC, &t0);
    sink += wide ? fma_loop512 (n) : fma_loop (n);
    clock_gettime (CLOCK_MONOTONIC, &t1);
    s = (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (n * 12.0 * lanes / s / 1e9 > best)
      best = n * 12.0 * lanes / s / 1e9;
  }
  printf ("%.1f\n", best + 0.0 * sink);
#else
  printf ("0\n");
#endif
  return 0;
}
