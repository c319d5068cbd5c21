/* CPU kernels: ReduceMean, ReduceSum, ReduceMax, ReduceMin, ArgMax, ArgMin.
 *
 * Reductions see the input as the merged, alternating kept/reduced groups of
 * NnpReduceParams.  The output starts at the operation's identity and the
 * input is streamed once in memory order: a reduced last group folds each
 * row into one output, a kept last group accumulates a row into a row of
 * outputs (both vectorisable).  Threads split the first group when it is
 * kept (disjoint outputs). */
#include "backends/cpu/cpu.h"
#include "ops/nn-params.h"

#include <math.h>
#include <string.h>

typedef enum {
  RED_SUM,
  RED_MAX,
  RED_MIN,
} RedOp;

typedef struct {
  const NnpReduceParams *p;
  const void *x;
  void *y;
  RedOp op;
  int64_t x_stride0, y_stride0; /* elements per index of group 0 */
} ReduceJob;

#define SUM_OP(a, b) ((a) + (b))
#define MAX_OP(a, b) ((b) > (a) ? (b) : (a))
#define MIN_OP(a, b) ((b) < (a) ? (b) : (a))

/* Reduce a block of input with dims[0..r) into y (reduced dims of size 1). */
#define DEFINE_REDUCE_BLOCK(NAME, T, OP) \
  static void NAME (const T *x, T *y, const int64_t *dims, const gboolean *red, int r, T init) \
  { \
    int64_t xs[NNP_MAX_RANK], ys[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 }; \
    int64_t xo = 0, yo = 0, n = dims[r - 1], rows = 1; \
    int64_t sx = 1, sy = 1; \
    for (int k = r - 1; k >= 0; k--) { \
      xs[k] = sx; \
      ys[k] = red[k] ? 0 : sy; \
      sx *= dims[k]; \
      sy *= red[k] ? 1 : dims[k]; \
    } \
    for (int k = 0; k < r - 1; k++) \
      rows *= dims[k]; \
    for (int64_t row = 0; row < rows; row++) { \
      const T *xr = x + xo; \
      if (red[r - 1]) { \
        T acc[8] = { init, init, init, init, init, init, init, init }; \
        T a = y[yo]; \
        int64_t i = 0; \
        for (; i + 8 <= n; i += 8) \
          for (int j = 0; j < 8; j++) \
            acc[j] = OP (acc[j], xr[i + j]); \
        for (; i < n; i++) \
          a = OP (a, xr[i]); \
        for (int j = 0; j < 8; j++) \
          a = OP (a, acc[j]); \
        y[yo] = a; \
      } else { \
        T *yr = y + yo; \
        for (int64_t i = 0; i < n; i++) \
          yr[i] = OP (yr[i], xr[i]); \
      } \
      /* next row: increment the counter over dims [0, r - 1) */ \
      for (int k = r - 2; k >= 0; k--) { \
        xo += xs[k]; \
        yo += ys[k]; \
        if (++idx[k] < dims[k]) \
          break; \
        xo -= xs[k] * dims[k]; \
        yo -= ys[k] * dims[k]; \
        idx[k] = 0; \
      } \
    } \
  }

DEFINE_REDUCE_BLOCK (sum_f32, float, SUM_OP)
DEFINE_REDUCE_BLOCK (max_f32, float, MAX_OP)
DEFINE_REDUCE_BLOCK (min_f32, float, MIN_OP)
DEFINE_REDUCE_BLOCK (sum_i32, gint32, SUM_OP)
DEFINE_REDUCE_BLOCK (max_i32, gint32, MAX_OP)
DEFINE_REDUCE_BLOCK (min_i32, gint32, MIN_OP)
DEFINE_REDUCE_BLOCK (sum_i64, gint64, SUM_OP)
DEFINE_REDUCE_BLOCK (max_i64, gint64, MAX_OP)
DEFINE_REDUCE_BLOCK (min_i64, gint64, MIN_OP)

#define DISPATCH(T, SUF, INIT_SUM, INIT_MAX, INIT_MIN) \
  do { \
    const T *x = (const T *) job->x + off_x; \
    T *y = (T *) job->y + off_y; \
    switch (job->op) { \
      case RED_SUM: sum_##SUF (x, y, dims, p->reduced, p->rank, INIT_SUM); break; \
      case RED_MAX: max_##SUF (x, y, dims, p->reduced, p->rank, INIT_MAX); break; \
      case RED_MIN: min_##SUF (x, y, dims, p->reduced, p->rank, INIT_MIN); break; \
    } \
  } while (0)

static void
reduce_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const ReduceJob *job = data;
  const NnpReduceParams *p = job->p;
  int64_t dims[NNP_MAX_RANK];
  int64_t off_x = (int64_t) begin * job->x_stride0, off_y = (int64_t) begin * job->y_stride0;

  memcpy (dims, p->dims, sizeof (dims));
  dims[0] = (int64_t) (end - begin);
  switch (p->dtype) {
    case NNP_DTYPE_FLOAT32: DISPATCH (float, f32, 0.f, -INFINITY, INFINITY); break;
    case NNP_DTYPE_INT32: DISPATCH (gint32, i32, 0, G_MININT32, G_MAXINT32); break;
    case NNP_DTYPE_INT64: DISPATCH (gint64, i64, 0, G_MININT64, G_MAXINT64); break;
    default: break;
  }
}

static void
fill_init (void *y, int64_t n, NnpDType dtype, RedOp op)
{
  int64_t i;

  switch (dtype) {
    case NNP_DTYPE_FLOAT32: {
      float v = op == RED_SUM ? 0.f : op == RED_MAX ? -INFINITY : INFINITY;
      for (i = 0; i < n; i++)
        ((float *) y)[i] = v;
      break;
    }
    case NNP_DTYPE_INT32: {
      gint32 v = op == RED_SUM ? 0 : op == RED_MAX ? G_MININT32 : G_MAXINT32;
      for (i = 0; i < n; i++)
        ((gint32 *) y)[i] = v;
      break;
    }
    case NNP_DTYPE_INT64: {
      gint64 v = op == RED_SUM ? 0 : op == RED_MAX ? G_MININT64 : G_MAXINT64;
      for (i = 0; i < n; i++)
        ((gint64 *) y)[i] = v;
      break;
    }
    default: break;
  }
}

static gboolean
reduce_run (const NnpCpuCall *call, RedOp op, gboolean mean, GError **error)
{
  const NnpReduceParams *p = call->node->params;
  NnpTensor *x = call->inputs[0], *y = call->outputs[0];
  int64_t n_out = nnp_tensor_numel (y);
  ReduceJob job = { p, x->data, y->data, op, 1, 1 };

  if (p->identity) {
    if (y->nbytes)
      memcpy (y->data, x->data, y->nbytes);
    return TRUE;
  }
  fill_init (y->data, n_out, p->dtype, op);
  if (nnp_tensor_numel (x) == 0)
    goto finish;
  for (int k = 1; k < p->rank; k++) {
    job.x_stride0 *= p->dims[k];
    job.y_stride0 *= p->reduced[k] ? 1 : p->dims[k];
  }
  if (!p->reduced[0] && p->rank > 1)
    nnp_parallel_for (call->pool, p->dims[0], MAX (1, 16384 / MAX (job.x_stride0, 1)),
                      reduce_worker, &job);
  else
    reduce_worker (&job, 0, p->dims[0], 0);
finish:
  if (mean) {
    float *v = y->data;
    float s = 1.f / (float) p->count;
    for (int64_t i = 0; i < n_out; i++)
      v[i] *= s;
  }
  return TRUE;
}

static gboolean
reduce_mean_run (const NnpCpuCall *call, GError **error)
{
  return reduce_run (call, RED_SUM, TRUE, error);
}

static gboolean
reduce_sum_run (const NnpCpuCall *call, GError **error)
{
  return reduce_run (call, RED_SUM, FALSE, error);
}

static gboolean
reduce_max_run (const NnpCpuCall *call, GError **error)
{
  return reduce_run (call, RED_MAX, FALSE, error);
}

static gboolean
reduce_min_run (const NnpCpuCall *call, GError **error)
{
  return reduce_run (call, RED_MIN, FALSE, error);
}

/* ----------------------------------------------------------------- ArgMax */

typedef struct {
  const NnpArgMaxParams *p;
  const void *x;
  gint64 *y;
} ArgMaxJob;

/* Outer rows [begin, end); inner positions in blocks of 64. */
#define DEFINE_ARGMAX(NAME, T) \
  static void NAME (gpointer data, gsize begin, gsize end, int thread) \
  { \
    const ArgMaxJob *job = data; \
    const NnpArgMaxParams *p = job->p; \
    const int64_t dim = p->dim, inner = p->inner; \
    const gboolean last = p->select_last_index, mn = p->min; \
    for (gsize o = begin; o < end; o++) { \
      const T *x = (const T *) job->x + (int64_t) o * dim * inner; \
      gint64 *y = job->y + (int64_t) o * inner; \
      if (inner == 1) { \
        T best = x[0]; \
        gint64 bi = 0; \
        for (int64_t d = 1; d < dim; d++) { \
          if ((mn ? x[d] < best : x[d] > best) || (last && x[d] == best)) { \
            best = x[d]; \
            bi = d; \
          } \
        } \
        y[0] = bi; \
        continue; \
      } \
      for (int64_t j0 = 0; j0 < inner; j0 += 64) { \
        int64_t nj = MIN (64, inner - j0); \
        T best[64]; \
        for (int64_t j = 0; j < nj; j++) { \
          best[j] = x[j0 + j]; \
          y[j0 + j] = 0; \
        } \
        for (int64_t d = 1; d < dim; d++) { \
          const T *row = x + d * inner + j0; \
          for (int64_t j = 0; j < nj; j++) { \
            gboolean take = mn ? (last ? row[j] <= best[j] : row[j] < best[j]) \
                               : (last ? row[j] >= best[j] : row[j] > best[j]); \
            best[j] = take ? row[j] : best[j]; \
            y[j0 + j] = take ? d : y[j0 + j]; \
          } \
        } \
      } \
    } \
  }

DEFINE_ARGMAX (argmax_f32, float)
DEFINE_ARGMAX (argmax_i32, gint32)
DEFINE_ARGMAX (argmax_i64, gint64)

static gboolean
arg_max_run (const NnpCpuCall *call, GError **error)
{
  const NnpArgMaxParams *p = call->node->params;
  ArgMaxJob job = { p, call->inputs[0]->data, call->outputs[0]->data };
  NnpParallelFunc fn;

  switch (p->dtype) {
    case NNP_DTYPE_FLOAT32: fn = argmax_f32; break;
    case NNP_DTYPE_INT32: fn = argmax_i32; break;
    case NNP_DTYPE_INT64: fn = argmax_i64; break;
    default:
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "dtype %s",
                          nnp_dtype_name (p->dtype));
      return FALSE;
  }
  nnp_parallel_for (call->pool, p->outer, MAX (1, 16384 / MAX (p->dim * p->inner, 1)), fn, &job);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_reduce_mean = { .run = reduce_mean_run };
const NnpCpuKernel nnp_cpu_reduce_sum = { .run = reduce_sum_run };
const NnpCpuKernel nnp_cpu_reduce_max = { .run = reduce_max_run };
const NnpCpuKernel nnp_cpu_reduce_min = { .run = reduce_min_run };
const NnpCpuKernel nnp_cpu_arg_max = { .run = arg_max_run };
const NnpCpuKernel nnp_cpu_arg_min = { .run = arg_max_run }; /* params->min */
