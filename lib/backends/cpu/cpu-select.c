/* CPU kernels of the selection ops (lib/ops/ops-select.c): TopK and
 * Compress run on their data at every run; NonZero, Unique and
 * NonMaxSuppression were computed at specialisation from constant inputs
 * (their outputs are constants), so their kernel copies those constants. */
#include "backends/cpu/cpu.h"
#include "ops/index-params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- TopK */

typedef struct {
  double v;
  int64_t i;
} Item;

static gint
compare_largest (gconstpointer a, gconstpointer b, gpointer data)
{
  const Item *x = a, *y = b;

  (void) data;
  /* NaN first (it is the largest), then by value, ties by lower index */
  if (isnan (x->v) != isnan (y->v))
    return isnan (x->v) ? -1 : 1;
  if (x->v != y->v && !isnan (x->v))
    return x->v > y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static gint
compare_smallest (gconstpointer a, gconstpointer b, gpointer data)
{
  const Item *x = a, *y = b;

  (void) data;
  if (isnan (x->v) != isnan (y->v))
    return isnan (x->v) ? 1 : -1;
  if (x->v != y->v && !isnan (x->v))
    return x->v < y->v ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static double
load (const void *d, NnpDType t, int64_t i)
{
  switch (t) {
    case NNP_DTYPE_FLOAT32: return ((const float *) d)[i];
    case NNP_DTYPE_FLOAT64: return ((const double *) d)[i];
    case NNP_DTYPE_INT8: return ((const gint8 *) d)[i];
    case NNP_DTYPE_UINT8: return ((const guint8 *) d)[i];
    case NNP_DTYPE_INT16: return ((const gint16 *) d)[i];
    case NNP_DTYPE_UINT16: return ((const guint16 *) d)[i];
    case NNP_DTYPE_INT32: return ((const gint32 *) d)[i];
    case NNP_DTYPE_UINT32: return ((const guint32 *) d)[i];
    case NNP_DTYPE_INT64: return (double) ((const gint64 *) d)[i];
    case NNP_DTYPE_UINT64: return (double) ((const guint64 *) d)[i];
    default: return 0;
  }
}

static gsize
top_k_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpIndexParams *p = node->params;

  (void) graph;
  return sizeof (Item) * (gsize) MAX (p->in.dims[p->axis], 1);
}

static gboolean
top_k_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0];
  NnpTensor *vals = call->outputs[0];
  NnpTensor *inds = call->node->n_outputs > 1 ? call->outputs[1] : NULL;
  int64_t outer = 1, dim = p->in.dims[p->axis], inner = 1;
  Item *items = call->scratch;

  (void) error;
  for (int d = 0; d < p->axis; d++)
    outer *= p->in.dims[d];
  for (int d = p->axis + 1; d < p->in.rank; d++)
    inner *= p->in.dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t d = 0; d < dim; d++) {
        items[d].v = load (x->data, p->dtype, (o * dim + d) * inner + i);
        items[d].i = d;
      }
      g_qsort_with_data (items, (gint) dim, sizeof (Item),
                         p->flag ? compare_largest : compare_smallest, NULL);
      for (int64_t k = 0; k < p->k; k++) {
        int64_t src = (o * dim + items[k].i) * inner + i, dst = (o * p->k + k) * inner + i;
        if (vals)
          memcpy ((guint8 *) vals->data + dst * p->esize, (const guint8 *) x->data + src * p->esize,
                  p->esize);
        if (inds)
          ((int64_t *) inds->data)[dst] = items[k].i;
      }
    }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_top_k = { .run = top_k_run, .workspace = top_k_workspace };

/* ---------------------------------------------------------------- Compress */

static gboolean
compress_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *c = call->inputs[1];
  const guint8 *cond = c->data;
  guint8 *y = call->outputs[0]->data;
  int64_t outer = 1, dim, inner = 1, len;

  (void) error;
  if (p->axis < 0) {
    dim = nnp_tensor_numel (x);
  } else {
    dim = p->in.dims[p->axis];
    for (int d = 0; d < p->axis; d++)
      outer *= p->in.dims[d];
    for (int d = p->axis + 1; d < p->in.rank; d++)
      inner *= p->in.dims[d];
  }
  len = MIN (dim, nnp_tensor_numel (c));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t d = 0; d < len; d++) {
      if (!cond[d])
        continue;
      memcpy (y, (const guint8 *) x->data + (o * dim + d) * inner * p->esize, inner * p->esize);
      y += inner * p->esize;
    }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_compress = { .run = compress_run };

/* ---------------------------------------------------------------- computed at specialisation */

static gboolean
constant_outputs_run (const NnpCpuCall *call, GError **error)
{
  for (int k = 0; k < call->node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (call->graph, call->node, k);
    NnpTensor *out = call->outputs[k];
    if (out == NULL)
      continue;
    if (v == NULL || v->constant == NULL || v->constant->nbytes != out->nbytes) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node,
                          "runs only on constant inputs (data-dependent shapes are not supported)");
      return FALSE;
    }
    if (out->nbytes)
      memcpy (out->data, v->constant->data, out->nbytes);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_non_zero = { .run = constant_outputs_run };
const NnpCpuKernel nnp_cpu_unique = { .run = constant_outputs_run };
const NnpCpuKernel nnp_cpu_non_max_suppression = { .run = constant_outputs_run };
