/* CPU kernels of the normalisation and loss ops (lib/ops/ops-norm.c,
 * norm-params.h).  Statistics accumulate in double; float32 and float64
 * data.  LayerNormalization rows (one per outer index) are the thread
 * pool's work items. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include "ops/norm-params.h"

#include <math.h>
#include <string.h>

static inline double
ld (const void *p, gboolean f64, int64_t i)
{
  return f64 ? ((const double *) p)[i] : ((const float *) p)[i];
}

static inline void
st (void *p, gboolean f64, int64_t i, double v)
{
  if (f64)
    ((double *) p)[i] = v;
  else
    ((float *) p)[i] = (float) v;
}

/* Element offset of normalised index j (over dims [axis, rank)) in a
 * broadcast operand with the given strides. */
static inline int64_t
bcast_offset (const NnpShape *in, int axis, const int64_t *strides, int64_t j)
{
  int64_t off = 0;

  for (int d = in->rank - 1; d >= axis; d--) {
    off += (j % in->dims[d]) * strides[d];
    j /= in->dims[d];
  }
  return off;
}

/* ---------------------------------------------------------------- LayerNormalization */

typedef struct {
  const NnpNormParams *p;
  const NnpCpuCall *call;
  int64_t cols;
  gboolean f32_avx2; /* ln_rows_f32 takes the rows */
} LnJob;

#if defined(__x86_64__) || defined(__i386__)
/* Sum of x[0..n) (and, with mean, of (x - mean)^2) in double, 8 floats a
 * step in two sets of four double lanes. */
__attribute__ ((target ("avx2,fma"))) static double
ln_sum_avx2 (const float *x, int64_t n, const double *mean)
{
  __m256d a0 = _mm256_setzero_pd (), a1 = _mm256_setzero_pd ();
  const __m256d m = _mm256_set1_pd (mean ? *mean : 0.0);
  double t[4], sum = 0;
  int64_t j = 0;

  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps (x + j);
    __m256d lo = _mm256_cvtps_pd (_mm256_castps256_ps128 (v));
    __m256d hi = _mm256_cvtps_pd (_mm256_extractf128_ps (v, 1));
    if (mean) {
      lo = _mm256_sub_pd (lo, m);
      hi = _mm256_sub_pd (hi, m);
      a0 = _mm256_fmadd_pd (lo, lo, a0);
      a1 = _mm256_fmadd_pd (hi, hi, a1);
    } else {
      a0 = _mm256_add_pd (a0, lo);
      a1 = _mm256_add_pd (a1, hi);
    }
  }
  _mm256_storeu_pd (t, _mm256_add_pd (a0, a1));
  sum = (t[0] + t[1]) + (t[2] + t[3]);
  for (; j < n; j++) {
    double d = x[j] - (mean ? *mean : 0.0);
    sum += mean ? d * d : d;
  }
  return sum;
}

/* y = (x - mean) * inv * s (+ b), in float */
__attribute__ ((target ("avx2,fma"))) static void
ln_out_avx2 (const float *x, const float *s, const float *b, float *y, int64_t n, float mean,
             float inv)
{
  const __m256 vm = _mm256_set1_ps (mean), vi = _mm256_set1_ps (inv);
  int64_t j = 0;

  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_mul_ps (_mm256_mul_ps (_mm256_sub_ps (_mm256_loadu_ps (x + j), vm), vi),
                              _mm256_loadu_ps (s + j));
    if (b)
      v = _mm256_add_ps (v, _mm256_loadu_ps (b + j));
    _mm256_storeu_ps (y + j, v);
  }
  for (; j < n; j++)
    y[j] = (x[j] - mean) * inv * s[j] + (b ? b[j] : 0.f);
}
#endif

/* Whether ln_rows_f32 takes the rows: float32 with a scale and bias that
 * cover the normalised dims whole (no broadcast), on AVX2. */
static gboolean
ln_f32_avx2_ok (const LnJob *job)
{
#if defined(__x86_64__) || defined(__i386__)
  const NnpCpuCall *call = job->call;
  const NnpTensor *b = call->node->n_inputs > 2 ? call->inputs[2] : NULL;

  return job->p->dtype == NNP_DTYPE_FLOAT32 && nnp_cpu_avx2_ok ()
         && nnp_tensor_numel (call->inputs[1]) == job->cols
         && (b == NULL || nnp_tensor_numel (b) == job->cols);
#else
  return FALSE;
#endif
}

/* Rows [begin, end) where ln_f32_avx2_ok(): the statistics in double, 8
 * floats a step (the general loop below computed two broadcast offsets per
 * element: 6 ns an element). */
static void
ln_rows_f32 (const LnJob *job, gsize begin, gsize end)
{
#if defined(__x86_64__) || defined(__i386__)
  const NnpCpuCall *call = job->call;
  const NnpTensor *x = call->inputs[0], *sc = call->inputs[1];
  const NnpTensor *b = call->node->n_inputs > 2 ? call->inputs[2] : NULL;
  NnpTensor *mean_t = call->node->n_outputs > 1 ? call->outputs[1] : NULL;
  NnpTensor *inv_t = call->node->n_outputs > 2 ? call->outputs[2] : NULL;
  const int64_t cols = job->cols;

  for (gsize r = begin; r < end; r++) {
    const float *xr = (const float *) x->data + r * cols;
    double mean = cols ? ln_sum_avx2 (xr, cols, NULL) / (double) cols : 0;
    double var = cols ? ln_sum_avx2 (xr, cols, &mean) / (double) cols : 0;
    double inv = 1.0 / sqrt (var + job->p->epsilon);
    ln_out_avx2 (xr, sc->data, b ? b->data : NULL, (float *) call->outputs[0]->data + r * cols,
                 cols, (float) mean, (float) inv);
    if (mean_t)
      ((float *) mean_t->data)[r] = (float) mean;
    if (inv_t)
      ((float *) inv_t->data)[r] = (float) inv;
  }
#else
  (void) job;
  (void) begin;
  (void) end;
#endif
}

static void
ln_rows (gpointer data, gsize begin, gsize end, int thread)
{
  const LnJob *job = data;
  const NnpNormParams *p = job->p;
  const NnpCpuCall *call = job->call;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  const NnpTensor *x = call->inputs[0], *sc = call->inputs[1];
  const NnpTensor *b = call->node->n_inputs > 2 ? call->inputs[2] : NULL;
  NnpTensor *y = call->outputs[0];
  NnpTensor *mean_t = call->node->n_outputs > 1 ? call->outputs[1] : NULL;
  NnpTensor *inv_t = call->node->n_outputs > 2 ? call->outputs[2] : NULL;
  const int64_t cols = job->cols;

  (void) thread;
  if (job->f32_avx2) {
    ln_rows_f32 (job, begin, end);
    return;
  }
  for (gsize r = begin; r < end; r++) {
    double sum = 0, sq = 0, mean, inv;
    int64_t base = (int64_t) r * cols;
    for (int64_t j = 0; j < cols; j++)
      sum += ld (x->data, f64, base + j);
    mean = cols ? sum / (double) cols : 0;
    for (int64_t j = 0; j < cols; j++) {
      double d = ld (x->data, f64, base + j) - mean;
      sq += d * d;
    }
    inv = 1.0 / sqrt ((cols ? sq / (double) cols : 0) + p->epsilon);
    for (int64_t j = 0; j < cols; j++) {
      double v = (ld (x->data, f64, base + j) - mean) * inv;
      v *= ld (sc->data, f64, bcast_offset (&p->in, p->axis, p->scale_strides, j));
      if (b)
        v += ld (b->data, f64, bcast_offset (&p->in, p->axis, p->bias_strides, j));
      st (y->data, f64, base + j, v);
    }
    if (mean_t)
      ((float *) mean_t->data)[r] = (float) mean;
    if (inv_t)
      ((float *) inv_t->data)[r] = (float) inv;
  }
}

static gboolean
layer_normalization_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  LnJob job = { p, call, 1, FALSE };
  int64_t rows = 1;

  (void) error;
  for (int d = 0; d < p->in.rank; d++) {
    if (d < p->axis)
      rows *= p->in.dims[d];
    else
      job.cols *= p->in.dims[d];
  }
  job.f32_avx2 = ln_f32_avx2_ok (&job);
  nnp_parallel_for (call->pool, rows, MAX (1, 8192 / MAX (job.cols, 1)), ln_rows, &job);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_layer_normalization = { .run = layer_normalization_run };

/* ---------------------------------------------------------------- Instance / Group */

/* Normalise `count` contiguous elements at x + off; scale s, bias b. */
static void
norm_block (const void *x, void *y, gboolean f64, int64_t off, int64_t count, double eps,
            const void *scale, const void *bias, int64_t c0, int64_t per_c)
{
  double sum = 0, sq = 0, mean, inv;

  for (int64_t i = 0; i < count; i++)
    sum += ld (x, f64, off + i);
  mean = count ? sum / (double) count : 0;
  for (int64_t i = 0; i < count; i++) {
    double d = ld (x, f64, off + i) - mean;
    sq += d * d;
  }
  inv = 1.0 / sqrt ((count ? sq / (double) count : 0) + eps);
  for (int64_t i = 0; i < count; i++) {
    int64_t c = per_c > 0 ? c0 + i / per_c : c0;
    st (y, f64, off + i,
        (ld (x, f64, off + i) - mean) * inv * ld (scale, f64, c) + ld (bias, f64, c));
  }
}

static gboolean
instance_normalization_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  int64_t n = p->in.dims[0], c = p->in.dims[1], inner = 1;

  (void) error;
  for (int d = 2; d < p->in.rank; d++)
    inner *= p->in.dims[d];
  for (int64_t i = 0; i < n * c; i++)
    norm_block (call->inputs[0]->data, call->outputs[0]->data, f64, i * inner, inner, p->epsilon,
                call->inputs[1]->data, call->inputs[2]->data, i % c, 0);
  return TRUE;
}

static gboolean
group_normalization_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  int64_t n = p->in.dims[0], c = p->in.dims[1], g = p->size, inner = 1;
  int64_t cg = c / g;

  (void) error;
  for (int d = 2; d < p->in.rank; d++)
    inner *= p->in.dims[d];
  for (int64_t i = 0; i < n * g; i++) {
    int64_t grp = i % g;
    norm_block (call->inputs[0]->data, call->outputs[0]->data, f64, i * cg * inner, cg * inner,
                p->epsilon, call->inputs[1]->data, call->inputs[2]->data,
                p->per_group ? grp : grp * cg, p->per_group ? 0 : inner);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_instance_normalization = { .run = instance_normalization_run };
const NnpCpuKernel nnp_cpu_group_normalization = { .run = group_normalization_run };

/* ---------------------------------------------------------------- MVN */

/* Mean and variance over the reduced axes; every output element visits its
 * group (small tensors: the reduced axes are usually N, H, W). */
static gboolean
mvn_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  const NnpShape *s = &p->in;
  int64_t strides[NNP_MAX_RANK], kept[NNP_MAX_RANK], n = nnp_shape_numel (s), acc = 1;
  int64_t n_groups = 1, count = 1;
  double *sum, *sq;

  (void) error;
  for (int d = s->rank - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= s->dims[d];
  }
  for (int d = s->rank - 1; d >= 0; d--) {
    kept[d] = p->reduced[d] ? 0 : n_groups;
    if (p->reduced[d])
      count *= s->dims[d];
    else
      n_groups *= s->dims[d];
  }
  sum = call->scratch;
  sq = sum + n_groups;
  memset (sum, 0, sizeof (double) * 2 * n_groups);
  for (int pass = 0; pass < 3; pass++) {
    for (int64_t e = 0; e < n; e++) {
      int64_t g = 0;
      double v = ld (call->inputs[0]->data, f64, e);
      for (int d = 0; d < s->rank; d++)
        g += ((e / strides[d]) % s->dims[d]) * kept[d];
      if (pass == 0)
        sum[g] += v;
      else if (pass == 1)
        sq[g] += (v - sum[g]) * (v - sum[g]);
      else
        st (call->outputs[0]->data, f64, e, (v - sum[g]) / (sqrt (sq[g]) + 1e-9));
    }
    for (int64_t g = 0; g < n_groups; g++) {
      if (pass == 0)
        sum[g] /= (double) MAX (count, 1);
      else if (pass == 1)
        sq[g] /= (double) MAX (count, 1);
    }
  }
  return TRUE;
}

static gsize
mvn_workspace (const NnpGraph *graph, const NnpNode *node)
{
  (void) graph;
  return 2 * sizeof (double)
         * (gsize) MAX (nnp_shape_numel (&((NnpNormParams *) node->params)->in), 1);
}

const NnpCpuKernel nnp_cpu_mean_variance_normalization = { .run = mvn_run,
                                                           .workspace = mvn_workspace };

/* ---------------------------------------------------------------- LRN, LpNormalization */

static gboolean
lrn_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  int64_t n = p->in.dims[0], c = p->in.dims[1], inner = 1;
  int64_t lo = (p->size - 1) / 2, hi = p->size - 1 - lo;

  (void) error;
  for (int d = 2; d < p->in.rank; d++)
    inner *= p->in.dims[d];
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t i = 0; i < inner; i++) {
        double sq = 0;
        for (int64_t k = MAX (0, ch - lo); k <= MIN (c - 1, ch + hi); k++) {
          double v = ld (call->inputs[0]->data, f64, (b * c + k) * inner + i);
          sq += v * v;
        }
        int64_t e = (b * c + ch) * inner + i;
        st (call->outputs[0]->data, f64, e,
            ld (call->inputs[0]->data, f64, e)
                / pow (p->epsilon + p->alpha / (double) p->size * sq, p->beta));
      }
  return TRUE;
}

static gboolean
lp_normalization_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  int64_t outer = 1, dim = p->in.dims[p->axis], inner = 1;

  (void) error;
  for (int d = 0; d < p->axis; d++)
    outer *= p->in.dims[d];
  for (int d = p->axis + 1; d < p->in.rank; d++)
    inner *= p->in.dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double norm = 0;
      for (int64_t k = 0; k < dim; k++) {
        double v = ld (call->inputs[0]->data, f64, (o * dim + k) * inner + i);
        norm += p->size == 1 ? fabs (v) : v * v;
      }
      if (p->size == 2)
        norm = sqrt (norm);
      for (int64_t k = 0; k < dim; k++) {
        int64_t e = (o * dim + k) * inner + i;
        double v = ld (call->inputs[0]->data, f64, e);
        st (call->outputs[0]->data, f64, e, norm == 0 ? 0 : v / norm);
      }
    }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_lrn = { .run = lrn_run };
const NnpCpuKernel nnp_cpu_lp_normalization = { .run = lp_normalization_run };

/* ---------------------------------------------------------------- losses */

/* input [N, C, D] (D = product of the trailing dims), target [N, D]:
 * loss[n, d] = -w[t] * logp[n, t, d] (0 where t == ignore_index), reduced. */
static gboolean
loss_run (const NnpCpuCall *call, const void *logp, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  const NnpTensor *t = call->inputs[1];
  const NnpTensor *w = call->node->n_inputs > 2 ? call->inputs[2] : NULL;
  NnpTensor *y = call->outputs[0];
  int64_t n = p->in.dims[0], c = p->in.dims[1], dd = 1;
  double total = 0, wsum = 0;

  for (int d = 2; d < p->in.rank; d++)
    dd *= p->in.dims[d];
  for (int64_t b = 0; b < n; b++)
    for (int64_t d = 0; d < dd; d++) {
      int64_t e = b * dd + d;
      int64_t tv = t->dtype == NNP_DTYPE_INT64 ? ((const int64_t *) t->data)[e]
                                               : ((const int32_t *) t->data)[e];
      double l = 0, wt = 0;
      if (!(p->has_ignore && tv == p->ignore_index)) {
        if (tv < 0 || tv >= c) {
          nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                              "target %" G_GINT64_FORMAT " is out of range 0..%" G_GINT64_FORMAT,
                              tv, c - 1);
          return FALSE;
        }
        wt = w ? ld (w->data, f64, tv) : 1.0;
        l = -ld (logp, f64, (b * c + tv) * dd + d) * wt;
      }
      if (p->reduction == NNP_LOSS_NONE)
        st (y->data, f64, e, l);
      total += l;
      wsum += wt;
    }
  if (p->reduction == NNP_LOSS_SUM)
    st (y->data, f64, 0, total);
  else if (p->reduction == NNP_LOSS_MEAN)
    st (y->data, f64, 0, (w || p->has_ignore) ? total / wsum : total / (double) MAX (n * dd, 1));
  return TRUE;
}

static gboolean
nll_run (const NnpCpuCall *call, GError **error)
{
  return loss_run (call, call->inputs[0]->data, error);
}

/* log_softmax over axis 1 into output 1 (or the scratch), then NLL */
static gboolean
sce_run (const NnpCpuCall *call, GError **error)
{
  const NnpNormParams *p = call->node->params;
  const gboolean f64 = p->dtype == NNP_DTYPE_FLOAT64;
  const void *x = call->inputs[0]->data;
  void *lp = call->node->n_outputs > 1 && call->outputs[1] ? call->outputs[1]->data : call->scratch;
  int64_t n = p->in.dims[0], c = p->in.dims[1], dd = 1;

  for (int d = 2; d < p->in.rank; d++)
    dd *= p->in.dims[d];
  for (int64_t b = 0; b < n; b++)
    for (int64_t d = 0; d < dd; d++) {
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < c; k++)
        mx = MAX (mx, ld (x, f64, (b * c + k) * dd + d));
      for (int64_t k = 0; k < c; k++)
        s += exp (ld (x, f64, (b * c + k) * dd + d) - mx);
      for (int64_t k = 0; k < c; k++) {
        int64_t e = (b * c + k) * dd + d;
        st (lp, f64, e, ld (x, f64, e) - mx - log (s));
      }
    }
  return loss_run (call, lp, error);
}

static gsize
sce_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpNormParams *p = node->params;

  (void) graph;
  return nnp_dtype_size (p->dtype) * (gsize) MAX (nnp_shape_numel (&p->in), 1);
}

const NnpCpuKernel nnp_cpu_negative_log_likelihood_loss = { .run = nll_run };
const NnpCpuKernel nnp_cpu_softmax_cross_entropy_loss = { .run = sce_run,
                                                          .workspace = sce_workspace };
