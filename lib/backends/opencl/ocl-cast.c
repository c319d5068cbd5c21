/* OpenCL backend: launch code of Cast (kernels/elementwise.cl) between
 * float32, int32, int64, uint8, int8 and bool, and float16 / bfloat16 to and
 * from float32 (the 16-bit graph pass, lib/specialize/half.c, puts such Casts at
 * a stage's 16-bit edges: the 16-bit tensors cross to the device as they are
 * and convert there).  As lib/backends/cpu/cpu-cast.c. */
#include "backends/opencl/ocl-ops.h"

typedef struct {
  NnpDType from, to;
  const char *name;
} CastEntry;

static const CastEntry cast_table[] = {
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_INT32, "cast_f32_i32" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_INT64, "cast_f32_i64" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_UINT8, "cast_f32_u8" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_INT8, "cast_f32_i8" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_BOOL, "cast_f32_bool" },
  { NNP_DTYPE_INT32, NNP_DTYPE_FLOAT32, "cast_i32_f32" },
  { NNP_DTYPE_INT64, NNP_DTYPE_FLOAT32, "cast_i64_f32" },
  { NNP_DTYPE_UINT8, NNP_DTYPE_FLOAT32, "cast_u8_f32" },
  { NNP_DTYPE_INT8, NNP_DTYPE_FLOAT32, "cast_i8_f32" },
  { NNP_DTYPE_BOOL, NNP_DTYPE_FLOAT32, "cast_bool_f32" },
  { NNP_DTYPE_INT32, NNP_DTYPE_INT64, "cast_i32_i64" },
  { NNP_DTYPE_INT64, NNP_DTYPE_INT32, "cast_i64_i32" },
  { NNP_DTYPE_INT64, NNP_DTYPE_BOOL, "cast_i64_bool" },
  { NNP_DTYPE_INT32, NNP_DTYPE_BOOL, "cast_i32_bool" },
  { NNP_DTYPE_BOOL, NNP_DTYPE_INT64, "cast_bool_i64" },
  { NNP_DTYPE_BOOL, NNP_DTYPE_INT32, "cast_bool_i32" },
  { NNP_DTYPE_FLOAT16, NNP_DTYPE_FLOAT32, "cast_f16_f32" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_FLOAT16, "cast_f32_f16" },
  { NNP_DTYPE_BFLOAT16, NNP_DTYPE_FLOAT32, "cast_bf16_f32" },
  { NNP_DTYPE_FLOAT32, NNP_DTYPE_BFLOAT16, "cast_f32_bf16" },
};

static const char *
cast_name (NnpDType from, NnpDType to)
{
  for (guint i = 0; i < G_N_ELEMENTS (cast_table); i++)
    if (cast_table[i].from == from && cast_table[i].to == to)
      return cast_table[i].name;
  return NULL;
}

static gboolean
cast_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  NnpDType from = nnp_ocl_in_dtype (graph, node, 0), to = nnp_ocl_out_dtype (graph, node, 0);

  if (from != to && cast_name (from, to) == NULL) {
    g_autofree char *what =
        g_strdup_printf ("%s to %s", nnp_dtype_name (from), nnp_dtype_name (to));
    return nnp_ocl_reject (why, node, what);
  }
  return nnp_ocl_no_act (node, why);
}

static gpointer
cast_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  NnpDType from = nnp_ocl_in_dtype (graph, node, 0), to = nnp_ocl_out_dtype (graph, node, 0);

  return nnp_ocl_state_new (dev, node, sizeof (NnpOclState), "elementwise.cl",
                            from == to ? NULL : cast_name (from, to), NULL, error);
}

static gboolean
cast_run (const NnpOclCall *call, GError **error)
{
  NnpOclState *s = call->state;
  const NnpValue *x = nnp_node_input (call->graph, call->node, 0);
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);
  size_t n = (size_t) nnp_shape_numel (&y->shape);
  NnpOclArgs a = { s->k[0], 0, CL_SUCCESS };

  if (s->n_kernels == 0)
    return nnp_ocl_copy_buffer (call, &call->in[0], &call->out[0], nnp_ocl_value_nbytes (y), error);
  nnp_ocl_arg_mem (&a, &call->in[0], nnp_dtype_size (x->dtype));
  nnp_ocl_arg_mem (&a, &call->out[0], nnp_dtype_size (y->dtype));
  nnp_ocl_arg_int (&a, (int) n);
  return nnp_ocl_launch_1d (call, &a, n, error);
}

const NnpOclKernel nnp_ocl_kernel_cast = {
  .supports = cast_supports,
  .prepare = cast_prepare,
  .run = cast_run,
  .free_state = nnp_ocl_state_free,
};
