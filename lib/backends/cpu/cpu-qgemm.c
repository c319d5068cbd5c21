/* libnnpipe: the CPU backend's 8-bit integer GEMM: packing, the
 * micro-kernels (AVX512-VNNI, AVX-VNNI, AVX2, portable C, chosen at run
 * time) and the epilogue (zero-point corrections, requantisation or
 * scaling to float).  See cpu-qgemm.h for the formulas and layouts. */
#include "backends/cpu/cpu-qgemm.h"
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include <nnpipe/log.h>

#include <math.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define QK 4 /* k values per group */

/* ---------------------------------------------------------------- kernel choice */

const char *
nnp_qgemm_isa_name (NnpQgemmIsa isa)
{
  switch (isa) {
    case NNP_QGEMM_AVX512VNNI: return "avx512vnni";
    case NNP_QGEMM_AVXVNNI: return "avxvnni";
    case NNP_QGEMM_AVX2: return "avx2";
    default: return "c";
  }
}

/* AVX-VNNI (CPUID leaf 7 sub-leaf 1, EAX bit 4): read directly, since
 * __builtin_cpu_supports() does not know the name in every compiler (clang
 * 14 does not). */
static gboolean
have_avxvnni (void)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned int a = 0, b = 0, c = 0, d = 0;

  return __get_cpuid_count (7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0
         && __builtin_cpu_supports ("avx2");
#else
  return FALSE;
#endif
}

NnpQgemmIsa
nnp_qgemm_isa (void)
{
  static gsize once = 0;
  static NnpQgemmIsa isa;

  if (g_once_init_enter (&once)) {
    NnpQgemmIsa best = NNP_QGEMM_C, cap = NNP_QGEMM_AVX512VNNI;
    const char *want = g_getenv ("NNPIPE_CPU_INT8");

#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init ();
    if (g_getenv ("NNPIPE_CPU_GENERIC") == NULL && __builtin_cpu_supports ("avx2")) {
      best = NNP_QGEMM_AVX2;
      if (have_avxvnni ())
        best = NNP_QGEMM_AVXVNNI;
      if (__builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
          && __builtin_cpu_supports ("avx512vnni"))
        best = NNP_QGEMM_AVX512VNNI;
    }
#endif
    if (want) {
      for (int i = NNP_QGEMM_C; i <= NNP_QGEMM_AVX512VNNI; i++)
        if (strcmp (want, nnp_qgemm_isa_name ((NnpQgemmIsa) i)) == 0)
          cap = (NnpQgemmIsa) i;
    }
    /* AVX-VNNI is not implied by AVX512-VNNI: step down through AVX2 */
    if (best > cap)
      best = cap == NNP_QGEMM_AVXVNNI && best == NNP_QGEMM_AVX512VNNI && !have_avxvnni ()
                 ? NNP_QGEMM_AVX2
                 : cap;
    isa = best;
    NNP_DEBUG ("nnp-cpu", "int8 GEMM kernel: %s", nnp_qgemm_isa_name (isa));
    g_once_init_leave (&once, 1);
  }
  return isa;
}

/* ---------------------------------------------------------------- packing */

void
nnp_qgemm_pack_s (int64_t m, int64_t k, const guint8 *src, int64_t rs, gboolean src_unsigned,
                  gint8 *dst, int32_t *rowsum)
{
  int64_t kp = nnp_qgemm_kp (k), kq = kp / QK;
  int64_t panels = (m + NNP_QGEMM_MR - 1) / NNP_QGEMM_MR;
  guint8 flip = src_unsigned ? 0x80 : 0;

  for (int64_t p = 0; p < panels; p++) {
    gint8 *d = dst + p * NNP_QGEMM_MR * kp;
    for (int r = 0; r < NNP_QGEMM_MR; r++) {
      int64_t i = p * NNP_QGEMM_MR + r;
      const guint8 *row = src + i * rs;
      int32_t sum = 0;
      for (int64_t q = 0; q < kq; q++) {
        for (int t = 0; t < QK; t++) {
          int64_t kk = q * QK + t;
          gint8 v = i < m && kk < k ? (gint8) (row[kk] ^ flip) : 0;
          d[(q * NNP_QGEMM_MR + r) * QK + t] = v;
          sum += v;
        }
      }
      if (rowsum && i < m)
        rowsum[i] = sum;
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
/* 4 rows of 16 bytes -> 64 bytes of [c][t]; sums of the 4 bytes per column */
__attribute__ ((target ("avx2"))) static void
interleave16_sse (const guint8 *r0, const guint8 *r1, const guint8 *r2, const guint8 *r3, guint8 *d,
                  int32_t *colsum)
{
  __m128i a = _mm_loadu_si128 ((const __m128i *) r0), b = _mm_loadu_si128 ((const __m128i *) r1);
  __m128i c = _mm_loadu_si128 ((const __m128i *) r2), e = _mm_loadu_si128 ((const __m128i *) r3);
  __m128i ab_lo = _mm_unpacklo_epi8 (a, b), ab_hi = _mm_unpackhi_epi8 (a, b);
  __m128i ce_lo = _mm_unpacklo_epi8 (c, e), ce_hi = _mm_unpackhi_epi8 (c, e);
  __m128i o[4] = { _mm_unpacklo_epi16 (ab_lo, ce_lo), _mm_unpackhi_epi16 (ab_lo, ce_lo),
                   _mm_unpacklo_epi16 (ab_hi, ce_hi), _mm_unpackhi_epi16 (ab_hi, ce_hi) };

  for (int i = 0; i < 4; i++)
    _mm_storeu_si128 ((__m128i *) (d + 16 * i), o[i]);
  if (colsum) {
    const __m128i ones8 = _mm_set1_epi8 (1), ones16 = _mm_set1_epi16 (1);
    for (int i = 0; i < 4; i++) {
      /* u8 x 1 pair sums <= 510: no saturation */
      __m128i s = _mm_madd_epi16 (_mm_maddubs_epi16 (o[i], ones8), ones16);
      __m128i cs = _mm_loadu_si128 ((const __m128i *) (colsum + 4 * i));
      _mm_storeu_si128 ((__m128i *) (colsum + 4 * i), _mm_add_epi32 (cs, s));
    }
  }
}
#endif

void
nnp_qgemm_interleave16 (const guint8 *r0, const guint8 *r1, const guint8 *r2, const guint8 *r3,
                        guint8 *dst, int32_t *colsum)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    interleave16_sse (r0, r1, r2, r3, dst, colsum);
    return;
  }
#endif
  for (int c = 0; c < NNP_QGEMM_NRP; c++) {
    dst[c * QK] = r0[c];
    dst[c * QK + 1] = r1[c];
    dst[c * QK + 2] = r2[c];
    dst[c * QK + 3] = r3[c];
    if (colsum)
      colsum[c] += r0[c] + r1[c] + r2[c] + r3[c];
  }
}

void
nnp_qgemm_interleave_u (const guint8 *const r[4], int64_t n, int64_t kp, int64_t q, guint8 *dst,
                        int32_t *colsum)
{
  int64_t j = 0;

#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    for (; j + NNP_QGEMM_NRP <= n; j += NNP_QGEMM_NRP)
      interleave16_sse (r[0] + j, r[1] + j, r[2] + j, r[3] + j,
                        dst + (j / NNP_QGEMM_NRP) * kp * NNP_QGEMM_NRP + q * QK * NNP_QGEMM_NRP,
                        colsum ? colsum + j : NULL);
  }
#endif
  for (; j < n; j += NNP_QGEMM_NRP) {
    guint8 *d = dst + (j / NNP_QGEMM_NRP) * kp * NNP_QGEMM_NRP + q * QK * NNP_QGEMM_NRP;
    for (int c = 0; c < NNP_QGEMM_NRP; c++) {
      for (int t = 0; t < QK; t++)
        d[c * QK + t] = j + c < n ? r[t][j + c] : 0;
      if (colsum && j + c < n)
        colsum[j + c] += r[0][j + c] + r[1][j + c] + r[2][j + c] + r[3][j + c];
    }
  }
}

void
nnp_qgemm_pack_u (int64_t k, int64_t n, const guint8 *src, int64_t rs, gboolean src_signed,
                  guint8 *dst, int32_t *colsum)
{
  int64_t kp = nnp_qgemm_kp (k), kq = kp / QK;
  guint8 flip = src_signed ? 0x80 : 0;
  guint8 *rows = g_malloc (QK * MAX (n, 1));

  memset (dst, 0, nnp_qgemm_u_size (n, k));
  if (colsum)
    memset (colsum, 0, n * sizeof (int32_t));
  for (int64_t q = 0; q < kq; q++) {
    const guint8 *r[QK];
    for (int t = 0; t < QK; t++) {
      int64_t kk = q * QK + t;
      guint8 *row = rows + t * n;
      for (int64_t j = 0; j < n; j++)
        row[j] = kk < k ? src[kk * rs + j] ^ flip : 0;
      r[t] = row;
    }
    nnp_qgemm_interleave_u (r, n, kp, q, dst, colsum);
  }
  g_free (rows);
}

/* ---------------------------------------------------------------- micro-kernels */

static inline int32_t
load4 (const void *p)
{
  int32_t v;
  memcpy (&v, p, sizeof (v));
  return v;
}

static void
tile_c (const gint8 *s, const guint8 *u0, const guint8 *u1, int64_t kp, int cols, int32_t *tile)
{
  memset (tile, 0, NNP_QGEMM_MR * NNP_QGEMM_NT * sizeof (int32_t));
  for (int half = 0; half < (cols > NNP_QGEMM_NRP ? 2 : 1); half++) {
    const guint8 *u = half ? u1 : u0;
    for (int64_t q = 0; q < kp / QK; q++) {
      const gint8 *sq = s + q * NNP_QGEMM_MR * QK;
      const guint8 *uq = u + q * NNP_QGEMM_NRP * QK;
      for (int r = 0; r < NNP_QGEMM_MR; r++) {
        int32_t *row = tile + r * NNP_QGEMM_NT + half * NNP_QGEMM_NRP;
        for (int c = 0; c < NNP_QGEMM_NRP; c++)
          row[c] += sq[r * QK] * uq[c * QK] + sq[r * QK + 1] * uq[c * QK + 1]
                    + sq[r * QK + 2] * uq[c * QK + 2] + sq[r * QK + 3] * uq[c * QK + 3];
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)

#define VNNI512_ROW(r) \
  { \
    __m512i a = _mm512_set1_epi32 (load4 (sq + (r) *QK)); \
    c##r##0 = _mm512_dpbusd_epi32 (c##r##0, b0, a); \
    if (two) \
      c##r##1 = _mm512_dpbusd_epi32 (c##r##1, b1, a); \
  }
/* the 8 x 32 accumulators c<row><half> of a tile, and the loop over the
 * q-groups of the S panel `s` and the U panels u0, u1 (u1 when cols > 16) */
#define VNNI512_DECLARE() \
  __m512i c00 = _mm512_setzero_si512 (), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00; \
  __m512i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00; \
  __m512i c61 = c00, c70 = c00, c71 = c00; \
  const gboolean two = cols > NNP_QGEMM_NRP
/* q-group q of U at u0 / u1 + UOFF (q): packed panels (koff NULL) or read
 * in place at the offsets koff[] (the direct convolution) */
#define UOFF(q) (koff ? koff[q] : (q) *64)
#define VNNI512_LOOP(load_b1) \
  for (int64_t q = 0; q < kp / QK; q++) { \
    const gint8 *sq = s + q * NNP_QGEMM_MR * QK; \
    __m512i b0 = _mm512_loadu_si512 ((const void *) (u0 + UOFF (q))); \
    __m512i b1 = load_b1 ? _mm512_loadu_si512 ((const void *) (u1 + UOFF (q))) : b0; \
    VNNI512_ROW (0) VNNI512_ROW (1) VNNI512_ROW (2) VNNI512_ROW (3); \
    VNNI512_ROW (4) VNNI512_ROW (5) VNNI512_ROW (6) VNNI512_ROW (7); \
  }
/* two loops: the test of `two` leaves the inner one */
#define VNNI512_ACCUMULATE() \
  do { \
    if (two) { \
      VNNI512_LOOP (TRUE) \
    } else { \
      VNNI512_LOOP (FALSE) \
    } \
  } while (0)
#define VNNI512_STORE(r) \
  _mm512_storeu_si512 ((void *) (tile + (r) *NNP_QGEMM_NT), c##r##0); \
  _mm512_storeu_si512 ((void *) (tile + (r) *NNP_QGEMM_NT + 16), c##r##1);

__attribute__ ((target ("avx512f,avx512bw,avx512vnni"))) static void
tile_avx512vnni (const gint8 *s, const guint8 *u0, const guint8 *u1, int64_t kp, int cols,
                 int32_t *tile)
{
  const int32_t *koff = NULL;
  VNNI512_DECLARE ();

  VNNI512_ACCUMULATE ();
  VNNI512_STORE (0) VNNI512_STORE (1) VNNI512_STORE (2) VNNI512_STORE (3);
  VNNI512_STORE (4) VNNI512_STORE (5) VNNI512_STORE (6) VNNI512_STORE (7);
}

/* All 16 lanes: the masked forms of a few intrinsics (GCC 12 warns about the
 * undefined source of the plain ones, -Wmaybe-uninitialized) */
#define ALL16 ((__mmask16) 0xffff)

/* Per-column values of a tile's epilogue, loaded once (masked to the
 * columns that exist). */
typedef struct {
  __m512i zu[2];       /* U zero points */
  __m512i ct[2];       /* colsum - k * zu (when some zs != 0) */
  __m512i ib[2];       /* channels along columns: the int32 bias */
  __m512 sc[2], fb[2]; /* channels along columns: scale / multiplier, float bias */
} ColVecs;

/* GCC would fuse the intrinsics' multiply and add; clang does not fuse
 * across intrinsics at its default (-ffp-contract=on) and has no such
 * attribute. */
#if defined(__clang__)
#define NNP_NO_FP_CONTRACT
#else
#define NNP_NO_FP_CONTRACT , optimize ("fp-contract=off")
#endif

/* The epilogue of one row in registers:
 *   v = c + ibias - rowsum * zu - zs * (colsum - k * zu)
 * then the output; m[] mask the columns.  No contraction of the multiply
 * and add (Cast -> Mul -> Add rounds twice). */
__attribute__ ((target ("avx512f,avx512bw,avx512vl") NNP_NO_FP_CONTRACT)) static inline void
row_out_avx512 (const NnpQgemmEpilogue *e, const ColVecs *cv, int64_t i, __m512i c0, __m512i c1,
                const __mmask16 *m, int64_t at)
{
  int32_t zs = e->zs ? e->zs[e->zs_per ? i : 0] : 0;
  int32_t rs = e->rowsum ? e->rowsum[i] : 0;
  __m512i c[2] = { c0, c1 };
  __m512 sc[2], fb[2];

  if (e->chan_rows) {
    /* one zero point of U: a scalar per row */
    int32_t a = (int32_t) ((e->ibias ? (guint32) e->ibias[e->bias_per ? i : 0] : 0)
                           - (guint32) (e->zu ? e->zu[0] : 0) * (guint32) rs);
    sc[0] = sc[1] =
        _mm512_set1_ps (e->out != NNP_QGEMM_OUT_INT32 ? e->scale[e->scale_per ? i : 0] : 0.f);
    fb[0] = fb[1] = _mm512_set1_ps (e->fbias ? e->fbias[e->bias_per ? i : 0] : 0.f);
    for (int h = 0; h < 2; h++)
      c[h] = _mm512_add_epi32 (c[h], _mm512_set1_epi32 (a));
  } else {
    for (int h = 0; h < 2; h++) {
      sc[h] = cv->sc[h];
      fb[h] = cv->fb[h];
      c[h] = _mm512_add_epi32 (c[h], cv->ib[h]);
      if (rs)
        c[h] = _mm512_sub_epi32 (c[h], _mm512_mullo_epi32 (_mm512_set1_epi32 (rs), cv->zu[h]));
    }
  }
  if (zs)
    for (int h = 0; h < 2; h++)
      c[h] = _mm512_sub_epi32 (c[h], _mm512_mullo_epi32 (_mm512_set1_epi32 (zs), cv->ct[h]));
  for (int h = 0; h < 2; h++) {
    if (e->out == NNP_QGEMM_OUT_INT32) {
      _mm512_mask_storeu_epi32 ((int32_t *) e->c + at + 16 * h, m[h], c[h]);
    } else if (e->out == NNP_QGEMM_OUT_FLOAT) {
      __m512 f = _mm512_mul_ps (_mm512_maskz_cvtepi32_ps (ALL16, c[h]), sc[h]);
      if (e->fbias)
        f = _mm512_add_ps (f, fb[h]);
      if (e->act == NNP_ACT_RELU)
        f = _mm512_maskz_max_ps (ALL16, f, _mm512_setzero_ps ());
      _mm512_mask_storeu_ps ((float *) e->c + at + 16 * h, m[h], f);
    } else {
      __m512 lo = _mm512_set1_ps ((float) (e->y_lo - e->y_zp));
      __m512 hi = _mm512_set1_ps ((float) (e->y_hi - e->y_zp));
      __m512 f = _mm512_mul_ps (_mm512_maskz_cvtepi32_ps (ALL16, c[h]), sc[h]);
      f = _mm512_maskz_min_ps (ALL16, _mm512_maskz_max_ps (ALL16, f, lo), hi);
      /* in range: the truncating narrowing keeps the value */
      _mm_mask_storeu_epi8 (
          (guint8 *) e->c + at + 16 * h, m[h],
          _mm512_maskz_cvtepi32_epi8 (ALL16, _mm512_add_epi32 (_mm512_maskz_cvtps_epi32 (ALL16, f),
                                                               _mm512_set1_epi32 (e->y_zp))));
    }
  }
}

#define ROW_OUT(r) \
  if ((r) < mr) \
    row_out_avx512 (e, &cv, i0 + (r), c##r##0, c##r##1, m, (i0 + (r)) * e->ldc + j0);

/* A per-column int32 array (or one value for all) at columns j0.. */
__attribute__ ((target ("avx512f,avx512bw,avx512vl"))) static inline __m512i
col_epi32 (const int32_t *v, gboolean per, int64_t j, __mmask16 m)
{
  if (v == NULL)
    return _mm512_setzero_si512 ();
  return per ? _mm512_maskz_loadu_epi32 (m, v + j) : _mm512_set1_epi32 (v[0]);
}

__attribute__ ((target ("avx512f,avx512bw,avx512vl"))) static inline __m512
col_ps (const float *v, gboolean per, int64_t j, __mmask16 m)
{
  if (v == NULL)
    return _mm512_setzero_ps ();
  return per ? _mm512_maskz_loadu_ps (m, v + j) : _mm512_set1_ps (v[0]);
}

/* tile_avx512vnni and the epilogue without leaving the registers */
__attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512vnni"))) static void
tile_store_avx512vnni (const NnpQgemmEpilogue *e, const gint8 *s, const guint8 *u0,
                       const guint8 *u1, const int32_t *koff, int64_t kp, int64_t i0, int mr,
                       int64_t j0, int cols)
{
  VNNI512_DECLARE ();
  __mmask16 m[2] = { cols >= 16 ? 0xffff : (__mmask16) ((1u << cols) - 1),
                     cols >= 32  ? 0xffff
                     : cols > 16 ? (__mmask16) ((1u << (cols - 16)) - 1)
                                 : 0 };
  ColVecs cv;

  VNNI512_ACCUMULATE ();
  for (int h = 0; h < 2; h++) {
    int64_t j = j0 + 16 * h;
    cv.zu[h] = col_epi32 (e->zu, e->zu_per, j, m[h]);
    cv.ct[h] = _mm512_setzero_si512 ();
    if (e->colsum)
      cv.ct[h] =
          _mm512_sub_epi32 (_mm512_maskz_loadu_epi32 (m[h], e->colsum + j),
                            _mm512_mullo_epi32 (_mm512_set1_epi32 ((int32_t) e->k), cv.zu[h]));
    if (!e->chan_rows) {
      cv.ib[h] = col_epi32 (e->ibias, e->bias_per, j, m[h]);
      cv.sc[h] = col_ps (e->out != NNP_QGEMM_OUT_INT32 ? e->scale : NULL, e->scale_per, j, m[h]);
      cv.fb[h] = col_ps (e->fbias, e->bias_per, j, m[h]);
    }
  }
  ROW_OUT (0) ROW_OUT (1) ROW_OUT (2) ROW_OUT (3) ROW_OUT (4) ROW_OUT (5) ROW_OUT (6) ROW_OUT (7)
}

/* 4 rows x 16 columns of one U panel on ymm registers */
#define VNNI256_ROW(r) \
  { \
    __m256i a = _mm256_set1_epi32 (load4 (sq + (r) *QK)); \
    c##r##0 = _mm256_dpbusd_avx_epi32 (c##r##0, b0, a); \
    c##r##1 = _mm256_dpbusd_avx_epi32 (c##r##1, b1, a); \
  }
#define Y_STORE(r) \
  _mm256_storeu_si256 ((__m256i *) (tile + (r) *NNP_QGEMM_NT), c##r##0); \
  _mm256_storeu_si256 ((__m256i *) (tile + (r) *NNP_QGEMM_NT + 8), c##r##1);

__attribute__ ((target ("avx2,avxvnni"))) static void
tile4_avxvnni (const gint8 *s, const guint8 *u, int64_t kp, int32_t *tile)
{
  __m256i c00 = _mm256_setzero_si256 (), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00;

  for (int64_t q = 0; q < kp / QK; q++) {
    const gint8 *sq = s + q * NNP_QGEMM_MR * QK;
    __m256i b0 = _mm256_loadu_si256 ((const __m256i *) (u + q * 64));
    __m256i b1 = _mm256_loadu_si256 ((const __m256i *) (u + q * 64 + 32));
    VNNI256_ROW (0) VNNI256_ROW (1) VNNI256_ROW (2) VNNI256_ROW (3);
  }
  Y_STORE (0) Y_STORE (1) Y_STORE (2) Y_STORE (3);
}

/* AVX2: u = lo7 + 128 * top; maddubs on each part cannot saturate */
#define AVX2_ROW(r) \
  { \
    __m256i a = _mm256_set1_epi32 (load4 (sq + (r) *QK)); \
    c##r##0 = _mm256_add_epi32 (c##r##0, _mm256_madd_epi16 (_mm256_maddubs_epi16 (lo0, a), one)); \
    c##r##0 = _mm256_add_epi32 (c##r##0, _mm256_madd_epi16 (_mm256_maddubs_epi16 (hi0, a), c128)); \
    c##r##1 = _mm256_add_epi32 (c##r##1, _mm256_madd_epi16 (_mm256_maddubs_epi16 (lo1, a), one)); \
    c##r##1 = _mm256_add_epi32 (c##r##1, _mm256_madd_epi16 (_mm256_maddubs_epi16 (hi1, a), c128)); \
  }

__attribute__ ((target ("avx2"))) static void
tile4_avx2 (const gint8 *s, const guint8 *u, int64_t kp, int32_t *tile)
{
  const __m256i one = _mm256_set1_epi16 (1), c128 = _mm256_set1_epi16 (128);
  const __m256i m7 = _mm256_set1_epi8 (0x7f), m1 = _mm256_set1_epi8 (1);
  __m256i c00 = _mm256_setzero_si256 (), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00;

  for (int64_t q = 0; q < kp / QK; q++) {
    const gint8 *sq = s + q * NNP_QGEMM_MR * QK;
    __m256i b0 = _mm256_loadu_si256 ((const __m256i *) (u + q * 64));
    __m256i b1 = _mm256_loadu_si256 ((const __m256i *) (u + q * 64 + 32));
    __m256i lo0 = _mm256_and_si256 (b0, m7), hi0 = _mm256_and_si256 (_mm256_srli_epi16 (b0, 7), m1);
    __m256i lo1 = _mm256_and_si256 (b1, m7), hi1 = _mm256_and_si256 (_mm256_srli_epi16 (b1, 7), m1);
    AVX2_ROW (0) AVX2_ROW (1) AVX2_ROW (2) AVX2_ROW (3);
  }
  Y_STORE (0) Y_STORE (1) Y_STORE (2) Y_STORE (3);
}

#endif

void
nnp_qgemm_tile (const gint8 *s, const guint8 *u0, const guint8 *u1, int64_t kp, int cols,
                int32_t *tile)
{
  switch (nnp_qgemm_isa ()) {
#if defined(__x86_64__) || defined(__i386__)
    case NNP_QGEMM_AVX512VNNI: tile_avx512vnni (s, u0, u1, kp, cols, tile); return;
    case NNP_QGEMM_AVXVNNI:
    case NNP_QGEMM_AVX2:
      for (int half = 0; half < (cols > NNP_QGEMM_NRP ? 2 : 1); half++) {
        for (int rows = 0; rows < NNP_QGEMM_MR; rows += 4) {
          int32_t *t = tile + rows * NNP_QGEMM_NT + half * NNP_QGEMM_NRP;
          if (nnp_qgemm_isa () == NNP_QGEMM_AVXVNNI)
            tile4_avxvnni (s + rows * QK, half ? u1 : u0, kp, t);
          else
            tile4_avx2 (s + rows * QK, half ? u1 : u0, kp, t);
        }
      }
      return;
#endif
    default: tile_c (s, u0, u1, kp, cols, tile); return;
  }
}

/* ---------------------------------------------------------------- epilogue */

/* The output of one corrected sum v for channel ch at element index `at`
 * (OUT_FLOAT: before the activation, which the caller applies per row). */
static inline void
store_one (const NnpQgemmEpilogue *e, int64_t at, int64_t ch, int32_t v)
{
  switch (e->out) {
    case NNP_QGEMM_OUT_INT32: ((int32_t *) e->c)[at] = v; break;
    case NNP_QGEMM_OUT_QUANT8: {
      float f = (float) v * e->scale[e->scale_per ? ch : 0];
      int32_t q;
      /* as ONNX Runtime: clamp in float, round half to even, add the zero point */
      f = CLAMP (f, (float) (e->y_lo - e->y_zp), (float) (e->y_hi - e->y_zp));
      q = (int32_t) nearbyintf (f) + e->y_zp;
      if (e->y_signed)
        ((gint8 *) e->c)[at] = (gint8) q;
      else
        ((guint8 *) e->c)[at] = (guint8) q;
      break;
    }
    default: {
      /* two roundings, as Cast -> Mul -> Add compute it (this file is not
       * built for FMA: no contraction) */
      float f = (float) v * e->scale[e->scale_per ? ch : 0];
      if (e->fbias)
        f = f + e->fbias[e->bias_per ? ch : 0];
      ((float *) e->c)[at] = f;
      break;
    }
  }
}

static void
epilogue_generic (const NnpQgemmEpilogue *e, const int32_t *tile, int64_t i0, int mr, int64_t j0,
                  int nc)
{
  for (int r = 0; r < mr; r++) {
    int64_t i = i0 + r;
    int64_t rs = e->rowsum ? e->rowsum[i] : 0;
    int64_t zs = e->zs ? e->zs[e->zs_per ? i : 0] : 0;
    for (int c = 0; c < nc; c++) {
      int64_t j = j0 + c, ch = e->chan_rows ? i : j;
      int64_t zu = e->zu ? e->zu[e->zu_per ? j : 0] : 0;
      int64_t cs = e->colsum ? e->colsum[j] : 0;
      int64_t v = (int64_t) tile[r * NNP_QGEMM_NT + c] - zu * rs - zs * cs + e->k * zs * zu;
      if (e->ibias)
        v += e->ibias[e->bias_per ? ch : 0];
      store_one (e, i * e->ldc + j, ch, (int32_t) (guint32) v);
    }
    if (e->out == NNP_QGEMM_OUT_FLOAT && e->act != NNP_ACT_NONE)
      nnp_cpu_apply_activation ((float *) e->c + i * e->ldc + j0, nc, e->act, e->act_alpha,
                                e->act_beta);
  }
}

#if defined(__x86_64__) || defined(__i386__)
/* Channels along rows, one U zero point: v = t + (ib - zu * rs) - zs * (cs - k * zu),
 * all modulo 2^32: exact whenever the true sum fits int32, as it must. */
__attribute__ ((target ("avx2"))) static void
epilogue_rows_avx2 (const NnpQgemmEpilogue *e, const int32_t *tile, int64_t i0, int mr, int64_t j0,
                    int nc)
{
  int32_t zu = e->zu ? e->zu[0] : 0;
  int32_t ct[NNP_QGEMM_NT];
  gboolean need_cs = FALSE;

  for (int r = 0; r < mr && !need_cs; r++)
    need_cs = e->zs && e->zs[e->zs_per ? i0 + r : 0] != 0;
  for (int c = 0; c < nc; c++)
    ct[c] = need_cs ? (int32_t) ((guint32) e->colsum[j0 + c] - (guint32) e->k * (guint32) zu) : 0;
  for (int c = nc; c < NNP_QGEMM_NT; c++)
    ct[c] = 0;
  for (int r = 0; r < mr; r++) {
    int64_t i = i0 + r;
    int32_t zs = e->zs ? e->zs[e->zs_per ? i : 0] : 0;
    int32_t a = (int32_t) ((e->ibias ? (guint32) e->ibias[e->bias_per ? i : 0] : 0)
                           - (guint32) zu * (guint32) (e->rowsum ? e->rowsum[i] : 0));
    __m256i va = _mm256_set1_epi32 (a), vzs = _mm256_set1_epi32 (-zs);
    const int32_t *t = tile + r * NNP_QGEMM_NT;
    float scale = e->out != NNP_QGEMM_OUT_INT32 ? e->scale[e->scale_per ? i : 0] : 0.f;
    float bias = e->fbias ? e->fbias[e->bias_per ? i : 0] : 0.f;
    int c = 0;

    for (; c + 8 <= nc; c += 8) {
      __m256i v = _mm256_add_epi32 (_mm256_loadu_si256 ((const __m256i *) (t + c)), va);
      if (zs)
        v = _mm256_add_epi32 (
            v, _mm256_mullo_epi32 (vzs, _mm256_loadu_si256 ((const __m256i *) (ct + c))));
      if (e->out == NNP_QGEMM_OUT_INT32) {
        _mm256_storeu_si256 ((__m256i *) ((int32_t *) e->c + i * e->ldc + j0 + c), v);
      } else if (e->out == NNP_QGEMM_OUT_FLOAT) {
        __m256 f = _mm256_mul_ps (_mm256_cvtepi32_ps (v), _mm256_set1_ps (scale));
        if (e->fbias)
          f = _mm256_add_ps (f, _mm256_set1_ps (bias));
        _mm256_storeu_ps ((float *) e->c + i * e->ldc + j0 + c, f);
      } else {
        __m256 f = _mm256_mul_ps (_mm256_cvtepi32_ps (v), _mm256_set1_ps (scale));
        __m128i q16;
        f = _mm256_max_ps (f, _mm256_set1_ps ((float) (e->y_lo - e->y_zp)));
        f = _mm256_min_ps (f, _mm256_set1_ps ((float) (e->y_hi - e->y_zp)));
        v = _mm256_add_epi32 (_mm256_cvtps_epi32 (f), _mm256_set1_epi32 (e->y_zp));
        q16 = _mm_packs_epi32 (_mm256_castsi256_si128 (v), _mm256_extracti128_si256 (v, 1));
        q16 = e->y_signed ? _mm_packs_epi16 (q16, q16) : _mm_packus_epi16 (q16, q16);
        _mm_storel_epi64 ((__m128i *) ((guint8 *) e->c + i * e->ldc + j0 + c), q16);
      }
    }
    for (; c < nc; c++) {
      int32_t v = (int32_t) ((guint32) t[c] + (guint32) a - (guint32) zs * (guint32) ct[c]);
      store_one (e, i * e->ldc + j0 + c, i, v);
    }
    if (e->out == NNP_QGEMM_OUT_FLOAT && e->act != NNP_ACT_NONE)
      nnp_cpu_apply_activation ((float *) e->c + i * e->ldc + j0, nc, e->act, e->act_alpha,
                                e->act_beta);
  }
}
#endif

void
nnp_qgemm_tile_store (const NnpQgemmEpilogue *e, const gint8 *s, const guint8 *u0, const guint8 *u1,
                      int64_t kp, int64_t i0, int mr, int64_t j0, int cols, int32_t *tile)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_qgemm_isa () == NNP_QGEMM_AVX512VNNI && !(e->chan_rows && e->zu_per)
      && (e->out != NNP_QGEMM_OUT_FLOAT || e->act == NNP_ACT_NONE || e->act == NNP_ACT_RELU)) {
    tile_store_avx512vnni (e, s, u0, u1, NULL, kp, i0, mr, j0, cols);
    return;
  }
#endif
  nnp_qgemm_tile (s, u0, u1, kp, cols, tile);
  nnp_qgemm_epilogue (e, tile, i0, mr, j0, cols);
}

gboolean
nnp_qgemm_indirect_ok (const NnpQgemmEpilogue *e)
{
  return nnp_qgemm_isa () == NNP_QGEMM_AVX512VNNI && e->chan_rows && !e->zu_per
         && (e->out != NNP_QGEMM_OUT_FLOAT || e->act == NNP_ACT_NONE || e->act == NNP_ACT_RELU);
}

void
nnp_qgemm_tile_store_indirect (const NnpQgemmEpilogue *e, const gint8 *s, const guint8 *u0,
                               const guint8 *u1, const int32_t *koff, int64_t kq, int64_t i0,
                               int mr, int64_t j0, int cols)
{
#if defined(__x86_64__) || defined(__i386__)
  g_return_if_fail (nnp_qgemm_indirect_ok (e));
  tile_store_avx512vnni (e, s, u0, u1, koff, kq * QK, i0, mr, j0, cols);
#endif
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512vnni"))) static void
colsum_avx512vnni (const guint8 *u0, const guint8 *u1, const int32_t *koff, int64_t kq, int cols,
                   int32_t *colsum)
{
  const __m512i ones = _mm512_set1_epi8 (1);
  __m512i c0 = _mm512_setzero_si512 (), c1 = c0;

  for (int64_t q = 0; q < kq; q++) {
    c0 = _mm512_dpbusd_epi32 (c0, _mm512_loadu_si512 ((const void *) (u0 + koff[q])), ones);
    if (cols > NNP_QGEMM_NRP)
      c1 = _mm512_dpbusd_epi32 (c1, _mm512_loadu_si512 ((const void *) (u1 + koff[q])), ones);
  }
  _mm512_mask_storeu_epi32 (colsum, cols >= 16 ? 0xffff : (__mmask16) ((1u << cols) - 1), c0);
  if (cols > NNP_QGEMM_NRP)
    _mm512_mask_storeu_epi32 (colsum + 16,
                              cols >= 32 ? 0xffff : (__mmask16) ((1u << (cols - 16)) - 1), c1);
}
#endif

void
nnp_qgemm_colsum_indirect (const guint8 *u0, const guint8 *u1, const int32_t *koff, int64_t kq,
                           int cols, int32_t *colsum)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_qgemm_isa () == NNP_QGEMM_AVX512VNNI) {
    colsum_avx512vnni (u0, u1, koff, kq, cols, colsum);
    return;
  }
#endif
  for (int c = 0; c < cols; c++) {
    const guint8 *u = c < NNP_QGEMM_NRP ? u0 + c * QK : u1 + (c - NNP_QGEMM_NRP) * QK;
    int32_t sum = 0;
    for (int64_t q = 0; q < kq; q++)
      sum += u[koff[q]] + u[koff[q] + 1] + u[koff[q] + 2] + u[koff[q] + 3];
    colsum[c] = sum;
  }
}

void
nnp_qgemm_epilogue (const NnpQgemmEpilogue *e, const int32_t *tile, int64_t i0, int mr, int64_t j0,
                    int nc)
{
#if defined(__x86_64__) || defined(__i386__)
  if (e->chan_rows && !e->zu_per && nnp_qgemm_isa () != NNP_QGEMM_C) {
    epilogue_rows_avx2 (e, tile, i0, mr, j0, nc);
    return;
  }
#endif
  epilogue_generic (e, tile, i0, mr, j0, nc);
}
