/* Unit tests: the CPU backend's float GEMM (lib/backends/cpu/cpu-gemm.h),
 * packed and indirect drivers, against a double-precision reference, on
 * shapes that hit every edge of the micro-kernels: full and partial 6-row
 * panels, 12-row and 32-column AVX-512 blocks, 16-column tails, several K
 * blocks and K sub-blocks, row / column biases and a fused activation.
 * meson runs it twice: as the CPU chooses (AVX-512 where it has it) and
 * with NNPIPE_CPU_NO_AVX512=1 (the AVX2 kernel). */
#include <nnpipe/nnpipe.h>
#include "backends/cpu/cpu-gemm.h"

#include <math.h>
#include <string.h>

static float
frand (guint32 *s)
{
  *s = *s * 1664525u + 1013904223u;
  return (float) ((*s >> 8) & 0xffff) / 32768.f - 1.f;
}

/* C (m x n, ldc n) = act (A (m x k) x B (k x n, row stride ldb) + bias) */
static void
reference (int64_t m, int64_t n, int64_t k, const float *a, const float *b, int64_t ldb,
           const float *rbias, const float *cbias, gboolean relu, double *c)
{
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0.0;
      for (int64_t q = 0; q < k; q++)
        acc += (double) a[i * k + q] * b[q * ldb + j];
      if (rbias)
        acc += rbias[i];
      if (cbias)
        acc += cbias[j];
      c[i * n + j] = relu && acc < 0.0 ? 0.0 : acc;
    }
}

static void
check_close (const char *what, int64_t m, int64_t n, int64_t k, const float *got, int64_t ldc,
             const double *want)
{
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double w = want[i * n + j], d = fabs (got[i * ldc + j] - w);
      /* float accumulation over k terms of magnitude <= 1 */
      if (d > 1e-5 * k + 1e-5 * fabs (w))
        g_error ("%s m=%" G_GINT64_FORMAT " n=%" G_GINT64_FORMAT " k=%" G_GINT64_FORMAT
                 ": C[%" G_GINT64_FORMAT "][%" G_GINT64_FORMAT "] = %g, want %g (%s kernel)",
                 what, m, n, k, i, j, got[i * ldc + j], w, nnp_sgemm_kernel_name ());
    }
}

static const int64_t ms[] = { 1, 5, 6, 7, 12, 13, 18, 24, 30, 64, 150 };
static const int64_t ns[] = { 1, 15, 16, 17, 32, 33, 48, 64, 100, 300 };
static const int64_t ks[] = { 1, 3, 129, 300 };

static void
test_packed (void)
{
  g_autoptr (GError) error = NULL;
  NnpThreadPool *pool = nnp_thread_pool_new (2, NULL, 0, &error);
  void *scratch = g_aligned_alloc (nnp_sgemm_scratch_size (), 1, 64);
  guint32 seed = 1;

  g_assert_no_error (error);
  for (guint mi = 0; mi < G_N_ELEMENTS (ms); mi++)
    for (guint ni = 0; ni < G_N_ELEMENTS (ns); ni++)
      for (guint ki = 0; ki < G_N_ELEMENTS (ks); ki++)
        for (int variant = 0; variant < 3; variant++) {
          int64_t m = ms[mi], n = ns[ni], k = ks[ki];
          float *a = g_new (float, m *k), *b = g_new (float, k *n), *c = g_new (float, m *n);
          float *rb = g_new (float, m), *cb = g_new (float, n);
          float *ap = g_aligned_alloc (nnp_sgemm_packed_a_size (m, k), sizeof (float), 64);
          double *want = g_new (double, m *n);
          NnpSgemm g = { 0 };

          for (int64_t q = 0; q < m * k; q++)
            a[q] = frand (&seed);
          for (int64_t q = 0; q < k * n; q++)
            b[q] = frand (&seed);
          for (int64_t q = 0; q < m; q++)
            rb[q] = frand (&seed);
          for (int64_t q = 0; q < n; q++)
            cb[q] = frand (&seed);
          g.m = m;
          g.n = n;
          g.k = k;
          g.alpha = 1.f;
          g.b = b;
          g.b_rs = n;
          g.b_cs = 1;
          g.c = c;
          g.ldc = n;
          g.beta = 1.f;
          /* variant 0: A packed here, row bias, ReLU; 1: A packed once,
           * column bias; 2: no bias */
          if (variant == 0) {
            g.a = a;
            g.a_rs = k;
            g.a_cs = 1;
            g.bias = rb;
            g.bias_rs = 1;
            g.act = NNP_ACT_RELU;
          } else {
            nnp_sgemm_pack_a (m, k, a, k, 1, 1.f, ap);
            g.a_packed = ap;
            if (variant == 1) {
              g.bias = cb;
              g.bias_cs = 1;
            }
          }
          reference (m, n, k, a, b, n, variant == 0 ? rb : NULL, variant == 1 ? cb : NULL,
                     variant == 0, want);
          nnp_sgemm_run (&g, 1, NULL, NULL, pool, scratch);
          check_close ("packed", m, n, k, c, n, want);
          g_free (a);
          g_free (b);
          g_free (c);
          g_free (rb);
          g_free (cb);
          g_aligned_free (ap);
          g_free (want);
        }
  g_aligned_free (scratch);
  nnp_thread_pool_free (pool);
}

/* The indirect driver: B row q of output row r at b + koff[q] + r * stride
 * (koff a permutation of row offsets, as a convolution's taps are), with
 * and without read margin; rows padded by 2 (a 3x3 convolution's padded
 * input, where short rows run as one linear run of tiles) or by NR, and
 * the 2 * NR - 1 floats of margin the contract allows at the end. */
static void
test_indirect (void)
{
  g_autoptr (GError) error = NULL;
  NnpThreadPool *pool = nnp_thread_pool_new (2, NULL, 0, &error);
  guint32 seed = 7;

  g_assert_no_error (error);
  for (guint mi = 0; mi < G_N_ELEMENTS (ms); mi++)
    for (guint ni = 0; ni < G_N_ELEMENTS (ns); ni++)
      for (guint ki = 0; ki < G_N_ELEMENTS (ks); ki++)
        for (int shape = 0; shape < 3; shape++) {
          int rows = shape == 0 ? 1 : 3 + 2 * (shape - 1);
          int64_t m = ms[mi], cols = ns[ni], k = ks[ki], n = rows * cols;
          gboolean margin = rows > 1;
          /* B: k rows of `rows` segments of cols floats (+ 2 or NR floats) */
          int64_t seg = cols + (margin ? (shape == 1 ? NNP_SGEMM_NR : 2) : 0), ldb = rows * seg;
          float *a = g_new (float, m *k), *b = g_new0 (float, k *ldb + 2 * NNP_SGEMM_NR);
          float *bd = g_new (float, k *n), *c = g_new (float, m *n), *rb = g_new (float, m);
          float *ap = g_aligned_alloc (nnp_sgemm_packed_a_size (m, k), sizeof (float), 64);
          int32_t *koff = g_new (int32_t, k);
          double *want = g_new (double, m *n);
          NnpSgemm g = { 0 };

          for (int64_t q = 0; q < m * k; q++)
            a[q] = frand (&seed);
          for (int64_t q = 0; q < m; q++)
            rb[q] = frand (&seed);
          for (int64_t q = 0; q < k; q++)
            koff[q] = (int32_t) (((q * 7) % k) * ldb);
          for (int64_t q = 0; q < k; q++)
            for (int64_t r = 0; r < rows; r++)
              for (int64_t j = 0; j < cols; j++) {
                float v = frand (&seed);
                b[koff[q] + r * seg + j] = v;
                bd[q * n + r * cols + j] = v;
              }
          nnp_sgemm_pack_a (m, k, a, k, 1, 1.f, ap);
          g.m = m;
          g.k = k;
          g.a_packed = ap;
          g.c = c;
          g.ldc = n;
          g.bias = rb;
          g.bias_rs = 1;
          g.beta = 1.f;
          g.act = NNP_ACT_RELU;
          reference (m, n, k, a, bd, n, rb, NULL, TRUE, want);
          nnp_sgemm_run_indirect_full (&g, b, koff, seg, rows, cols, margin, pool);
          check_close ("indirect", m, n, k, c, n, want);
          g_free (a);
          g_free (b);
          g_free (bd);
          g_free (c);
          g_free (rb);
          g_aligned_free (ap);
          g_free (koff);
          g_free (want);
        }
  nnp_thread_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_message ("micro-kernel: %s", nnp_sgemm_kernel_name ());
  g_test_add_func ("/sgemm/packed", test_packed);
  g_test_add_func ("/sgemm/indirect", test_indirect);
  return g_test_run ();
}
