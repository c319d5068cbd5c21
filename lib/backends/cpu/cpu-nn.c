/* CPU kernels: BatchNormalization (inference), Softmax, LogSoftmax, Pad.
 * Pools are in cpu-pool.c, Resize in cpu-resize.c, reductions and ArgMax in
 * cpu-reduce.c. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-gemm.h"
#include "ops/nn-params.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------ BatchNormalization */

typedef struct {
  const NnpBatchNormParams *p;
  const float *x, *scale, *bias, *mean, *var;
  float *y;
} BatchNormJob;

static void
batch_norm_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const BatchNormJob *job = data;
  const int64_t inner = job->p->inner, c_count = job->p->c;

  for (gsize plane = begin; plane < end; plane++) {
    int64_t c = (int64_t) plane % c_count;
    float a = job->scale[c] / sqrtf (job->var[c] + job->p->epsilon);
    float b = job->bias[c] - job->mean[c] * a;
    const float *x = job->x + (int64_t) plane * inner;
    float *y = job->y + (int64_t) plane * inner;
    for (int64_t i = 0; i < inner; i++)
      y[i] = x[i] * a + b;
  }
}

static gboolean
batch_normalization_run (const NnpCpuCall *call, GError **error)
{
  const NnpBatchNormParams *p = call->node->params;
  BatchNormJob job = { p,
                       call->inputs[0]->data,
                       call->inputs[1]->data,
                       call->inputs[2]->data,
                       call->inputs[3]->data,
                       call->inputs[4]->data,
                       call->outputs[0]->data };

  nnp_parallel_for (call->pool, p->n * p->c, MAX (1, 16384 / MAX (p->inner, 1)), batch_norm_worker,
                    &job);
  return TRUE;
}

/* ---------------------------------------------------- Softmax, LogSoftmax */

typedef struct {
  const NnpSoftmaxParams *p;
  const float *x;
  float *y;
  gboolean log;
} SoftmaxJob;

#define SOFTMAX_BLOCK 64

#if defined(__x86_64__) || defined(__i386__)
/* One contiguous row of n floats (n > 0), with the vector exp of cpu-act.h.
 * The tail goes through an 8-float buffer so every element sees the same
 * exp. */
__attribute__ ((target ("avx2,fma"))) static void
softmax_row_avx2 (const float *x, float *y, int64_t n, gboolean log)
{
  const int64_t n8 = n & ~(int64_t) 7;
  __m256 vm = _mm256_set1_ps (-INFINITY), vs = _mm256_setzero_ps ();
  float tail[8], m, s;
  int64_t d;

  for (d = 0; d < n8; d += 8)
    vm = _mm256_max_ps (vm, _mm256_loadu_ps (x + d));
  m = nnp_hmax_avx2 (vm);
  for (; d < n; d++)
    m = x[d] > m ? x[d] : m;
  vm = _mm256_set1_ps (m);

  if (log) {
    for (d = 0; d < n8; d += 8)
      vs = _mm256_add_ps (vs, nnp_exp_avx2 (_mm256_sub_ps (_mm256_loadu_ps (x + d), vm)));
  } else {
    for (d = 0; d < n8; d += 8) {
      __m256 e = nnp_exp_avx2 (_mm256_sub_ps (_mm256_loadu_ps (x + d), vm));
      _mm256_storeu_ps (y + d, e);
      vs = _mm256_add_ps (vs, e);
    }
  }
  s = nnp_hsum_avx2 (vs);
  if (n8 < n) {
    for (int i = 0; i < 8; i++)
      tail[i] = n8 + i < n ? x[n8 + i] - m : -INFINITY;
    _mm256_storeu_ps (tail, nnp_exp_avx2 (_mm256_loadu_ps (tail)));
    for (d = n8; d < n; d++) {
      s += tail[d - n8];
      if (!log)
        y[d] = tail[d - n8];
    }
  }

  if (log) {
    /* (x - m) - log s, as below: x - (m + log s) loses log s's low bits
     * next to a large m */
    const float ls = logf (s);
    const __m256 vl = _mm256_set1_ps (ls);
    for (d = 0; d < n8; d += 8)
      _mm256_storeu_ps (y + d, _mm256_sub_ps (_mm256_sub_ps (_mm256_loadu_ps (x + d), vm), vl));
    for (; d < n; d++)
      y[d] = (x[d] - m) - ls;
  } else {
    const float inv = 1.f / s;
    const __m256 vi = _mm256_set1_ps (inv);
    for (d = 0; d < n8; d += 8)
      _mm256_storeu_ps (y + d, _mm256_mul_ps (_mm256_loadu_ps (y + d), vi));
    for (; d < n; d++)
      y[d] *= inv;
  }
}

/* softmax_row_avx2() on 16 lanes: the row's last 1-16 floats a masked
 * vector (the lanes past the row -inf, their exp 0), the maximum in two
 * chains. */
__attribute__ ((target ("avx512f,avx512dq,avx2,fma"))) static void
softmax_row_avx512 (const float *x, float *y, int64_t n, gboolean log)
{
  const int64_t nf = (n - 1) & ~(int64_t) 15; /* the full vectors before the last */
  const __mmask16 tm = (__mmask16) ((1u << (n - nf)) - 1);
  const __mmask16 all = (__mmask16) -1;
  const __m512 ninf = _mm512_set1_ps (-INFINITY);
  float sum;
  __m512 m0 = ninf, m1 = ninf, vm, vs = _mm512_setzero_ps (), e;
  int64_t d = 0;

  for (; d + 32 <= nf; d += 32) {
    m0 = _mm512_maskz_max_ps (all, m0, _mm512_loadu_ps (x + d));
    m1 = _mm512_maskz_max_ps (all, m1, _mm512_loadu_ps (x + d + 16));
  }
  for (; d < nf; d += 16)
    m0 = _mm512_maskz_max_ps (all, m0, _mm512_loadu_ps (x + d));
  m1 = _mm512_maskz_max_ps (all, m1, _mm512_mask_loadu_ps (ninf, tm, x + nf));
  m0 = _mm512_maskz_max_ps (all, m0, m1);
  vm = _mm512_set1_ps (
      nnp_hmax_avx2 (_mm256_max_ps (_mm512_maskz_extractf32x8_ps ((__mmask8) -1, m0, 0),
                                    _mm512_maskz_extractf32x8_ps ((__mmask8) -1, m0, 1))));

  for (d = 0; d < nf; d += 16) {
    e = nnp_exp_avx512 (_mm512_sub_ps (_mm512_loadu_ps (x + d), vm));
    if (!log)
      _mm512_storeu_ps (y + d, e);
    vs = _mm512_add_ps (vs, e);
  }
  e = nnp_exp_avx512 (_mm512_sub_ps (_mm512_mask_loadu_ps (ninf, tm, x + nf), vm));
  e = _mm512_maskz_mov_ps (tm, e);
  if (!log)
    _mm512_mask_storeu_ps (y + nf, tm, e);
  vs = _mm512_add_ps (vs, e);
  sum = nnp_hsum_avx2 (_mm256_add_ps (_mm512_maskz_extractf32x8_ps ((__mmask8) -1, vs, 0),
                                      _mm512_maskz_extractf32x8_ps ((__mmask8) -1, vs, 1)));

  if (log) {
    /* (x - m) - log s: x - (m + log s) loses log s's low bits next to a
     * large m */
    const __m512 ls = _mm512_set1_ps (logf (sum));
    for (d = 0; d < nf; d += 16)
      _mm512_storeu_ps (y + d, _mm512_sub_ps (_mm512_sub_ps (_mm512_loadu_ps (x + d), vm), ls));
    _mm512_mask_storeu_ps (
        y + nf, tm, _mm512_sub_ps (_mm512_sub_ps (_mm512_maskz_loadu_ps (tm, x + nf), vm), ls));
  } else {
    const __m512 vi = _mm512_set1_ps (1.f / sum);
    for (d = 0; d < nf; d += 16)
      _mm512_storeu_ps (y + d, _mm512_mul_ps (_mm512_loadu_ps (y + d), vi));
    _mm512_mask_storeu_ps (y + nf, tm, _mm512_mul_ps (_mm512_maskz_loadu_ps (tm, y + nf), vi));
  }
}

/* Strided axis: 8 inner positions j0..j0+7 (all valid) across dim rows. */
__attribute__ ((target ("avx2,fma"))) static void
softmax_cols8_avx2 (const float *x, float *y, int64_t dim, int64_t inner, gboolean log)
{
  __m256 vm = _mm256_set1_ps (-INFINITY), vs = _mm256_setzero_ps ();

  for (int64_t d = 0; d < dim; d++)
    vm = _mm256_max_ps (vm, _mm256_loadu_ps (x + d * inner));
  for (int64_t d = 0; d < dim; d++) {
    __m256 e = nnp_exp_avx2 (_mm256_sub_ps (_mm256_loadu_ps (x + d * inner), vm));
    if (!log)
      _mm256_storeu_ps (y + d * inner, e);
    vs = _mm256_add_ps (vs, e);
  }
  if (log) {
    float sv[8];
    _mm256_storeu_ps (sv, vs);
    for (int i = 0; i < 8; i++)
      sv[i] = logf (sv[i]);
    vs = _mm256_add_ps (vm, _mm256_loadu_ps (sv));
    for (int64_t d = 0; d < dim; d++)
      _mm256_storeu_ps (y + d * inner, _mm256_sub_ps (_mm256_loadu_ps (x + d * inner), vs));
  } else {
    vs = _mm256_div_ps (_mm256_set1_ps (1.f), vs);
    for (int64_t d = 0; d < dim; d++)
      _mm256_storeu_ps (y + d * inner, _mm256_mul_ps (_mm256_loadu_ps (y + d * inner), vs));
  }
}
#endif

static void
softmax_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const SoftmaxJob *job = data;
  const int64_t dim = job->p->dim, inner = job->p->inner;
#if defined(__x86_64__) || defined(__i386__)
  const gboolean avx2 = nnp_cpu_avx2_ok ();
  const gboolean avx512 = avx2 && nnp_sgemm_has_avx512 ();
#endif

  for (gsize o = begin; o < end; o++) {
    const float *x = job->x + (int64_t) o * dim * inner;
    float *y = job->y + (int64_t) o * dim * inner;
    int64_t j_start = 0;

    if (inner == 1) {
      float m = -INFINITY, s = 0.f;
#if defined(__x86_64__) || defined(__i386__)
      if (avx512) {
        softmax_row_avx512 (x, y, dim, job->log);
        continue;
      }
      if (avx2) {
        softmax_row_avx2 (x, y, dim, job->log);
        continue;
      }
#endif
      for (int64_t d = 0; d < dim; d++)
        m = x[d] > m ? x[d] : m;
      for (int64_t d = 0; d < dim; d++) {
        y[d] = expf (x[d] - m);
        s += y[d];
      }
      if (job->log) {
        float ls = logf (s);
        for (int64_t d = 0; d < dim; d++)
          y[d] = (x[d] - m) - ls;
      } else {
        float inv = 1.f / s;
        for (int64_t d = 0; d < dim; d++)
          y[d] *= inv;
      }
      continue;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (avx2) {
      for (; j_start + 8 <= inner; j_start += 8)
        softmax_cols8_avx2 (x + j_start, y + j_start, dim, inner, job->log);
    }
#endif
    /* strided axis: blocks of inner positions, vectorised across them */
    for (int64_t j0 = j_start; j0 < inner; j0 += SOFTMAX_BLOCK) {
      int64_t nj = MIN (SOFTMAX_BLOCK, inner - j0);
      float m[SOFTMAX_BLOCK], s[SOFTMAX_BLOCK];
      for (int64_t j = 0; j < nj; j++) {
        m[j] = -INFINITY;
        s[j] = 0.f;
      }
      for (int64_t d = 0; d < dim; d++) {
        const float *row = x + d * inner + j0;
        for (int64_t j = 0; j < nj; j++)
          m[j] = row[j] > m[j] ? row[j] : m[j];
      }
      for (int64_t d = 0; d < dim; d++) {
        const float *row = x + d * inner + j0;
        float *out = y + d * inner + j0;
        for (int64_t j = 0; j < nj; j++) {
          out[j] = expf (row[j] - m[j]);
          s[j] += out[j];
        }
      }
      if (job->log) {
        for (int64_t j = 0; j < nj; j++)
          s[j] = logf (s[j]);
        for (int64_t d = 0; d < dim; d++) {
          const float *row = x + d * inner + j0;
          float *out = y + d * inner + j0;
          for (int64_t j = 0; j < nj; j++)
            out[j] = (row[j] - m[j]) - s[j];
        }
      } else {
        for (int64_t j = 0; j < nj; j++)
          s[j] = 1.f / s[j];
        for (int64_t d = 0; d < dim; d++) {
          float *out = y + d * inner + j0;
          for (int64_t j = 0; j < nj; j++)
            out[j] *= s[j];
        }
      }
    }
  }
}

static gboolean
softmax_common (const NnpCpuCall *call, gboolean log)
{
  const NnpSoftmaxParams *p = call->node->params;
  SoftmaxJob job = { p, call->inputs[0]->data, call->outputs[0]->data, log };

  if (p->dim == 0)
    return TRUE;
  nnp_parallel_for (call->pool, p->outer, MAX (1, 8192 / MAX (p->dim * p->inner, 1)),
                    softmax_worker, &job);
  return TRUE;
}

static gboolean
softmax_run (const NnpCpuCall *call, GError **error)
{
  return softmax_common (call, FALSE);
}

static gboolean
log_softmax_run (const NnpCpuCall *call, GError **error)
{
  return softmax_common (call, TRUE);
}

/* -------------------------------------------------------------------- Pad */

typedef struct {
  const NnpPadParams *p;
  const guint8 *x;
  guint8 *y;
  int64_t in_strides[NNP_MAX_RANK]; /* elements */
} PadJob;

/* Input index for output-relative index i (already shifted by the pad) on
 * a dim of n; -1 for the constant value. */
static inline int64_t
pad_map (int64_t i, int64_t n, NnpPadMode mode)
{
  int64_t period, m;

  if (i >= 0 && i < n)
    return i;
  switch (mode) {
    case NNP_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case NNP_PAD_WRAP: return ((i % n) + n) % n;
    case NNP_PAD_REFLECT:
      if (n == 1)
        return 0;
      period = 2 * (n - 1);
      m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    case NNP_PAD_CONSTANT:
    default: return -1;
  }
}

static void
fill_value (guint8 *dst, const guint8 *value, int64_t es, int64_t n)
{
  switch (es) {
    case 1: memset (dst, value[0], n); break;
    case 4: {
      guint32 v;
      memcpy (&v, value, 4);
      for (int64_t i = 0; i < n; i++)
        ((guint32 *) dst)[i] = v;
      break;
    }
    default:
      for (int64_t i = 0; i < n; i++)
        memcpy (dst + i * es, value, es);
      break;
  }
}

static void
pad_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const PadJob *job = data;
  const NnpPadParams *p = job->p;
  const int r = p->rank;
  const int64_t es = p->esize, out_w = p->out[r - 1], in_w = p->in[r - 1];
  const int64_t pb = p->pad_begin[r - 1];
  const int64_t lo = CLAMP (pb, 0, out_w), hi = CLAMP (pb + in_w, lo, out_w);
  int64_t pos[NNP_MAX_RANK] = { 0 }, rem = (int64_t) begin;

  for (int k = r - 2; k >= 0; k--) {
    pos[k] = rem % p->out[k];
    rem /= p->out[k];
  }
  for (gsize row = begin; row < end; row++) {
    guint8 *dst = job->y + (int64_t) row * out_w * es;
    int64_t off = 0;
    for (int k = 0; k < r - 1; k++) {
      int64_t i = pad_map (pos[k] - p->pad_begin[k], p->in[k], p->mode);
      if (i < 0) {
        off = -1;
        break;
      }
      off += i * job->in_strides[k];
    }
    if (off < 0) {
      fill_value (dst, p->value, es, out_w);
    } else {
      const guint8 *src = job->x + off * es;
      if (hi > lo)
        memcpy (dst + lo * es, src + (lo - pb) * es, (hi - lo) * es);
      if (p->mode == NNP_PAD_CONSTANT) {
        fill_value (dst, p->value, es, lo);
        fill_value (dst + hi * es, p->value, es, out_w - hi);
      } else {
        for (int64_t o = 0; o < lo; o++)
          memcpy (dst + o * es, src + pad_map (o - pb, in_w, p->mode) * es, es);
        for (int64_t o = hi; o < out_w; o++)
          memcpy (dst + o * es, src + pad_map (o - pb, in_w, p->mode) * es, es);
      }
    }
    for (int k = r - 2; k >= 0; k--) {
      if (++pos[k] < p->out[k])
        break;
      pos[k] = 0;
    }
  }
}

static gboolean
pad_run (const NnpCpuCall *call, GError **error)
{
  const NnpPadParams *p = call->node->params;
  PadJob job = { p, call->inputs[0]->data, call->outputs[0]->data };
  int64_t st = 1, rows = 1;

  if (p->rank == 0) {
    memcpy (call->outputs[0]->data, call->inputs[0]->data, p->esize);
    return TRUE;
  }
  if (nnp_tensor_numel (call->outputs[0]) == 0)
    return TRUE;
  for (int k = p->rank - 1; k >= 0; k--) {
    job.in_strides[k] = st;
    st *= p->in[k];
  }
  for (int k = 0; k < p->rank - 1; k++)
    rows *= p->out[k];
  nnp_parallel_for (call->pool, rows, MAX (1, 16384 / MAX (p->out[p->rank - 1], 1)), pad_worker,
                    &job);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_batch_normalization = { .run = batch_normalization_run };
const NnpCpuKernel nnp_cpu_softmax = { .run = softmax_run };
const NnpCpuKernel nnp_cpu_log_softmax = { .run = log_softmax_run };
const NnpCpuKernel nnp_cpu_pad = { .run = pad_run };
