/* OpenCL backend: launch code of the pools (kernels/nn.cl).  As
 * lib/backends/cpu/cpu-pool.c. */
#include "backends/opencl/ocl-ops.h"
#include "ops/nn-params.h"

/* Host mirror of the kernels' PoolP (4-byte fields only). */
typedef struct {
  cl_int planes;
  cl_int in[3], out[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
  cl_int is_max, count_include_pad;
} PoolArg;

/* ------------------------------------------------------------------ */
/* MaxPool, AveragePool */

static gboolean
pool_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpPoolParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  if (node->n_outputs > 1 && node->outputs[1] >= 0)
    return nnp_ocl_reject (why, node, "Indices output");
  return nnp_ocl_no_act (node, why);
}

typedef struct {
  NnpOclState base;
  PoolArg pool;
} PoolState;

static gpointer
pool_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpPoolParams *p = node->params;
  PoolState *s =
      nnp_ocl_state_new (dev, node, sizeof (PoolState), "nn.cl", "pool_f32", NULL, error);
  PoolArg *a;

  if (s == NULL)
    return NULL;
  a = &s->pool;
  a->planes = (cl_int) p->planes;
  for (int d = 0; d < 3; d++) {
    a->in[d] = (cl_int) p->in[d];
    a->out[d] = (cl_int) p->out[d];
    a->kernel[d] = (cl_int) p->kernel[d];
    a->stride[d] = (cl_int) p->stride[d];
    a->dilation[d] = (cl_int) p->dilation[d];
    a->pad[d] = (cl_int) p->pad_begin[d];
    a->pad_end[d] = (cl_int) p->pad_end[d];
  }
  a->is_max = node->op == NNP_OP_MAX_POOL;
  a->count_include_pad = p->count_include_pad;
  return s;
}

static gboolean
pool_run (const NnpOclCall *call, GError **error)
{
  PoolState *s = call->state;
  const PoolArg *p = &s->pool;
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };

  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_raw (&a, sizeof (PoolArg), p);
  return nnp_ocl_launch_1d (call, &a, (size_t) p->planes * p->out[0] * p->out[1] * p->out[2],
                            error);
}

#define POOL_KERNEL \
  { \
    .supports = pool_supports, .prepare = pool_prepare, .run = pool_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_max_pool = POOL_KERNEL;
const NnpOclKernel nnp_ocl_kernel_average_pool = POOL_KERNEL;

/* ------------------------------------------------------------------ */
/* GlobalAveragePool, GlobalMaxPool: row reductions (ocl-reduce.c) */

static gpointer
gpool_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_ocl_rows_state_new (dev, node, sizeof (NnpOclRowsState), error);
}

static gboolean
gpool_run (const NnpOclCall *call, GError **error)
{
  const NnpPoolParams *p = call->node->params;

  return nnp_ocl_rows_run (
      call, call->state, (size_t) p->planes, (size_t) (p->in[0] * p->in[1] * p->in[2]),
      call->node->op == NNP_OP_GLOBAL_MAX_POOL ? NNP_OCL_RED_MAX : NNP_OCL_RED_MEAN, error);
}

#define GPOOL_KERNEL \
  { \
    .supports = pool_supports, .prepare = gpool_prepare, .run = gpool_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_global_average_pool = GPOOL_KERNEL;
const NnpOclKernel nnp_ocl_kernel_global_max_pool = GPOOL_KERNEL;
