/* CPU kernels: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
 *
 * Params (NnpPoolParams, lib/ops/nn-params.h) always describe a 3-D pool
 * (1-D and 2-D ones have leading spatial dims of size 1); planes (n * c) are
 * split across threads. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
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

#define DEFINE_MAX_POOL(NAME, T, LOWEST) \
  static void NAME (gpointer data, gsize begin, gsize end, int thread) \
  { \
    const PoolJob *job = data; \
    const NnpPoolParams *p = job->p; \
    const int64_t in_plane = p->in[0] * p->in[1] * p->in[2]; \
    const int64_t out_plane = p->out[0] * p->out[1] * p->out[2]; \
    for (gsize c = begin; c < end; c++) { \
      const T *x = (const T *) job->x + c * in_plane; \
      T *y = (T *) job->y + c * out_plane; \
      for (int64_t od = 0; od < p->out[0]; od++) { \
        int64_t d0 = od * p->stride[0] - p->pad_begin[0], dlo, dhi; \
        tap_range (d0, p->kernel[0], p->dilation[0], p->in[0], &dlo, &dhi); \
        for (int64_t oh = 0; oh < p->out[1]; oh++) { \
          int64_t h0 = oh * p->stride[1] - p->pad_begin[1], hlo, hhi; \
          tap_range (h0, p->kernel[1], p->dilation[1], p->in[1], &hlo, &hhi); \
          for (int64_t ow = 0; ow < p->out[2]; ow++) { \
            int64_t w0 = ow * p->stride[2] - p->pad_begin[2], wlo, whi; \
            T m = LOWEST; \
            tap_range (w0, p->kernel[2], p->dilation[2], p->in[2], &wlo, &whi); \
            for (int64_t kd = dlo; kd < dhi; kd++) { \
              for (int64_t kh = hlo; kh < hhi; kh++) { \
                const T *row = \
                    x \
                    + ((d0 + kd * p->dilation[0]) * p->in[1] + (h0 + kh * p->dilation[1])) \
                          * p->in[2] \
                    + w0; \
                for (int64_t kw = wlo; kw < whi; kw++) { \
                  T v = row[kw * p->dilation[2]]; \
                  m = v > m ? v : m; \
                } \
              } \
            } \
            *y++ = m; \
          } \
        } \
      } \
    } \
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
              const float *row =
                  x
                  + ((d0 + kd * p->dilation[0]) * p->in[1] + (h0 + kh * p->dilation[1])) * p->in[2]
                  + w0;
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

/* ------------------------------------------------- 2-D float fast path */

/* 2-D float pools without dilation (the usual case): per output row, the
 * columns whose window lies entirely inside the input are computed tap by
 * tap into the output row (kh outer, kw inner: the same order, hence the
 * same sums, as the generic loops above), with no per-output range
 * computation; the few border columns go through the generic loops.  */
static gboolean
pool_is_plain_2d (const NnpPoolParams *p)
{
  return p->dtype == NNP_DTYPE_FLOAT32 && p->in[0] == 1 && p->out[0] == 1 && p->kernel[0] == 1
         && p->pad_begin[0] == 0 && p->dilation[1] == 1 && p->dilation[2] == 1 && p->stride[2] > 0
         && p->out[2] > 0;
}

/* Output columns [lo, hi) whose window [ow * s - pad, + k) is inside [0, in). */
static void
interior_cols (const NnpPoolParams *p, int64_t *lo, int64_t *hi)
{
  const int64_t s = p->stride[2], pad = p->pad_begin[2], k = p->kernel[2];
  int64_t l = (pad + s - 1) / s, h;

  h = p->in[2] + pad - k < 0 ? 0 : (p->in[2] + pad - k) / s + 1;
  h = MIN (h, p->out[2]);
  l = MIN (l, h);
  *lo = l;
  *hi = h;
}

#if defined(__x86_64__) || defined(__i386__)
/* Interior columns [ow_lo, ow_hi) of one output row of a pool with stride
 * 2 along W and a kernel kw_n wide (the models' 2x2, 3x2 and ResNet's 3x3
 * pools), 8 outputs at a time; returns the first column left to the scalar
 * loop.  Same order of operations as the scalar loops: per input row, the
 * taps from left to right.  A step loads 16 floats from each tap's first
 * column: only steps whose last load stays inside the row are taken. */
__attribute__ ((target ("avx2,fma"))) static int64_t
pool_s2_avx2 (float *yr, const float *x, int64_t in_w, int64_t h0, int64_t hlo, int64_t hhi,
              int64_t pad_w, int64_t kw_n, int64_t ow_lo, int64_t ow_hi, gboolean is_max,
              int64_t count)
{
  const __m256 init = is_max ? _mm256_set1_ps (-FLT_MAX) : _mm256_setzero_ps ();
  const __m256 fc = _mm256_set1_ps ((float) MAX (count, 1));
  int64_t ow = ow_lo;

  if (is_max && kw_n == 2 && hhi - hlo == 2) {
    /* 2x2 max (U-Net's, YOLO's, BlazeFace's): the two rows' maximum first,
     * then the even and odd columns' (4 loads and one lane permute per 8
     * outputs instead of 8 and 4) */
    const float *r0 = x + (h0 + hlo) * in_w - pad_w, *r1 = r0 + in_w;
    for (; ow + 8 <= ow_hi && 2 * ow - pad_w + 1 + 16 <= in_w; ow += 8) {
      __m256 a = _mm256_max_ps (_mm256_loadu_ps (r0 + 2 * ow), _mm256_loadu_ps (r1 + 2 * ow));
      __m256 b =
          _mm256_max_ps (_mm256_loadu_ps (r0 + 2 * ow + 8), _mm256_loadu_ps (r1 + 2 * ow + 8));
      __m256 m = _mm256_max_ps (_mm256_shuffle_ps (a, b, _MM_SHUFFLE (2, 0, 2, 0)),
                                _mm256_shuffle_ps (a, b, _MM_SHUFFLE (3, 1, 3, 1)));
      _mm256_storeu_ps (yr + ow,
                        _mm256_castpd_ps (_mm256_permute4x64_pd (_mm256_castps_pd (m), 0xD8)));
    }
    return ow;
  }
  for (; ow + 8 <= ow_hi && 2 * ow - pad_w + kw_n - 1 + 16 <= in_w; ow += 8) {
    __m256 acc = init;
    for (int64_t kh = hlo; kh < hhi; kh++) {
      const float *src = x + (h0 + kh) * in_w - pad_w + 2 * ow;
      for (int64_t kw = 0; kw < kw_n; kw++) {
        __m256 a = _mm256_loadu_ps (src + kw), b = _mm256_loadu_ps (src + kw + 8);
        /* the even columns, back in order across the two 128-bit lanes */
        __m256 ev = _mm256_castpd_ps (_mm256_permute4x64_pd (
            _mm256_castps_pd (_mm256_shuffle_ps (a, b, _MM_SHUFFLE (2, 0, 2, 0))), 0xD8));
        acc = is_max ? _mm256_max_ps (ev, acc) : _mm256_add_ps (acc, ev);
      }
    }
    if (!is_max)
      acc = count > 0 ? _mm256_div_ps (acc, fc) : _mm256_setzero_ps ();
    _mm256_storeu_ps (yr + ow, acc);
  }
  return ow;
}
#endif

static void
pool2d_f32 (const PoolJob *job, gsize begin, gsize end, gboolean is_max)
{
  const NnpPoolParams *p = job->p;
  const int64_t in_h = p->in[1], in_w = p->in[2], out_h = p->out[1], out_w = p->out[2];
  const int64_t kh_n = p->kernel[1], kw_n = p->kernel[2], sh = p->stride[1], sw = p->stride[2];
  int64_t ow_lo, ow_hi, ow_mid;
#if defined(__x86_64__) || defined(__i386__)
  const gboolean avx2 = nnp_cpu_avx2_ok ();
#endif

  interior_cols (p, &ow_lo, &ow_hi);
  for (gsize c = begin; c < end; c++) {
    const float *x = (const float *) job->x + c * in_h * in_w;
    float *y = (float *) job->y + c * out_h * out_w;
    for (int64_t oh = 0; oh < out_h; oh++) {
      const int64_t h0 = oh * sh - p->pad_begin[1];
      int64_t hlo, hhi, hpad_lo, hpad_hi, count;
      float *restrict yr = y + oh * out_w;

      tap_range (h0, kh_n, 1, in_h, &hlo, &hhi);
      tap_range (h0 + p->pad_begin[1], kh_n, 1, in_h + p->pad_begin[1] + p->pad_end[1], &hpad_lo,
                 &hpad_hi);
      count = p->count_include_pad ? (hpad_hi - hpad_lo) * kw_n : (hhi - hlo) * kw_n;

      ow_mid = ow_lo;
#if defined(__x86_64__) || defined(__i386__)
      if (sw == 2 && kw_n <= 8 && avx2)
        ow_mid = pool_s2_avx2 (yr, x, in_w, h0, hlo, hhi, p->pad_begin[2], kw_n, ow_lo, ow_hi,
                               is_max, count);
#endif
      for (int64_t ow = ow_mid; ow < ow_hi; ow++)
        yr[ow] = is_max ? -FLT_MAX : 0.f;
      for (int64_t kh = hlo; kh < hhi; kh++) {
        const float *row = x + (h0 + kh) * in_w - p->pad_begin[2];
        for (int64_t kw = 0; kw < kw_n; kw++) {
          const float *restrict src = row + kw;
          if (is_max && sw == 1) {
            for (int64_t ow = ow_mid; ow < ow_hi; ow++)
              yr[ow] = src[ow] > yr[ow] ? src[ow] : yr[ow];
          } else if (is_max) {
            for (int64_t ow = ow_mid; ow < ow_hi; ow++)
              yr[ow] = src[ow * sw] > yr[ow] ? src[ow * sw] : yr[ow];
          } else if (sw == 1) {
            for (int64_t ow = ow_mid; ow < ow_hi; ow++)
              yr[ow] += src[ow];
          } else {
            for (int64_t ow = ow_mid; ow < ow_hi; ow++)
              yr[ow] += src[ow * sw];
          }
        }
      }
      if (!is_max) {
        if (count > 0) {
          const float fc = (float) count;
          for (int64_t ow = ow_mid; ow < ow_hi; ow++)
            yr[ow] = yr[ow] / fc;
        } else {
          for (int64_t ow = ow_mid; ow < ow_hi; ow++)
            yr[ow] = 0.f;
        }
      }

      /* border columns, one output at a time */
      for (int64_t ow = 0; ow < out_w; ow++) {
        int64_t w0, wlo, whi, wpad_lo, wpad_hi;
        float m = -FLT_MAX, sum = 0.f;

        if (ow == ow_lo && ow_hi > ow_lo) {
          ow = ow_hi - 1;
          continue;
        }
        w0 = ow * sw - p->pad_begin[2];
        tap_range (w0, kw_n, 1, in_w, &wlo, &whi);
        for (int64_t kh = hlo; kh < hhi; kh++) {
          const float *row = x + (h0 + kh) * in_w + w0;
          for (int64_t kw = wlo; kw < whi; kw++) {
            float v = row[kw];
            m = v > m ? v : m;
            sum += v;
          }
        }
        if (is_max) {
          yr[ow] = m;
        } else {
          int64_t cnt;
          if (p->count_include_pad) {
            tap_range (w0 + p->pad_begin[2], kw_n, 1, in_w + p->pad_begin[2] + p->pad_end[2],
                       &wpad_lo, &wpad_hi);
            cnt = (hpad_hi - hpad_lo) * (wpad_hi - wpad_lo);
          } else {
            cnt = (hhi - hlo) * (whi - wlo);
          }
          yr[ow] = cnt > 0 ? sum / (float) cnt : 0.f;
        }
      }
    }
  }
}

static void
max_pool2d_f32 (gpointer data, gsize begin, gsize end, int thread)
{
  pool2d_f32 (data, begin, end, TRUE);
}

static void
avg_pool2d_f32 (gpointer data, gsize begin, gsize end, int thread)
{
  pool2d_f32 (data, begin, end, FALSE);
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
      return pool_run (call, pool_is_plain_2d (p) ? max_pool2d_f32 : max_pool_f32);
    case NNP_DTYPE_UINT8: return pool_run (call, max_pool_u8);
    case NNP_DTYPE_INT8: return pool_run (call, max_pool_i8);
    default:
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "dtype %s",
                          nnp_dtype_name (p->dtype));
      return FALSE;
  }
}

static gboolean
average_pool_run (const NnpCpuCall *call, GError **error)
{
  const NnpPoolParams *p = call->node->params;

  return pool_run (call, pool_is_plain_2d (p) ? avg_pool2d_f32 : avg_pool_f32);
}

/* ------------------------------------------------------------ global pools */

static inline void
global_avg_f32_t (const PoolJob *job, gsize begin, gsize end)
{
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

#if defined(__x86_64__) || defined(__i386__)
/* the same loop with 8-wide vectors (same lanes, same sums) */
__attribute__ ((target ("avx2"))) static void
global_avg_f32_avx2 (const PoolJob *job, gsize begin, gsize end)
{
  global_avg_f32_t (job, begin, end);
}
#endif

static void
global_avg_f32 (gpointer data, gsize begin, gsize end, int thread)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    global_avg_f32_avx2 (data, begin, end);
    return;
  }
#endif
  global_avg_f32_t (data, begin, end);
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
