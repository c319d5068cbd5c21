/* OpenCL backend: launch code of BatchNormalization, Softmax, LogSoftmax,
 * ArgMax (kernels/nn.cl) and Pad (kernels/copy.cl).  As
 * lib/backends/cpu/cpu-nn.c, plus ArgMax (cpu-reduce.c on the CPU), which
 * walks an axis as Softmax does. */
#include "backends/opencl/ocl-ops.h"
#include "ops/nn-params.h"

/* Host mirror of the kernels' PadP (4-byte fields only). */
typedef struct {
  cl_int rank;
  cl_int in[NNP_OCL_MAX_RANK], out[NNP_OCL_MAX_RANK], pad_begin[NNP_OCL_MAX_RANK];
  cl_int mode, n; /* mode: NNP_OCL_PAD_* */
} PadArg;

/* ------------------------------------------------------------------ */
/* BatchNormalization */

static gboolean
bn_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!nnp_ocl_float_io (graph, node, why))
    return FALSE;
  for (int k = 1; k < node->n_outputs; k++)
    if (node->outputs[k] >= 0)
      return nnp_ocl_reject (why, node, "training-mode outputs");
  return nnp_ocl_no_act (node, why);
}

static gpointer
bn_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_ocl_state_new (dev, node, sizeof (NnpOclState), "nn.cl", "batchnorm_f32", NULL, error);
}

static gboolean
bn_run (const NnpOclCall *call, GError **error)
{
  const NnpBatchNormParams *p = call->node->params;
  NnpOclState *s = call->state;
  NnpOclArgs a = { s->k[0], 0, CL_SUCCESS };
  size_t total = (size_t) (p->n * p->c * p->inner);

  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  for (int k = 1; k <= 4; k++)
    nnp_ocl_arg_mem (&a, &call->in[k], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_int (&a, (int) p->c);
  nnp_ocl_arg_int (&a, (int) MAX (p->inner, 1));
  nnp_ocl_arg_int (&a, (int) total);
  nnp_ocl_arg_float (&a, p->epsilon);
  return nnp_ocl_launch_1d (call, &a, total, error);
}

const NnpOclKernel nnp_ocl_kernel_batch_normalization = {
  .supports = bn_supports,
  .prepare = bn_prepare,
  .run = bn_run,
  .free_state = nnp_ocl_state_free,
};

/* ------------------------------------------------------------------ */
/* Softmax / LogSoftmax, ArgMax */

static gboolean
softmax_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!nnp_ocl_float_io (graph, node, why))
    return FALSE;
  return nnp_ocl_no_act (node, why);
}

static gpointer
softmax_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_ocl_state_new (dev, node, sizeof (NnpOclState), "nn.cl",
                            node->op == NNP_OP_ARG_MAX ? "argmax_f32" : "softmax_f32", NULL, error);
}

static gboolean
softmax_run (const NnpOclCall *call, GError **error)
{
  NnpOclState *s = call->state;
  NnpOclArgs a = { s->k[0], 0, CL_SUCCESS };
  int64_t outer, dim, inner;
  int flag;

  if (call->node->op == NNP_OP_ARG_MAX) {
    const NnpArgMaxParams *p = call->node->params;
    outer = p->outer;
    dim = p->dim;
    inner = p->inner;
    flag = p->select_last_index;
  } else {
    const NnpSoftmaxParams *p = call->node->params;
    outer = p->outer;
    dim = p->dim;
    inner = p->inner;
    flag = call->node->op == NNP_OP_LOG_SOFTMAX;
  }
  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], call->node->op == NNP_OP_ARG_MAX ? 8 : 4);
  nnp_ocl_arg_int (&a, (int) outer);
  nnp_ocl_arg_int (&a, (int) dim);
  nnp_ocl_arg_int (&a, (int) inner);
  nnp_ocl_arg_int (&a, flag);
  return nnp_ocl_launch_1d (call, &a, (size_t) (outer * inner), error);
}

#define SOFTMAX_KERNEL \
  { \
    .supports = softmax_supports, .prepare = softmax_prepare, .run = softmax_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_softmax = SOFTMAX_KERNEL;
const NnpOclKernel nnp_ocl_kernel_log_softmax = SOFTMAX_KERNEL;
const NnpOclKernel nnp_ocl_kernel_arg_max = SOFTMAX_KERNEL;

/* ------------------------------------------------------------------ */
/* Pad (kernels/copy.cl) */
static gboolean
pad_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpPadParams *p = node->params;

  if (p == NULL || nnp_ocl_esize_suffix ((gsize) p->esize) == NULL)
    return nnp_ocl_reject (why, node, "element size");
  if (p->rank > NNP_OCL_MAX_RANK)
    return nnp_ocl_reject (why, node, "rank too large");
  return nnp_ocl_no_act (node, why);
}

typedef struct {
  NnpOclState base;
  PadArg pad;
} PadState;

static gpointer
pad_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpPadParams *p = node->params;
  g_autofree char *name = g_strconcat ("pad_", nnp_ocl_esize_suffix ((gsize) p->esize), NULL);
  PadState *s = nnp_ocl_state_new (dev, node, sizeof (PadState), "copy.cl", name, NULL, error);
  int64_t n = 1;

  if (s == NULL)
    return NULL;
  s->base.esize = (gsize) p->esize;
  s->pad.rank = p->rank;
  for (int d = 0; d < p->rank; d++) {
    s->pad.in[d] = (cl_int) p->in[d];
    s->pad.out[d] = (cl_int) p->out[d];
    s->pad.pad_begin[d] = (cl_int) p->pad_begin[d];
    n *= p->out[d];
  }
  s->pad.mode = p->mode == NNP_PAD_CONSTANT  ? NNP_OCL_PAD_CONSTANT
                : p->mode == NNP_PAD_REFLECT ? NNP_OCL_PAD_REFLECT
                : p->mode == NNP_PAD_EDGE    ? NNP_OCL_PAD_EDGE
                                             : NNP_OCL_PAD_WRAP;
  s->pad.n = (cl_int) n;
  return s;
}

static gboolean
pad_run (const NnpOclCall *call, GError **error)
{
  const NnpPadParams *p = call->node->params;
  PadState *s = call->state;
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };

  nnp_ocl_arg_mem (&a, &call->in[0], s->base.esize);
  nnp_ocl_arg_mem (&a, &call->out[0], s->base.esize);
  nnp_ocl_arg_raw (&a, sizeof (PadArg), &s->pad);
  nnp_ocl_arg_raw (&a, s->base.esize, p->value);
  return nnp_ocl_launch_1d (call, &a, (size_t) s->pad.n, error);
}

const NnpOclKernel nnp_ocl_kernel_pad = {
  .supports = pad_supports,
  .prepare = pad_prepare,
  .run = pad_run,
  .free_state = nnp_ocl_state_free,
};
