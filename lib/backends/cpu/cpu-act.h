/* libnnpipe internal: fused activations on AVX2 (and AVX-512) vectors, shared by the CPU
 * kernels that apply them while the values are in registers (cpu-gemm.c,
 * cpu-conv.c), and the vector exp / horizontal reductions of Softmax and
 * the elementwise kernels.  Call the vector functions only from functions
 * compiled with __attribute__ ((target ("avx2,fma"))) and only when
 * nnp_cpu_avx2_ok() says the CPU has them. */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* TRUE when the CPU has AVX2 and FMA and NNPIPE_CPU_GENERIC is not set (the
 * same choice as the GEMM micro-kernel).  Cached per translation unit. */
static inline gboolean
nnp_cpu_avx2_ok (void)
{
  static gsize once = 0;
  static gboolean yes;

  if (g_once_init_enter (&once)) {
    __builtin_cpu_init ();
    yes = __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
          && g_getenv ("NNPIPE_CPU_GENERIC") == NULL;
    g_once_init_leave (&once, 1);
  }
  return yes;
}

__attribute__ ((target ("avx2,fma"))) static inline float
nnp_hmax_avx2 (__m256 v)
{
  __m128 m = _mm_max_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  m = _mm_max_ps (m, _mm_movehl_ps (m, m));
  m = _mm_max_ss (m, _mm_movehdup_ps (m));
  return _mm_cvtss_f32 (m);
}

__attribute__ ((target ("avx2,fma"))) static inline float
nnp_hsum_avx2 (__m256 v)
{
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}

/* exp's constants: the clamp, log2(e), ln 2 in two parts, and the
 * coefficients of p (below), highest degree first */
#define NNP_EXP_LO (-87.3f)
#define NNP_EXP_HI 88.3f
#define NNP_EXP_LOG2E 1.44269504088896341f
#define NNP_EXP_LN2_HI 0.693359375f
#define NNP_EXP_LN2_LO (-2.12194440e-4f)
static const float nnp_exp_poly[6] = { 1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                       4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f };

/* exp(x) for x in about [-87, 88] (clamped outside): 2^n * p(r) with
 * r = x - n ln2 in [-ln2/2, ln2/2], p a degree-6 polynomial; relative
 * error ~2 ulp. */
__attribute__ ((target ("avx2,fma"))) static inline __m256
nnp_exp_avx2 (__m256 x)
{
  __m256 n, r, p;
  __m256i e;

  x = _mm256_min_ps (_mm256_max_ps (x, _mm256_set1_ps (NNP_EXP_LO)), _mm256_set1_ps (NNP_EXP_HI));
  n = _mm256_round_ps (_mm256_mul_ps (x, _mm256_set1_ps (NNP_EXP_LOG2E)),
                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps (n, _mm256_set1_ps (NNP_EXP_LN2_HI), x);
  r = _mm256_fnmadd_ps (n, _mm256_set1_ps (NNP_EXP_LN2_LO), r);
  p = _mm256_set1_ps (nnp_exp_poly[0]);
#pragma GCC unroll 5
  for (int k = 1; k < 6; k++)
    p = _mm256_fmadd_ps (p, r, _mm256_set1_ps (nnp_exp_poly[k]));
  p = _mm256_fmadd_ps (p, _mm256_mul_ps (r, r), _mm256_add_ps (r, _mm256_set1_ps (1.f)));
  e = _mm256_slli_epi32 (_mm256_add_epi32 (_mm256_cvtps_epi32 (n), _mm256_set1_epi32 (127)), 23);
  return _mm256_mul_ps (p, _mm256_castsi256_ps (e));
}

/* erf on 8 lanes (GELU's, in transformer exports: erff was 8 ns an
 * element).  |x| < 1: x P(x^2), P of degree 5 fitted to erf(x) / x on
 * Chebyshev points of x^2 in [0, 1]; 1 <= |x| (clamped to 6, where erf is
 * 1 in float): 1 - t Q(t) exp(-x^2), t = 1 / (1 + p |x|) (Abramowitz and
 * Stegun 7.1.26).  Relative error at most 2.1e-7 in float (checked against
 * double erf on 400,000 points); the sign copied, NaN kept. */
static const float nnp_erf_small[6] = { -5.654105916619301e-4f,  4.923277534544468e-3f,
                                        -2.6716385036706924e-2f, 1.1280364543199539e-1f,
                                        -3.7612348794937134e-1f, 1.1283791065216064f };
static const float nnp_erf_large[5] = { 1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f,
                                        0.254829592f };
#define NNP_ERF_P 0.3275911f

__attribute__ ((target ("avx2,fma"))) static inline __m256
nnp_erf_avx2 (__m256 v)
{
  const float *small = nnp_erf_small, *large = nnp_erf_large;
  const __m256 sign = _mm256_set1_ps (-0.f), one = _mm256_set1_ps (1.f);
  __m256 a = _mm256_min_ps (_mm256_andnot_ps (sign, v), _mm256_set1_ps (6.f));
  __m256 u = _mm256_mul_ps (a, a);
  __m256 p = _mm256_set1_ps (small[0]), q = _mm256_set1_ps (large[0]), t, r;

#pragma GCC unroll 5
  for (int k = 1; k < 6; k++)
    p = _mm256_fmadd_ps (p, u, _mm256_set1_ps (small[k]));
  t = _mm256_div_ps (one, _mm256_fmadd_ps (_mm256_set1_ps (NNP_ERF_P), a, one));
#pragma GCC unroll 4
  for (int k = 1; k < 5; k++)
    q = _mm256_fmadd_ps (q, t, _mm256_set1_ps (large[k]));
  q = _mm256_mul_ps (q, t);
  r = _mm256_fnmadd_ps (q, nnp_exp_avx2 (_mm256_sub_ps (_mm256_setzero_ps (), u)), one);
  r = _mm256_blendv_ps (_mm256_mul_ps (a, p), r, _mm256_cmp_ps (a, one, _CMP_GE_OQ));
  r = _mm256_or_ps (r, _mm256_and_ps (v, sign));
  return _mm256_blendv_ps (r, v, _mm256_cmp_ps (v, v, _CMP_UNORD_Q));
}

__attribute__ ((target ("avx2,fma"))) static inline __m256
nnp_act_avx2 (__m256 x, NnpActivation act, __m256 va, __m256 vb)
{
  const __m256 zero = _mm256_setzero_ps ();
  const __m256 one = _mm256_set1_ps (1.f);

  switch (act) {
    case NNP_ACT_RELU: return _mm256_max_ps (x, zero);
    case NNP_ACT_CLIP: return _mm256_min_ps (_mm256_max_ps (x, va), vb);
    case NNP_ACT_LEAKY_RELU:
      return _mm256_add_ps (_mm256_max_ps (x, zero), _mm256_mul_ps (va, _mm256_min_ps (x, zero)));
    case NNP_ACT_HARD_SIGMOID:
      return _mm256_min_ps (_mm256_max_ps (_mm256_fmadd_ps (va, x, vb), zero), one);
    case NNP_ACT_HARD_SWISH: {
      __m256 v = _mm256_fmadd_ps (x, _mm256_set1_ps (1.f / 6.f), _mm256_set1_ps (0.5f));
      return _mm256_mul_ps (x, _mm256_min_ps (_mm256_max_ps (v, zero), one));
    }
    case NNP_ACT_HARD_SWISH_AFFINE: {
      __m256 v = _mm256_fmadd_ps (x, _mm256_set1_ps (1.f / 6.f), _mm256_set1_ps (0.5f));
      v = _mm256_mul_ps (x, _mm256_min_ps (_mm256_max_ps (v, zero), one));
      return _mm256_fmadd_ps (va, v, vb);
    }
    case NNP_ACT_SIGMOID:
      return _mm256_div_ps (one, _mm256_add_ps (one, nnp_exp_avx2 (_mm256_sub_ps (zero, x))));
    case NNP_ACT_SILU:
      return _mm256_div_ps (x, _mm256_add_ps (one, nnp_exp_avx2 (_mm256_sub_ps (zero, x))));
    case NNP_ACT_GELU: {
      __m256 e = nnp_erf_avx2 (_mm256_mul_ps (x, _mm256_set1_ps (0.70710678118654752f)));
      return _mm256_mul_ps (_mm256_mul_ps (x, _mm256_set1_ps (0.5f)), _mm256_add_ps (e, one));
    }
    default: return x;
  }
}

/* nnp_exp_avx2() on 16 lanes (the same reduction and polynomial; 2^n by
 * vscalefps).  The maskz forms: GCC 12's plain ones warn of an undefined
 * operand. */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), always_inline)) static inline __m512
nnp_exp_avx512 (__m512 x)
{
  __m512 n, r, p;

  x = _mm512_maskz_min_ps ((__mmask16) -1,
                           _mm512_maskz_max_ps ((__mmask16) -1, x, _mm512_set1_ps (NNP_EXP_LO)),
                           _mm512_set1_ps (NNP_EXP_HI));
  n = _mm512_maskz_roundscale_ps ((__mmask16) -1, _mm512_mul_ps (x, _mm512_set1_ps (NNP_EXP_LOG2E)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps (n, _mm512_set1_ps (NNP_EXP_LN2_HI), x);
  r = _mm512_fnmadd_ps (n, _mm512_set1_ps (NNP_EXP_LN2_LO), r);
  p = _mm512_set1_ps (nnp_exp_poly[0]);
#pragma GCC unroll 5
  for (int k = 1; k < 6; k++)
    p = _mm512_fmadd_ps (p, r, _mm512_set1_ps (nnp_exp_poly[k]));
  p = _mm512_fmadd_ps (p, _mm512_mul_ps (r, r), _mm512_add_ps (r, _mm512_set1_ps (1.f)));
  return _mm512_maskz_scalef_ps ((__mmask16) -1, p, n);
}

/* 1 / (1 + exp(-x)) on 16 lanes: a reciprocal estimate (2^-14) and one
 * Newton step (a division costs several times more). */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), always_inline)) static inline __m512
nnp_sigmoid_avx512 (__m512 x)
{
  const __m512 one = _mm512_set1_ps (1.f);
  __m512 d = _mm512_add_ps (one, nnp_exp_avx512 (_mm512_sub_ps (_mm512_setzero_ps (), x)));
  __m512 r = _mm512_maskz_rcp14_ps ((__mmask16) -1, d);

  return _mm512_mul_ps (r, _mm512_fnmadd_ps (d, r, _mm512_set1_ps (2.f)));
}

/* nnp_erf_avx2() on 16 lanes (the same polynomials; 1 / (1 + p |x|) by a
 * reciprocal estimate and one Newton step instead of a division). */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), always_inline)) static inline __m512
nnp_erf_avx512 (__m512 v)
{
  const __m512 one = _mm512_set1_ps (1.f);
  __m512 a = _mm512_maskz_min_ps ((__mmask16) -1, _mm512_abs_ps (v), _mm512_set1_ps (6.f));
  __m512 u = _mm512_mul_ps (a, a);
  __m512 p = _mm512_set1_ps (nnp_erf_small[0]), q = _mm512_set1_ps (nnp_erf_large[0]), d, t, r;

#pragma GCC unroll 5
  for (int k = 1; k < 6; k++)
    p = _mm512_fmadd_ps (p, u, _mm512_set1_ps (nnp_erf_small[k]));
  d = _mm512_fmadd_ps (_mm512_set1_ps (NNP_ERF_P), a, one);
  t = _mm512_maskz_rcp14_ps ((__mmask16) -1, d);
  t = _mm512_mul_ps (t, _mm512_fnmadd_ps (d, t, _mm512_set1_ps (2.f)));
#pragma GCC unroll 4
  for (int k = 1; k < 5; k++)
    q = _mm512_fmadd_ps (q, t, _mm512_set1_ps (nnp_erf_large[k]));
  q = _mm512_mul_ps (q, t);
  r = _mm512_fnmadd_ps (q, nnp_exp_avx512 (_mm512_sub_ps (_mm512_setzero_ps (), u)), one);
  r = _mm512_mask_blend_ps (_mm512_cmp_ps_mask (a, one, _CMP_LT_OQ), r, _mm512_mul_ps (a, p));
  r = _mm512_or_ps (r, _mm512_and_ps (v, _mm512_set1_ps (-0.f)));
  return _mm512_mask_blend_ps (_mm512_cmp_ps_mask (v, v, _CMP_UNORD_Q), r, v);
}

/* Any activation on 16 lanes: every one of graph.h on the register; one
 * without its form here by nnp_act_avx2 on the two halves, joined through
 * the stack.  Inlined where a loop applies one activation to many vectors;
 * nnp_act_avx512_other() is it out of line, so that every kernel's store
 * loop inlines only Relu and Clip, the compare and the call (a YOLO-like
 * model with SiLU: within 2 % of the inlined exp, the noise of these
 * runs). */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), always_inline)) static inline __m512
nnp_act_avx512_any (__m512 v, NnpActivation act, float alpha, float beta)
{
  const __mmask16 all = (__mmask16) -1;
  const __m512 zero = _mm512_setzero_ps (), one = _mm512_set1_ps (1.f);
  float buf[16] __attribute__ ((aligned (64)));
  __m256 va, vb;

  if (act == NNP_ACT_SIGMOID)
    return nnp_sigmoid_avx512 (v);
  if (act == NNP_ACT_SILU)
    return _mm512_mul_ps (v, nnp_sigmoid_avx512 (v));
  if (act == NNP_ACT_GELU) {
    __m512 e = nnp_erf_avx512 (_mm512_mul_ps (v, _mm512_set1_ps (0.70710678118654752f)));
    return _mm512_mul_ps (_mm512_mul_ps (v, _mm512_set1_ps (0.5f)),
                          _mm512_add_ps (e, _mm512_set1_ps (1.f)));
  }
  /* the piecewise-linear ones as nnp_act_avx2 computes them (the same
   * operations: the same results on either path) */
  if (act == NNP_ACT_LEAKY_RELU)
    return _mm512_add_ps (
        _mm512_maskz_max_ps (all, v, zero),
        _mm512_mul_ps (_mm512_set1_ps (alpha), _mm512_maskz_min_ps (all, v, zero)));
  if (act == NNP_ACT_HARD_SIGMOID)
    return _mm512_maskz_min_ps (
        all,
        _mm512_maskz_max_ps (
            all, _mm512_fmadd_ps (_mm512_set1_ps (alpha), v, _mm512_set1_ps (beta)), zero),
        one);
  if (act == NNP_ACT_HARD_SWISH || act == NNP_ACT_HARD_SWISH_AFFINE) {
    __m512 h = _mm512_fmadd_ps (v, _mm512_set1_ps (1.f / 6.f), _mm512_set1_ps (0.5f));
    h = _mm512_mul_ps (v, _mm512_maskz_min_ps (all, _mm512_maskz_max_ps (all, h, zero), one));
    return act == NNP_ACT_HARD_SWISH
               ? h
               : _mm512_fmadd_ps (_mm512_set1_ps (alpha), h, _mm512_set1_ps (beta));
  }
  va = _mm256_set1_ps (alpha);
  vb = _mm256_set1_ps (beta);
  _mm256_store_ps (buf, nnp_act_avx2 (_mm512_extractf32x8_ps (v, 0), act, va, vb));
  _mm256_store_ps (buf + 8, nnp_act_avx2 (_mm512_extractf32x8_ps (v, 1), act, va, vb));
  return _mm512_load_ps (buf);
}

__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), noinline)) static __m512
nnp_act_avx512_other (__m512 v, NnpActivation act, float alpha, float beta)
{
  return nnp_act_avx512_any (v, act, alpha, beta);
}

/* A fused activation on 16 lanes, for kernels compiled for AVX-512 (with
 * avx512dq): always inlined (a call per vector cost a depthwise kernel of
 * stride 2 5 % of its time), Relu and Clip in it, the others a call
 * (nnp_act_avx512_other).  Relu and Clip with the maskz forms: GCC 12's
 * plain ones warn of an undefined operand. */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"), always_inline)) static inline __m512
nnp_act_avx512 (__m512 v, NnpActivation act, float alpha, float beta)
{
  switch (act) {
    case NNP_ACT_NONE: return v;
    case NNP_ACT_RELU: return _mm512_maskz_max_ps ((__mmask16) -1, v, _mm512_setzero_ps ());
    case NNP_ACT_CLIP:
      return _mm512_maskz_min_ps ((__mmask16) -1,
                                  _mm512_maskz_max_ps ((__mmask16) -1, v, _mm512_set1_ps (alpha)),
                                  _mm512_set1_ps (beta));
    default: return nnp_act_avx512_other (v, act, alpha, beta);
  }
}

#else

static inline gboolean
nnp_cpu_avx2_ok (void)
{
  return FALSE;
}

#endif
