/* libnnpipe: single-precision GEMM for the CPU backend (see cpu-gemm.h).
 *
 * Layouts.  K is cut into blocks of kcb = kblock (k) columns (balanced, at
 * most NNP_SGEMM_KC).  A packed A holds, for the block starting at k0 (kc
 * wide), MR-row panels at a_packed + k0 * Mp + i0 * kc, element (i0 + r,
 * k0 + q) at [q * MR + r]; Mp is m rounded up to MR, missing rows are zero.
 * A packed B is the same with NR-column panels: b_packed + k0 * Np + j0 * kc,
 * element (k0 + q, j0 + j) at [q * NR + j].
 *
 * Work split: tasks are (batch item, MC rows, NC columns) blocks, each
 * computed over the whole of K by one thread with its own scratch slot.
 *
 * The micro-kernel computes an MR x NR tile of C over one k block, adds it
 * to C after the first block, and on the last block applies the epilogue
 * (row or column bias, activation) while the tile is in registers. */
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-transpose.h"
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include "backends/act-scalar.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define MR NNP_SGEMM_MR
#define NR NNP_SGEMM_NR
#define KC NNP_SGEMM_KC
#define MC NNP_SGEMM_MC
#define NC NNP_SGEMM_NC

G_STATIC_ASSERT (MC % MR == 0);
G_STATIC_ASSERT (NC % NR == 0);

typedef struct {
  gboolean load_c; /* add the tile to what C holds */
  const float *rb; /* MR row biases (already scaled) or NULL */
  const float *cb; /* NR column biases (already scaled) or NULL */
  NnpActivation act;
  float act_alpha, act_beta;
  /* AVX-512 kernels, last K block: after the activation C = sum_act (C +
   * sum), sum laid out as C (row r at sum + r * sum_ld); NULL: none */
  const float *sum;
  int64_t sum_ld;
  NnpActivation sum_act;
  float sum_alpha, sum_beta;
  /* the indirect AVX-512 kernels' _part forms: the rows of the tile
   * stored (and, with load_c, read from C); the others computed and
   * dropped */
  int rows;
} UkArgs;

typedef void (*UkFunc) (int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                        const UkArgs *args);

/* ---------------------------------------------------------------- micro-kernels */

#if HAVE_X86
/* The 6x16 AVX2 tile lives in twelve named registers c00..c51 (an array would
 * be spilled): UK_RANK1 adds a[0..5] x (b0|b1), UK_GATHER copies the tile into
 * acc[MR][2] for the epilogue. */
#define UK_RANK1(a, b0, b1) \
  do { \
    __m256 av_; \
    av_ = _mm256_broadcast_ss ((a) + 0); \
    c00 = _mm256_fmadd_ps (av_, b0, c00); \
    c01 = _mm256_fmadd_ps (av_, b1, c01); \
    av_ = _mm256_broadcast_ss ((a) + 1); \
    c10 = _mm256_fmadd_ps (av_, b0, c10); \
    c11 = _mm256_fmadd_ps (av_, b1, c11); \
    av_ = _mm256_broadcast_ss ((a) + 2); \
    c20 = _mm256_fmadd_ps (av_, b0, c20); \
    c21 = _mm256_fmadd_ps (av_, b1, c21); \
    av_ = _mm256_broadcast_ss ((a) + 3); \
    c30 = _mm256_fmadd_ps (av_, b0, c30); \
    c31 = _mm256_fmadd_ps (av_, b1, c31); \
    av_ = _mm256_broadcast_ss ((a) + 4); \
    c40 = _mm256_fmadd_ps (av_, b0, c40); \
    c41 = _mm256_fmadd_ps (av_, b1, c41); \
    av_ = _mm256_broadcast_ss ((a) + 5); \
    c50 = _mm256_fmadd_ps (av_, b0, c50); \
    c51 = _mm256_fmadd_ps (av_, b1, c51); \
  } while (0)
#define UK_GATHER(acc) \
  do { \
    acc[0][0] = c00; \
    acc[0][1] = c01; \
    acc[1][0] = c10; \
    acc[1][1] = c11; \
    acc[2][0] = c20; \
    acc[2][1] = c21; \
    acc[3][0] = c30; \
    acc[3][1] = c31; \
    acc[4][0] = c40; \
    acc[4][1] = c41; \
    acc[5][0] = c50; \
    acc[5][1] = c51; \
  } while (0)
#endif

/* C tile = acc (+ C when load_c) (+ row bias rb) (+ column bias cb), then the
 * fused activation: the one epilogue of every micro-kernel. */
static void
uk_store_generic (float acc[MR][NR], float *c, int64_t ldc, const UkArgs *args)
{
  for (int r = 0; r < MR; r++) {
    float *cr = c + r * ldc;
    for (int j = 0; j < NR; j++) {
      float v = acc[r][j];
      if (args->load_c)
        v += cr[j];
      if (args->rb)
        v += args->rb[r];
      if (args->cb)
        v += args->cb[j];
      cr[j] = nnp_act_apply (v, args->act, args->act_alpha, args->act_beta);
    }
  }
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static inline void
uk_store_avx2 (__m256 acc[MR][2], float *c, int64_t ldc, const UkArgs *args)
{
  __m256 cb0 = _mm256_setzero_ps (), cb1 = _mm256_setzero_ps ();
  __m256 va = _mm256_set1_ps (args->act_alpha), vb = _mm256_set1_ps (args->act_beta);

  if (args->cb) {
    cb0 = _mm256_loadu_ps (args->cb);
    cb1 = _mm256_loadu_ps (args->cb + 8);
  }
  for (int r = 0; r < MR; r++) {
    float *cr = c + r * ldc;
    __m256 x0 = acc[r][0], x1 = acc[r][1];
    if (args->load_c) {
      x0 = _mm256_add_ps (x0, _mm256_loadu_ps (cr));
      x1 = _mm256_add_ps (x1, _mm256_loadu_ps (cr + 8));
    }
    if (args->rb) {
      __m256 rb = _mm256_set1_ps (args->rb[r]);
      x0 = _mm256_add_ps (x0, rb);
      x1 = _mm256_add_ps (x1, rb);
    }
    if (args->cb) {
      x0 = _mm256_add_ps (x0, cb0);
      x1 = _mm256_add_ps (x1, cb1);
    }
    if (args->act != NNP_ACT_NONE) {
      x0 = nnp_act_avx2 (x0, args->act, va, vb);
      x1 = nnp_act_avx2 (x1, args->act, va, vb);
    }
    _mm256_storeu_ps (cr, x0);
    _mm256_storeu_ps (cr + 8, x1);
  }
}
#endif

static void
uk_generic (int64_t kc, const float *a, const float *b, float *c, int64_t ldc, const UkArgs *args)
{
  float acc[MR][NR];

  memset (acc, 0, sizeof (acc));
  for (int64_t q = 0; q < kc; q++) {
    for (int r = 0; r < MR; r++) {
      float av = a[q * MR + r];
      for (int j = 0; j < NR; j++)
        acc[r][j] += av * b[q * NR + j];
    }
  }
  uk_store_generic (acc, c, ldc, args);
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static void
uk_avx2 (int64_t kc, const float *a, const float *b, float *c, int64_t ldc, const UkArgs *args)
{
  __m256 c00 = _mm256_setzero_ps (), c01 = _mm256_setzero_ps ();
  __m256 c10 = _mm256_setzero_ps (), c11 = _mm256_setzero_ps ();
  __m256 c20 = _mm256_setzero_ps (), c21 = _mm256_setzero_ps ();
  __m256 c30 = _mm256_setzero_ps (), c31 = _mm256_setzero_ps ();
  __m256 c40 = _mm256_setzero_ps (), c41 = _mm256_setzero_ps ();
  __m256 c50 = _mm256_setzero_ps (), c51 = _mm256_setzero_ps ();
  __m256 acc[MR][2];

  /* unrolled: the loop overhead competes with the FMAs for dispatch slots
   * (measured: ~5% faster GEMMs) */
#pragma GCC unroll 4
  for (int64_t q = 0; q < kc; q++) {
    __m256 b0 = _mm256_loadu_ps (b), b1 = _mm256_loadu_ps (b + 8);
    UK_RANK1 (a, b0, b1);
    a += MR;
    b += NR;
  }
  UK_GATHER (acc);
  uk_store_avx2 (acc, c, ldc, args);
}
#endif

/* Indirect variants: B row q is b + koff[q] (16 contiguous floats). */
typedef void (*UkIndFunc) (int64_t kc, const float *a, const float *b, const int32_t *koff,
                           float *c, int64_t ldc, const UkArgs *args);

static void
uki_generic (int64_t kc, const float *a, const float *b, const int32_t *koff, float *c, int64_t ldc,
             const UkArgs *args)
{
  float acc[MR][NR];

  memset (acc, 0, sizeof (acc));
  for (int64_t q = 0; q < kc; q++) {
    const float *bq = b + koff[q];
    for (int r = 0; r < MR; r++) {
      float av = a[q * MR + r];
      for (int j = 0; j < NR; j++)
        acc[r][j] += av * bq[j];
    }
  }
  uk_store_generic (acc, c, ldc, args);
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static void
uki_avx2 (int64_t kc, const float *a, const float *b, const int32_t *koff, float *c, int64_t ldc,
          const UkArgs *args)
{
  __m256 c00 = _mm256_setzero_ps (), c01 = _mm256_setzero_ps ();
  __m256 c10 = _mm256_setzero_ps (), c11 = _mm256_setzero_ps ();
  __m256 c20 = _mm256_setzero_ps (), c21 = _mm256_setzero_ps ();
  __m256 c30 = _mm256_setzero_ps (), c31 = _mm256_setzero_ps ();
  __m256 c40 = _mm256_setzero_ps (), c41 = _mm256_setzero_ps ();
  __m256 c50 = _mm256_setzero_ps (), c51 = _mm256_setzero_ps ();
  __m256 acc[MR][2];

#pragma GCC unroll 4
  for (int64_t q = 0; q < kc; q++) {
    const float *bq = b + koff[q];
    __m256 b0 = _mm256_loadu_ps (bq), b1 = _mm256_loadu_ps (bq + 8);
    /* the next tiles of this B row: too many rows for the hardware
     * prefetcher (measured: ~8% faster 3x3 convolutions) */
    _mm_prefetch ((const char *) (bq + 2 * NR), _MM_HINT_T0);
    UK_RANK1 (a, b0, b1);
    a += MR;
  }
  UK_GATHER (acc);
  uk_store_avx2 (acc, c, ldc, args);
}
#endif

#if HAVE_X86
/* AVX-512: a block of two MR-row A panels x two NR-column B tiles (12 x 32)
 * in 24 zmm accumulators named c<row>_0 / c<row>_1, or one panel (6 x 32).
 * Same packed layouts as the AVX2 kernel: the second A panel is `as` floats
 * after the first, the second B tile 16 floats (indirect: the same B row)
 * or `bs` floats (packed) after the first. */
#define UK512 __attribute__ ((target ("avx512f,avx512dq,avx2,fma")))
#define Z_DECL(r) __m512 c##r##_0 = _mm512_setzero_ps (), c##r##_1 = _mm512_setzero_ps ()
#define Z_FMA(r, ap) \
  do { \
    __m512 av_ = _mm512_set1_ps ((ap)[r % MR]); \
    c##r##_0 = _mm512_fmadd_ps (av_, b0, c##r##_0); \
    c##r##_1 = _mm512_fmadd_ps (av_, b1, c##r##_1); \
  } while (0)
#define Z_RANK1_6(a) \
  do { \
    Z_FMA (0, a); \
    Z_FMA (1, a); \
    Z_FMA (2, a); \
    Z_FMA (3, a); \
    Z_FMA (4, a); \
    Z_FMA (5, a); \
  } while (0)
#define Z_RANK1_12(a, a2) \
  do { \
    Z_RANK1_6 (a); \
    Z_FMA (6, a2); \
    Z_FMA (7, a2); \
    Z_FMA (8, a2); \
    Z_FMA (9, a2); \
    Z_FMA (10, a2); \
    Z_FMA (11, a2); \
  } while (0)
#define Z_DECL_6 \
  Z_DECL (0); \
  Z_DECL (1); \
  Z_DECL (2); \
  Z_DECL (3); \
  Z_DECL (4); \
  Z_DECL (5)
#define Z_DECL_12 \
  Z_DECL_6; \
  Z_DECL (6); \
  Z_DECL (7); \
  Z_DECL (8); \
  Z_DECL (9); \
  Z_DECL (10); \
  Z_DECL (11)
/* The tile's accumulators spilled to t[2 * r + (0 | 1)] and stored by one
 * call (in the kernels' bodies, `part`: only the first args->rows rows);
 * one call a tile, not one a row: with K small (stems, the 1x1 expansions
 * of inverted residual blocks) the calls were a third of the tile's time. */
#define Z_SPILL(r) \
  do { \
    t_[2 * (r)] = c##r##_0; \
    t_[2 * (r) + 1] = c##r##_1; \
  } while (0)
#define Z_SPILL_6 \
  Z_SPILL (0); \
  Z_SPILL (1); \
  Z_SPILL (2); \
  Z_SPILL (3); \
  Z_SPILL (4); \
  Z_SPILL (5)
#define Z_STORE_6 \
  do { \
    __m512 t_[2 * MR]; \
    Z_SPILL_6; \
    uk512_store_tile (t_, part ? args->rows : MR, c, ldc, args); \
  } while (0)
#define Z_STORE_12 \
  do { \
    __m512 t_[4 * MR]; \
    Z_SPILL_6; \
    Z_SPILL (6); \
    Z_SPILL (7); \
    Z_SPILL (8); \
    Z_SPILL (9); \
    Z_SPILL (10); \
    Z_SPILL (11); \
    uk512_store_tile (t_, part ? args->rows : 2 * MR, c, ldc, args); \
  } while (0)

/* Row r of the tile: the epilogue of uk_store_avx2 on 32 columns (args->rb:
 * 12 or 6 row biases, args->cb: 32 column biases). */
UK512 __attribute__ ((always_inline)) static inline void
uk512_store_row (__m512 x0, __m512 x1, float *cr, int r, const UkArgs *args)
{
  if (args->load_c) {
    x0 = _mm512_add_ps (x0, _mm512_loadu_ps (cr));
    x1 = _mm512_add_ps (x1, _mm512_loadu_ps (cr + 16));
  }
  if (args->rb) {
    __m512 rb = _mm512_set1_ps (args->rb[r]);
    x0 = _mm512_add_ps (x0, rb);
    x1 = _mm512_add_ps (x1, rb);
  }
  if (args->cb) {
    x0 = _mm512_add_ps (x0, _mm512_loadu_ps (args->cb));
    x1 = _mm512_add_ps (x1, _mm512_loadu_ps (args->cb + 16));
  }
  /* in registers, one store */
  x0 = nnp_act_avx512 (x0, args->act, args->act_alpha, args->act_beta);
  x1 = nnp_act_avx512 (x1, args->act, args->act_alpha, args->act_beta);
  if (args->sum) {
    const float *sr = args->sum + r * args->sum_ld;
    x0 = nnp_act_avx512 (_mm512_add_ps (x0, _mm512_loadu_ps (sr)), args->sum_act, args->sum_alpha,
                         args->sum_beta);
    x1 = nnp_act_avx512 (_mm512_add_ps (x1, _mm512_loadu_ps (sr + 16)), args->sum_act,
                         args->sum_alpha, args->sum_beta);
  }
  _mm512_storeu_ps (cr, x0);
  _mm512_storeu_ps (cr + 16, x1);
}

/* Rows [0, rows) of a tile spilled by Z_STORE_6 / Z_STORE_12. */
UK512 static void
uk512_store_tile (const __m512 *t, int rows, float *c, int64_t ldc, const UkArgs *args)
{
  for (int r = 0; r < rows; r++)
    uk512_store_row (t[2 * r], t[2 * r + 1], c + r * ldc, r, args);
}

/* Packed B: tile 0 at b, tile 1 at b + bs; A panel 1 at a + as. */
UK512 static void
uk512_12x32 (int64_t kc, const float *a, int64_t as, const float *b, int64_t bs, float *c,
             int64_t ldc, const UkArgs *args)
{
  const gboolean part = FALSE;
  Z_DECL_12;

#pragma GCC unroll 2
  for (int64_t q = 0; q < kc; q++) {
    __m512 b0 = _mm512_loadu_ps (b + q * NR), b1 = _mm512_loadu_ps (b + bs + q * NR);
    Z_RANK1_12 (a + q * MR, a + as + q * MR);
  }
  Z_STORE_12;
}

UK512 static void
uk512_6x32 (int64_t kc, const float *a, const float *b, int64_t bs, float *c, int64_t ldc,
            const UkArgs *args)
{
  const gboolean part = FALSE;
  Z_DECL_6;

#pragma GCC unroll 4
  for (int64_t q = 0; q < kc; q++) {
    __m512 b0 = _mm512_loadu_ps (b + q * NR), b1 = _mm512_loadu_ps (b + bs + q * NR);
    Z_RANK1_6 (a + q * MR);
  }
  Z_STORE_6;
}

/* A read in place: row-major, row r of the tile at a + r * lda (rows = 12
 * or 6); packed B as uk512_12x32's.  Saves packing A where it is not a
 * prepacked weight (a transformer's activations times its weights: the
 * packing was 6 % of those MatMuls); as fast as the packed A (measured:
 * 112-113 GFLOP/s both, A from L2).  Rows in groups of three from four
 * pointers, so the loop keeps few registers for addresses. */
UK512 __attribute__ ((always_inline)) static inline void
uk512_direct_body (int64_t kc, const float *a, int64_t lda, const float *b, int64_t bs, float *c,
                   int64_t ldc, const UkArgs *args, const int rows)
{
  __m512 acc[4 * MR];

#pragma GCC unroll 12
  for (int r = 0; r < rows; r++)
    acc[2 * r] = acc[2 * r + 1] = _mm512_setzero_ps ();
#pragma GCC unroll 2
  for (int64_t q = 0; q < kc; q++) {
    const float *p[4] = { a + q, a + 3 * lda + q, a + 6 * lda + q, a + 9 * lda + q };
    __m512 b0 = _mm512_loadu_ps (b + q * NR), b1 = _mm512_loadu_ps (b + bs + q * NR);
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
      __m512 av = _mm512_set1_ps (p[r / 3][(r % 3) * lda]);
      acc[2 * r] = _mm512_fmadd_ps (av, b0, acc[2 * r]);
      acc[2 * r + 1] = _mm512_fmadd_ps (av, b1, acc[2 * r + 1]);
    }
  }
  uk512_store_tile (acc, rows, c, ldc, args);
}

UK512 static void
uk512_12x32_direct (int64_t kc, const float *a, int64_t lda, const float *b, int64_t bs, float *c,
                    int64_t ldc, const UkArgs *args)
{
  uk512_direct_body (kc, a, lda, b, bs, c, ldc, args, 2 * MR);
}

UK512 static void
uk512_6x32_direct (int64_t kc, const float *a, int64_t lda, const float *b, int64_t bs, float *c,
                   int64_t ldc, const UkArgs *args)
{
  uk512_direct_body (kc, a, lda, b, bs, c, ldc, args, MR);
}

/* Indirect: B row q is b + koff[q] (32 contiguous floats).  The bodies
 * with `part` a constant: the plain kernels store every row, the _part
 * ones the first args->rows (a last block of 1-5 or 7-11 rows). */
UK512 __attribute__ ((always_inline)) static inline void
uki512_12x32_body (int64_t kc, const float *a, int64_t as, const float *b, const int32_t *koff,
                   float *c, int64_t ldc, const UkArgs *args, const gboolean part)
{
  Z_DECL_12;

#pragma GCC unroll 2
  for (int64_t q = 0; q < kc; q++) {
    const float *bq = b + koff[q];
    __m512 b0 = _mm512_loadu_ps (bq), b1 = _mm512_loadu_ps (bq + 16);
    _mm_prefetch ((const char *) (bq + 2 * NR), _MM_HINT_T0);
    _mm_prefetch ((const char *) (bq + 3 * NR), _MM_HINT_T0);
    Z_RANK1_12 (a + q * MR, a + as + q * MR);
  }
  Z_STORE_12;
}

UK512 __attribute__ ((always_inline)) static inline void
uki512_6x32_body (int64_t kc, const float *a, const float *b, const int32_t *koff, float *c,
                  int64_t ldc, const UkArgs *args, const gboolean part)
{
  Z_DECL_6;

#pragma GCC unroll 4
  for (int64_t q = 0; q < kc; q++) {
    const float *bq = b + koff[q];
    __m512 b0 = _mm512_loadu_ps (bq), b1 = _mm512_loadu_ps (bq + 16);
    _mm_prefetch ((const char *) (bq + 2 * NR), _MM_HINT_T0);
    _mm_prefetch ((const char *) (bq + 3 * NR), _MM_HINT_T0);
    Z_RANK1_6 (a + q * MR);
  }
  Z_STORE_6;
}

UK512 static void
uki512_12x32 (int64_t kc, const float *a, int64_t as, const float *b, const int32_t *koff, float *c,
              int64_t ldc, const UkArgs *args)
{
  uki512_12x32_body (kc, a, as, b, koff, c, ldc, args, FALSE);
}

UK512 static void
uki512_6x32 (int64_t kc, const float *a, const float *b, const int32_t *koff, float *c, int64_t ldc,
             const UkArgs *args)
{
  uki512_6x32_body (kc, a, b, koff, c, ldc, args, FALSE);
}

UK512 static void
uki512_12x32_part (int64_t kc, const float *a, int64_t as, const float *b, const int32_t *koff,
                   float *c, int64_t ldc, const UkArgs *args)
{
  uki512_12x32_body (kc, a, as, b, koff, c, ldc, args, TRUE);
}

UK512 static void
uki512_6x32_part (int64_t kc, const float *a, const float *b, const int32_t *koff, float *c,
                  int64_t ldc, const UkArgs *args)
{
  uki512_6x32_body (kc, a, b, koff, c, ldc, args, TRUE);
}

/* Rows [0, mr) of a 32-column tile, 1 <= mr <= 12 (A panels at a and
 * a + as): the 12- or 6-row kernel, its _part form when mr is neither (the
 * packed A holds the rows up to a multiple of 6). */
UK512 static void
uki512_rows (int64_t mr, int64_t kc, const float *a, int64_t as, const float *b,
             const int32_t *koff, float *c, int64_t ldc, UkArgs *args)
{
  args->rows = (int) mr;
  if (mr == 2 * MR)
    uki512_12x32 (kc, a, as, b, koff, c, ldc, args);
  else if (mr == MR)
    uki512_6x32 (kc, a, b, koff, c, ldc, args);
  else if (mr > MR)
    uki512_12x32_part (kc, a, as, b, koff, c, ldc, args);
  else
    uki512_6x32_part (kc, a, b, koff, c, ldc, args);
}
#endif

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static gsize
activate_avx2 (float *x, gsize n, NnpActivation act, float alpha, float beta)
{
  __m256 va = _mm256_set1_ps (alpha), vb = _mm256_set1_ps (beta);
  gsize i = 0;

  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (x + i, nnp_act_avx2 (_mm256_loadu_ps (x + i), act, va, vb));
  return i;
}
#endif

static UkFunc the_uk;
static UkIndFunc the_uki;
static const char *the_uk_name;
/* the AVX-512 32-column kernels are used (with the_uk / the_uki at the edges) */
static gboolean the_512;

static UkFunc
get_uk (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    the_uk = uk_generic;
    the_uki = uki_generic;
    the_uk_name = "generic";
#if HAVE_X86
    __builtin_cpu_init ();
    if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
        && g_getenv ("NNPIPE_CPU_GENERIC") == NULL) {
      the_uk = uk_avx2;
      the_uki = uki_avx2;
      the_uk_name = "avx2-fma";
      if (__builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512dq")
          && g_getenv ("NNPIPE_CPU_NO_AVX512") == NULL) {
        the_512 = TRUE;
        the_uk_name = "avx512-fma";
      }
    }
#endif
    g_once_init_leave (&once, 1);
  }
  return the_uk;
}

/* Portable loops, one per activation (lib/backends/act-scalar.h), with
 * branch-free bodies so the compiler can vectorise them (SSE2 at least)
 * where AVX2 is not used. */
static void
activate_generic (float *x, gsize n, NnpActivation act, float alpha, float beta)
{
  switch (act) {
    case NNP_ACT_RELU:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_relu (x[i]);
      break;
    case NNP_ACT_CLIP:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_clip (x[i], alpha, beta);
      break;
    case NNP_ACT_LEAKY_RELU:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_leaky_relu (x[i], alpha);
      break;
    case NNP_ACT_HARD_SIGMOID:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_hard_sigmoid (x[i], alpha, beta);
      break;
    case NNP_ACT_HARD_SWISH:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_hard_swish (x[i]);
      break;
    case NNP_ACT_HARD_SWISH_AFFINE:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_hard_swish_affine (x[i], alpha, beta);
      break;
    case NNP_ACT_SIGMOID:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_sigmoid (x[i]);
      break;
    case NNP_ACT_SILU:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_silu (x[i]);
      break;
    case NNP_ACT_GELU:
      for (gsize i = 0; i < n; i++)
        x[i] = nnp_act_gelu (x[i]);
      break;
    case NNP_ACT_NONE:
    default: break;
  }
}

void
nnp_sgemm_activate (float *x, gsize n, NnpActivation act, float alpha, float beta)
{
  gsize done = 0;

  if (act == NNP_ACT_NONE)
    return;
#if HAVE_X86
  if (get_uk () == uk_avx2)
    done = activate_avx2 (x, n, act, alpha, beta);
#endif
  activate_generic (x + done, n - done, act, alpha, beta);
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static gsize
add_act_avx2 (float *x, const float *y, gsize n, NnpActivation act, float alpha, float beta)
{
  __m256 va = _mm256_set1_ps (alpha), vb = _mm256_set1_ps (beta);
  gsize i = 0;

  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_add_ps (_mm256_loadu_ps (x + i), _mm256_loadu_ps (y + i));
    _mm256_storeu_ps (x + i, act == NNP_ACT_NONE ? v : nnp_act_avx2 (v, act, va, vb));
  }
  return i;
}
#endif

void
nnp_sgemm_add_act (float *x, const float *y, gsize n, NnpActivation act, float alpha, float beta)
{
  gsize done = 0;

#if HAVE_X86
  if (get_uk () == uk_avx2)
    done = add_act_avx2 (x, y, n, act, alpha, beta);
#endif
  for (gsize i = done; i < n; i++)
    x[i] += y[i];
  activate_generic (x + done, n - done, act, alpha, beta);
}

gboolean
nnp_sgemm_has_avx512 (void)
{
  get_uk ();
  return the_512;
}

const char *
nnp_sgemm_kernel_name (void)
{
  get_uk ();
  return the_uk_name;
}

/* One row of an edge tile: a fixed-size copy (inlined) for full rows. */
static inline void
copy_tile_row (float *dst, const float *src, int64_t nr)
{
  if (nr == NR)
    memcpy (dst, src, NR * sizeof (float));
  else
    memcpy (dst, src, nr * sizeof (float));
}

/* ---------------------------------------------------------------- packing */

static inline int64_t
round_up (int64_t x, int64_t to)
{
  return (x + to - 1) / to * to;
}

/* Width of the k blocks: at most KC, as equal as possible. */
static inline int64_t
kblock (int64_t k)
{
  int64_t nb;

  if (k <= KC)
    return MAX (k, 1);
  nb = (k + KC - 1) / KC;
  return (k + nb - 1) / nb;
}

gsize
nnp_sgemm_packed_a_size (int64_t m, int64_t k)
{
  return (gsize) (round_up (m, MR) * MAX (k, 1));
}

gsize
nnp_sgemm_packed_b_size (int64_t k, int64_t n)
{
  return (gsize) (round_up (n, NR) * MAX (k, 1));
}

#if HAVE_X86
/* A whole panel of a row-major A, 8 columns a step: the 6 rows' 8 floats
 * transposed in registers (two rows of zeros), each column's 6 floats
 * stored as 4 + 2 (the scalar loop's stores went 6 floats apart: 12 % of a
 * ViT's time).  Returns the columns done (a multiple of 8). */
__attribute__ ((target ("avx2,fma"))) static int64_t
pack_a_panel_avx2 (int64_t kc, const float *a, int64_t rs, float alpha, float *dst)
{
  const __m256 va = _mm256_set1_ps (alpha);
  int64_t q = 0;

  for (; q + 8 <= kc; q += 8) {
    __m256 r[8];
    for (int i = 0; i < MR; i++)
      r[i] = _mm256_mul_ps (_mm256_loadu_ps (a + i * rs + q), va);
    r[6] = r[7] = _mm256_setzero_ps ();
    nnp_transpose8_avx2 (r);
    for (int t = 0; t < 8; t++) {
      float *d = dst + (q + t) * MR;
      _mm_storeu_ps (d, _mm256_castps256_ps128 (r[t]));
      _mm_storel_pi ((__m64 *) (d + 4), _mm256_extractf128_ps (r[t], 1));
    }
  }
  return q;
}
#endif

/* One MR-row panel: rows [0, mr) of a (already offset), kc columns. */
static void
pack_a_panel (int64_t kc, int64_t mr, const float *a, int64_t rs, int64_t cs, float alpha,
              float *dst)
{
  if (mr < MR)
    memset (dst, 0, kc * MR * sizeof (float));
#if HAVE_X86
  if (cs == 1 && mr == MR && MR == 6 && nnp_cpu_avx2_ok ()) {
    int64_t done = pack_a_panel_avx2 (kc, a, rs, alpha, dst);
    for (int64_t r = 0; r < mr; r++)
      for (int64_t q = done; q < kc; q++)
        dst[q * MR + r] = alpha * a[r * rs + q];
    return;
  }
#endif
  if (cs == 1) {
    for (int64_t r = 0; r < mr; r++) {
      const float *ar = a + r * rs;
      for (int64_t q = 0; q < kc; q++)
        dst[q * MR + r] = alpha * ar[q];
    }
  } else {
    for (int64_t q = 0; q < kc; q++)
      for (int64_t r = 0; r < mr; r++)
        dst[q * MR + r] = alpha * a[r * rs + q * cs];
  }
}

/* One NR-column panel: columns [0, nr) of b (already offset), kc rows. */
static void
pack_b_panel (int64_t kc, int64_t nr, const float *b, int64_t rs, int64_t cs, float alpha,
              float *dst)
{
  if (cs == 1 && nr == NR && alpha == 1.f) {
    for (int64_t q = 0; q < kc; q++)
      memcpy (dst + q * NR, b + q * rs, NR * sizeof (float));
    return;
  }
  if (nr < NR)
    memset (dst, 0, kc * NR * sizeof (float));
  if (cs == 1) {
    for (int64_t q = 0; q < kc; q++)
      for (int64_t j = 0; j < nr; j++)
        dst[q * NR + j] = alpha * b[q * rs + j];
  } else {
    for (int64_t j = 0; j < nr; j++) {
      const float *bj = b + j * cs;
      for (int64_t q = 0; q < kc; q++)
        dst[q * NR + j] = alpha * bj[q * rs];
    }
  }
}

void
nnp_sgemm_pack_a (int64_t m, int64_t k, const float *a, int64_t rs, int64_t cs, float alpha,
                  float *dst)
{
  int64_t kcb = kblock (k), mp = round_up (m, MR);

  for (int64_t k0 = 0; k0 < k; k0 += kcb) {
    int64_t kc = MIN (kcb, k - k0);
    for (int64_t i0 = 0; i0 < m; i0 += MR)
      pack_a_panel (kc, MIN (MR, m - i0), a + i0 * rs + k0 * cs, rs, cs, alpha,
                    dst + k0 * mp + i0 * kc);
  }
}

void
nnp_sgemm_pack_b (int64_t k, int64_t n, const float *b, int64_t rs, int64_t cs, float alpha,
                  float *dst)
{
  int64_t kcb = kblock (k), np = round_up (n, NR);

  for (int64_t k0 = 0; k0 < k; k0 += kcb) {
    int64_t kc = MIN (kcb, k - k0);
    for (int64_t j0 = 0; j0 < n; j0 += NR)
      pack_b_panel (kc, MIN (NR, n - j0), b + k0 * rs + j0 * cs, rs, cs, alpha,
                    dst + k0 * np + j0 * kc);
  }
}

/* ---------------------------------------------------------------- driver */

int
nnp_sgemm_slots (void)
{
  static gsize slots = 0;

  if (g_once_init_enter (&slots)) {
    guint n = g_get_num_processors ();
    g_once_init_leave (&slots, CLAMP (n, 1, NNP_SGEMM_MAX_SLOTS));
  }
  return (int) slots;
}

gsize
nnp_sgemm_scratch_size (void)
{
  return (gsize) nnp_sgemm_slots () * NNP_SGEMM_SLOT_BYTES;
}

typedef enum { BIAS_NONE, BIAS_ROWS, BIAS_COLS, BIAS_FULL } BiasKind;

static BiasKind
bias_kind (const NnpSgemm *g)
{
  if (g->bias == NULL || g->beta == 0.f)
    return BIAS_NONE;
  if (g->bias_cs == 0)
    return BIAS_ROWS;
  if (g->bias_rs == 0)
    return BIAS_COLS;
  return BIAS_FULL;
}

/* run_block reads a row-major A in place up to this many columns of C */
#define DIRECT_A_MAX_N (12 * 2 * NR)

/* C[m0.., n0..] (mc x nc) over the whole of K.  slot: NNP_SGEMM_SLOT_FLOATS floats.
 * a_ready: the slot already holds this block's packed A (one K block, the
 * slot's previous task had the same rows of the same A). */
static void
run_block (const NnpSgemm *g, int64_t m0, int64_t mc, int64_t n0, int64_t nc, float *slot,
           gboolean a_ready)
{
  UkFunc uk = get_uk ();
  BiasKind bk = bias_kind (g);
  int64_t kcb = kblock (g->k);
  int64_t mp = round_up (g->m, MR), np = round_up (g->n, NR);
  float *slot_a = slot, *slot_b = slot ? slot + MC * KC : NULL;
  float rb[MR], cb[NR], tmp[MR * NR], rb12[2 * MR], cb32[2 * NR];
  UkArgs args = { 0 };
  /* A read in place by the AVX-512 kernels (uk512_direct_body): row-major,
   * not scaled, every column tile 32 wide, and few of them (the packing
   * is paid once for all of them; measured, 197 x 192 A, eight MatMuls: N
   * 192 -5 %, 256 -3 %, 384 -1 %, 768 +7 %); only a last panel of 1-5
   * rows is packed (for the AVX2 tiles) */
  const gboolean direct = the_512 && !g->a_packed && g->a_cs == 1 && g->alpha == 1.f
                          && g->n % (2 * NR) == 0 && g->n <= DIRECT_A_MAX_N;
  const int64_t m_direct = direct ? mc - mc % MR : 0;

  if (bk == BIAS_FULL) {
    for (int64_t i = 0; i < mc; i++) {
      float *cr = g->c + (m0 + i) * g->ldc + n0;
      const float *br = g->bias + (m0 + i) * g->bias_rs + n0 * g->bias_cs;
      for (int64_t j = 0; j < nc; j++)
        cr[j] = g->beta * br[j * g->bias_cs];
    }
  }
  if (g->k == 0) {
    for (int64_t i = 0; i < mc; i++) {
      float *cr = g->c + (m0 + i) * g->ldc + n0;
      for (int64_t j = 0; j < nc; j++) {
        float v = bk == BIAS_FULL ? cr[j] : 0.f;
        if (bk == BIAS_ROWS)
          v = g->beta * g->bias[(m0 + i) * g->bias_rs];
        else if (bk == BIAS_COLS)
          v = g->beta * g->bias[(n0 + j) * g->bias_cs];
        cr[j] = nnp_act_apply (v, g->act, g->act_alpha, g->act_beta);
      }
    }
    return;
  }

  for (int64_t k0 = 0; k0 < g->k; k0 += kcb) {
    int64_t kc = MIN (kcb, g->k - k0);
    gboolean last = k0 + kc >= g->k;
    const float *abase, *bbase;

    if (g->a_packed) {
      abase = g->a_packed + k0 * mp + m0 * kc;
    } else if (a_ready) {
      abase = slot_a;
    } else {
      for (int64_t i = m_direct; i < mc; i += MR)
        pack_a_panel (kc, MIN (MR, mc - i), g->a + (m0 + i) * g->a_rs + k0 * g->a_cs, g->a_rs,
                      g->a_cs, g->alpha, slot_a + i * kc);
      abase = slot_a;
    }
    if (g->b_packed) {
      bbase = g->b_packed + k0 * np + n0 * kc;
    } else if (g->pack_b) {
      g->pack_b (g->pack_b_data, g, k0, kc, n0, nc, slot_b);
      bbase = slot_b;
    } else {
      float alpha = g->a_packed ? g->alpha : 1.f;
      for (int64_t j = 0; j < nc; j += NR)
        pack_b_panel (kc, MIN (NR, nc - j), g->b + k0 * g->b_rs + (n0 + j) * g->b_cs, g->b_rs,
                      g->b_cs, alpha, slot_b + j * kc);
      bbase = slot_b;
    }

    args.load_c = k0 > 0 || bk == BIAS_FULL;
    args.rb = NULL;
    args.cb = NULL;
    args.act = NNP_ACT_NONE;
    args.act_alpha = g->act_alpha;
    args.act_beta = g->act_beta;
    if (last)
      args.act = g->act;

    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
      int64_t i_from = 0, n_tiles = 1;
#if HAVE_X86
      if (the_512 && j0 + 2 * NR <= nc) {
        /* 32 columns: 12 x 32 blocks, 6 x 32 for a last full panel; a
         * partial last panel goes through the AVX2 tiles below */
        const float *bp = bbase + j0 * kc;
        int64_t i = 0;
        args.cb = NULL;
        args.rb = NULL;
        if (last && bk == BIAS_COLS) {
          for (int64_t jj = 0; jj < 2 * NR; jj++)
            cb32[jj] = g->beta * g->bias[(n0 + j0 + jj) * g->bias_cs];
          args.cb = cb32;
        }
        for (; i + MR <= mc; i += 2 * MR) {
          int64_t mr = i + 2 * MR <= mc ? 2 * MR : MR;
          const float *ap = abase + i * kc;
          float *cp = g->c + (m0 + i) * g->ldc + n0 + j0;
          if (last && bk == BIAS_ROWS) {
            for (int64_t r = 0; r < mr; r++)
              rb12[r] = g->beta * g->bias[(m0 + i + r) * g->bias_rs];
            args.rb = rb12;
          }
          const float *ad = g->a + (m0 + i) * g->a_rs + k0;
          if (direct && mr == 2 * MR)
            uk512_12x32_direct (kc, ad, g->a_rs, bp, NR * kc, cp, g->ldc, &args);
          else if (direct)
            uk512_6x32_direct (kc, ad, g->a_rs, bp, NR * kc, cp, g->ldc, &args);
          else if (mr == 2 * MR)
            uk512_12x32 (kc, ap, MR * kc, bp, NR * kc, cp, g->ldc, &args);
          else
            uk512_6x32 (kc, ap, bp, NR * kc, cp, g->ldc, &args);
          if (mr == MR)
            i -= MR;
        }
        args.cb = NULL;
        args.rb = NULL;
        i_from = MIN (i, mc);
        n_tiles = 2;
      }
#endif
      for (int64_t j = j0; j < j0 + n_tiles * NR; j += NR) {
        int64_t nr = MIN (NR, nc - j);
        const float *bp = bbase + j * kc;
        if (last && bk == BIAS_COLS) {
          for (int64_t jj = 0; jj < NR; jj++)
            cb[jj] = jj < nr ? g->beta * g->bias[(n0 + j + jj) * g->bias_cs] : 0.f;
          args.cb = cb;
        }
        for (int64_t i = i_from; i < mc; i += MR) {
          int64_t mr = MIN (MR, mc - i);
          const float *ap = abase + i * kc;
          float *cp = g->c + (m0 + i) * g->ldc + n0 + j;
          if (last && bk == BIAS_ROWS) {
            for (int64_t r = 0; r < MR; r++)
              rb[r] = r < mr ? g->beta * g->bias[(m0 + i + r) * g->bias_rs] : 0.f;
            args.rb = rb;
          }
          if (mr == MR && nr == NR) {
            uk (kc, ap, bp, cp, g->ldc, &args);
          } else {
            if (args.load_c) {
              for (int64_t r = 0; r < mr; r++)
                copy_tile_row (tmp + r * NR, cp + r * g->ldc, nr);
            }
            uk (kc, ap, bp, tmp, NR, &args);
            for (int64_t r = 0; r < mr; r++)
              copy_tile_row (cp + r * g->ldc, tmp + r * NR, nr);
          }
        }
      }
      j0 += (n_tiles - 1) * NR;
    }
  }
}

typedef struct {
  const NnpSgemm *g;
  NnpSgemmSetup setup;
  gpointer data;
  float *scratch;
  int64_t mcb, ncb, mb, nb, n_tasks;
  int n_slots;
} RunCtx;

static void
run_slots (gpointer data, gsize begin, gsize end, int thread)
{
  RunCtx *ctx = data;

  for (gsize s = begin; s < end; s++) {
    float *slot = ctx->scratch ? ctx->scratch + s * NNP_SGEMM_SLOT_FLOATS : NULL;
    int64_t cur_batch = -1, packed_m0 = -1;
    NnpSgemm g = *ctx->g;

    for (int64_t t = (int64_t) s; t < ctx->n_tasks; t += ctx->n_slots) {
      int64_t ni = t % ctx->nb, mi = (t / ctx->nb) % ctx->mb, b = t / (ctx->nb * ctx->mb);
      int64_t m0 = mi * ctx->mcb, n0 = ni * ctx->ncb;
      if (b != cur_batch) {
        g = *ctx->g;
        if (ctx->setup)
          ctx->setup (ctx->data, b, &g);
        cur_batch = b;
        packed_m0 = -1;
      }
      /* A packed once for the column blocks of its rows when K is one
       * block (a ViT's MLP of 768 columns packed its A three times) */
      run_block (&g, m0, MIN (ctx->mcb, g.m - m0), n0, MIN (ctx->ncb, g.n - n0), slot,
                 packed_m0 == m0);
      packed_m0 = g.k <= KC && !g.a_packed && slot ? m0 : -1;
    }
  }
}

/* The width of n_blocks blocks of `total` as equal as they go, rounded up
 * to `unit` (the caller keeps it at most the width that made n_blocks, so
 * that no block is empty) */
static int64_t
even_block (int64_t total, int64_t n_blocks, int64_t unit)
{
  return round_up ((total + n_blocks - 1) / n_blocks, unit);
}

void
nnp_sgemm_run (const NnpSgemm *g, int64_t n_batch, NnpSgemmSetup setup, gpointer data,
               NnpThreadPool *pool, void *scratch)
{
  RunCtx ctx;
  int threads = nnp_thread_pool_get_n_threads (pool);

  g_return_if_fail (g != NULL);
  g_return_if_fail (scratch != NULL || (g->a_packed && g->b_packed));
  if (g->m <= 0 || g->n <= 0 || n_batch <= 0)
    return;

  ctx.g = g;
  ctx.setup = setup;
  ctx.data = data;
  ctx.scratch = scratch;
  ctx.mcb = MC;
  ctx.ncb = NC;
  ctx.mb = (g->m + ctx.mcb - 1) / ctx.mcb;
  ctx.nb = (g->n + ctx.ncb - 1) / ctx.ncb;
  /* enough tasks to keep every thread busy: narrower blocks */
  while (threads > 1 && n_batch * ctx.mb * ctx.nb < 3 * threads && ctx.ncb > 4 * NR
         && g->n > ctx.ncb / 2) {
    ctx.ncb /= 2;
    ctx.nb = (g->n + ctx.ncb - 1) / ctx.ncb;
  }
  while (threads > 1 && n_batch * ctx.mb * ctx.nb < 3 * threads && ctx.mcb > 4 * MR
         && g->m > ctx.mcb / 2) {
    ctx.mcb = round_up (ctx.mcb / 2, MR);
    ctx.mb = (g->m + ctx.mcb - 1) / ctx.mcb;
  }
  /* blocks of equal size (at most the ones chosen): 197 rows went as 144 +
   * 53, one slot of two threads getting 341 of them and the other 250 */
  ctx.mcb = MIN (ctx.mcb, even_block (g->m, ctx.mb, 2 * MR));
  ctx.ncb = MIN (ctx.ncb, even_block (g->n, ctx.nb, 2 * NR));
  ctx.n_tasks = n_batch * ctx.mb * ctx.nb;
  ctx.n_slots = (int) MIN ((int64_t) MIN (threads, nnp_sgemm_slots ()), ctx.n_tasks);
  if (ctx.n_slots <= 1) {
    ctx.n_slots = 1;
    run_slots (&ctx, 0, 1, 0);
    return;
  }
  nnp_parallel_for (pool, ctx.n_slots, 1, run_slots, &ctx);
}

/* ---------------------------------------------------------------- indirect driver */

/* Columns per task: whole rows when there are enough of them, otherwise
 * (and for long rows, so a task's C stays in L2) NC-wide chunks. */
#define IND_CHUNK NC
/* K sub-block of the indirect driver (measured best of 64 / 96 / 128 / 256
 * on the detector's 3x3 convolutions) */
#define IND_KSUB 128
/* run_indirect_tasks packs the last columns of a chunk, IND_KSUB rows of
 * 32, into its AVX2 panel buffer */
G_STATIC_ASSERT (IND_KSUB * 2 * NR <= KC * NR);
/* output rows whose biases run_indirect_tasks keeps scaled for the whole
 * call (more: filled per tile) */
#define IND_RB_MAX 1024

typedef struct {
  const NnpSgemm *g;
  const float *b;
  const int32_t *koff;
  int64_t b_row_stride, rows, cols;
  int64_t chunk, n_chunks;
  gboolean overread_ok;
  /* rows of C cut into m_parts parts of m_step (a multiple of 12) when
   * the columns alone give the threads too few tasks (7x7 planes) */
  int64_t m_parts, m_step;
} IndCtx;

/* The C rows [*i0, *i1) of part `part`. */
static inline void
ind_rows (const IndCtx *ctx, int64_t part, int64_t *i0, int64_t *i1)
{
  *i0 = part * ctx->m_step;
  *i1 = MIN (ctx->g->m, *i0 + ctx->m_step);
}

/* The row biases of rows [i, i + n) (those from mr on zero): rbias + i
 * when the call has them all, else filled into buf. */
static inline const float *
row_biases (const NnpSgemm *g, const float *rbias, int64_t i, int64_t mr, int64_t n, float *buf)
{
  if (rbias)
    return rbias + i;
  for (int64_t q = 0; q < n; q++)
    buf[q] = q < mr ? g->beta * g->bias[(i + q) * g->bias_rs] : 0.f;
  return buf;
}

/* Tasks [begin, end): task = t * m_parts + part, C rows of part `part`
 * (ind_rows), of row t / n_chunks, the columns of chunk t % n_chunks. */
static void
run_indirect_tasks (gpointer data, gsize begin, gsize end, int thread)
{
  IndCtx *ctx = data;
  const NnpSgemm *g = ctx->g;
  UkIndFunc uki;
  UkFunc uk = get_uk ();
  BiasKind bk = bias_kind (g);
  int64_t kcb = kblock (g->k), mp = round_up (g->m, MR);
  float rb[MR], tmp[MR * NR], rb12[2 * MR], tmp32[MR * 2 * NR];
  float panel[KC * NR] __attribute__ ((aligned (32)));
  UkArgs args = { 0 };
  const int64_t ksub = IND_KSUB;
  /* B rows of a 32-wide panel (the last columns of a chunk) */
  int32_t koff32[IND_KSUB];
  /* the row biases scaled and zero-padded once per call, not before each
   * tile (a chain of 1x1 24 -> 24 convolutions: 4 % less time) */
  float rbias[IND_RB_MAX + 2 * MR];
  gboolean rb_once = bk == BIAS_ROWS && g->m <= IND_RB_MAX;

  if (rb_once)
    for (int64_t q = 0; q < round_up (g->m, 2 * MR); q++)
      rbias[q] = q < g->m ? g->beta * g->bias[q * g->bias_rs] : 0.f;
  for (int q = 0; q < IND_KSUB; q++)
    koff32[q] = q * 2 * NR;

  uki = the_uki;
  for (gsize task = begin; task < end; task++) {
    int64_t t = (int64_t) task / ctx->m_parts, i0, i1;
    int64_t r = t / ctx->n_chunks, c0 = (t % ctx->n_chunks) * ctx->chunk;
    int64_t c1 = MIN (ctx->cols, c0 + ctx->chunk);
    const float *brow = ctx->b + r * ctx->b_row_stride;
    float *crow = g->c + r * ctx->cols;
    gboolean sum_in_tile = FALSE;

    ind_rows (ctx, (int64_t) task % ctx->m_parts, &i0, &i1);
#if HAVE_X86
    /* the residual added in the AVX-512 store while the tile is in
     * registers, when every tile of the chunk is a 12 x 32 or 6 x 32 one
     * (BlazeFace back: 13 % less time than a pass over each chunk after
     * its tiles); otherwise that pass */
    sum_in_tile = g->sum && the_512 && (c1 - c0) % (2 * NR) == 0 && (i1 - i0) % MR == 0;
#endif
    for (int64_t k0 = 0; k0 < g->k; k0 += kcb) {
      int64_t kc = MIN (kcb, g->k - k0);
      const float *abase = g->a_packed + k0 * mp;

      /* sub-blocks of the packed A block: a tile of B rows plus the A
       * panels of one sub-block stay in L1 */
      for (int64_t q0 = 0; q0 < kc; q0 += ksub) {
        int64_t ks = MIN (ksub, kc - q0);
        gboolean last = k0 + q0 + ks >= g->k;
        const int32_t *koff = ctx->koff + k0 + q0;

        args.load_c = k0 + q0 > 0;
        args.rb = NULL;
        args.cb = NULL;
        args.act = last ? g->act : NNP_ACT_NONE;
        args.act_alpha = g->act_alpha;
        args.act_beta = g->act_beta;
        for (int64_t j = c0; j < c1; j += NR) {
          int64_t nr = MIN (NR, c1 - j);
          gboolean packed = FALSE;
#if HAVE_X86
          if (the_512 && j + 2 * NR <= c1) {
            /* 32 columns: 12 x 32 blocks, a 6 x 32 block for the last panel */
            for (int64_t i = i0; i < i1; i += 2 * MR) {
              int64_t mr = MIN (2 * MR, i1 - i);
              const float *ap = abase + i * kc + q0 * MR;
              float *cp = crow + i * g->ldc + j;
              if (last && bk == BIAS_ROWS)
                args.rb = row_biases (g, rb_once ? rbias : NULL, i, mr, 2 * MR, rb12);
              args.sum = NULL;
              if (last && sum_in_tile) {
                args.sum = g->sum + (cp - g->c);
                args.sum_ld = g->ldc;
                args.sum_act = g->sum_act;
                args.sum_alpha = g->sum_alpha;
                args.sum_beta = g->sum_beta;
              }
              /* a last block of 1-5 or 7-11 rows stored by the kernel
               * itself (MobileNet's 16-channel 1x1 at 112x112 went
               * through a copy of each tile) */
              uki512_rows (mr, ks, ap, MR * kc, brow + j, koff, cp, g->ldc, &args);
            }
            j += NR;
            continue;
          }
          if (the_512 && c1 - j > NR / 2) {
            /* the last 9-31 columns: packed into a 32-wide panel (zeros
             * after them) for the AVX-512 kernel, each 6-row panel through
             * tmp32 (MobileNet's 1x1 convolutions at 7x7, 49 columns: the
             * last 17 were an AVX2 tile of 16 and one of 1) */
            const int64_t nc = c1 - j;
            for (int64_t q = 0; q < ks; q++) {
              memcpy (panel + q * 2 * NR, brow + koff[q] + j, nc * sizeof (float));
              memset (panel + q * 2 * NR + nc, 0, (2 * NR - nc) * sizeof (float));
            }
            for (int64_t i = i0; i < i1; i += MR) {
              int64_t mr = MIN (MR, i1 - i);
              float *cp = crow + i * g->ldc + j;
              if (last && bk == BIAS_ROWS)
                args.rb = row_biases (g, rb_once ? rbias : NULL, i, mr, MR, rb);
              args.sum = NULL;
              if (args.load_c)
                for (int64_t q = 0; q < mr; q++)
                  memcpy (tmp32 + q * 2 * NR, cp + q * g->ldc, nc * sizeof (float));
              uki512_6x32 (ks, abase + i * kc + q0 * MR, panel, koff32, tmp32, 2 * NR, &args);
              for (int64_t q = 0; q < mr; q++)
                memcpy (cp + q * g->ldc, tmp32 + q * 2 * NR, nc * sizeof (float));
            }
            break;
          }
#endif
          if (nr < NR && !ctx->overread_ok) {
            /* the last columns of B may end the buffer: gather them */
            for (int64_t q = 0; q < ks; q++) {
              const float *src = brow + koff[q] + j;
              int64_t jj;
              for (jj = 0; jj < nr; jj++)
                panel[q * NR + jj] = src[jj];
              for (; jj < NR; jj++)
                panel[q * NR + jj] = 0.f;
            }
            packed = TRUE;
          }
          for (int64_t i = i0; i < i1; i += MR) {
            int64_t mr = MIN (MR, i1 - i);
            const float *ap = abase + i * kc + q0 * MR;
            float *cp = crow + i * g->ldc + j;
            float *dst = cp;
            int64_t ldd = g->ldc;
            if (last && bk == BIAS_ROWS)
              args.rb = row_biases (g, rb_once ? rbias : NULL, i, mr, MR, rb);
            if (mr < MR || nr < NR) {
              dst = tmp;
              ldd = NR;
              if (args.load_c)
                for (int64_t q = 0; q < mr; q++)
                  copy_tile_row (tmp + q * NR, cp + q * g->ldc, nr);
            }
            if (packed)
              uk (ks, ap, panel, dst, ldd, &args);
            else
              uki (ks, ap, brow + j, koff, dst, ldd, &args);
            if (dst == tmp)
              for (int64_t q = 0; q < mr; q++)
                copy_tile_row (cp + q * g->ldc, tmp + q * NR, nr);
          }
        }
      }
    }
    if (g->sum && !sum_in_tile)
      for (int64_t i = i0; i < i1; i++)
        nnp_sgemm_add_act (crow + i * g->ldc + c0, g->sum + (crow - g->c) + i * g->ldc + c0,
                           c1 - c0, g->sum_act, g->sum_alpha, g->sum_beta);
  }
}

/* Linear mode (rows of B padded to b_row_stride > cols, e.g. a direct
 * convolution's padded input): output (r, j) is B column p = r *
 * b_row_stride + j, so the whole plane is one run of P = (rows - 1) *
 * b_row_stride + cols columns, cut into full-width tiles however short
 * the rows are; the columns p % b_row_stride >= cols are computed and not
 * stored.  A tile inside one row goes straight to C; a tile that crosses
 * a row end goes through a tile buffer, its row pieces copied out (and in,
 * after the first K sub-block). */
#define LIN_TW (2 * NR) /* widest tile of any kernel */

typedef struct {
  int64_t r, j, t0, n; /* C row r, columns [j, j + n) = tile columns [t0, t0 + n) */
} LinSeg;

/* The stored pieces of the tile at column p, tw wide; returns how many. */
static int
lin_segments (const IndCtx *ctx, int64_t p, int64_t tw, LinSeg *seg)
{
  int ns = 0;

  for (int64_t t = 0; t < tw;) {
    int64_t r = (p + t) / ctx->b_row_stride, j = (p + t) % ctx->b_row_stride;
    int64_t left = ctx->b_row_stride - j, n;

    if (r >= ctx->rows)
      break;
    if (j < ctx->cols) {
      n = MIN (MIN (ctx->cols - j, tw - t), left);
      seg[ns++] = (LinSeg){ r, j, t, n };
      t += n;
    } else {
      t += MIN (left, tw - t);
    }
  }
  return ns;
}

/* Tasks [begin, end): task = t * m_parts + part, C rows of part `part`,
 * the columns [t * chunk, (t + 1) * chunk) of the linear run. */
static void
run_indirect_linear_tasks (gpointer data, gsize begin, gsize end, int thread)
{
  IndCtx *ctx = data;
  const NnpSgemm *g = ctx->g;
  BiasKind bk = bias_kind (g);
  int64_t kcb = kblock (g->k), mp = round_up (g->m, MR);
  const int64_t tw = the_512 ? LIN_TW : NR, bm = the_512 ? 2 * MR : MR;
  const int64_t total = (ctx->rows - 1) * ctx->b_row_stride + ctx->cols;
  float rb[2 * MR], tile[2 * MR * LIN_TW] __attribute__ ((aligned (64)));
  LinSeg seg[LIN_TW];
  UkArgs args = { 0 };

  get_uk ();
  memset (tile, 0, sizeof (tile));
  for (gsize task = begin; task < end; task++) {
    int64_t t = (int64_t) task / ctx->m_parts, i0, i1;
    int64_t p0 = t * ctx->chunk, p1 = MIN (total, p0 + ctx->chunk);

    ind_rows (ctx, (int64_t) task % ctx->m_parts, &i0, &i1);

    for (int64_t k0 = 0; k0 < g->k; k0 += kcb) {
      int64_t kc = MIN (kcb, g->k - k0);
      const float *abase = g->a_packed + k0 * mp;

      for (int64_t q0 = 0; q0 < kc; q0 += IND_KSUB) {
        int64_t ks = MIN (IND_KSUB, kc - q0);
        const int32_t *koff = ctx->koff + k0 + q0;
        gboolean last = k0 + q0 + ks >= g->k;

        args.load_c = k0 + q0 > 0;
        args.cb = NULL;
        args.act = last ? g->act : NNP_ACT_NONE;
        args.act_alpha = g->act_alpha;
        args.act_beta = g->act_beta;
        for (int64_t p = p0; p < p1; p += tw) {
          int ns = lin_segments (ctx, p, tw, seg);
          gboolean direct = ns == 1 && seg[0].n == tw;

          for (int64_t i = i0; i < i1; i += bm) {
            int64_t mr = MIN (bm, i1 - i);
            const float *ap = abase + i * kc + q0 * MR;
            float *dst = tile;
            int64_t ldd = tw;

            args.rb = NULL;
            if (last && bk == BIAS_ROWS) {
              for (int64_t q = 0; q < bm; q++)
                rb[q] = q < mr ? g->beta * g->bias[(i + q) * g->bias_rs] : 0.f;
              args.rb = rb;
            }
            /* AVX-512: a last block of 1-5 or 7-11 rows stored by the
             * kernel itself (uki512_rows), not through the tile */
            if (direct && (mr == bm || mr == MR || the_512)) {
              dst = g->c + i * g->ldc + seg[0].r * ctx->cols + seg[0].j;
              ldd = g->ldc;
            } else if (args.load_c) {
              for (int s = 0; s < ns; s++)
                for (int64_t q = 0; q < mr; q++)
                  memcpy (tile + q * tw + seg[s].t0,
                          g->c + (i + q) * g->ldc + seg[s].r * ctx->cols + seg[s].j,
                          seg[s].n * sizeof (float));
            }
#if HAVE_X86
            if (the_512)
              uki512_rows (mr, ks, ap, MR * kc, ctx->b + p, koff, dst, ldd, &args);
            else
#endif
              the_uki (ks, ap, ctx->b + p, koff, dst, ldd, &args);
            if (dst == tile)
              for (int s = 0; s < ns; s++)
                for (int64_t q = 0; q < mr; q++)
                  memcpy (g->c + (i + q) * g->ldc + seg[s].r * ctx->cols + seg[s].j,
                          tile + q * tw + seg[s].t0, seg[s].n * sizeof (float));
          }
        }
      }
    }
    /* the fused residual, row piece by row piece of the chunk */
    for (int64_t p = p0; g->sum && p < p1;) {
      int64_t r = p / ctx->b_row_stride, j = p % ctx->b_row_stride, n;
      if (j >= ctx->cols) {
        p += ctx->b_row_stride - j;
        continue;
      }
      n = MIN (ctx->cols - j, p1 - p);
      for (int64_t i = i0; i < i1; i++)
        nnp_sgemm_add_act (g->c + i * g->ldc + r * ctx->cols + j,
                           g->sum + i * g->ldc + r * ctx->cols + j, n, g->sum_act, g->sum_alpha,
                           g->sum_beta);
      p += n;
    }
  }
}

/* With fewer than 4 column tasks a thread, the rows of C cut into parts
 * of whole 12-row blocks as well, at least two blocks a part: MobileNet's
 * and ResNet's 7x7 layers (49 columns, one task) had one thread of two at
 * work. */
static void
ind_split_rows (IndCtx *ctx, int64_t col_tasks, int threads)
{
  int64_t blocks = (ctx->g->m + 2 * MR - 1) / (2 * MR), parts = 1;

  if (threads > 1 && col_tasks < 4 * threads)
    parts = MIN ((4 * threads + col_tasks - 1) / col_tasks, blocks / 2);
  parts = MAX (parts, 1);
  ctx->m_step = (blocks + parts - 1) / parts * 2 * MR;
  ctx->m_parts = (ctx->g->m + ctx->m_step - 1) / ctx->m_step;
}

void
nnp_sgemm_run_indirect_full (const NnpSgemm *g, const float *b, const int32_t *koff,
                             int64_t b_row_stride, int64_t rows, int64_t cols, gboolean overread_ok,
                             NnpThreadPool *pool)
{
  IndCtx ctx = { g, b, koff, b_row_stride, rows, cols, cols, 1, overread_ok, 1, 0 };
  int threads = nnp_thread_pool_get_n_threads (pool);

  g_return_if_fail (g != NULL && g->a_packed != NULL && g->k > 0);
  g_return_if_fail (bias_kind (g) == BIAS_NONE || bias_kind (g) == BIAS_ROWS);
  if (g->m <= 0 || rows <= 0 || cols <= 0)
    return;
  if (rows > 1 && b_row_stride == cols) {
    /* rows without padding between them (a 1x1 convolution of stride 2
     * on its phase copy): one row of rows x cols columns, not rows of 7
     * columns in 32-column tiles (ResNet's three 1x1 stride-2: 34 -> 73
     * GFLOP/s) */
    ctx.cols = cols = rows * cols;
    ctx.rows = rows = 1;
    ctx.chunk = cols;
  }
  get_uk ();
  if (overread_ok && rows > 1 && b_row_stride > cols && cols % (the_512 ? LIN_TW : NR) != 0) {
    /* rows that end in a part tile: one run of full tiles (linear mode) */
    int64_t tw = the_512 ? LIN_TW : NR, total = (rows - 1) * b_row_stride + cols;
    ctx.chunk = MIN (round_up (total, tw), IND_CHUNK);
    while ((total + ctx.chunk - 1) / ctx.chunk < 4 * threads && ctx.chunk > 2 * tw)
      ctx.chunk = round_up (ctx.chunk / 2, tw);
    ctx.n_chunks = (total + ctx.chunk - 1) / ctx.chunk;
    ind_split_rows (&ctx, ctx.n_chunks, threads);
    if (threads <= 1 || ctx.n_chunks * ctx.m_parts == 1)
      run_indirect_linear_tasks (&ctx, 0, ctx.n_chunks * ctx.m_parts, 0);
    else
      nnp_parallel_for (pool, ctx.n_chunks * ctx.m_parts, 1, run_indirect_linear_tasks, &ctx);
    return;
  }
  if (cols > IND_CHUNK || rows < 4 * threads) {
    ctx.chunk = MIN (round_up (cols, NR), IND_CHUNK);
    /* enough chunks for the threads */
    while (rows * ((cols + ctx.chunk - 1) / ctx.chunk) < 4 * threads && ctx.chunk > 4 * NR)
      ctx.chunk = round_up (ctx.chunk / 2, NR);
    ctx.n_chunks = (cols + ctx.chunk - 1) / ctx.chunk;
  }
  ind_split_rows (&ctx, rows * ctx.n_chunks, threads);
  if (threads <= 1 || rows * ctx.n_chunks * ctx.m_parts == 1)
    run_indirect_tasks (&ctx, 0, rows * ctx.n_chunks * ctx.m_parts, 0);
  else
    nnp_parallel_for (pool, rows * ctx.n_chunks * ctx.m_parts, 1, run_indirect_tasks, &ctx);
}

void
nnp_sgemm_run_indirect (const NnpSgemm *g, const float *b, const int32_t *koff,
                        int64_t b_row_stride, int64_t rows, int64_t cols, NnpThreadPool *pool)
{
  nnp_sgemm_run_indirect_full (g, b, koff, b_row_stride, rows, cols, TRUE, pool);
}
