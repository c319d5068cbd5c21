/* OpenCL backend: the kernel table, the supports() query and the helpers
 * the per-family launch files share (ocl-ops.h).
 *
 * The table is generated from op-list.h like the CPU backend's
 * (lib/backends/cpu/cpu-kernels.c): every op `id` has an entry
 * &nnp_ocl_kernel_<id>, defined in the op family's ocl-<family>.c; ops
 * without an OpenCL kernel have an empty one and nnp_ocl_kernel() gives NULL
 * for them (the partitioner keeps those ops on the CPU).  `supports` refines
 * that per node (dtypes, attribute cases). */
#include "backends/opencl/ocl-ops.h"

/* ------------------------------------------------------------------ */
/* Node state */

void
nnp_ocl_state_free (gpointer data)
{
  NnpOclState *s = data;

  if (s == NULL)
    return;
  for (int i = 0; i < s->n_kernels; i++)
    if (s->k[i])
      clReleaseKernel (s->k[i]);
  for (guint i = 0; i < G_N_ELEMENTS (s->tables); i++)
    if (s->tables[i])
      clReleaseMemObject (s->tables[i]);
  g_free (s);
}

gpointer
nnp_ocl_state_new (NnpOclDevice *dev, const NnpNode *node, gsize size, const char *file,
                   const char *k0, const char *k1, GError **error)
{
  NnpOclState *s;
  GError *err = NULL;

  g_return_val_if_fail (size >= sizeof (NnpOclState), NULL);
  s = g_malloc0 (size);
  if (k0) {
    s->k[s->n_kernels++] = nnp_ocl_create_kernel (dev, file, k0, &err);
    if (err == NULL && k1)
      s->k[s->n_kernels++] = nnp_ocl_create_kernel (dev, file, k1, &err);
  }
  if (err) {
    g_propagate_prefixed_error (error, err, "node '%s' (%s): ", node->name, node->op_type);
    nnp_ocl_state_free (s);
    return NULL;
  }
  s->act.act = node->act;
  s->act.alpha = node->act_alpha;
  s->act.beta = node->act_beta;
  return s;
}

/* ------------------------------------------------------------------ */
/* Arguments and launches (ocl-ops.h) */

void
nnp_ocl_arg_raw (NnpOclArgs *a, size_t size, const void *value)
{
  if (a->err == CL_SUCCESS)
    a->err = clSetKernelArg (a->k, a->i, size, value);
  a->i++;
}

void
nnp_ocl_arg_int (NnpOclArgs *a, int v)
{
  cl_int x = v;
  nnp_ocl_arg_raw (a, sizeof x, &x);
}

void
nnp_ocl_arg_float (NnpOclArgs *a, float v)
{
  cl_float x = v;
  nnp_ocl_arg_raw (a, sizeof x, &x);
}

void
nnp_ocl_arg_mem (NnpOclArgs *a, const NnpOclMem *m, gsize esize)
{
  nnp_ocl_arg_raw (a, sizeof (cl_mem), &m->mem);
  nnp_ocl_arg_int (a, (int) (m->offset / esize));
}

gboolean
nnp_ocl_call_error (const NnpOclCall *call, cl_int err, const char *what, GError **error)
{
  g_autoptr (GError) e = NULL;

  nnp_ocl_set_error (&e, call->dev, err, "%s", what);
  nnp_node_set_error (error, NNP_ERROR_DEVICE, call->node, "%s", e->message);
  return FALSE;
}

static size_t
round_up (size_t n, size_t m)
{
  return (n + m - 1) / m * m;
}

gboolean
nnp_ocl_launch_1d (const NnpOclCall *call, NnpOclArgs *a, size_t n, GError **error)
{
  size_t global;
  cl_int err;

  if (a->err != CL_SUCCESS)
    return nnp_ocl_call_error (call, a->err, "setting kernel arguments", error);
  if (n == 0)
    return TRUE;
  global = round_up (n, 64);
  err = clEnqueueNDRangeKernel (call->dev->queue, a->k, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return nnp_ocl_call_error (call, err, "enqueueing a kernel", error);
  return TRUE;
}

gboolean
nnp_ocl_launch (const NnpOclCall *call, NnpOclArgs *a, cl_uint dims, const size_t *global,
                const size_t *local, GError **error)
{
  cl_int err;

  if (a->err != CL_SUCCESS)
    return nnp_ocl_call_error (call, a->err, "setting kernel arguments", error);
  for (cl_uint d = 0; d < dims; d++)
    if (global[d] == 0)
      return TRUE;
  err = clEnqueueNDRangeKernel (call->dev->queue, a->k, dims, NULL, global, local, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return nnp_ocl_call_error (call, err, "enqueueing a kernel", error);
  return TRUE;
}

size_t
nnp_ocl_work_group_max (NnpOclDevice *dev, cl_kernel k)
{
  size_t wg = 0;

  if (clGetKernelWorkGroupInfo (k, dev->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL)
      != CL_SUCCESS)
    return 1;
  return MIN (wg, dev->max_work_group);
}

gboolean
nnp_ocl_copy_buffer (const NnpOclCall *call, const NnpOclMem *src, const NnpOclMem *dst,
                     gsize bytes, GError **error)
{
  cl_int err;

  if (bytes == 0 || (src->mem == dst->mem && src->offset == dst->offset))
    return TRUE;
  err = clEnqueueCopyBuffer (call->dev->queue, src->mem, dst->mem, src->offset, dst->offset, bytes,
                             0, NULL, NULL);
  if (err != CL_SUCCESS)
    return nnp_ocl_call_error (call, err, "copying a buffer", error);
  return TRUE;
}

gsize
nnp_ocl_value_nbytes (const NnpValue *v)
{
  return (gsize) nnp_shape_numel (&v->shape) * nnp_dtype_size (v->dtype);
}

NnpDType
nnp_ocl_in_dtype (const NnpGraph *graph, const NnpNode *node, int k)
{
  NnpValue *v = nnp_node_input (graph, node, k);
  return v ? v->dtype : NNP_DTYPE_UNDEFINED;
}

NnpDType
nnp_ocl_out_dtype (const NnpGraph *graph, const NnpNode *node, int k)
{
  NnpValue *v = nnp_node_output (graph, node, k);
  return v ? v->dtype : NNP_DTYPE_UNDEFINED;
}

gboolean
nnp_ocl_reject (char **why, const NnpNode *node, const char *what)
{
  if (why)
    *why = g_strdup_printf ("%s: %s", node->op_type, what);
  return FALSE;
}

gboolean
nnp_ocl_float_io (const NnpGraph *graph, const NnpNode *node, char **why)
{
  for (int k = 0; k < node->n_inputs; k++) {
    NnpDType d = nnp_ocl_in_dtype (graph, node, k);
    if (d != NNP_DTYPE_UNDEFINED && d != NNP_DTYPE_FLOAT32)
      return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  }
  return TRUE;
}

gboolean
nnp_ocl_no_act (const NnpNode *node, char **why)
{
  if (node->act != NNP_ACT_NONE)
    return nnp_ocl_reject (why, node, "fused activation on this op");
  return TRUE;
}

const char *
nnp_ocl_esize_suffix (gsize esize)
{
  switch (esize) {
    case 1: return "1";
    case 2: return "2";
    case 4: return "4";
    case 8: return "8";
    default: return NULL;
  }
}

/* ------------------------------------------------------------------ */
/* The table, generated from op-list.h */

static const NnpOclKernel *const ocl_kernels[] = {
#define NNP_OP(ID, id, onnx, ...) [NNP_OP_##ID] = &nnp_ocl_kernel_##id,
#include <nnpipe/op-list.h>
#undef NNP_OP
};
G_STATIC_ASSERT (G_N_ELEMENTS (ocl_kernels) == NNP_OP_COUNT);

const NnpOclKernel *
nnp_ocl_kernel (NnpOpType op)
{
  if ((int) op < 0 || op >= NNP_OP_COUNT || ocl_kernels[op]->prepare == NULL)
    return NULL;
  return ocl_kernels[op];
}

gboolean
nnp_ocl_supports_node (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpOclKernel *k = nnp_ocl_kernel (node->op);

  if (why)
    *why = NULL;
  if (k == NULL)
    return nnp_ocl_reject (why, node, "no OpenCL kernel");
  /* kernels index with 32-bit ints */
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? node->n_outputs : node->n_inputs;
    for (int i = 0; i < n; i++) {
      NnpValue *v = pass ? nnp_node_output (graph, node, i) : nnp_node_input (graph, node, i);
      if (v && (nnp_shape_numel (&v->shape) < 0 || nnp_shape_numel (&v->shape) >= G_MAXINT32))
        return nnp_ocl_reject (why, node, "tensor too large or shape not static");
    }
  }
  if (node->params == NULL && node->op != NNP_OP_IDENTITY && node->op != NNP_OP_RESHAPE
      && node->op != NNP_OP_FLATTEN && node->op != NNP_OP_SQUEEZE && node->op != NNP_OP_UNSQUEEZE
      && node->op != NNP_OP_DROPOUT)
    return nnp_ocl_reject (why, node, "not specialised");
  return k->supports ? k->supports (graph, node, why) : TRUE;
}
