/* Measured memory bandwidth of one core, for the depthwise roofline in
 * docs/performance.md: a STREAM-like "triad" a[i] = b[i] + s * c[i]
 * (2 floats read, 1 written per element) and a "copy" a[i] = b[i], over
 * arrays of three sizes: 3 x 256 KiB (L2), 3 x 4 MiB (last-level cache on
 * most machines) and 3 x 64 MiB (DRAM).  Prints the best of 5 passes in GB/s
 * (bytes read + bytes written, no write-allocate traffic counted).
 *
 *   cc -O3 benchmarks/stream-bw.c -o stream-bw && ./stream-bw
 *
 * The triad is compiled for AVX2 (as the kernels are) and vectorised by gcc
 * at -O3: build it with -O3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__ ((target ("avx2,fma")))
#endif
static void
triad (float *restrict a, const float *restrict b, const float *restrict c, float s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    a[i] = b[i] + s * c[i];
}

static void
run (const char *label, size_t n)
{
  float *a = aligned_alloc (64, n * sizeof (float));
  float *b = aligned_alloc (64, n * sizeof (float));
  float *c = aligned_alloc (64, n * sizeof (float));
  double best_triad = 0, best_copy = 0;
  /* about 256 MiB of traffic per pass */
  size_t reps = (size_t) (256.0 * 1024 * 1024 / (12.0 * n)) + 1;
  volatile float sink;

  if (a == NULL || b == NULL || c == NULL) {
    fprintf (stderr, "stream-bw: out of memory\n");
    exit (1);
  }
  for (size_t i = 0; i < n; i++) {
    a[i] = 0.f;
    b[i] = (float) (i & 255);
    c[i] = 1.f;
  }
  for (int pass = 0; pass < 5; pass++) {
    double t0 = now (), t;
    for (size_t r = 0; r < reps; r++) {
      triad (a, b, c, 0.5f + (float) (r & 1), n);
    }
    t = now () - t0;
    if (12.0 * n * reps / t > best_triad)
      best_triad = 12.0 * n * reps / t;
    t0 = now ();
    for (size_t r = 0; r < reps; r++) {
      memcpy (a, r & 1 ? b : c, n * sizeof (float));
    }
    t = now () - t0;
    if (8.0 * n * reps / t > best_copy)
      best_copy = 8.0 * n * reps / t;
  }
  sink = a[n / 2];
  (void) sink;
  printf ("%-5s %9zu KiB/array  triad %6.1f GB/s  copy %6.1f GB/s\n", label,
          n * sizeof (float) / 1024, best_triad / 1e9, best_copy / 1e9);
  free (a);
  free (b);
  free (c);
}

int
main (void)
{
  run ("L2", 64 * 1024);
  run ("LLC", 1024 * 1024);
  run ("DRAM", 16 * 1024 * 1024);
  return 0;
}
