/* libnnpipe: CPU kernel of depthwise Conv (float32, NCHW; one input
 * channel per group, 1-D/2-D): direct, per output plane, on a zero-padded
 * copy of the input plane, vectorised along W (AVX2 for strides 1 and 2;
 * AVX-512 for the rows of 3x3 and 5x5 stride-1 kernels that have every
 * tap, weights broadcast once per plane; stride 2 on each input row split
 * into its even and odd columns), the node's activation applied in the
 * store; with AVX-512, planes of at most 256 outputs whose rows are
 * narrow (7x7, 14x14) as one run of vectors read straight from the input
 * by masked loads or gathers (dw_small_planes).  Dispatched by cpu-conv.c
 * (algo NNP_CONV_ALGO_DEPTHWISE). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-conv.h"
#include "ops/conv-params.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define NR NNP_SGEMM_NR

typedef struct {
  const NnpConvParams *p;
  const float *x, *w, *bias;
  float *y;
  NnpActivation act;
  float act_alpha, act_beta;
  int64_t hp, wp;  /* padded plane */
  guint8 *scratch; /* the slots */
  gsize slot_bytes;
  gboolean *zeroed;         /* per slot: its padded plane's borders are zero */
  gboolean s1_avx512;       /* dw_rows_s1_avx512 takes rows [full_lo, full_hi) */
  gboolean s2_avx512;       /* stride 2: dw_task_s2_avx512 takes the plane */
  gboolean copy_avx512;     /* the padded copy by dw_copy_rows_avx512 */
  int64_t full_lo, full_hi; /* the output rows whose taps all read input rows */
} DwCtx;

static void
dw_geometry (const NnpConvParams *p, int64_t *hp, int64_t *wp)
{
  *hp = (p->out_dims[1] - 1) * p->strides[1] + (p->kernel[1] - 1) * p->dilations[1] + 1;
  *wp = (p->out_dims[2] - 1) * p->strides[2] + (p->kernel[2] - 1) * p->dilations[2] + 1 + 2 * NR;
}

/* One output row from the padded plane rows: generic scalar version. */
static void
dw_row_generic (const float *pl, int64_t wp, const float *w, int64_t kh_n, int64_t kw_n, int64_t dh,
                int64_t dw, int64_t sw, int64_t ow0, int64_t ow_n, float bias, float *out)
{
  for (int64_t ow = ow0; ow < ow_n; ow++) {
    float acc = bias;
    const float *base = pl + ow * sw;
    for (int64_t kh = 0; kh < kh_n; kh++)
      for (int64_t kw = 0; kw < kw_n; kw++)
        acc += w[kh * kw_n + kw] * base[kh * dh * wp + kw * dw];
    out[ow] = acc;
  }
}

/* The taps kh_lo <= kh < kh_hi of output row oh that read input rows
 * (0 <= oh * sh + kh * dh - pt < IH); FALSE when there are none. */
static inline gboolean
dw_row_taps (const NnpConvParams *p, int64_t oh, int64_t *kh_lo, int64_t *kh_hi)
{
  const int64_t IH = p->in_dims[1], KH = p->kernel[1], pt = p->pads_begin[1];
  const int64_t dh = p->dilations[1], r0 = oh * p->strides[1];

  *kh_lo = 0;
  *kh_hi = KH;
  while (*kh_lo < KH && r0 + *kh_lo * dh - pt < 0)
    (*kh_lo)++;
  while (*kh_hi > *kh_lo && r0 + (*kh_hi - 1) * dh - pt >= IH)
    (*kh_hi)--;
  return *kh_lo < *kh_hi;
}

/* An output row without taps: the bias, activated. */
static void
dw_row_bias (const DwCtx *c, float bias, float *out, int64_t OW)
{
  for (int64_t ow = 0; ow < OW; ow++)
    out[ow] = bias;
  nnp_sgemm_activate (out, OW, c->act, c->act_alpha, c->act_beta);
}

#if HAVE_X86
/* Returns the first output column it did not compute; the activation is
 * applied to the columns it computed.  Inlined into dw_row_avx2's
 * specialisations, where kw_n and dw are constants (unrolled tap loops). */
__attribute__ ((target ("avx2,fma"), always_inline)) static inline int64_t
dw_row_avx2_body (const float *pl, int64_t wp, const float *w, int64_t kh_n, int64_t kw_n,
                  int64_t dh, int64_t dw, int64_t sw, int64_t ow_n, float bias, float *out,
                  NnpActivation act, float act_alpha, float act_beta)
{
  const __m256 va = _mm256_set1_ps (act_alpha), vb = _mm256_set1_ps (act_beta);
  int64_t ow = 0;
#define STORE(ptr, v) _mm256_storeu_ps ((ptr), nnp_act_avx2 ((v), act, va, vb))

  if (sw == 1) {
    /* 32 outputs, taps of even and odd kernel rows in separate accumulators:
     * 8 independent FMA chains */
    for (; ow + 32 <= ow_n; ow += 32) {
      __m256 e0 = _mm256_set1_ps (bias), e1 = e0, e2 = e0, e3 = e0;
      __m256 o0 = _mm256_setzero_ps (), o1 = o0, o2 = o0, o3 = o0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow;
        if (kh & 1) {
          for (int64_t kw = 0; kw < kw_n; kw++) {
            __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
            const float *rk = r + kw * dw;
            o0 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk), o0);
            o1 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 8), o1);
            o2 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 16), o2);
            o3 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 24), o3);
          }
        } else {
          for (int64_t kw = 0; kw < kw_n; kw++) {
            __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
            const float *rk = r + kw * dw;
            e0 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk), e0);
            e1 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 8), e1);
            e2 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 16), e2);
            e3 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 24), e3);
          }
        }
      }
      STORE (out + ow, _mm256_add_ps (e0, o0));
      STORE (out + ow + 8, _mm256_add_ps (e1, o1));
      STORE (out + ow + 16, _mm256_add_ps (e2, o2));
      STORE (out + ow + 24, _mm256_add_ps (e3, o3));
    }
    /* 16 and 8 outputs (narrow planes): the taps of kernel column kw go to
     * accumulator set kw % 3, so a 3x3 kernel has 3 (8 outputs) or 6 (16)
     * independent FMA chains of depth 3 instead of 1 or 2 of depth 9 */
#define TAP(acc, kw, off) \
  acc = _mm256_fmadd_ps (_mm256_broadcast_ss (wk + (kw)), _mm256_loadu_ps (r + (kw) *dw + (off)), \
                         acc)
    for (; ow + 16 <= ow_n; ow += 16) {
      __m256 a0 = _mm256_set1_ps (bias), a1 = a0;
      __m256 b0 = _mm256_setzero_ps (), b1 = b0, c0 = b0, c1 = b0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow, *wk = w + kh * kw_n;
        int64_t kw = 0;
        for (; kw + 3 <= kw_n; kw += 3) {
          TAP (a0, kw, 0);
          TAP (a1, kw, 8);
          TAP (b0, kw + 1, 0);
          TAP (b1, kw + 1, 8);
          TAP (c0, kw + 2, 0);
          TAP (c1, kw + 2, 8);
        }
        if (kw < kw_n) {
          TAP (a0, kw, 0);
          TAP (a1, kw, 8);
          kw++;
        }
        if (kw < kw_n) {
          TAP (b0, kw, 0);
          TAP (b1, kw, 8);
        }
      }
      STORE (out + ow, _mm256_add_ps (_mm256_add_ps (a0, b0), c0));
      STORE (out + ow + 8, _mm256_add_ps (_mm256_add_ps (a1, b1), c1));
    }
    /* 8 outputs; the last block of a row whose width is not a multiple of 8
     * overlaps the one before it (its outputs computed again, the same way)
     * instead of leaving a scalar tail */
    for (; ow < ow_n && ow_n >= 8; ow += 8) {
      __m256 a0 = _mm256_set1_ps (bias), b0 = _mm256_setzero_ps (), c0 = b0;
      if (ow + 8 > ow_n)
        ow = ow_n - 8;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow, *wk = w + kh * kw_n;
        int64_t kw = 0;
        for (; kw + 3 <= kw_n; kw += 3) {
          TAP (a0, kw, 0);
          TAP (b0, kw + 1, 0);
          TAP (c0, kw + 2, 0);
        }
        if (kw < kw_n) {
          TAP (a0, kw, 0);
          kw++;
        }
        if (kw < kw_n)
          TAP (b0, kw, 0);
      }
      STORE (out + ow, _mm256_add_ps (_mm256_add_ps (a0, b0), c0));
    }
#undef TAP
  } else if (sw == 2) {
    for (; ow + 16 <= ow_n; ow += 16) {
      __m256 a0 = _mm256_set1_ps (bias), a1 = a0;
      __m256 b0 = _mm256_setzero_ps (), b1 = b0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow * 2;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          const float *rk = r + kw * dw;
          __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
          __m256 ev0 = _mm256_shuffle_ps (_mm256_loadu_ps (rk), _mm256_loadu_ps (rk + 8),
                                          _MM_SHUFFLE (2, 0, 2, 0));
          __m256 ev1 = _mm256_shuffle_ps (_mm256_loadu_ps (rk + 16), _mm256_loadu_ps (rk + 24),
                                          _MM_SHUFFLE (2, 0, 2, 0));
          /* the lane permutation commutes with the FMA: apply it once at the end */
          if (kh & 1) {
            b0 = _mm256_fmadd_ps (wv, ev0, b0);
            b1 = _mm256_fmadd_ps (wv, ev1, b1);
          } else {
            a0 = _mm256_fmadd_ps (wv, ev0, a0);
            a1 = _mm256_fmadd_ps (wv, ev1, a1);
          }
        }
      }
      a0 = _mm256_add_ps (a0, b0);
      a1 = _mm256_add_ps (a1, b1);
      a0 = _mm256_castpd_ps (
          _mm256_permute4x64_pd (_mm256_castps_pd (a0), _MM_SHUFFLE (3, 1, 2, 0)));
      a1 = _mm256_castpd_ps (
          _mm256_permute4x64_pd (_mm256_castps_pd (a1), _MM_SHUFFLE (3, 1, 2, 0)));
      STORE (out + ow, a0);
      STORE (out + ow + 8, a1);
    }
    for (; ow < ow_n && ow_n >= 8; ow += 8) { /* the last block overlapping, as above */
      __m256 a0 = _mm256_set1_ps (bias);
      if (ow + 8 > ow_n)
        ow = ow_n - 8;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow * 2;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          __m256 lo = _mm256_loadu_ps (r + kw * dw), hi = _mm256_loadu_ps (r + kw * dw + 8);
          /* even elements: lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 -> lo0 lo2 lo4 lo6 hi0 .. */
          __m256 ev = _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (2, 0, 2, 0));
          ev = _mm256_castpd_ps (
              _mm256_permute4x64_pd (_mm256_castps_pd (ev), _MM_SHUFFLE (3, 1, 2, 0)));
          a0 = _mm256_fmadd_ps (_mm256_broadcast_ss (w + kh * kw_n + kw), ev, a0);
        }
      }
      STORE (out + ow, a0);
    }
  }
#undef STORE
  return ow;
}

/* AVX-512, stride 1, a K x K kernel (3 or 5) without dilation, on the
 * padded copy of the plane: 64 outputs a step in four vectors, the taps of
 * even and odd kernel rows in separate accumulators (8 FMA chains), the
 * K x K weights broadcast once per plane; a row's last step of 16 overlaps
 * the one before it.  Only the rows whose taps all read input rows; the
 * others go by dw_rows_avx2.  Tried instead (docs/performance.md): reading
 * the input plane in place, with lane masks at the row ends or with
 * valignd windows from aligned loads, slower or twice as slow when the
 * core's other hardware thread is busy. */
#define UKD __attribute__ ((target ("avx512f,avx512dq,avx2,fma")))

/* 64 outputs of the AVX-512 row kernels in two sets of four accumulators
 * (even and odd taps: 8 independent FMA chains): the bias, one tap's
 * FMAs, the sum activated into out. */
UKD __attribute__ ((always_inline)) static inline void
dw_acc64_init (__m512 *e, __m512 *o, float bias)
{
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++) {
    e[v] = _mm512_set1_ps (bias);
    o[v] = _mm512_setzero_ps ();
  }
}

UKD __attribute__ ((always_inline)) static inline void
dw_fma64 (__m512 *acc, __m512 wk, const float *r)
{
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++)
    acc[v] = _mm512_fmadd_ps (wk, _mm512_loadu_ps (r + 16 * v), acc[v]);
}

UKD __attribute__ ((always_inline)) static inline void
dw_store64 (float *out, const __m512 *e, const __m512 *o, NnpActivation act, float alpha,
            float beta)
{
#pragma GCC unroll 4
  for (int v = 0; v < 4; v++)
    _mm512_storeu_ps (out + 16 * v, nnp_act_avx512 (_mm512_add_ps (e[v], o[v]), act, alpha, beta));
}

/* Output rows [oh0, oh1), whose K taps all read input rows, from the
 * padded plane. */
UKD __attribute__ ((always_inline)) static inline void
dw_rows_s1_avx512_body (const DwCtx *c, const float *pad, const float *w, float bias, float *y,
                        const int K, int64_t oh0, int64_t oh1)
{
  const int64_t OW = c->p->out_dims[2], wp = c->wp;
  const NnpActivation act = c->act;
  const float alpha = c->act_alpha, beta = c->act_beta;
  __m512 wv[25];

  for (int q = 0; q < K * K; q++)
    wv[q] = _mm512_set1_ps (w[q]);
  for (int64_t oh = oh0; oh < oh1; oh++) {
    const float *r = pad + oh * wp; /* stride 1, no dilation: row oh + kh */
    float *out = y + oh * OW;
    int64_t ow = 0;

    for (; ow + 64 <= OW; ow += 64) {
      __m512 e[4], o[4];
      dw_acc64_init (e, o, bias);
#pragma GCC unroll 5
      for (int kh = 0; kh < K; kh++) {
        const float *rk = r + kh * wp + ow;
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++) {
          if (kh & 1)
            dw_fma64 (o, wv[kh * K + kw], rk + kw);
          else
            dw_fma64 (e, wv[kh * K + kw], rk + kw);
        }
      }
      dw_store64 (out + ow, e, o, act, alpha, beta);
    }
    /* 16 outputs; the last step of a row whose width is not a multiple of
     * 16 overlaps the one before (outputs computed again, the same way) */
    for (; ow < OW; ow += 16) {
      __m512 e0 = _mm512_set1_ps (bias), o0 = _mm512_setzero_ps ();
      if (ow + 16 > OW)
        ow = OW - 16;
#pragma GCC unroll 5
      for (int kh = 0; kh < K; kh++) {
        const float *rk = r + kh * wp + ow;
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++) {
          if (kh & 1)
            o0 = _mm512_fmadd_ps (wv[kh * K + kw], _mm512_loadu_ps (rk + kw), o0);
          else
            e0 = _mm512_fmadd_ps (wv[kh * K + kw], _mm512_loadu_ps (rk + kw), e0);
        }
      }
      _mm512_storeu_ps (out + ow, nnp_act_avx512 (_mm512_add_ps (e0, o0), act, alpha, beta));
    }
  }
}

UKD static void
dw_rows_s1_avx512 (const DwCtx *c, const float *pad, const float *w, float bias, float *y,
                   int64_t oh0, int64_t oh1)
{
  if (c->p->kernel[2] == 3)
    dw_rows_s1_avx512_body (c, pad, w, bias, y, 3, oh0, oh1);
  else
    dw_rows_s1_avx512_body (c, pad, w, bias, y, 5, oh0, oh1);
}

/* rows x n floats from src (rows IW apart) to dst (rows wp apart): the
 * padded copy of a plane in vector moves (a memcpy call per row of 64-128
 * floats cost as much as the copy) */
UKD static void
dw_copy_rows_avx512 (float *dst, int64_t wp, const float *src, int64_t IW, int64_t n, int64_t rows)
{
  const __mmask16 tail = (__mmask16) ((1u << (n % 16)) - 1);

  for (int64_t r = 0; r < rows; r++, dst += wp, src += IW) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
      _mm512_storeu_ps (dst + j, _mm512_loadu_ps (src + j));
    if (j < n)
      _mm512_mask_storeu_ps (dst + j, tail, _mm512_maskz_loadu_ps (tail, src + j));
  }
}

/* Stride 2 (3x3 and 5x5, no dilation): each input row is copied split into
 * its even and odd padded columns, E then O in the row of the slot's plane
 * (padded column 2j at E[j], 2j + 1 at O[j]), so that tap kw of output
 * column ow reads E[ow + kw / 2] (kw even) or O[ow + kw / 2] (kw odd):
 * whole 16-wide vectors at stride 1, as dw_rows_s1_avx512 reads, instead
 * of 8-wide steps with shuffles.  The columns and rows of the padding are
 * the same for every plane of a run: zeroed once per slot. */
static gboolean
dw_s2_avx512_ok (const NnpConvParams *p)
{
  return nnp_sgemm_has_avx512 () && p->strides[1] == 2 && p->strides[2] == 2 && p->dilations[1] == 1
         && p->dilations[2] == 1 && p->kernel[1] == p->kernel[2]
         && (p->kernel[2] == 3 || p->kernel[2] == 5);
}

/* n floats of an input row into its even (E) and odd (O) padded columns,
 * the row's first float at padded column pl. */
UKD static void
dw_split_row_avx512 (const float *x, int64_t n, int64_t pl, float *e, float *o)
{
  const __m512i ie = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32 (1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  /* x[2i] lands at padded column 2i + pl */
  float *xe = (pl & 1) ? o + pl / 2 : e + pl / 2;
  float *xo = (pl & 1) ? e + (pl + 1) / 2 : o + pl / 2;
  int64_t i = 0;

  for (; 2 * i + 32 <= n; i += 16) {
    __m512 v0 = _mm512_loadu_ps (x + 2 * i), v1 = _mm512_loadu_ps (x + 2 * i + 16);
    _mm512_storeu_ps (xe + i, _mm512_permutex2var_ps (v0, ie, v1));
    _mm512_storeu_ps (xo + i, _mm512_permutex2var_ps (v0, io, v1));
  }
  if (2 * i < n) {
    int64_t left = n - 2 * i; /* 1..31 */
    __mmask16 m0 = (__mmask16) (left >= 16 ? 0xffff : (1u << left) - 1);
    __mmask16 m1 = (__mmask16) (left > 16 ? (1u << (left - 16)) - 1 : 0);
    __m512 v0 = _mm512_maskz_loadu_ps (m0, x + 2 * i),
           v1 = _mm512_maskz_loadu_ps (m1, x + 2 * i + 16);
    _mm512_mask_storeu_ps (xe + i, (__mmask16) ((1u << ((left + 1) / 2)) - 1),
                           _mm512_permutex2var_ps (v0, ie, v1));
    if (left / 2 > 0)
      _mm512_mask_storeu_ps (xo + i, (__mmask16) ((1u << (left / 2)) - 1),
                             _mm512_permutex2var_ps (v0, io, v1));
  }
}

/* Outputs [ow, OW) of nr rows at stride 2 (16 <= OW with fewer than 64
 * left, or a row narrower than a vector, masked) in nv = ceil((OW - ow) /
 * 16) vectors a row, all computed together (a row's last vector
 * overlapping the one before: outputs computed again, the same way), two
 * FMA chains each (even and odd kw): one vector of one row at a time was a
 * chain of K * K / 2 FMAs (96 planes 112x112 -> 56x56: 0.34 -> 0.30 ms).
 * Tap (kh, kw) of output column c of row r reads rb[(2 r + kh) * wp + (kw &
 * 1) * we + kw / 2 + c]; row r's outputs at out + r * OW.  Rows of more
 * than one together (nr > 1) have every tap: kh_lo = 0, kh_hi = K.
 * (At stride 1 one row's vectors together were 3-10 % slower on rows of
 * 28, 56 and 80.) */
UKD __attribute__ ((always_inline)) static inline void
dw_s2_rows_n (const float *rb, int64_t wp, int64_t we, int64_t kh_lo, int64_t kh_hi, const int K,
              const __m512 *wv, float bias, float *out, int64_t ow, int64_t OW, const int nv,
              const int nr, const int masked, __mmask16 mask, NnpActivation act, float alpha,
              float beta)
{
  int64_t off[4];
  __m512 e[8], o[8];

#pragma GCC unroll 4
  for (int v = 0; v < nv; v++)
    off[v] = v + 1 < nv ? ow + 16 * v : masked ? ow : OW - 16;
#pragma GCC unroll 8
  for (int a = 0; a < nr * nv; a++) {
    e[a] = _mm512_set1_ps (bias);
    o[a] = _mm512_setzero_ps ();
  }
  for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
#pragma GCC unroll 5
    for (int kw = 0; kw < K; kw++) {
      const __m512 wk = wv[kh * K + kw];
#pragma GCC unroll 4
      for (int r = 0; r < nr; r++) {
        const float *t = rb + (2 * r + kh) * wp + (kw & 1) * we + kw / 2;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
          __m512 in =
              masked ? _mm512_maskz_loadu_ps (mask, t + off[v]) : _mm512_loadu_ps (t + off[v]);
          if (kw & 1)
            o[r * nv + v] = _mm512_fmadd_ps (wk, in, o[r * nv + v]);
          else
            e[r * nv + v] = _mm512_fmadd_ps (wk, in, e[r * nv + v]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
      __m512 a = nnp_act_avx512 (_mm512_add_ps (e[r * nv + v], o[r * nv + v]), act, alpha, beta);
      if (masked)
        _mm512_mask_storeu_ps (out + r * OW + off[v], mask, a);
      else
        _mm512_storeu_ps (out + r * OW + off[v], a);
    }
}

/* dw_s2_rows_n with nv, nr and masked constant: the instances the row loop
 * takes (nr > 1: up to 8 vectors, 16 accumulators). */
UKD __attribute__ ((always_inline)) static inline void
dw_s2_rows (const float *rb, int64_t wp, int64_t we, int64_t kh_lo, int64_t kh_hi, const int K,
            const __m512 *wv, float bias, float *out, int64_t ow, int64_t OW, int nr,
            __mmask16 mask, NnpActivation act, float alpha, float beta)
{
  const int masked = OW < 16, nv = masked ? 1 : (int) ((OW - ow + 15) / 16);

#define DW_S2_ROWS(NV, NR, M) \
  dw_s2_rows_n (rb, wp, we, kh_lo, kh_hi, K, wv, bias, out, ow, OW, NV, NR, M, mask, act, alpha, \
                beta)
  if (masked)
    nr == 4 ? DW_S2_ROWS (1, 4, 1) : nr == 2 ? DW_S2_ROWS (1, 2, 1) : DW_S2_ROWS (1, 1, 1);
  else if (nv == 1)
    nr == 4 ? DW_S2_ROWS (1, 4, 0) : nr == 2 ? DW_S2_ROWS (1, 2, 0) : DW_S2_ROWS (1, 1, 0);
  else if (nv == 2)
    nr == 2 ? DW_S2_ROWS (2, 2, 0) : DW_S2_ROWS (2, 1, 0);
  else if (nv == 3)
    nr == 2 ? DW_S2_ROWS (3, 2, 0) : DW_S2_ROWS (3, 1, 0);
  else
    nr == 2 ? DW_S2_ROWS (4, 2, 0) : DW_S2_ROWS (4, 1, 0);
#undef DW_S2_ROWS
}

/* Every output row of one plane from its split copy (rows wp floats apart,
 * O at we floats into each row). */
UKD __attribute__ ((always_inline)) static inline void
dw_rows_s2_avx512_body (const DwCtx *c, const float *pad, int64_t we, const float *w, float bias,
                        float *y, const int K)
{
  const NnpConvParams *p = c->p;
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2], wp = c->wp;
  const NnpActivation act = c->act;
  const float alpha = c->act_alpha, beta = c->act_beta;
  const __mmask16 narrow = (__mmask16) (OW < 16 ? (1u << OW) - 1 : 0xffff);
  __m512 wv[25];

  for (int q = 0; q < K * K; q++)
    wv[q] = _mm512_set1_ps (w[q]);
  for (int64_t oh = 0; oh < OH;) {
    float *out = y + oh * OW;
    int64_t kh_lo, kh_hi, ow = 0;
    int nr = 1;

    if (!dw_row_taps (p, oh, &kh_lo, &kh_hi)) {
      dw_row_bias (c, bias, out, OW);
      oh++;
      continue;
    }
    for (; ow + 64 <= OW; ow += 64) {
      __m512 e[4], o[4];
      dw_acc64_init (e, o, bias);
      for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
        const float *re = pad + (oh * 2 + kh) * wp + ow;
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++) {
          if (kw & 1)
            dw_fma64 (o, wv[kh * K + kw], re + we + kw / 2);
          else
            dw_fma64 (e, wv[kh * K + kw], re + kw / 2);
        }
      }
      dw_store64 (out + ow, e, o, act, alpha, beta);
    }
    /* rows narrower than 64 outputs: whole rows together where they have
     * every tap (four of one vector, two of 2-4) */
    if (ow == 0 && kh_lo == 0 && kh_hi == K) {
      const int most = OW <= 16 ? 4 : 2;
      int64_t lo, hi;
      while (nr < most && oh + nr < OH && dw_row_taps (p, oh + nr, &lo, &hi) && lo == 0 && hi == K)
        nr++;
      nr = nr >= 4 ? 4 : nr >= 2 ? 2 : 1;
    }
    if (ow < OW)
      dw_s2_rows (pad + oh * 2 * wp, wp, we, kh_lo, kh_hi, K, wv, bias, out, ow, OW, nr, narrow,
                  act, alpha, beta);
    oh += nr;
  }
}

/* One plane at stride 2: the split copy of its input rows, then the rows. */
UKD static void
dw_task_s2_avx512 (const DwCtx *c, const float *x, const float *w, float bias, float *y, float *pad)
{
  const NnpConvParams *p = c->p;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t pt = p->pads_begin[1], pl = p->pads_begin[2];
  const int64_t wpad = c->wp - 2 * NR; /* the padded row */
  const int64_t we = (wpad + 1) / 2, n = MAX (0, MIN (IW, wpad - pl));

  for (int64_t r = MAX (pt, 0); r < MIN (c->hp, IH + pt); r++)
    dw_split_row_avx512 (x + (r - pt) * IW, n, pl, pad + r * c->wp, pad + r * c->wp + we);
  if (p->kernel[2] == 3)
    dw_rows_s2_avx512_body (c, pad, we, w, bias, y, 3);
  else
    dw_rows_s2_avx512_body (c, pad, we, w, bias, y, 5);
}

/* Whether dw_rows_s1_avx512 takes the rows of this convolution that have
 * every tap */
static gboolean
dw_s1_avx512_ok (const NnpConvParams *p)
{
  return nnp_sgemm_has_avx512 () && p->strides[1] == 1 && p->strides[2] == 1 && p->dilations[1] == 1
         && p->dilations[2] == 1 && p->kernel[1] == p->kernel[2]
         && (p->kernel[2] == 3 || p->kernel[2] == 5) && p->out_dims[2] >= 16;
}

/* Every output row of one plane from its padded copy: one call per plane
 * (the per-row call overhead dominated on 16x16 planes), the row kernel
 * inlined with kw_n and dw constant where the caller makes them so. */
__attribute__ ((target ("avx2,fma"), always_inline)) static inline void
dw_rows_avx2_body (const DwCtx *c, const float *pad, const float *w, float bias, float *y,
                   int64_t kw_n, int64_t dw)
{
  const NnpConvParams *p = c->p;
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t dh = p->dilations[1], sh = p->strides[1], sw = p->strides[2];

  for (int64_t oh = 0; oh < OH; oh++) {
    float *out = y + oh * OW;
    const float *rows, *wk;
    int64_t kh_lo, kh_hi, done;

    if (c->s1_avx512 && oh >= c->full_lo && oh < c->full_hi) {
      /* the rows with every tap, at once */
      dw_rows_s1_avx512 (c, pad, w, bias, y, oh, c->full_hi);
      oh = c->full_hi - 1;
      continue;
    }
    if (!dw_row_taps (p, oh, &kh_lo, &kh_hi)) {
      dw_row_bias (c, bias, out, OW);
      continue;
    }
    rows = pad + (oh * sh + kh_lo * dh) * c->wp;
    wk = w + kh_lo * kw_n;
    done = dw_row_avx2_body (rows, c->wp, wk, kh_hi - kh_lo, kw_n, dh, dw, sw, OW, bias, out,
                             c->act, c->act_alpha, c->act_beta);
    if (done < OW) {
      dw_row_generic (rows, c->wp, wk, kh_hi - kh_lo, kw_n, dh, dw, sw, done, OW, bias, out);
      nnp_sgemm_activate (out + done, OW - done, c->act, c->act_alpha, c->act_beta);
    }
  }
}

__attribute__ ((target ("avx2,fma"))) static void
dw_rows_avx2 (const DwCtx *c, const float *pad, const float *w, float bias, float *y)
{
  const int64_t KW = c->p->kernel[2], dw = c->p->dilations[2];

  /* the kernels of the models (3x3 and 5x5, no dilation along W): tap
   * loops unrolled */
  if (KW == 3 && dw == 1)
    dw_rows_avx2_body (c, pad, w, bias, y, 3, 1);
  else if (KW == 5 && dw == 1)
    dw_rows_avx2_body (c, pad, w, bias, y, 5, 1);
  else
    dw_rows_avx2_body (c, pad, w, bias, y, KW, dw);
}
#endif


static void
dw_task (gpointer data, int64_t task, void *slot)
{
  DwCtx *c = data;
  const NnpConvParams *p = c->p;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t KH = p->kernel[1], KW = p->kernel[2];
  const int64_t pt = p->pads_begin[1], pl = p->pads_begin[2];
  int64_t oc = task % p->out_channels, b = task / p->out_channels;
  int64_t ic = oc / (p->out_channels / p->group);
  const float *x = c->x + (b * p->in_channels + ic) * IH * IW;
  const float *w = c->w + oc * KH * KW;
  float *y = c->y + (b * p->out_channels + oc) * OH * OW;
  float bias = c->bias ? c->bias[oc] : 0.f;
  float *pad = slot;
  gboolean avx2 = nnp_cpu_avx2_ok ();

  /* zero-padded copy: pad[r][col] = x[r - pt][col - pl]; rows outside the
   * input are never read (their taps are skipped below).  Every task of a
   * run writes the same columns of the same rows, so the zero borders are
   * written once per slot and run (zeroed[]). */
  int64_t lo = MIN (pl, c->wp), n = MAX (0, MIN (IW, c->wp - lo));
  int64_t slot_index = ((guint8 *) slot - c->scratch) / (int64_t) c->slot_bytes;
  if (!c->zeroed[slot_index]) {
    memset (pad, 0, c->hp * c->wp * sizeof (float));
    c->zeroed[slot_index] = TRUE;
  }
#if HAVE_X86
  if (c->s2_avx512) {
    dw_task_s2_avx512 (c, x, w, bias, y, pad);
    return;
  }
  if (c->copy_avx512) {
    dw_copy_rows_avx512 (pad + MAX (pt, 0) * c->wp + lo, c->wp, x + (MAX (pt, 0) - pt) * IW, IW, n,
                         MIN (c->hp, IH + pt) - MAX (pt, 0));
  } else
#endif
    for (int64_t r = MAX (pt, 0); r < MIN (c->hp, IH + pt); r++)
      memcpy (pad + r * c->wp + lo, x + (r - pt) * IW, n * sizeof (float));
#if HAVE_X86
  if (avx2) {
    dw_rows_avx2 (c, pad, w, bias, y);
    return;
  }
#endif
  for (int64_t oh = 0; oh < OH; oh++) {
    const int64_t dh = p->dilations[1];
    float *out = y + oh * OW;
    int64_t kh_lo, kh_hi;
    const float *rows;

    if (!dw_row_taps (p, oh, &kh_lo, &kh_hi)) {
      dw_row_bias (c, bias, out, OW);
      continue;
    }
    rows = pad + (oh * p->strides[1] + kh_lo * dh) * c->wp;
    dw_row_generic (rows, c->wp, w + kh_lo * KW, kh_hi - kh_lo, KW, dh, p->dilations[2],
                    p->strides[2], 0, OW, bias, out);
    nnp_sgemm_activate (out, OW, c->act, c->act_alpha, c->act_beta);
  }
  (void) avx2;
}

/* Small planes (at most DWS_MAX_V vectors of 16 outputs: MobileNet's 7x7
 * and 14x14 ones, 576-960 channels): the plane as one run of outputs,
 * each 16-output vector's taps read straight from the input plane by a
 * masked load where the 16 inputs are consecutive (stride 1 with as many
 * input as output columns) or a masked gather, the lanes whose tap falls
 * in the padding masked off.  The offsets and masks depend on the
 * geometry alone: made once per run, shared by every channel.  (The row
 * kernels spent a padded copy, per-row set-up and scalar rows of 7 on each
 * 49-output plane: 2.5-3.3 GFLOP/s.) */
#define DWS_MAX_V 16
#define DWS_MAX_T 25

typedef struct {
  int32_t off[16]; /* input offsets from the plane's start, per lane */
  __mmask16 mask;  /* lanes whose tap reads an input (the others: zero) */
  gboolean contig; /* off[l] = off[first] + l - first on every lane of mask */
} DwsTap;

typedef struct {
  const DwCtx *c;
  const DwsTap *taps; /* [tap][vector] */
  int n_taps, nvec;
} DwsCtx;

static gboolean
dw_small_ok (const NnpConvParams *p)
{
  return nnp_sgemm_has_avx512 () && p->kernel[1] * p->kernel[2] <= DWS_MAX_T
         && p->out_dims[1] * p->out_dims[2] <= DWS_MAX_V * 16 && p->out_dims[1] * p->out_dims[2] > 0
         && p->in_dims[1] * p->in_dims[2] < G_MAXINT32;
}

/* Fills taps[] (a few thousand lanes: per run, not per channel). */
static void
dw_small_taps (const NnpConvParams *p, DwsTap *taps, int nvec)
{

  const int64_t IH = p->in_dims[1], IW = p->in_dims[2], OW = p->out_dims[2];
  const int64_t n_out = p->out_dims[1] * OW, KW = p->kernel[2];

  for (int64_t t = 0; t < p->kernel[1] * KW; t++) {
    int64_t kh = t / KW, kw = t % KW;
    int64_t oh = 0, ow = 0; /* of output v * 16 + l */
    for (int v = 0; v < nvec; v++) {
      DwsTap *e = &taps[t * nvec + v];
      int first = -1;
      e->mask = 0;
      e->contig = TRUE;
      for (int l = 0; l < 16; l++, ow = ow + 1 < OW ? ow + 1 : 0, oh += ow == 0) {
        int64_t o = v * 16 + l;
        int64_t ih = oh * p->strides[1] + kh * p->dilations[1] - p->pads_begin[1];
        int64_t iw = ow * p->strides[2] + kw * p->dilations[2] - p->pads_begin[2];
        e->off[l] = 0;
        if (o >= n_out || ih < 0 || ih >= IH || iw < 0 || iw >= IW)
          continue;
        e->off[l] = (int32_t) (ih * IW + iw);
        e->mask |= (__mmask16) (1u << l);
        if (first < 0)
          first = l;
        else if (e->off[l] != e->off[first] + (l - first))
          e->contig = FALSE;
      }
      /* a consecutive run read by one masked load from off[0] on */
      if (first >= 0 && e->contig)
        e->off[0] = e->off[first] - first;
    }
  }
}

UKD static void
dw_small_planes (gpointer data, gsize begin, gsize end, int thread)
{
  const DwsCtx *s = data;
  const DwCtx *c = s->c;
  const NnpConvParams *p = c->p;
  const int64_t in_sp = p->in_dims[1] * p->in_dims[2], n_out = p->out_dims[1] * p->out_dims[2];
  const int64_t cpg = p->out_channels / p->group;

  for (gsize task = begin; task < end; task++) {
    int64_t oc = (int64_t) task % p->out_channels, b = (int64_t) task / p->out_channels;
    const float *x = c->x + (b * p->in_channels + oc / cpg) * in_sp;
    const float *w = c->w + oc * s->n_taps;
    float *y = c->y + (b * p->out_channels + oc) * n_out;
    const float bias = c->bias ? c->bias[oc] : 0.f;

    /* eight vectors at a time: eight independent FMA chains */
    for (int v0 = 0; v0 < s->nvec; v0 += 8) {
      const int nv = MIN (8, s->nvec - v0);
      __m512 acc[8];
#pragma GCC unroll 8
      for (int v = 0; v < 8; v++)
        acc[v] = _mm512_set1_ps (bias);
      for (int t = 0; t < s->n_taps; t++) {
        const __m512 wt = _mm512_set1_ps (w[t]);
        const DwsTap *e = s->taps + t * s->nvec + v0;
        /* a constant trip count: the accumulators stay in registers */
#pragma GCC unroll 8
        for (int v = 0; v < 8; v++) {
          __m512 in;
          if (v >= nv || e[v].mask == 0)
            continue;
          if (e[v].contig)
            in = _mm512_maskz_loadu_ps (e[v].mask, x + e[v].off[0]);
          else
            in = _mm512_mask_i32gather_ps (_mm512_setzero_ps (), e[v].mask,
                                           _mm512_loadu_si512 (e[v].off), x, 4);
          acc[v] = _mm512_fmadd_ps (wt, in, acc[v]);
        }
      }
#pragma GCC unroll 8
      for (int v = 0; v < 8; v++) {
        int64_t o = (int64_t) (v0 + v) * 16;
        __m512 a = acc[v];
        if (v >= nv)
          break;
        a = nnp_act_avx512 (a, c->act, c->act_alpha, c->act_beta);
        if (o + 16 <= n_out)
          _mm512_storeu_ps (y + o, a);
        else
          _mm512_mask_storeu_ps (y + o, (__mmask16) ((1u << (n_out - o)) - 1), a);
      }
    }
  }
}

gboolean
nnp_cpu_conv_depthwise_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  DwCtx ctx;

  ctx.p = p;
  ctx.x = call->inputs[0]->data;
  ctx.w = call->inputs[1]->data;
  ctx.bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  ctx.y = call->outputs[0]->data;
  ctx.act = call->node->act;
  ctx.act_alpha = call->node->act_alpha;
  ctx.act_beta = call->node->act_beta;
#if HAVE_X86
  if (nnp_cpu_avx2_ok () && dw_small_ok (p)) {
    DwsTap taps[DWS_MAX_T * DWS_MAX_V];
    DwsCtx s = { &ctx, taps, (int) (p->kernel[1] * p->kernel[2]),
                 (int) ((p->out_dims[1] * p->out_dims[2] + 15) / 16) };

    /* the taps' lanes are consecutive (masked loads) at stride 1 with as
     * many input as output columns, otherwise gathers.  Taken where the
     * row kernels are slower (measured): rows narrower than a vector with
     * loads (MobileNet's 960x7x7: 0.25 -> 0.04 ms, 384x14x14 -28 %; not
     * 96x16x16, whose rows are whole vectors), rows narrower than their
     * 8-wide AVX2 steps with gathers (576x7x7 of stride 2: -35 %; not
     * 192x14x14, +150 %), except where the stride-2 split rows take them
     * (576x7x7 of stride 2: 0.12 -> 0.083 ms against the gathers) */
    gboolean loads = p->strides[1] == 1 && p->strides[2] == 1 && p->in_dims[2] == p->out_dims[2];
    if (loads ? p->out_dims[2] < 16 : (p->out_dims[2] < 8 && !dw_s2_avx512_ok (p))) {
      dw_small_taps (p, taps, s.nvec);
      nnp_parallel_for (call->pool, p->batch * p->out_channels, 16, dw_small_planes, &s);
      return TRUE;
    }
  }
#endif
  dw_geometry (p, &ctx.hp, &ctx.wp);
  ctx.scratch = call->scratch;
  ctx.slot_bytes = round_up_bytes (ctx.hp * ctx.wp * sizeof (float));
  /* per slot: nothing allocated per run */
  gboolean zeroed[NNP_SGEMM_MAX_SLOTS] = { 0 };
  ctx.zeroed = zeroed;
  ctx.s1_avx512 = FALSE;
  ctx.s2_avx512 = FALSE;
  ctx.copy_avx512 = FALSE;
#if HAVE_X86
  ctx.s1_avx512 = nnp_cpu_avx2_ok () && dw_s1_avx512_ok (p);
  ctx.s2_avx512 = nnp_cpu_avx2_ok () && dw_s2_avx512_ok (p);
  ctx.copy_avx512 = nnp_cpu_avx2_ok () && nnp_sgemm_has_avx512 ();
#endif
  /* output row oh reads input rows oh - pt + kh, kh < K */
  ctx.full_lo = MAX (p->pads_begin[1], 0);
  ctx.full_hi =
      MAX (ctx.full_lo, MIN (p->out_dims[1], p->in_dims[1] + p->pads_begin[1] - p->kernel[1] + 1));
  nnp_cpu_run_in_slots (call->pool, p->batch * p->out_channels, call->scratch, ctx.slot_bytes,
                        dw_task, &ctx);
  return TRUE;
}

gsize
nnp_cpu_conv_depthwise_workspace (const NnpConvParams *p)
{
  int64_t hp, wp;

  dw_geometry (p, &hp, &wp);
  return round_up_bytes (hp * wp * sizeof (float)) * nnp_sgemm_slots ();
}
