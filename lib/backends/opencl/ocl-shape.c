/* OpenCL backend: launch code of the shape and data-movement ops
 * (kernels/copy.cl): buffer copies, Shape/Range/ConstantOfShape computed
 * once, Transpose/Slice/Expand, Concat/Split, Gather.  As
 * lib/backends/cpu/cpu-shape.c. */
#include "backends/opencl/ocl-ops.h"
#include "backend.h"
#include "ops/shape-params.h"

/* Host mirror of the kernels' CopyP (4-byte fields only). */
typedef struct {
  cl_int rank;
  cl_int dims[NNP_OCL_MAX_RANK];
  cl_int strides[NNP_OCL_MAX_RANK];
  cl_int offset, n;
} CopyArg;

/* ------------------------------------------------------------------ */
/* Data movement */

static gboolean
esize_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    if (v && nnp_ocl_esize_suffix (nnp_dtype_size (v->dtype)) == NULL)
      return nnp_ocl_reject (why, node, "element size");
  }
  return nnp_ocl_no_act (node, why);
}

/* Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze: a buffer copy
 * (the executor aliases them instead where it can). */
static gpointer
alias_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_ocl_state_new (dev, node, sizeof (NnpOclState), NULL, NULL, NULL, error);
}

static gboolean
alias_run (const NnpOclCall *call, GError **error)
{
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);

  if (!nnp_ocl_copy_buffer (call, &call->in[0], &call->out[0], nnp_ocl_value_nbytes (y), error))
    return FALSE;
  if (call->node->op == NNP_OP_DROPOUT && call->node->n_outputs > 1 && call->out[1].mem) {
    const NnpDropoutParams *p = call->node->params;
    const NnpValue *mask = nnp_node_output (call->graph, call->node, 1);
    cl_int err = clEnqueueFillBuffer (call->dev->queue, call->out[1].mem, p->mask_value,
                                      (size_t) p->mask_esize, call->out[1].offset,
                                      nnp_ocl_value_nbytes (mask), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return nnp_ocl_call_error (call, err, "filling a buffer", error);
  }
  return TRUE;
}

#define ALIAS_KERNEL \
  { \
    .supports = esize_supports, .prepare = alias_prepare, .run = alias_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_identity = ALIAS_KERNEL;
const NnpOclKernel nnp_ocl_kernel_dropout = ALIAS_KERNEL;
const NnpOclKernel nnp_ocl_kernel_reshape = ALIAS_KERNEL;
const NnpOclKernel nnp_ocl_kernel_flatten = ALIAS_KERNEL;
const NnpOclKernel nnp_ocl_kernel_squeeze = ALIAS_KERNEL;
const NnpOclKernel nnp_ocl_kernel_unsqueeze = ALIAS_KERNEL;

/* Shape, Range, ConstantOfShape: outputs that do not depend on input data,
 * computed once on the host backend (lib/backend.h: run_node) and uploaded. */
typedef struct {
  NnpOclState base; /* tables[0]: the output */
  gsize nbytes;
} MadeState;

static gpointer
made_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  MadeState *s = nnp_ocl_state_new (dev, node, sizeof (MadeState), NULL, NULL, NULL, error);
  const NnpValue *y = nnp_node_output (graph, node, 0);
  const NnpBackend *host = nnp_backend_host ();
  g_autoptr (NnpTensor) out = NULL;
  g_autofree NnpTensor **ins = NULL;
  gboolean ok;

  if (s == NULL)
    return NULL;
  out = nnp_tensor_new (y->dtype, &y->shape, error);
  ins = g_new0 (NnpTensor *, MAX (node->n_inputs, 1));
  /* inputs: shape-only tensors (no data is read by these kernels) */
  for (int k = 0; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v)
      ins[k] = v->constant ? nnp_tensor_ref (v->constant)
                           : nnp_tensor_new_wrapped (v->dtype, &v->shape, NULL, NULL, NULL);
  }
  ok = out != NULL && host != NULL && host->supports_node (NULL, graph, node, NULL)
       && host->run_node (graph, node, ins, &out, error);
  for (int k = 0; k < node->n_inputs; k++)
    if (ins[k])
      nnp_tensor_unref (ins[k]);
  if (!ok) {
    if (error && *error == NULL)
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no OpenCL kernel");
    nnp_ocl_state_free (s);
    return NULL;
  }
  s->base.tables[0] = nnp_ocl_alloc (dev, MAX (out->nbytes, 4), "a constant output", error);
  if (s->base.tables[0] == NULL
      || !nnp_ocl_write (dev, s->base.tables[0], 0, out->data, out->nbytes, FALSE, error)) {
    nnp_ocl_state_free (s);
    return NULL;
  }
  s->nbytes = out->nbytes;
  return s;
}

static gboolean
made_run (const NnpOclCall *call, GError **error)
{
  MadeState *s = call->state;
  NnpOclMem src = { s->base.tables[0], 0 };

  return nnp_ocl_copy_buffer (call, &src, &call->out[0], s->nbytes, error);
}

static gboolean
made_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (node->op == NNP_OP_CONSTANT_OF_SHAPE) {
    NnpValue *v = nnp_node_input (graph, node, 0);
    if (v == NULL || v->constant == NULL)
      return nnp_ocl_reject (why, node, "shape computed at run time");
  }
  if (node->op == NNP_OP_RANGE) {
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v == NULL || v->constant == NULL)
        return nnp_ocl_reject (why, node, "bounds computed at run time");
    }
  }
  return nnp_ocl_no_act (node, why);
}

#define MADE_KERNEL \
  { \
    .supports = made_supports, .prepare = made_prepare, .run = made_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_shape = MADE_KERNEL;
const NnpOclKernel nnp_ocl_kernel_constant_of_shape = MADE_KERNEL;
const NnpOclKernel nnp_ocl_kernel_range = MADE_KERNEL;

/* Constant: no kernel (its output is a constant the executor uploads). */
const NnpOclKernel nnp_ocl_kernel_constant = { NULL };

/* Transpose, Slice, Expand */
static gboolean
strided_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpCopyParams *p = node->params;

  if (p == NULL || nnp_ocl_esize_suffix ((gsize) p->copy.esize) == NULL)
    return nnp_ocl_reject (why, node, "element size");
  return nnp_ocl_no_act (node, why);
}

typedef struct {
  NnpOclState base;
  CopyArg copy;
} StridedState;

static gpointer
strided_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpCopyParams *p = node->params;
  const NnpStridedCopy *c = &p->copy;
  g_autofree char *name =
      g_strconcat ("strided_copy_", nnp_ocl_esize_suffix ((gsize) c->esize), NULL);
  StridedState *s =
      nnp_ocl_state_new (dev, node, sizeof (StridedState), "copy.cl", name, NULL, error);
  int64_t n = 1;

  if (s == NULL)
    return NULL;
  s->base.esize = (gsize) c->esize;
  s->copy.rank = c->rank;
  for (int d = 0; d < c->rank; d++) {
    s->copy.dims[d] = (cl_int) c->dims[d];
    s->copy.strides[d] = (cl_int) (c->src_strides[d] / c->esize);
    n *= c->dims[d];
  }
  s->copy.offset = (cl_int) (c->src_offset / c->esize);
  s->copy.n = (cl_int) (c->rank > 0 ? n : 1);
  return s;
}

static gboolean
strided_run (const NnpOclCall *call, GError **error)
{
  StridedState *s = call->state;
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };

  nnp_ocl_arg_mem (&a, &call->in[0], s->base.esize);
  nnp_ocl_arg_mem (&a, &call->out[0], s->base.esize);
  nnp_ocl_arg_raw (&a, sizeof (CopyArg), &s->copy);
  return nnp_ocl_launch_1d (call, &a, (size_t) s->copy.n, error);
}

#define STRIDED_KERNEL \
  { \
    .supports = strided_supports, .prepare = strided_prepare, .run = strided_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_transpose = STRIDED_KERNEL;
const NnpOclKernel nnp_ocl_kernel_slice = STRIDED_KERNEL;
const NnpOclKernel nnp_ocl_kernel_expand = STRIDED_KERNEL;

/* Concat / Split: outer rows of part_row bytes per part (rows_copy_N). */
static gpointer
concat_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpValue *v =
      node->op == NNP_OP_SPLIT ? nnp_node_input (graph, node, 0) : nnp_node_output (graph, node, 0);
  gsize esize = nnp_dtype_size (v->dtype);
  g_autofree char *name = g_strconcat ("rows_copy_", nnp_ocl_esize_suffix (esize), NULL);
  NnpOclState *s =
      nnp_ocl_state_new (dev, node, sizeof (NnpOclState), "copy.cl", name, NULL, error);

  if (s)
    s->esize = esize;
  return s;
}

static gboolean
concat_run (const NnpOclCall *call, GError **error)
{
  const NnpConcatParams *p = call->node->params;
  NnpOclState *s = call->state;
  gboolean split = call->node->op == NNP_OP_SPLIT;
  int64_t col = 0;
  int whole = (int) (p->whole_row / (int64_t) s->esize);

  for (int k = 0; k < p->n_parts; k++) {
    int part = (int) (p->part_row[k] / (int64_t) s->esize);
    const NnpOclMem *src = split ? &call->in[0] : &call->in[k];
    const NnpOclMem *dst = split ? &call->out[k] : &call->out[0];
    NnpOclArgs a = { s->k[0], 0, CL_SUCCESS };

    if (part > 0 && p->outer > 0 && src->mem && dst->mem) {
      nnp_ocl_arg_mem (&a, src, s->esize);
      nnp_ocl_arg_mem (&a, dst, s->esize);
      nnp_ocl_arg_int (&a, (int) p->outer);
      nnp_ocl_arg_int (&a, part);
      nnp_ocl_arg_int (&a, whole);
      nnp_ocl_arg_int (&a, (int) col);
      nnp_ocl_arg_int (&a, !split);
      if (!nnp_ocl_launch_1d (call, &a, (size_t) p->outer * part, error))
        return FALSE;
    }
    col += part;
  }
  return TRUE;
}

#define CONCAT_KERNEL \
  { \
    .supports = esize_supports, .prepare = concat_prepare, .run = concat_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_concat = CONCAT_KERNEL;
const NnpOclKernel nnp_ocl_kernel_split = CONCAT_KERNEL;

/* Gather */
static gboolean
gather_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpGatherParams *p = node->params;

  if (p == NULL || (p->index_esize != 4 && p->index_esize != 8))
    return nnp_ocl_reject (why, node, "index type");
  return esize_supports (graph, node, why);
}

/* Index j of a Gather's int32/int64 indices. */
static int64_t
gather_index (const NnpGatherParams *p, const void *indices, int64_t j)
{
  return p->index_esize == 8 ? ((const int64_t *) indices)[j] : ((const int32_t *) indices)[j];
}

static void
gather_set_error (const NnpNode *node, int64_t index, GError **error)
{
  const NnpGatherParams *p = node->params;

  /* the CPU kernel's wording */
  nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                      "index %" G_GINT64_FORMAT
                      " is out of range for axis %d of size %" G_GINT64_FORMAT,
                      index, p->axis, p->axis_dim);
}

/* Constant indices are validated once here; the others by the kernel on
 * every run (status words, see gather_checks). */
static gpointer
gather_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpGatherParams *p = node->params;
  const NnpValue *y = nnp_node_output (graph, node, 0);
  const NnpValue *iv = nnp_node_input (graph, node, 1);
  gsize esize = nnp_dtype_size (y->dtype);
  g_autofree char *name = g_strconcat ("gather_", nnp_ocl_esize_suffix (esize), NULL);
  NnpOclState *s;

  if (iv->constant != NULL) {
    g_return_val_if_fail (iv->constant->nbytes >= (gsize) (p->n_indices * p->index_esize), NULL);
    for (int64_t j = 0; j < p->n_indices; j++) {
      int64_t idx = gather_index (p, iv->constant->data, j);
      if (idx < -p->axis_dim || idx >= p->axis_dim) {
        gather_set_error (node, idx, error);
        return NULL;
      }
    }
  }
  s = nnp_ocl_state_new (dev, node, sizeof (NnpOclState), "copy.cl", name, NULL, error);
  if (s)
    s->esize = esize;
  return s;
}

static gboolean
gather_checks (const NnpGraph *graph, const NnpNode *node)
{
  const NnpValue *iv = nnp_node_input (graph, node, 1);
  const NnpGatherParams *p = node->params;

  return iv != NULL && iv->constant == NULL && p != NULL && p->n_indices > 0;
}

static void
gather_report (const NnpGraph *graph, const NnpNode *node, const cl_int *status, GError **error)
{
  gint64 index = (gint64) (((guint64) (guint32) status[2] << 32) | (guint32) status[1]);

  gather_set_error (node, index, error);
}

static gboolean
gather_run (const NnpOclCall *call, GError **error)
{
  const NnpGatherParams *p = call->node->params;
  NnpOclState *s = call->state;
  NnpOclArgs a = { s->k[0], 0, CL_SUCCESS };
  int inner = (int) (p->inner_bytes / (int64_t) s->esize);
  size_t n = (size_t) (p->outer * p->n_indices * inner);
  int n_check = call->status.mem ? (int) p->n_indices : 0;

  nnp_ocl_arg_mem (&a, &call->in[0], s->esize);
  nnp_ocl_arg_raw (&a, sizeof (cl_mem), &call->in[1].mem);
  nnp_ocl_arg_raw (&a, sizeof (cl_mem), &call->in[1].mem);
  nnp_ocl_arg_int (&a, (int) (call->in[1].offset / (gsize) p->index_esize));
  nnp_ocl_arg_mem (&a, &call->out[0], s->esize);
  nnp_ocl_arg_int (&a, p->index_esize == 8);
  nnp_ocl_arg_int (&a, (int) p->axis_dim);
  nnp_ocl_arg_int (&a, MAX (inner, 1));
  nnp_ocl_arg_int (&a, (int) MAX (p->n_indices, 1));
  nnp_ocl_arg_int (&a, (int) n);
  /* a NULL buffer when unchecked (constant indices, validated in prepare) */
  nnp_ocl_arg_mem (&a, &call->status, sizeof (cl_int));
  nnp_ocl_arg_int (&a, n_check);
  /* every index is validated even when no element is copied (empty data) */
  return nnp_ocl_launch_1d (call, &a, MAX (n, (size_t) n_check), error);
}

const NnpOclKernel nnp_ocl_kernel_gather = {
  .supports = gather_supports,
  .prepare = gather_prepare,
  .run = gather_run,
  .free_state = nnp_ocl_state_free,
  .checks = gather_checks,
  .report = gather_report,
};
