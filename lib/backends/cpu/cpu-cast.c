/* libnnpipe: CPU kernel for Cast between every dtype of NnpDType (float16
 * and bfloat16 through nnp_f16_to_f32() and friends, lib/half.c).  Float-like
 * sources go through double, integer-like ones through int64, in chunks that
 * stay in L1; 16-bit floats to and from float32 convert directly. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-elementwise.h"
#include "tensor-private.h"

#include <string.h>

/* ---------------------------------------------------------------- Cast */

#define CAST_CHUNK 256

/* Float-like sources go through double, integer-like ones through int64
 * (uint64 kept as its bits, flagged). */
static gboolean
cast_src_is_float (NnpDType t)
{
  return t == NNP_DTYPE_FLOAT32 || t == NNP_DTYPE_FLOAT64 || nnp_dtype_is_half (t);
}

/* 16-bit floats <-> float32 without the double: TRUE when done. */
static gboolean
cast_half_direct (const void *src, NnpDType from, void *dst, NnpDType to, gsize n)
{
  if (to == NNP_DTYPE_FLOAT32 && from == NNP_DTYPE_FLOAT16)
    nnp_f16_to_f32 (src, dst, n);
  else if (to == NNP_DTYPE_FLOAT32 && from == NNP_DTYPE_BFLOAT16)
    nnp_bf16_to_f32 (src, dst, n);
  else if (from == NNP_DTYPE_FLOAT32 && to == NNP_DTYPE_FLOAT16)
    nnp_f32_to_f16 (src, dst, n);
  else if (from == NNP_DTYPE_FLOAT32 && to == NNP_DTYPE_BFLOAT16)
    nnp_f32_to_bf16 (src, dst, n);
  else
    return FALSE;
  return TRUE;
}

/* float32 values of a chunk to 16-bit floats */
static void
store_half (void *dst, NnpDType t, gsize n, const float *f)
{
  if (t == NNP_DTYPE_FLOAT16)
    nnp_f32_to_f16 (f, dst, n);
  else
    nnp_f32_to_bf16 (f, dst, n);
}

static void
cast_load_f (const void *src, NnpDType t, gsize n, double *d)
{
  switch (t) {
    case NNP_DTYPE_FLOAT32:
      for (gsize i = 0; i < n; i++)
        d[i] = ((const float *) src)[i];
      break;
    case NNP_DTYPE_FLOAT64: memcpy (d, src, n * sizeof (double)); break;
    default: {
      float f[CAST_CHUNK];
      if (t == NNP_DTYPE_FLOAT16)
        nnp_f16_to_f32 (src, f, n);
      else
        nnp_bf16_to_f32 (src, f, n);
      for (gsize i = 0; i < n; i++)
        d[i] = f[i];
      break;
    }
  }
}

static void
cast_load_i (const void *src, NnpDType t, gsize n, gint64 *v)
{
  switch (t) {
#define LOAD_I(sfx, T, UT, K, DT, LO, HI) \
  case DT: \
    for (gsize i = 0; i < n; i++) \
      v[i] = (gint64) ((const T *) src)[i]; \
    break;
    NUMERIC_TYPES (LOAD_I)
#undef LOAD_I
    case NNP_DTYPE_BOOL:
      for (gsize i = 0; i < n; i++)
        v[i] = ((const guint8 *) src)[i] != 0;
      break;
    default: break;
  }
}

/* double to an integer type: truncation toward zero; NaN gives 0, values
 * outside int64 saturate (uint64 above 2^63 kept exact) */
static gint64
double_to_i64 (double d)
{
  if (!(d == d))
    return 0;
  if (d >= 9223372036854775808.0) {
    if (d < 18446744073709551616.0)
      return (gint64) (guint64) d;
    return G_MAXINT64;
  }
  if (d < -9223372036854775808.0)
    return G_MININT64;
  return (gint64) d;
}

static void
cast_store_f (void *dst, NnpDType t, gsize n, const double *d)
{
  switch (t) {
    case NNP_DTYPE_FLOAT32:
      for (gsize i = 0; i < n; i++)
        ((float *) dst)[i] = (float) d[i];
      break;
    case NNP_DTYPE_FLOAT64: memcpy (dst, d, n * sizeof (double)); break;
    case NNP_DTYPE_FLOAT16:
    case NNP_DTYPE_BFLOAT16: {
      /* float64 sources: rounded to float32 first (ONNX Runtime does the same) */
      float f[CAST_CHUNK];
      for (gsize i = 0; i < n; i++)
        f[i] = (float) d[i];
      store_half (dst, t, n, f);
      break;
    }
    case NNP_DTYPE_BOOL:
      for (gsize i = 0; i < n; i++)
        ((guint8 *) dst)[i] = d[i] != 0;
      break;
#define STORE_FI(sfx, T, UT, K, DT, LO, HI) \
  case DT: \
    for (gsize i = 0; i < n; i++) \
      ((T *) dst)[i] = (T) double_to_i64 (d[i]); \
    break;
      INT_TYPES (STORE_FI)
#undef STORE_FI
    default: break;
  }
}

static void
cast_store_i (void *dst, NnpDType t, gsize n, const gint64 *v, gboolean src_u64)
{
  switch (t) {
    case NNP_DTYPE_FLOAT32:
      for (gsize i = 0; i < n; i++)
        ((float *) dst)[i] = src_u64 ? (float) (guint64) v[i] : (float) v[i];
      break;
    case NNP_DTYPE_FLOAT64:
      for (gsize i = 0; i < n; i++)
        ((double *) dst)[i] = src_u64 ? (double) (guint64) v[i] : (double) v[i];
      break;
    case NNP_DTYPE_FLOAT16:
    case NNP_DTYPE_BFLOAT16: {
      float f[CAST_CHUNK];
      for (gsize i = 0; i < n; i++)
        f[i] = src_u64 ? (float) (guint64) v[i] : (float) v[i];
      store_half (dst, t, n, f);
      break;
    }
    case NNP_DTYPE_BOOL:
      for (gsize i = 0; i < n; i++)
        ((guint8 *) dst)[i] = v[i] != 0;
      break;
#define STORE_II(sfx, T, UT, K, DT, LO, HI) \
  case DT: \
    for (gsize i = 0; i < n; i++) \
      ((T *) dst)[i] = (T) v[i]; \
    break;
      INT_TYPES (STORE_II)
#undef STORE_II
    default: break;
  }
}

typedef struct {
  const guint8 *in;
  guint8 *out;
  NnpDType from, to;
  gsize in_esize, out_esize, numel;
} CastJob;

static void
cast_work (gpointer data, gsize begin, gsize end, int thread)
{
  const CastJob *job = data;
  gsize stop = MIN (end * BLOCK_ELEMS, job->numel);

  (void) thread;
  for (gsize s = begin * BLOCK_ELEMS; s < stop; s += CAST_CHUNK) {
    gsize n = MIN ((gsize) CAST_CHUNK, stop - s);
    const guint8 *src = job->in + s * job->in_esize;
    guint8 *dst = job->out + s * job->out_esize;
    if (cast_half_direct (src, job->from, dst, job->to, n))
      continue;
    if (cast_src_is_float (job->from)) {
      double tmp[CAST_CHUNK];
      cast_load_f (src, job->from, n, tmp);
      cast_store_f (dst, job->to, n, tmp);
    } else {
      gint64 tmp[CAST_CHUNK];
      cast_load_i (src, job->from, n, tmp);
      cast_store_i (dst, job->to, n, tmp, job->from == NNP_DTYPE_UINT64);
    }
  }
}

static gboolean
cast_run (const NnpCpuCall *call, GError **error)
{
  const NnpTensor *x = call->inputs[0];
  NnpTensor *out = call->outputs[0];
  CastJob job;

  g_return_val_if_fail (x != NULL && out != NULL, FALSE);
  job.in = x->data;
  job.out = out->data;
  job.from = x->dtype;
  job.to = out->dtype;
  job.in_esize = nnp_dtype_size (x->dtype);
  job.out_esize = nnp_dtype_size (out->dtype);
  job.numel = (gsize) nnp_tensor_numel (x);
  if (job.from == job.to) {
    if (out->data != x->data)
      memcpy (out->data, x->data, x->nbytes);
    return TRUE;
  }
  nnp_cpu_run_items (call->pool, (job.numel + BLOCK_ELEMS - 1) / BLOCK_ELEMS, BLOCK_ELEMS,
                     cast_work, &job);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_cast = { .run = cast_run };
