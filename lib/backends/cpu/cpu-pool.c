/* CPU kernels: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
 *
 * Params (NnpPoolParams, lib/ops/nn-params.h) always describe a 3-D pool
 * (1-D and 2-D ones have leading spatial dims of size 1); planes (n * c) are
 * split across threads. */
#include "backends/cpu/cpu.h"
#include "ops/nn-params.h"

#include <float.h>
#include <math.h>

/* Range [lo, hi) of window taps k (0 <= k < kernel) whose input position
 * start + k * dil lies in [0, in). */
static inline void
tap_range (int64_t start, int64_t kernel, int64_t dil, int64_t in, int64_t *lo, int64_t *hi)
{
  int64_t l = start < 0 ? (-start + dil - 1) / dil : 0;
  int64_t h = in - start <= 0 ? 0 : (in - start + dil - 1) / dil;

  *lo = l;
  *hi = MIN (h, kernel);
  if (*hi < *lo)
    *hi = *lo;
}

typedef struct {
  const NnpPoolParams *p;
  const void *x;
  void *y;
} PoolJob;

#define DEFINE_MAX_POOL(NAME, T, LOWEST)                                                   \
  static void                                                                              \
  NAME (gpointer data, gsize begin, gsize end, int thread)                                 \
  {                                                                                        \
    const PoolJob *job = data;                                                             \
    const NnpPoolParams *p = job->p;                                                       \
    const int64_t in_plane = p->in[0] * p->in[1] * p->in[2];                               \
    const int64_t out_plane = p->out[0] * p->out[1] * p->out[2];                           \
    for (gsize c = begin; c < end; c++) {                                                  \
      const T *x = (const T *) job->x + c * in_plane;                                      \
      T *y = (T *) job->y + c * out_plane;                                                 \
      for (int64_t od = 0; od < p->out[0]; od++) {                                         \
        int64_t d0 = od * p->stride[0] - p->pad_begin[0], dlo, dhi;                        \
        tap_range (d0, p->kernel[0], p->dilation[0], p->in[0], &dlo, &dhi);                \
        for (int64_t oh = 0; oh < p->out[1]; oh++) {                                       \
          int64_t h0 = oh * p->stride[1] - p->pad_begin[1], hlo, hhi;                      \
          tap_range (h0, p->kernel[1], p->dilation[1], p->in[1], &hlo, &hhi);              \
          for (int64_t ow = 0; ow < p->out[2]; ow++) {                                     \
            int64_t w0 = ow * p->stride[2] - p->pad_begin[2], wlo, whi;                    \
            T m = LOWEST;                                                                  \
            tap_range (w0, p->kernel[2], p->dilation[2], p->in[2], &wlo, &whi);            \
            for (int64_t kd = dlo; kd < dhi; kd++) {                                       \
              for (int64_t kh = hlo; kh < hhi; kh++) {                                     \
                const T *row = x + ((d0 + kd * p->dilation[0]) * p->in[1] +                \
                                    (h0 + kh * p->dilation[1])) * p->in[2] + w0;           \
                for (int64_t kw = wlo; kw < whi; kw++) {                                   \
                  T v = row[kw * p->dilation[2]];                                          \
                  m = v > m ? v : m;                                                       \
                }                                                                          \
              }                                                                            \
            }                                                                              \
            *y++ = m;                                                                      \
          }                                                                                \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }

DEFINE_MAX_POOL (max_pool_f32, float, -FLT_MAX)
DEFINE_MAX_POOL (max_pool_u8, guint8, 0)
DEFINE_MAX_POOL (max_pool_i8, gint8, G_MININT8)

static void
avg_pool_f32 (gpointer data, gsize begin, gsize end, int thread)
{
  const PoolJob *job = data;
  const NnpPoolParams *p = job->p;
  const int64_t in_plane = p->in[0] * p->in[1] * p->in[2];
  const int64_t out_plane = p->out[0] * p->out[1] * p->out[2];

  for (gsize c = begin; c < end; c++) {
    const float *x = (const float *) job->x + c * in_plane;
    float *y = (float *) job->y + c * out_plane;
    for (int64_t od = 0; od < p->out[0]; od++) {
      int64_t d0 = od * p->stride[0] - p->pad_begin[0], dlo, dhi, dpad_lo, dpad_hi;
      tap_range (d0, p->kernel[0], p->dilation[0], p->in[0], &dlo, &dhi);
      tap_range (d0 + p->pad_begin[0], p->kernel[0], p->dilation[0],
                 p->in[0] + p->pad_begin[0] + p->pad_end[0], &dpad_lo, &dpad_hi);
      for (int64_t oh = 0; oh < p->out[1]; oh++) {
        int64_t h0 = oh * p->stride[1] - p->pad_begin[1], hlo, hhi, hpad_lo, hpad_hi;
        tap_range (h0, p->kernel[1], p->dilation[1], p->in[1], &hlo, &hhi);
        tap_range (h0 + p->pad_begin[1], p->kernel[1], p->dilation[1],
                   p->in[1] + p->pad_begin[1] + p->pad_end[1], &hpad_lo, &hpad_hi);
        for (int64_t ow = 0; ow < p->out[2]; ow++) {
          int64_t w0 = ow * p->stride[2] - p->pad_begin[2], wlo, whi, count;
          float s = 0.f;
          tap_range (w0, p->kernel[2], p->dilation[2], p->in[2], &wlo, &whi);
          for (int64_t kd = dlo; kd < dhi; kd++) {
            for (int64_t kh = hlo; kh < hhi; kh++) {
              const float *row = x + ((d0 + kd * p->dilation[0]) * p->in[1] +
                                      (h0 + kh * p->dilation[1])) * p->in[2] + w0;
              for (int64_t kw = wlo; kw < whi; kw++)
                s += row[kw * p->dilation[2]];
            }
          }
          if (p->count_include_pad) {
            int64_t wpad_lo, wpad_hi;
            tap_range (w0 + p->pad_begin[2], p->kernel[2], p->dilation[2],
                       p->in[2] + p->pad_begin[2] + p->pad_end[2], &wpad_lo, &wpad_hi);
            count = (dpad_hi - dpad_lo) * (hpad_hi - hpad_lo) * (wpad_hi - wpad_lo);
          } else {
            count = (dhi - dlo) * (hhi - hlo) * (whi - wlo);
          }
          *y++ = count > 0 ? s / (float) count : 0.f;
        }
      }
    }
  }
}

static gboolean
pool_run (const NnpCpuCall *call, NnpParallelFunc fn)
{
  const NnpPoolParams *p = call->node->params;
  PoolJob job = { p, call->inputs[0]->data, call->outputs[0]->data };
  int64_t out_plane = p->out[0] * p->out[1] * p->out[2];

  nnp_parallel_for (call->pool, p->planes, MAX (1, 4096 / MAX (out_plane, 1)), fn, &job);
  return TRUE;
}

static gboolean
max_pool_run (const NnpCpuCall *call, GError **error)
{
  const NnpPoolParams *p = call->node->params;

  switch (p->dtype) {
    case NNP_DTYPE_FLOAT32:
      return pool_run (call, max_pool_f32);
    case NNP_DTYPE_UINT8:
      return pool_run (call, max_pool_u8);
    case NNP_DTYPE_INT8:
      return pool_run (call, max_pool_i8);
    default:
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "dtype %s",
                          nnp_dtype_name (p->dtype));
      return FALSE;
  }
}

static gboolean
average_pool_run (const NnpCpuCall *call, GError **error)
{
  return pool_run (call, avg_pool_f32);
}

/* ------------------------------------------------------------ global pools */

static void
global_avg_f32 (gpointer data, gsize begin, gsize end, int thread)
{
  const PoolJob *job = data;
  const int64_t n = job->p->in[2];
  const float inv = n > 0 ? 1.f / (float) n : 0.f;

  for (gsize c = begin; c < end; c++) {
    const float *x = (const float *) job->x + c * n;
    float acc[8] = { 0 };
    float s = 0.f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; j++)
        acc[j] += x[i + j];
    for (; i < n; i++)
      s += x[i];
    s += ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    ((float *) job->y)[c] = n > 0 ? s * inv : NAN;
  }
}

static void
global_max_f32 (gpointer data, gsize begin, gsize end, int thread)
{
  const PoolJob *job = data;
  const int64_t n = job->p->in[2];

  for (gsize c = begin; c < end; c++) {
    const float *x = (const float *) job->x + c * n;
    float acc[8] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                     -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    float m = -INFINITY;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; j++)
        acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (; i < n; i++)
      m = x[i] > m ? x[i] : m;
    for (int j = 0; j < 8; j++)
      m = acc[j] > m ? acc[j] : m;
    ((float *) job->y)[c] = m;
  }
}

static gboolean
global_pool_run (const NnpCpuCall *call, NnpParallelFunc fn)
{
  const NnpPoolParams *p = call->node->params;
  PoolJob job = { p, call->inputs[0]->data, call->outputs[0]->data };

  nnp_parallel_for (call->pool, p->planes, MAX (1, 16384 / MAX (p->in[2], 1)), fn, &job);
  return TRUE;
}

static gboolean
global_average_pool_run (const NnpCpuCall *call, GError **error)
{
  return global_pool_run (call, global_avg_f32);
}

static gboolean
global_max_pool_run (const NnpCpuCall *call, GError **error)
{
  return global_pool_run (call, global_max_f32);
}

const NnpCpuKernel nnp_cpu_max_pool = { .run = max_pool_run };
const NnpCpuKernel nnp_cpu_average_pool = { .run = average_pool_run };
const NnpCpuKernel nnp_cpu_global_average_pool = { .run = global_average_pool_run };
const NnpCpuKernel nnp_cpu_global_max_pool = { .run = global_max_pool_run };
