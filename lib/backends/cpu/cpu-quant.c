/* libnnpipe: CPU kernels of QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear.
 *
 * Rounding and saturation as ONNX specifies them (and ONNX Runtime computes
 * them): q = saturate (round_half_even (x / scale) + zero_point), the
 * division in float32; a NaN quantises to the zero point.  Dequantisation:
 * (q - zero_point) * scale in float32.  DynamicQuantizeLinear: min and max
 * of x widened to include 0, scale = (max - min) / 255 (1 when max == min, as
 * ONNX Runtime), zero_point = saturate (round_half_even (-min / scale)). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-elementwise.h"
#include "ops/quant-params.h"

#include <math.h>
#include <string.h>

#define QCHUNK 16384 /* elements per work item */

/* Saturating round-half-even of v + zp into [lo, hi] (NaN -> zp). */
static inline int32_t
quant_one (float v, int32_t zp, int32_t lo, int32_t hi)
{
  float r;

  if (isnan (v))
    return CLAMP (zp, lo, hi);
  r = nearbyintf (v);
  /* clamp in float first: no overflow in the conversion */
  r = CLAMP (r, (float) lo - (float) zp, (float) hi - (float) zp);
  return CLAMP ((int32_t) r + zp, lo, hi);
}

static void
qrange (NnpDType t, int32_t *lo, int32_t *hi)
{
  switch (t) {
    case NNP_DTYPE_INT8: *lo = G_MININT8, *hi = G_MAXINT8; break;
    case NNP_DTYPE_UINT16: *lo = 0, *hi = G_MAXUINT16; break;
    case NNP_DTYPE_INT16: *lo = G_MININT16, *hi = G_MAXINT16; break;
    default: *lo = 0, *hi = G_MAXUINT8; break;
  }
}

static inline int32_t
load_int (const void *p, NnpDType t, gsize i)
{
  switch (t) {
    case NNP_DTYPE_UINT8: return ((const guint8 *) p)[i];
    case NNP_DTYPE_INT8: return ((const gint8 *) p)[i];
    case NNP_DTYPE_UINT16: return ((const guint16 *) p)[i];
    case NNP_DTYPE_INT16: return ((const gint16 *) p)[i];
    default: return ((const gint32 *) p)[i];
  }
}

static inline void
store_int (void *p, NnpDType t, gsize i, int32_t v)
{
  switch (t) {
    case NNP_DTYPE_UINT8: ((guint8 *) p)[i] = (guint8) v; break;
    case NNP_DTYPE_INT8: ((gint8 *) p)[i] = (gint8) v; break;
    case NNP_DTYPE_UINT16: ((guint16 *) p)[i] = (guint16) v; break;
    default: ((gint16 *) p)[i] = (gint16) v; break;
  }
}

/* ---------------------------------------------------------------- per-tensor float -> 8 bit */

#if defined(__x86_64__) || defined(__i386__)
/* n floats to uint8 / int8 with one scale and zero point (AVX2). */
__attribute__ ((target ("avx2,fma"))) static gsize
quant8_avx2 (const float *x, void *y, gsize n, float scale, int32_t zp, int32_t lo, int32_t hi)
{
  const __m256 vs = _mm256_set1_ps (scale);
  const __m256 vlo = _mm256_set1_ps ((float) (lo - zp)), vhi = _mm256_set1_ps ((float) (hi - zp));
  const __m256i vzp = _mm256_set1_epi32 (zp);
  gboolean is_signed = lo < 0;
  gsize i = 0;

  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int j = 0; j < 4; j++) {
      __m256 v = _mm256_div_ps (_mm256_loadu_ps (x + i + 8 * j), vs);
      /* NaN: max/min with a NaN first operand give the second: clamp to 0 first */
      v = _mm256_and_ps (v, _mm256_cmp_ps (v, v, _CMP_ORD_Q));
      v = _mm256_round_ps (v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm256_min_ps (_mm256_max_ps (v, vlo), vhi);
      q[j] = _mm256_add_epi32 (_mm256_cvtps_epi32 (v), vzp);
    }
    {
      /* values are in range: the packs do not saturate; fix the lane order */
      __m256i a = _mm256_packs_epi32 (q[0], q[1]), b = _mm256_packs_epi32 (q[2], q[3]);
      __m256i c = is_signed ? _mm256_packs_epi16 (a, b) : _mm256_packus_epi16 (a, b);
      c = _mm256_permutevar8x32_epi32 (c, _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256 ((__m256i *) ((guint8 *) y + i), c);
    }
  }
  return i;
}
#endif

static void
quant_per_tensor (const float *x, void *y, NnpDType yt, gsize n, float scale, int32_t zp)
{
  int32_t lo, hi;
  gsize i = 0;

  qrange (yt, &lo, &hi);
#if defined(__x86_64__) || defined(__i386__)
  if ((yt == NNP_DTYPE_UINT8 || yt == NNP_DTYPE_INT8) && nnp_cpu_avx2_ok ())
    i = quant8_avx2 (x, y, n, scale, zp, lo, hi);
#endif
  for (; i < n; i++)
    store_int (y, yt, i, quant_one (x[i] / scale, zp, lo, hi));
}

/* ---------------------------------------------------------------- QuantizeLinear */

typedef struct {
  const NnpQuantLinearParams *p;
  const void *x;
  const float *scale;
  const void *zp;
  void *y;
} QJob;

static inline gsize
scale_index (const NnpQuantLinearParams *p, int64_t o, int64_t a, int64_t i)
{
  return (gsize) (o * p->scale_os + (a / p->block) * p->scale_as + i * p->scale_is);
}

/* items: (o, a) rows of `inner` elements */
static void
quantize_rows (gpointer data, gsize begin, gsize end, int thread)
{
  const QJob *j = data;
  const NnpQuantLinearParams *p = j->p;
  int32_t lo, hi;

  (void) thread;
  qrange (p->y_dtype, &lo, &hi);
  for (gsize r = begin; r < end; r++) {
    int64_t o = (int64_t) r / p->axis_dim, a = (int64_t) r % p->axis_dim;
    gsize base = r * (gsize) p->inner;
    for (int64_t i = 0; i < p->inner; i++) {
      gsize si = scale_index (p, o, a, i), e = base + (gsize) i;
      int32_t zp = j->zp ? load_int (j->zp, p->y_dtype, si) : 0;
      float v = p->x_dtype == NNP_DTYPE_FLOAT32 ? ((const float *) j->x)[e]
                                                : (float) ((const gint32 *) j->x)[e];
      store_int (j->y, p->y_dtype, e, quant_one (v / j->scale[si], zp, lo, hi));
    }
  }
}

/* per tensor, float input: flat chunks */
static void
quantize_chunks (gpointer data, gsize begin, gsize end, int thread)
{
  const QJob *j = data;
  gsize n = (gsize) j->p->outer, esize = nnp_dtype_size (j->p->y_dtype);
  int32_t zp = j->zp ? load_int (j->zp, j->p->y_dtype, 0) : 0;

  (void) thread;
  for (gsize c = begin; c < end; c++) {
    gsize i0 = c * QCHUNK, len = MIN ((gsize) QCHUNK, n - i0);
    quant_per_tensor ((const float *) j->x + i0, (guint8 *) j->y + i0 * esize, j->p->y_dtype, len,
                      j->scale[0], zp);
  }
}

static gboolean
quantize_linear_run (const NnpCpuCall *call, GError **error)
{
  const NnpQuantLinearParams *p = call->node->params;
  QJob j = { p, call->inputs[0]->data, call->inputs[1]->data,
             call->node->n_inputs > 2 && call->inputs[2] ? call->inputs[2]->data : NULL,
             call->outputs[0]->data };

  (void) error;
  g_return_val_if_fail (p != NULL, FALSE);
  if (p->axis_dim == 1 && p->inner == 1 && p->scale_os == 0 && p->x_dtype == NNP_DTYPE_FLOAT32)
    nnp_cpu_run_items (call->pool, ((gsize) p->outer + QCHUNK - 1) / QCHUNK, QCHUNK,
                       quantize_chunks, &j);
  else
    nnp_cpu_run_items (call->pool, (gsize) (p->outer * p->axis_dim), (gsize) p->inner,
                       quantize_rows, &j);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_quantize_linear = { .run = quantize_linear_run };

/* ---------------------------------------------------------------- DequantizeLinear */

static void
dequantize_rows (gpointer data, gsize begin, gsize end, int thread)
{
  const QJob *j = data;
  const NnpQuantLinearParams *p = j->p;
  float *y = j->y;

  (void) thread;
  for (gsize r = begin; r < end; r++) {
    int64_t o = (int64_t) r / p->axis_dim, a = (int64_t) r % p->axis_dim;
    gsize base = r * (gsize) p->inner;
    for (int64_t i = 0; i < p->inner; i++) {
      gsize si = scale_index (p, o, a, i), e = base + (gsize) i;
      int32_t zp = j->zp ? load_int (j->zp, p->x_dtype, si) : 0;
      /* the difference in int64: exact for int32 inputs too */
      y[e] = (float) ((int64_t) load_int (j->x, p->x_dtype, e) - zp) * j->scale[si];
    }
  }
}

/* per tensor: flat chunks */
static void
dequantize_chunks (gpointer data, gsize begin, gsize end, int thread)
{
  const QJob *j = data;
  const NnpQuantLinearParams *p = j->p;
  gsize n = (gsize) p->outer;
  int32_t zp = j->zp ? load_int (j->zp, p->x_dtype, 0) : 0;
  float s = j->scale[0], *y = j->y;

  (void) thread;
  for (gsize c = begin; c < end; c++) {
    gsize i0 = c * QCHUNK, i1 = MIN (i0 + QCHUNK, n);
    if (p->x_dtype == NNP_DTYPE_UINT8) {
      const guint8 *x = j->x;
      for (gsize i = i0; i < i1; i++)
        y[i] = (float) (x[i] - zp) * s;
    } else if (p->x_dtype == NNP_DTYPE_INT8) {
      const gint8 *x = j->x;
      for (gsize i = i0; i < i1; i++)
        y[i] = (float) (x[i] - zp) * s;
    } else {
      for (gsize i = i0; i < i1; i++)
        y[i] = (float) ((int64_t) load_int (j->x, p->x_dtype, i) - zp) * s;
    }
  }
}

static gboolean
dequantize_linear_run (const NnpCpuCall *call, GError **error)
{
  const NnpQuantLinearParams *p = call->node->params;
  QJob j = { p, call->inputs[0]->data, call->inputs[1]->data,
             call->node->n_inputs > 2 && call->inputs[2] ? call->inputs[2]->data : NULL,
             call->outputs[0]->data };

  (void) error;
  g_return_val_if_fail (p != NULL, FALSE);
  if (p->axis_dim == 1 && p->inner == 1 && p->scale_os == 0)
    nnp_cpu_run_items (call->pool, ((gsize) p->outer + QCHUNK - 1) / QCHUNK, QCHUNK,
                       dequantize_chunks, &j);
  else
    nnp_cpu_run_items (call->pool, (gsize) (p->outer * p->axis_dim), (gsize) p->inner,
                       dequantize_rows, &j);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_dequantize_linear = { .run = dequantize_linear_run };

/* ---------------------------------------------------------------- DynamicQuantizeLinear */

#define DQL_MAX_PARTS 64

typedef struct {
  const float *x;
  gsize n, n_parts;
  float mins[DQL_MAX_PARTS], maxs[DQL_MAX_PARTS];
  guint8 *y;
  float scale;
  int32_t zp;
} DqlJob;

#if defined(__x86_64__) || defined(__i386__)
__attribute__ ((target ("avx2,fma"))) static gsize
minmax_avx2 (const float *x, gsize n, float *mn, float *mx)
{
  __m256 vmin = _mm256_set1_ps (*mn), vmax = _mm256_set1_ps (*mx);
  gsize i = 0;

  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps (x + i);
    vmin = _mm256_min_ps (v, vmin); /* NaN in v: keeps vmin */
    vmax = _mm256_max_ps (v, vmax);
  }
  *mx = nnp_hmax_avx2 (vmax);
  *mn = -nnp_hmax_avx2 (_mm256_sub_ps (_mm256_setzero_ps (), vmin));
  return i;
}
#endif

static void
dql_minmax (gpointer data, gsize begin, gsize end, int thread)
{
  DqlJob *j = data;

  (void) thread;
  for (gsize part = begin; part < end; part++) {
    gsize i0 = j->n * part / j->n_parts, i1 = j->n * (part + 1) / j->n_parts, i = i0;
    float mn = 0.f, mx = 0.f; /* the range always includes 0 */
#if defined(__x86_64__) || defined(__i386__)
    if (nnp_cpu_avx2_ok ())
      i += minmax_avx2 (j->x + i0, i1 - i0, &mn, &mx);
#endif
    for (; i < i1; i++) {
      mn = j->x[i] < mn ? j->x[i] : mn;
      mx = j->x[i] > mx ? j->x[i] : mx;
    }
    j->mins[part] = mn;
    j->maxs[part] = mx;
  }
}

static void
dql_quantize (gpointer data, gsize begin, gsize end, int thread)
{
  DqlJob *j = data;

  (void) thread;
  for (gsize c = begin; c < end; c++) {
    gsize i0 = c * QCHUNK, len = MIN ((gsize) QCHUNK, j->n - i0);
    quant_per_tensor (j->x + i0, j->y + i0, NNP_DTYPE_UINT8, len, j->scale, j->zp);
  }
}

static gboolean
dynamic_quantize_linear_run (const NnpCpuCall *call, GError **error)
{
  DqlJob j;
  float mn = 0.f, mx = 0.f;

  (void) error;
  memset (&j, 0, sizeof (j));
  j.x = call->inputs[0]->data;
  j.n = (gsize) nnp_tensor_numel (call->inputs[0]);
  j.n_parts = CLAMP (j.n / QCHUNK, 1, DQL_MAX_PARTS);
  nnp_cpu_run_items (call->pool, j.n_parts, MAX (j.n / j.n_parts, 1), dql_minmax, &j);
  for (gsize p = 0; p < j.n_parts; p++) {
    mn = MIN (mn, j.mins[p]);
    mx = MAX (mx, j.maxs[p]);
  }
  j.scale = mx == mn ? 1.f : (mx - mn) / 255.f;
  j.zp = quant_one ((0.f - mn) / j.scale, 0, 0, 255);
  if (!isfinite (j.scale)) /* an infinite input: no meaningful scale */
    j.scale = 1.f, j.zp = 0;
  if (call->outputs[0]) {
    j.y = call->outputs[0]->data;
    nnp_cpu_run_items (call->pool, (j.n + QCHUNK - 1) / QCHUNK, QCHUNK, dql_quantize, &j);
  }
  if (call->node->n_outputs > 1 && call->outputs[1])
    *(float *) call->outputs[1]->data = j.scale;
  if (call->node->n_outputs > 2 && call->outputs[2])
    *(guint8 *) call->outputs[2]->data = (guint8) j.zp;
  return TRUE;
}

const NnpCpuKernel nnp_cpu_dynamic_quantize_linear = { .run = dynamic_quantize_linear_run };
