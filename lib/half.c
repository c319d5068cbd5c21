/* libnnpipe: the 16-bit float types (float16, bfloat16) to and from float32.
 *
 * float32 -> 16 bits rounds to nearest, ties to even, as ONNX Runtime does;
 * the F16C instructions (vcvtph2ps / vcvtps2ph with round-to-nearest-even)
 * give the same bits as the scalar code and are used when the CPU has them. */
#include "tensor-private.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define NNP_HAVE_F16C_PATH 1
#endif

gboolean
nnp_dtype_is_half (NnpDType dtype)
{
  return dtype == NNP_DTYPE_FLOAT16 || dtype == NNP_DTYPE_BFLOAT16;
}

/* ---------------------------------------------------------------- scalar */

static inline float
f16_to_f32_one (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  float f;

  if (exp == 0) {
    /* zero or subnormal: mant * 2^-24, exact in float32 */
    f = (float) mant * (1.f / 16777216.f);
    return sign ? -f : f;
  }
  if (exp == 31) /* inf, or NaN made quiet (as F16C does) */
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0);
  else
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  memcpy (&f, &bits, sizeof (f));
  return f;
}

static inline guint16
f32_to_f16_one (float f)
{
  guint32 bits, sign, mant;
  int exp;

  memcpy (&bits, &f, sizeof (bits));
  sign = (bits >> 16) & 0x8000;
  exp = (int) ((bits >> 23) & 0xff);
  mant = bits & 0x7fffff;
  if (exp == 255) /* inf, or NaN made quiet with the top of its payload (as F16C does) */
    return (guint16) (sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  exp -= 127 - 15;
  if (exp >= 31) /* overflow */
    return (guint16) (sign | 0x7c00);
  if (exp <= 0) { /* a float16 subnormal or zero */
    guint32 m, shift, r, half;
    if (exp < -10)
      return (guint16) sign;
    m = mant | 0x800000;
    shift = (guint32) (14 - exp);
    r = m >> shift;
    half = 1u << (shift - 1);
    if ((m & (2 * half - 1)) > half || ((m & (2 * half - 1)) == half && (r & 1)))
      r++;
    return (guint16) (sign | r);
  }
  {
    guint32 h = sign | ((guint32) exp << 10) | (mant >> 13);
    guint32 rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
      h++; /* may carry into the exponent, up to inf: right */
    return (guint16) h;
  }
}

static inline float
bf16_to_f32_one (guint16 h)
{
  guint32 bits = (guint32) h << 16;
  float f;

  memcpy (&f, &bits, sizeof (f));
  return f;
}

static inline guint16
f32_to_bf16_one (float f)
{
  guint32 bits;

  memcpy (&bits, &f, sizeof (bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a quiet NaN */
    return (guint16) ((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1); /* nearest, ties to even; inf stays inf */
  return (guint16) (bits >> 16);
}

/* ---------------------------------------------------------------- F16C */

#ifdef NNP_HAVE_F16C_PATH
__attribute__ ((target ("avx,f16c"))) static gsize
f16_to_f32_f16c (const guint16 *src, float *dst, gsize n)
{
  gsize i = 0;

  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps (dst + i, _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) (src + i))));
  return i;
}

__attribute__ ((target ("avx,f16c"))) static gsize
f32_to_f16_f16c (const float *src, guint16 *dst, gsize n)
{
  gsize i = 0;

  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128 ((__m128i *) (dst + i),
                      _mm256_cvtps_ph (_mm256_loadu_ps (src + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

static gboolean
have_f16c (void)
{
  static gint cached = -1;
  int v = g_atomic_int_get (&cached);

  if (v < 0) {
    /* F16C: CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports()
     * does not know "f16c") */
    unsigned int a = 0, b = 0, c = 0, d = 0;
    gboolean f16c = __get_cpuid (1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;

    __builtin_cpu_init ();
    v = __builtin_cpu_supports ("avx") && f16c ? 1 : 0;
    g_atomic_int_set (&cached, v);
  }
  return v == 1;
}
#endif

/* ---------------------------------------------------------------- arrays */

void
nnp_f16_to_f32 (const guint16 *src, float *dst, gsize n)
{
  gsize i = 0;

#ifdef NNP_HAVE_F16C_PATH
  if (have_f16c ())
    i = f16_to_f32_f16c (src, dst, n);
#endif
  for (; i < n; i++)
    dst[i] = f16_to_f32_one (src[i]);
}

void
nnp_f32_to_f16 (const float *src, guint16 *dst, gsize n)
{
  gsize i = 0;

#ifdef NNP_HAVE_F16C_PATH
  if (have_f16c ())
    i = f32_to_f16_f16c (src, dst, n);
#endif
  for (; i < n; i++)
    dst[i] = f32_to_f16_one (src[i]);
}

void
nnp_bf16_to_f32 (const guint16 *src, float *dst, gsize n)
{
  for (gsize i = 0; i < n; i++)
    dst[i] = bf16_to_f32_one (src[i]);
}

void
nnp_f32_to_bf16 (const float *src, guint16 *dst, gsize n)
{
  for (gsize i = 0; i < n; i++)
    dst[i] = f32_to_bf16_one (src[i]);
}

void
nnp_half_to_f32 (NnpDType dtype, const guint16 *src, float *dst, gsize n)
{
  g_return_if_fail (nnp_dtype_is_half (dtype));
  if (dtype == NNP_DTYPE_FLOAT16)
    nnp_f16_to_f32 (src, dst, n);
  else
    nnp_bf16_to_f32 (src, dst, n);
}

void
nnp_f32_to_half (NnpDType dtype, const float *src, guint16 *dst, gsize n)
{
  g_return_if_fail (nnp_dtype_is_half (dtype));
  if (dtype == NNP_DTYPE_FLOAT16)
    nnp_f32_to_f16 (src, dst, n);
  else
    nnp_f32_to_bf16 (src, dst, n);
}
