/* OpenCL backend: launch code of the reductions (kernels/nn.cl).  As
 * lib/backends/cpu/cpu-reduce.c, but ArgMax is with Softmax in ocl-nn.c (one
 * launch code walks the axis of both). */
#include "backends/opencl/ocl-ops.h"
#include "ops/nn-params.h"

/* Host mirror of the kernels' ReduceP (4-byte fields only). */
typedef struct {
  cl_int rank;
  cl_int dims[NNP_OCL_MAX_RANK];
  cl_int reduced[NNP_OCL_MAX_RANK];
  cl_int count, n_out;
} ReduceArg;

/* ------------------------------------------------------------------ */
/* Row reductions (ocl-ops.h): reduce_rows_f32, one work-group per row */

NnpOclRowsState *
nnp_ocl_rows_state_new (NnpOclDevice *dev, const NnpNode *node, gsize size, GError **error)
{
  NnpOclRowsState *s;
  size_t wg, l = 1;

  g_return_val_if_fail (size >= sizeof (NnpOclRowsState), NULL);
  s = nnp_ocl_state_new (dev, node, size, "nn.cl", "reduce_rows_f32", "reduce_general_f32", error);
  if (s == NULL)
    return NULL;
  wg = MIN (nnp_ocl_work_group_max (dev, s->base.k[0]), 256);
  while (l * 2 <= wg)
    l *= 2;
  s->local = l;
  return s;
}

gboolean
nnp_ocl_rows_run (const NnpOclCall *call, NnpOclRowsState *s, size_t rows, size_t len, int op,
                  GError **error)
{
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };
  size_t global = rows * s->local;

  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_int (&a, (int) len);
  nnp_ocl_arg_int (&a, op);
  nnp_ocl_arg_float (&a, len > 0 ? 1.f / (float) len : 0.f);
  nnp_ocl_arg_raw (&a, s->local * sizeof (cl_float), NULL);
  return nnp_ocl_launch (call, &a, 1, &global, &s->local, error);
}

/* ------------------------------------------------------------------ */
/* ReduceMean, ReduceSum, ReduceMax, ReduceMin */

static int
reduce_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_REDUCE_MEAN: return NNP_OCL_RED_MEAN;
    case NNP_OP_REDUCE_MAX: return NNP_OCL_RED_MAX;
    case NNP_OP_REDUCE_MIN: return NNP_OCL_RED_MIN;
    default: return NNP_OCL_RED_SUM;
  }
}

static gboolean
reduce_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpReduceParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  if (p->count == 0 && !p->identity)
    return nnp_ocl_reject (why, node, "empty reduction");
  return nnp_ocl_no_act (node, why);
}

typedef struct {
  NnpOclRowsState rows;
  gboolean by_rows; /* only the last group reduced: rows of the input */
  ReduceArg reduce;
} ReduceState;

static gpointer
reduce_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpReduceParams *p = node->params;
  ReduceState *s = (ReduceState *) nnp_ocl_rows_state_new (dev, node, sizeof (ReduceState), error);
  ReduceArg *r;
  int64_t total = 1;

  if (s == NULL)
    return NULL;
  r = &s->reduce;
  r->rank = p->rank;
  for (int d = 0; d < p->rank; d++) {
    r->dims[d] = (cl_int) p->dims[d];
    r->reduced[d] = p->reduced[d];
    total *= p->dims[d];
  }
  r->count = (cl_int) p->count;
  r->n_out = p->count > 0 ? (cl_int) (total / p->count) : 0;
  s->by_rows = p->reduced[p->rank - 1];
  for (int d = 0; d < p->rank - 1; d++)
    if (p->reduced[d])
      s->by_rows = FALSE;
  return s;
}

static gboolean
reduce_run (const NnpOclCall *call, GError **error)
{
  const NnpReduceParams *p = call->node->params;
  ReduceState *s = call->state;
  const ReduceArg *r = &s->reduce;
  int op = reduce_code (call->node->op);
  NnpOclArgs a = { s->rows.base.k[1], 0, CL_SUCCESS };

  if (p->identity)
    return nnp_ocl_copy_buffer (call, &call->in[0], &call->out[0],
                                nnp_ocl_value_nbytes (nnp_node_output (call->graph, call->node, 0)),
                                error);
  if (s->by_rows)
    return nnp_ocl_rows_run (call, &s->rows, (size_t) r->n_out, (size_t) r->count, op, error);
  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_raw (&a, sizeof (ReduceArg), r);
  nnp_ocl_arg_int (&a, op);
  nnp_ocl_arg_float (&a, 1.f / (float) r->count);
  return nnp_ocl_launch_1d (call, &a, (size_t) r->n_out, error);
}

#define REDUCE_KERNEL \
  { \
    .supports = reduce_supports, .prepare = reduce_prepare, .run = reduce_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_reduce_mean = REDUCE_KERNEL;
const NnpOclKernel nnp_ocl_kernel_reduce_sum = REDUCE_KERNEL;
const NnpOclKernel nnp_ocl_kernel_reduce_max = REDUCE_KERNEL;
const NnpOclKernel nnp_ocl_kernel_reduce_min = REDUCE_KERNEL;
