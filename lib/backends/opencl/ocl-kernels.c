/* OpenCL backend: per-op launch code and the supports() query.
 *
 * The kernel table is generated from op-list.h: every op has an entry, NULL
 * where the backend has no kernel (the partitioner keeps those ops on the
 * CPU).  `supports` refines that per node (dtypes, attribute cases).
 *
 * Each node gets its own cl_kernel objects in `prepare` (kernel arguments
 * are per kernel object, so stages running in different threads never share
 * one), plus whatever tables the op needs on the device.  `run` sets the
 * arguments (device locations change between runs only at stage boundaries)
 * and enqueues on the device's in-order queue. */
#include "backends/opencl/opencl.h"
#include "backends/cpu/cpu.h"
#include "ops/conv-params.h"
#include "ops/elementwise-params.h"
#include "ops/nn-params.h"
#include "ops/shape-params.h"

#include <nnpipe/log.h>

#include <math.h>
#include <string.h>

#define OCL_MAX_RANK 8
#define TILE_LOCAL 8            /* tiled kernels: 8 x 8 work-groups */

/* ------------------------------------------------------------------ */
/* Host mirrors of the kernel argument structs (4-byte fields only). */

typedef struct {
  cl_int act;
  cl_float alpha, beta;
} ActArg;

typedef struct {
  cl_int rank;
  cl_int dims[OCL_MAX_RANK];
  cl_int s[3][OCL_MAX_RANK];
} BcastArg;

typedef struct {
  cl_int n, c, m, g;
  cl_int ih, iw, oh, ow;
  cl_int kh, kw, sh, sw, dh, dw, ph, pw;
  cl_int has_bias, is_1x1;
} ConvArg;

typedef struct {
  cl_int m, n, k;
  cl_int a_rs, a_cs, b_rs, b_cs;
  cl_int c_rs, c_cs, has_c;
  cl_float alpha, beta;
  cl_int batch_rank;
  cl_int bdims[OCL_MAX_RANK];
  cl_int a_bs[OCL_MAX_RANK];
  cl_int b_bs[OCL_MAX_RANK];
} GemmArg;

typedef struct {
  cl_int planes;
  cl_int in[3], out[3], kernel[3], stride[3], dilation[3], pad[3], pad_end[3];
  cl_int is_max, count_include_pad;
} PoolArg;

typedef struct {
  cl_int rank;
  cl_int dims[OCL_MAX_RANK];
  cl_int reduced[OCL_MAX_RANK];
  cl_int count, n_out;
} ReduceArg;

typedef struct {
  cl_int rank;
  cl_int in[OCL_MAX_RANK], out[OCL_MAX_RANK], taps[OCL_MAX_RANK], tab_off[OCL_MAX_RANK];
  cl_int n_out;
  cl_float extrapolation;
} ResizeArg;

typedef struct {
  cl_int rank;
  cl_int dims[OCL_MAX_RANK];
  cl_int strides[OCL_MAX_RANK];
  cl_int offset, n;
} CopyArg;

typedef struct {
  cl_int rank;
  cl_int in[OCL_MAX_RANK], out[OCL_MAX_RANK], pad_begin[OCL_MAX_RANK];
  cl_int mode, n;
} PadArg;

/* Unary op codes (kernels/elementwise.cl) */
enum {
  UN_COPY, UN_RELU, UN_LEAKY_RELU, UN_CLIP, UN_HARD_SIGMOID, UN_HARD_SWISH, UN_SIGMOID,
  UN_TANH, UN_EXP, UN_LOG, UN_ERF, UN_SQRT, UN_RECIPROCAL, UN_NEG, UN_ABS, UN_FLOOR, UN_CEIL,
};
/* Binary op codes */
enum {
  BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_MAX, BIN_MIN, BIN_FIRST, BIN_EQUAL,
  BIN_LESS, BIN_GREATER,
};
enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN };

/* Per-node state: kernels and prepared arguments. */
typedef struct {
  cl_kernel k[2];
  int n_kernels;
  gboolean tiled;
  size_t local;                  /* reduce_rows local size */
  int code;                      /* op code for the kernel */
  int n_steps;                   /* Sum/Max/Min with > 2 inputs */
  BcastArg *bc;                  /* n_steps entries */
  ActArg act;
  cl_mem table_idx, table_w;     /* Resize */
  cl_mem host_made;              /* Shape / Range: output computed once */
  gsize esize;
  union {
    ConvArg conv;
    GemmArg gemm;
    PoolArg pool;
    ReduceArg reduce;
    ResizeArg resize;
    CopyArg copy;
    PadArg pad;
  } u;
} OpState;

static void
state_free (gpointer data)
{
  OpState *s = data;

  if (s == NULL)
    return;
  for (int i = 0; i < s->n_kernels; i++)
    if (s->k[i])
      clReleaseKernel (s->k[i]);
  if (s->table_idx)
    clReleaseMemObject (s->table_idx);
  if (s->table_w)
    clReleaseMemObject (s->table_w);
  if (s->host_made)
    clReleaseMemObject (s->host_made);
  g_free (s->bc);
  g_free (s);
}

static OpState *
state_new (NnpOclDevice *dev, const NnpNode *node, const char *file, const char *k0,
           const char *k1, GError **error)
{
  OpState *s = g_new0 (OpState, 1);
  GError *err = NULL;

  if (k0) {
    s->k[s->n_kernels++] = nnp_ocl_create_kernel (dev, file, k0, &err);
    if (err == NULL && k1)
      s->k[s->n_kernels++] = nnp_ocl_create_kernel (dev, file, k1, &err);
  }
  if (err) {
    g_propagate_prefixed_error (error, err, "node '%s' (%s): ", node->name, node->op_type);
    state_free (s);
    return NULL;
  }
  s->act.act = node->act;
  s->act.alpha = node->act_alpha;
  s->act.beta = node->act_beta;
  return s;
}

/* ------------------------------------------------------------------ */
/* Arguments and launches */

typedef struct {
  cl_kernel k;
  cl_uint i;
  cl_int err;
} Args;

static void
arg_raw (Args *a, size_t size, const void *value)
{
  if (a->err == CL_SUCCESS)
    a->err = clSetKernelArg (a->k, a->i, size, value);
  a->i++;
}

static void
arg_int (Args *a, int v)
{
  cl_int x = v;
  arg_raw (a, sizeof x, &x);
}

static void
arg_float (Args *a, float v)
{
  cl_float x = v;
  arg_raw (a, sizeof x, &x);
}

/* A tensor: buffer + element offset. */
static void
arg_mem (Args *a, const NnpOclMem *m, gsize esize)
{
  arg_raw (a, sizeof (cl_mem), &m->mem);
  arg_int (a, (int) (m->offset / esize));
}

static gboolean
call_error (const NnpOclCall *call, cl_int err, const char *what, GError **error)
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

/* One item per element; the kernel checks its index. */
static gboolean
launch_1d (const NnpOclCall *call, Args *a, size_t n, GError **error)
{
  size_t global;
  cl_int err;

  if (a->err != CL_SUCCESS)
    return call_error (call, a->err, "setting kernel arguments", error);
  if (n == 0)
    return TRUE;
  global = round_up (n, 64);
  err = clEnqueueNDRangeKernel (call->dev->queue, a->k, 1, NULL, &global, NULL, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return call_error (call, err, "enqueueing a kernel", error);
  return TRUE;
}

static gboolean
launch (const NnpOclCall *call, Args *a, cl_uint dims, const size_t *global,
        const size_t *local, GError **error)
{
  cl_int err;

  if (a->err != CL_SUCCESS)
    return call_error (call, a->err, "setting kernel arguments", error);
  for (cl_uint d = 0; d < dims; d++)
    if (global[d] == 0)
      return TRUE;
  err = clEnqueueNDRangeKernel (call->dev->queue, a->k, dims, NULL, global, local, 0, NULL,
                                NULL);
  if (err != CL_SUCCESS)
    return call_error (call, err, "enqueueing a kernel", error);
  return TRUE;
}

/* Largest work-group the kernel can run with on this device. */
static size_t
kernel_wg (NnpOclDevice *dev, cl_kernel k)
{
  size_t wg = 0;

  if (clGetKernelWorkGroupInfo (k, dev->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL)
      != CL_SUCCESS)
    return 1;
  return MIN (wg, dev->max_work_group);
}

static gboolean
copy_buffer (const NnpOclCall *call, const NnpOclMem *src, const NnpOclMem *dst, gsize bytes,
             GError **error)
{
  cl_int err;

  if (bytes == 0 || (src->mem == dst->mem && src->offset == dst->offset))
    return TRUE;
  err = clEnqueueCopyBuffer (call->dev->queue, src->mem, dst->mem, src->offset, dst->offset,
                             bytes, 0, NULL, NULL);
  if (err != CL_SUCCESS)
    return call_error (call, err, "copying a buffer", error);
  return TRUE;
}

static gsize
value_nbytes (const NnpValue *v)
{
  return (gsize) nnp_shape_numel (&v->shape) * nnp_dtype_size (v->dtype);
}

static NnpDType
in_dtype (const NnpGraph *graph, const NnpNode *node, int k)
{
  NnpValue *v = nnp_node_input (graph, node, k);
  return v ? v->dtype : NNP_DTYPE_UNDEFINED;
}

static NnpDType
out_dtype (const NnpGraph *graph, const NnpNode *node, int k)
{
  NnpValue *v = nnp_node_output (graph, node, k);
  return v ? v->dtype : NNP_DTYPE_UNDEFINED;
}

static gboolean
reject (char **why, const NnpNode *node, const char *what)
{
  if (why)
    *why = g_strdup_printf ("%s: %s", node->op_type, what);
  return FALSE;
}

static gboolean
float_io (const NnpGraph *graph, const NnpNode *node, char **why)
{
  for (int k = 0; k < node->n_inputs; k++) {
    NnpDType d = in_dtype (graph, node, k);
    if (d != NNP_DTYPE_UNDEFINED && d != NNP_DTYPE_FLOAT32)
      return reject (why, node, "only float32 on OpenCL");
  }
  return TRUE;
}

static gboolean
no_act (const NnpNode *node, char **why)
{
  if (node->act != NNP_ACT_NONE)
    return reject (why, node, "fused activation on this op");
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Unary ops */

static int
unary_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_RELU: return UN_RELU;
    case NNP_OP_LEAKY_RELU: return UN_LEAKY_RELU;
    case NNP_OP_CLIP: return UN_CLIP;
    case NNP_OP_HARD_SIGMOID: return UN_HARD_SIGMOID;
    case NNP_OP_HARD_SWISH: return UN_HARD_SWISH;
    case NNP_OP_SIGMOID: return UN_SIGMOID;
    case NNP_OP_TANH: return UN_TANH;
    case NNP_OP_EXP: return UN_EXP;
    case NNP_OP_LOG: return UN_LOG;
    case NNP_OP_ERF: return UN_ERF;
    case NNP_OP_SQRT: return UN_SQRT;
    case NNP_OP_RECIPROCAL: return UN_RECIPROCAL;
    case NNP_OP_NEG: return UN_NEG;
    case NNP_OP_ABS: return UN_ABS;
    case NNP_OP_FLOOR: return UN_FLOOR;
    case NNP_OP_CEIL: return UN_CEIL;
    default: return UN_COPY;
  }
}

static gboolean
unary_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpUnaryParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return reject (why, node, "only float32 on OpenCL");
  if (node->op == NNP_OP_CLIP && ((p->has_min && p->min_input >= 0)
                                  || (p->has_max && p->max_input >= 0)))
    return reject (why, node, "bounds computed at run time");
  return no_act (node, why);
}

static gpointer
unary_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  OpState *s = state_new (dev, node, "elementwise.cl", "unary_f32", NULL, error);

  if (s)
    s->code = unary_code (node->op);
  return s;
}

static gboolean
unary_run (const NnpOclCall *call, GError **error)
{
  const NnpUnaryParams *p = call->node->params;
  OpState *s = call->state;
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);
  size_t n = (size_t) nnp_shape_numel (&y->shape);
  Args a = { s->k[0], 0, CL_SUCCESS };
  float alpha = p->alpha, beta = p->beta;

  if (call->node->op == NNP_OP_CLIP) {
    alpha = -INFINITY;
    beta = INFINITY;
    if (p->has_min)
      memcpy (&alpha, p->min_value, sizeof alpha);
    if (p->has_max)
      memcpy (&beta, p->max_value, sizeof beta);
  }
  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_int (&a, (int) n);
  arg_int (&a, s->code);
  arg_float (&a, alpha);
  arg_float (&a, beta);
  return launch_1d (call, &a, n, error);
}

static const NnpOclKernel unary_kernel = {
  .supports = unary_supports, .prepare = unary_prepare, .run = unary_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Cast */

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
  NnpDType from = in_dtype (graph, node, 0), to = out_dtype (graph, node, 0);

  if (from != to && cast_name (from, to) == NULL) {
    g_autofree char *what = g_strdup_printf ("%s to %s", nnp_dtype_name (from),
                                             nnp_dtype_name (to));
    return reject (why, node, what);
  }
  return no_act (node, why);
}

static gpointer
cast_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  NnpDType from = in_dtype (graph, node, 0), to = out_dtype (graph, node, 0);

  return state_new (dev, node, "elementwise.cl", from == to ? NULL : cast_name (from, to), NULL,
                    error);
}

static gboolean
cast_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  const NnpValue *x = nnp_node_input (call->graph, call->node, 0);
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);
  size_t n = (size_t) nnp_shape_numel (&y->shape);
  Args a = { s->k[0], 0, CL_SUCCESS };

  if (s->n_kernels == 0)
    return copy_buffer (call, &call->in[0], &call->out[0], value_nbytes (y), error);
  arg_mem (&a, &call->in[0], nnp_dtype_size (x->dtype));
  arg_mem (&a, &call->out[0], nnp_dtype_size (y->dtype));
  arg_int (&a, (int) n);
  return launch_1d (call, &a, n, error);
}

static const NnpOclKernel cast_kernel = {
  .supports = cast_supports, .prepare = cast_prepare, .run = cast_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Broadcast binary ops, variadic Sum/Max/Min, comparisons, Where */

static int
binary_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_ADD: case NNP_OP_SUM: return BIN_ADD;
    case NNP_OP_SUB: return BIN_SUB;
    case NNP_OP_MUL: return BIN_MUL;
    case NNP_OP_DIV: return BIN_DIV;
    case NNP_OP_POW: return BIN_POW;
    case NNP_OP_MAX: return BIN_MAX;
    case NNP_OP_MIN: return BIN_MIN;
    case NNP_OP_EQUAL: return BIN_EQUAL;
    case NNP_OP_LESS: return BIN_LESS;
    case NNP_OP_GREATER: return BIN_GREATER;
    default: return BIN_FIRST;
  }
}

static gboolean
binary_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpBinaryParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32 || p->dtype_b != NNP_DTYPE_FLOAT32)
    return reject (why, node, "only float32 on OpenCL");
  if (p->bc.rank > OCL_MAX_RANK)
    return reject (why, node, "rank too large");
  if (node->op == NNP_OP_WHERE && in_dtype (graph, node, 0) != NNP_DTYPE_BOOL)
    return reject (why, node, "condition is not bool");
  if (node->op == NNP_OP_EQUAL || node->op == NNP_OP_LESS || node->op == NNP_OP_GREATER
      || node->op == NNP_OP_WHERE)
    return no_act (node, why);
  return TRUE;
}

static void
fill_bcast (BcastArg *b, const NnpBroadcast *bc, int slot, int input)
{
  b->rank = bc->rank;
  for (int d = 0; d < bc->rank; d++) {
    b->dims[d] = (cl_int) bc->dims[d];
    b->s[slot][d] = (cl_int) bc->strides[input][d];
  }
}

static void
fill_contiguous (BcastArg *b, const NnpBroadcast *bc, int slot)
{
  int64_t s = 1;

  for (int d = bc->rank - 1; d >= 0; d--) {
    b->s[slot][d] = (cl_int) s;
    s *= bc->dims[d];
  }
}

static gpointer
binary_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpBinaryParams *p = node->params;
  const char *kname = node->op == NNP_OP_WHERE ? "where_f32"
      : (node->op == NNP_OP_EQUAL || node->op == NNP_OP_LESS || node->op == NNP_OP_GREATER)
          ? "compare_f32" : "binary_f32";
  OpState *s = state_new (dev, node, "elementwise.cl", kname, NULL, error);
  int n_in = node->n_inputs;

  if (s == NULL)
    return NULL;
  s->code = binary_code (node->op);
  if (node->op == NNP_OP_WHERE || n_in <= 2) {
    s->n_steps = 1;
    s->bc = g_new0 (BcastArg, 1);
    for (int k = 0; k < MIN (n_in, 3); k++)
      fill_bcast (&s->bc[0], &p->bc, k, k);
    if (n_in == 1) {
      s->code = BIN_FIRST;
      fill_bcast (&s->bc[0], &p->bc, 1, 0);
    }
  } else {
    /* out = in0 op in1; out = out op in_k */
    s->n_steps = n_in - 1;
    s->bc = g_new0 (BcastArg, s->n_steps);
    fill_bcast (&s->bc[0], &p->bc, 0, 0);
    fill_bcast (&s->bc[0], &p->bc, 1, 1);
    for (int k = 2; k < n_in; k++) {
      fill_contiguous (&s->bc[k - 1], &p->bc, 0);
      fill_bcast (&s->bc[k - 1], &p->bc, 1, k);
    }
  }
  return s;
}

static gboolean
binary_run (const NnpOclCall *call, GError **error)
{
  const NnpBinaryParams *p = call->node->params;
  OpState *s = call->state;
  size_t n = (size_t) p->bc.numel;
  const NnpNode *node = call->node;

  if (node->op == NNP_OP_WHERE) {
    Args a = { s->k[0], 0, CL_SUCCESS };
    arg_mem (&a, &call->in[0], 1);
    arg_mem (&a, &call->in[1], 4);
    arg_mem (&a, &call->in[2], 4);
    arg_mem (&a, &call->out[0], 4);
    arg_raw (&a, sizeof (BcastArg), &s->bc[0]);
    arg_int (&a, (int) n);
    return launch_1d (call, &a, n, error);
  }
  if (s->code == BIN_EQUAL || s->code == BIN_LESS || s->code == BIN_GREATER) {
    Args a = { s->k[0], 0, CL_SUCCESS };
    arg_mem (&a, &call->in[0], 4);
    arg_mem (&a, &call->in[1], 4);
    arg_mem (&a, &call->out[0], 1);
    arg_raw (&a, sizeof (BcastArg), &s->bc[0]);
    arg_int (&a, (int) n);
    arg_int (&a, s->code);
    return launch_1d (call, &a, n, error);
  }
  for (int st = 0; st < s->n_steps; st++) {
    Args a = { s->k[0], 0, CL_SUCCESS };
    ActArg none = { 0, 0.f, 0.f };
    const NnpOclMem *x0 = st == 0 ? &call->in[0] : &call->out[0];
    const NnpOclMem *x1 = node->n_inputs == 1 ? &call->in[0] : &call->in[st + 1];

    arg_mem (&a, x0, 4);
    arg_mem (&a, x1, 4);
    arg_mem (&a, &call->out[0], 4);
    arg_raw (&a, sizeof (BcastArg), &s->bc[st]);
    arg_int (&a, (int) n);
    arg_int (&a, s->code);
    arg_raw (&a, sizeof (ActArg), st == s->n_steps - 1 ? &s->act : &none);
    if (!launch_1d (call, &a, n, error))
      return FALSE;
  }
  return TRUE;
}

static const NnpOclKernel binary_kernel = {
  .supports = binary_supports, .prepare = binary_prepare, .run = binary_run,
  .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Conv / ConvTranspose */

static gboolean
conv_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpConvParams *p = node->params;

  if (!float_io (graph, node, why))
    return FALSE;
  if (p == NULL || p->n_spatial > 2)
    return reject (why, node, "3-D convolution");
  return TRUE;
}

static void
fill_conv (ConvArg *c, const NnpConvParams *p)
{
  c->n = (cl_int) p->batch;
  c->c = (cl_int) p->in_channels;
  c->m = (cl_int) p->out_channels;
  c->g = (cl_int) p->group;
  c->ih = (cl_int) p->in_dims[1];
  c->iw = (cl_int) p->in_dims[2];
  c->oh = (cl_int) p->out_dims[1];
  c->ow = (cl_int) p->out_dims[2];
  c->kh = (cl_int) p->kernel[1];
  c->kw = (cl_int) p->kernel[2];
  c->sh = (cl_int) p->strides[1];
  c->sw = (cl_int) p->strides[2];
  c->dh = (cl_int) p->dilations[1];
  c->dw = (cl_int) p->dilations[2];
  c->ph = (cl_int) p->pads_begin[1];
  c->pw = (cl_int) p->pads_begin[2];
  c->has_bias = p->has_bias;
  c->is_1x1 = c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->ph == 0 && c->pw == 0
      && p->pads_end[1] == 0 && p->pads_end[2] == 0 && c->oh == c->ih && c->ow == c->iw;
}

static gpointer
conv_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpConvParams *p = node->params;
  OpState *s;

  if (node->op == NNP_OP_CONV_TRANSPOSE) {
    s = state_new (dev, node, "conv.cl", "conv_transpose", NULL, error);
  } else {
    s = state_new (dev, node, "conv.cl", "conv_direct", "conv_gemm", error);
    if (s && p->out_channels / p->group >= 4 && kernel_wg (dev, s->k[1]) >= 64)
      s->tiled = TRUE;
  }
  if (s)
    fill_conv (&s->u.conv, p);
  return s;
}

static gboolean
conv_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  const ConvArg *c = &s->u.conv;
  NnpOclMem no_bias = call->in[0];
  const NnpOclMem *bias = call->node->n_inputs > 2 && call->in[2].mem ? &call->in[2] : &no_bias;
  Args a = { s->tiled ? s->k[1] : s->k[0], 0, CL_SUCCESS };

  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->in[1], 4);
  arg_mem (&a, bias, 4);
  arg_mem (&a, &call->out[0], 4);
  arg_raw (&a, sizeof (ConvArg), c);
  arg_raw (&a, sizeof (ActArg), &s->act);
  if (s->tiled) {
    size_t np = (size_t) c->oh * c->ow, mg = (size_t) (c->m / c->g);
    size_t global[3] = { (np + 31) / 32 * TILE_LOCAL, (mg + 31) / 32 * TILE_LOCAL,
                         (size_t) c->n * c->g };
    size_t local[3] = { TILE_LOCAL, TILE_LOCAL, 1 };
    return launch (call, &a, 3, global, local, error);
  }
  return launch_1d (call, &a, (size_t) c->n * c->m * c->oh * c->ow, error);
}

static const NnpOclKernel conv_kernel = {
  .supports = conv_supports, .prepare = conv_prepare, .run = conv_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* MatMul / Gemm */

static gboolean
gemm_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!float_io (graph, node, why))
    return FALSE;
  if (node->op == NNP_OP_MAT_MUL) {
    const NnpMatMulParams *p = node->params;
    if (p == NULL || p->batch_rank > OCL_MAX_RANK)
      return reject (why, node, "batch rank too large");
  }
  return TRUE;
}

static gpointer
gemm_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  OpState *s = state_new (dev, node, "gemm.cl", "gemm_naive", "gemm_tiled", error);
  GemmArg *g;

  if (s == NULL)
    return NULL;
  g = &s->u.gemm;
  if (node->op == NNP_OP_GEMM) {
    const NnpGemmParams *p = node->params;
    g->m = (cl_int) p->m;
    g->n = (cl_int) p->n;
    g->k = (cl_int) p->k;
    g->a_rs = p->trans_a ? 1 : (cl_int) p->k;
    g->a_cs = p->trans_a ? (cl_int) p->m : 1;
    g->b_rs = p->trans_b ? 1 : (cl_int) p->n;
    g->b_cs = p->trans_b ? (cl_int) p->k : 1;
    g->has_c = p->has_c;
    g->c_rs = (cl_int) p->c_rs;
    g->c_cs = (cl_int) p->c_cs;
    g->alpha = p->alpha;
    g->beta = p->beta;
  } else {
    const NnpMatMulParams *p = node->params;
    g->m = (cl_int) p->m;
    g->n = (cl_int) p->n;
    g->k = (cl_int) p->k;
    g->a_rs = (cl_int) p->k;
    g->a_cs = 1;
    g->b_rs = (cl_int) p->n;
    g->b_cs = 1;
    g->alpha = 1.f;
    g->batch_rank = p->batch_rank;
    for (int d = 0; d < p->batch_rank; d++) {
      g->bdims[d] = (cl_int) p->batch_dims[d];
      g->a_bs[d] = (cl_int) p->a_batch_strides[d];
      g->b_bs[d] = (cl_int) p->b_batch_strides[d];
    }
  }
  s->tiled = (size_t) g->m * g->n >= 256 && kernel_wg (dev, s->k[1]) >= 64;
  return s;
}

static gboolean
gemm_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  const GemmArg *g = &s->u.gemm;
  size_t batch = 1;
  const NnpOclMem *c = g->has_c ? &call->in[2] : &call->in[0];
  Args a = { s->tiled ? s->k[1] : s->k[0], 0, CL_SUCCESS };

  for (int d = 0; d < g->batch_rank; d++)
    batch *= (size_t) g->bdims[d];
  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->in[1], 4);
  arg_mem (&a, c, 4);
  arg_mem (&a, &call->out[0], 4);
  arg_raw (&a, sizeof (GemmArg), g);
  arg_raw (&a, sizeof (ActArg), &s->act);
  if (s->tiled) {
    size_t global[3] = { (size_t) (g->n + 31) / 32 * TILE_LOCAL,
                         (size_t) (g->m + 31) / 32 * TILE_LOCAL, batch };
    size_t local[3] = { TILE_LOCAL, TILE_LOCAL, 1 };
    return launch (call, &a, 3, global, local, error);
  } else {
    size_t global[3] = { (size_t) g->n, (size_t) g->m, batch };
    return launch (call, &a, 3, global, NULL, error);
  }
}

static const NnpOclKernel gemm_kernel = {
  .supports = gemm_supports, .prepare = gemm_prepare, .run = gemm_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* BatchNormalization */

static gboolean
bn_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!float_io (graph, node, why))
    return FALSE;
  for (int k = 1; k < node->n_outputs; k++)
    if (node->outputs[k] >= 0)
      return reject (why, node, "training-mode outputs");
  return no_act (node, why);
}

static gpointer
bn_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return state_new (dev, node, "nn.cl", "batchnorm_f32", NULL, error);
}

static gboolean
bn_run (const NnpOclCall *call, GError **error)
{
  const NnpBatchNormParams *p = call->node->params;
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };
  size_t total = (size_t) (p->n * p->c * p->inner);

  arg_mem (&a, &call->in[0], 4);
  for (int k = 1; k <= 4; k++)
    arg_mem (&a, &call->in[k], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_int (&a, (int) p->c);
  arg_int (&a, (int) MAX (p->inner, 1));
  arg_int (&a, (int) total);
  arg_float (&a, p->epsilon);
  return launch_1d (call, &a, total, error);
}

static const NnpOclKernel bn_kernel = {
  .supports = bn_supports, .prepare = bn_prepare, .run = bn_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Pools (MaxPool, AveragePool) and row reductions (global pools, reduces) */

static gboolean
pool_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpPoolParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return reject (why, node, "only float32 on OpenCL");
  if (node->n_outputs > 1 && node->outputs[1] >= 0)
    return reject (why, node, "Indices output");
  return no_act (node, why);
}

static gpointer
pool_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpPoolParams *p = node->params;
  OpState *s = state_new (dev, node, "nn.cl", "pool_f32", NULL, error);
  PoolArg *a;

  if (s == NULL)
    return NULL;
  a = &s->u.pool;
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
  OpState *s = call->state;
  const PoolArg *p = &s->u.pool;
  Args a = { s->k[0], 0, CL_SUCCESS };

  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_raw (&a, sizeof (PoolArg), p);
  return launch_1d (call, &a, (size_t) p->planes * p->out[0] * p->out[1] * p->out[2], error);
}

static const NnpOclKernel pool_kernel = {
  .supports = pool_supports, .prepare = pool_prepare, .run = pool_run, .free_state = state_free,
};

/* reduce_rows_f32: rows x len, one work-group per row */
static OpState *
rows_state (NnpOclDevice *dev, const NnpNode *node, GError **error)
{
  OpState *s = state_new (dev, node, "nn.cl", "reduce_rows_f32", "reduce_general_f32", error);
  size_t wg, l = 1;

  if (s == NULL)
    return NULL;
  wg = MIN (kernel_wg (dev, s->k[0]), 256);
  while (l * 2 <= wg)
    l *= 2;
  s->local = l;
  return s;
}

static gboolean
rows_run (const NnpOclCall *call, OpState *s, size_t rows, size_t len, int op, GError **error)
{
  Args a = { s->k[0], 0, CL_SUCCESS };
  size_t global = rows * s->local;

  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_int (&a, (int) len);
  arg_int (&a, op);
  arg_float (&a, len > 0 ? 1.f / (float) len : 0.f);
  arg_raw (&a, s->local * sizeof (cl_float), NULL);
  return launch (call, &a, 1, &global, &s->local, error);
}

static gboolean
gpool_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  return pool_supports (graph, node, why);
}

static gpointer
gpool_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return rows_state (dev, node, error);
}

static gboolean
gpool_run (const NnpOclCall *call, GError **error)
{
  const NnpPoolParams *p = call->node->params;

  return rows_run (call, call->state, (size_t) p->planes, (size_t) (p->in[0] * p->in[1] * p->in[2]),
                   call->node->op == NNP_OP_GLOBAL_MAX_POOL ? RED_MAX : RED_MEAN, error);
}

static const NnpOclKernel gpool_kernel = {
  .supports = gpool_supports, .prepare = gpool_prepare, .run = gpool_run,
  .free_state = state_free,
};

static int
reduce_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_REDUCE_MEAN: return RED_MEAN;
    case NNP_OP_REDUCE_MAX: return RED_MAX;
    case NNP_OP_REDUCE_MIN: return RED_MIN;
    default: return RED_SUM;
  }
}

static gboolean
reduce_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpReduceParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return reject (why, node, "only float32 on OpenCL");
  if (p->count == 0 && !p->identity)
    return reject (why, node, "empty reduction");
  return no_act (node, why);
}

static gpointer
reduce_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpReduceParams *p = node->params;
  OpState *s = rows_state (dev, node, error);
  ReduceArg *r;
  int64_t total = 1;

  if (s == NULL)
    return NULL;
  r = &s->u.reduce;
  r->rank = p->rank;
  for (int d = 0; d < p->rank; d++) {
    r->dims[d] = (cl_int) p->dims[d];
    r->reduced[d] = p->reduced[d];
    total *= p->dims[d];
  }
  r->count = (cl_int) p->count;
  r->n_out = p->count > 0 ? (cl_int) (total / p->count) : 0;
  /* only the last group reduced: rows of the contiguous input */
  s->tiled = p->reduced[p->rank - 1];
  for (int d = 0; d < p->rank - 1; d++)
    if (p->reduced[d])
      s->tiled = FALSE;
  return s;
}

static gboolean
reduce_run (const NnpOclCall *call, GError **error)
{
  const NnpReduceParams *p = call->node->params;
  OpState *s = call->state;
  const ReduceArg *r = &s->u.reduce;
  int op = reduce_code (call->node->op);
  Args a = { s->k[1], 0, CL_SUCCESS };

  if (p->identity)
    return copy_buffer (call, &call->in[0], &call->out[0],
                        value_nbytes (nnp_node_output (call->graph, call->node, 0)), error);
  if (s->tiled)
    return rows_run (call, s, (size_t) r->n_out, (size_t) r->count, op, error);
  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_raw (&a, sizeof (ReduceArg), r);
  arg_int (&a, op);
  arg_float (&a, 1.f / (float) r->count);
  return launch_1d (call, &a, (size_t) r->n_out, error);
}

static const NnpOclKernel reduce_kernel = {
  .supports = reduce_supports, .prepare = reduce_prepare, .run = reduce_run,
  .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Softmax / LogSoftmax, ArgMax */

static gboolean
softmax_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!float_io (graph, node, why))
    return FALSE;
  return no_act (node, why);
}

static gpointer
softmax_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return state_new (dev, node, "nn.cl", node->op == NNP_OP_ARG_MAX ? "argmax_f32" : "softmax_f32",
                    NULL, error);
}

static gboolean
softmax_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };
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
  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], call->node->op == NNP_OP_ARG_MAX ? 8 : 4);
  arg_int (&a, (int) outer);
  arg_int (&a, (int) dim);
  arg_int (&a, (int) inner);
  arg_int (&a, flag);
  return launch_1d (call, &a, (size_t) (outer * inner), error);
}

static const NnpOclKernel softmax_kernel = {
  .supports = softmax_supports, .prepare = softmax_prepare, .run = softmax_run,
  .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Resize: per-axis tap tables built here, gathered by resize_f32 */

/* Taps of one output coordinate: nearest (1 tap), linear (2), cubic (4), from
 * the coordinate mapping shared with the CPU kernel (lib/ops/resize-coords.c). */
static void
resize_taps (const NnpResizeParams *p, int k, double xo, int taps, cl_int *idx, cl_float *w)
{
  int64_t i64[4];
  float f[4];

  if (taps == 1) {
    idx[0] = (cl_int) nnp_resize_nearest_index (p, k, xo);
    w[0] = 1.f;
    return;
  }
  nnp_resize_interp_taps (p, k, xo, taps, i64, f);
  for (int t = 0; t < taps; t++) {
    idx[t] = (cl_int) i64[t];
    w[t] = f[t];
  }
}

static gboolean
resize_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpResizeParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32 || in_dtype (graph, node, 0) != NNP_DTYPE_FLOAT32)
    return reject (why, node, "only float32 on OpenCL");
  if (p->rank > OCL_MAX_RANK)
    return reject (why, node, "rank too large");
  return no_act (node, why);
}

static gpointer
resize_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpResizeParams *p = node->params;
  OpState *s = state_new (dev, node, "nn.cl", "resize_f32", NULL, error);
  int taps = p->mode == NNP_RESIZE_NEAREST ? 1 : p->mode == NNP_RESIZE_LINEAR ? 2 : 4;
  ResizeArg *r;
  GArray *idx, *w;
  int64_t n_out = 1;

  if (s == NULL)
    return NULL;
  r = &s->u.resize;
  r->rank = p->rank;
  r->extrapolation = p->extrapolation_value;
  idx = g_array_new (FALSE, FALSE, sizeof (cl_int));
  w = g_array_new (FALSE, FALSE, sizeof (cl_float));
  for (int k = 0; k < p->rank; k++) {
    guint start = idx->len;
    gboolean identity = p->in[k] == p->out[k];

    r->in[k] = (cl_int) p->in[k];
    r->out[k] = (cl_int) p->out[k];
    r->taps[k] = taps;
    r->tab_off[k] = (cl_int) start;
    n_out *= p->out[k];
    g_array_set_size (idx, start + p->out[k] * taps);
    g_array_set_size (w, start + p->out[k] * taps);
    for (int64_t x = 0; x < p->out[k]; x++) {
      gboolean outside;
      double xo = nnp_resize_map_coord (p, k, x, &outside);
      cl_int *ix = &g_array_index (idx, cl_int, start + x * taps);
      cl_float *wx = &g_array_index (w, cl_float, start + x * taps);
      resize_taps (p, k, xo, taps, ix, wx);
      if (outside) {
        ix[0] = -1;
        identity = FALSE;
      }
      /* identity axis: all weight on x itself */
      for (int t = 0; t < taps && identity; t++)
        if (wx[t] != 0.f && ix[t] != x)
          identity = FALSE;
      if (identity) {
        float sum = 0.f;
        for (int t = 0; t < taps; t++)
          sum += ix[t] == x ? wx[t] : 0.f;
        identity = sum == 1.f;
      }
    }
    if (identity && taps > 1) {
      /* one tap per coordinate */
      for (int64_t x = 0; x < p->out[k]; x++) {
        g_array_index (idx, cl_int, start + x) = (cl_int) x;
        g_array_index (w, cl_float, start + x) = 1.f;
      }
      g_array_set_size (idx, start + p->out[k]);
      g_array_set_size (w, start + p->out[k]);
      r->taps[k] = 1;
    }
  }
  r->n_out = (cl_int) n_out;
  s->table_idx = nnp_ocl_alloc (dev, MAX (idx->len, 1) * sizeof (cl_int), "a resize table", error);
  s->table_w = s->table_idx ? nnp_ocl_alloc (dev, MAX (w->len, 1) * sizeof (cl_float),
                                             "a resize table", error) : NULL;
  if (s->table_w == NULL
      || !nnp_ocl_write (dev, s->table_idx, 0, idx->data, idx->len * sizeof (cl_int), FALSE, error)
      || !nnp_ocl_write (dev, s->table_w, 0, w->data, w->len * sizeof (cl_float), FALSE, error)) {
    state_free (s);
    s = NULL;
  }
  g_array_free (idx, TRUE);
  g_array_free (w, TRUE);
  return s;
}

static gboolean
resize_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };

  arg_mem (&a, &call->in[0], 4);
  arg_mem (&a, &call->out[0], 4);
  arg_raw (&a, sizeof (cl_mem), &s->table_idx);
  arg_raw (&a, sizeof (cl_mem), &s->table_w);
  arg_raw (&a, sizeof (ResizeArg), &s->u.resize);
  return launch_1d (call, &a, (size_t) s->u.resize.n_out, error);
}

static const NnpOclKernel resize_kernel = {
  .supports = resize_supports, .prepare = resize_prepare, .run = resize_run,
  .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* Data movement: copies, strided copies, Concat/Split, Gather, Pad */

static const char *
esize_suffix (gsize esize)
{
  switch (esize) {
    case 1: return "1";
    case 2: return "2";
    case 4: return "4";
    case 8: return "8";
    default: return NULL;
  }
}

static gboolean
esize_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    if (v && esize_suffix (nnp_dtype_size (v->dtype)) == NULL)
      return reject (why, node, "element size");
  }
  return no_act (node, why);
}

/* Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze: a buffer copy
 * (the executor aliases them instead where it can). */
static gpointer
alias_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return state_new (dev, node, NULL, NULL, NULL, error);
}

static gboolean
alias_run (const NnpOclCall *call, GError **error)
{
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);

  if (!copy_buffer (call, &call->in[0], &call->out[0], value_nbytes (y), error))
    return FALSE;
  if (call->node->op == NNP_OP_DROPOUT && call->node->n_outputs > 1 && call->out[1].mem) {
    const NnpDropoutParams *p = call->node->params;
    const NnpValue *mask = nnp_node_output (call->graph, call->node, 1);
    cl_int err = clEnqueueFillBuffer (call->dev->queue, call->out[1].mem, p->mask_value,
                                      (size_t) p->mask_esize, call->out[1].offset,
                                      value_nbytes (mask), 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return call_error (call, err, "filling a buffer", error);
  }
  return TRUE;
}

static const NnpOclKernel alias_kernel = {
  .supports = esize_supports, .prepare = alias_prepare, .run = alias_run, .free_state = state_free,
};

/* Shape, Range, ConstantOfShape: outputs that do not depend on input data,
 * computed once on the host by the CPU kernel and uploaded. */
static gpointer
made_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  OpState *s = state_new (dev, node, NULL, NULL, NULL, error);
  const NnpValue *y = nnp_node_output (graph, node, 0);
  const NnpCpuKernel *cpu = nnp_cpu_kernel (node->op);
  g_autoptr (NnpTensor) out = NULL;
  g_autofree NnpTensor **ins = NULL;
  NnpCpuCall cc = { 0 };
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
  cc.graph = graph;
  cc.node = node;
  cc.inputs = ins;
  cc.outputs = &out;
  ok = out != NULL && cpu && cpu->run && cpu->workspace == NULL && cpu->prepare == NULL
       && cpu->run (&cc, error);
  for (int k = 0; k < node->n_inputs; k++)
    if (ins[k])
      nnp_tensor_unref (ins[k]);
  if (!ok) {
    if (error && *error == NULL)
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no OpenCL kernel");
    state_free (s);
    return NULL;
  }
  s->host_made = nnp_ocl_alloc (dev, MAX (out->nbytes, 4), "a constant output", error);
  if (s->host_made == NULL
      || !nnp_ocl_write (dev, s->host_made, 0, out->data, out->nbytes, FALSE, error)) {
    state_free (s);
    return NULL;
  }
  s->esize = out->nbytes;
  return s;
}

static gboolean
made_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  NnpOclMem src = { s->host_made, 0 };

  return copy_buffer (call, &src, &call->out[0], s->esize, error);
}

static gboolean
made_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (node->op == NNP_OP_CONSTANT_OF_SHAPE) {
    NnpValue *v = nnp_node_input (graph, node, 0);
    if (v == NULL || v->constant == NULL)
      return reject (why, node, "shape computed at run time");
  }
  if (node->op == NNP_OP_RANGE) {
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v == NULL || v->constant == NULL)
        return reject (why, node, "bounds computed at run time");
    }
  }
  return no_act (node, why);
}

static const NnpOclKernel made_kernel = {
  .supports = made_supports, .prepare = made_prepare, .run = made_run, .free_state = state_free,
};

/* Transpose, Slice, Expand */
static gboolean
strided_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpCopyParams *p = node->params;

  if (p == NULL || esize_suffix ((gsize) p->copy.esize) == NULL)
    return reject (why, node, "element size");
  return no_act (node, why);
}

static gpointer
strided_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpCopyParams *p = node->params;
  const NnpStridedCopy *c = &p->copy;
  g_autofree char *name = g_strconcat ("strided_copy_", esize_suffix ((gsize) c->esize), NULL);
  OpState *s = state_new (dev, node, "copy.cl", name, NULL, error);
  int64_t n = 1;

  if (s == NULL)
    return NULL;
  s->esize = (gsize) c->esize;
  s->u.copy.rank = c->rank;
  for (int d = 0; d < c->rank; d++) {
    s->u.copy.dims[d] = (cl_int) c->dims[d];
    s->u.copy.strides[d] = (cl_int) (c->src_strides[d] / c->esize);
    n *= c->dims[d];
  }
  s->u.copy.offset = (cl_int) (c->src_offset / c->esize);
  s->u.copy.n = (cl_int) (c->rank > 0 ? n : 1);
  return s;
}

static gboolean
strided_run (const NnpOclCall *call, GError **error)
{
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };

  arg_mem (&a, &call->in[0], s->esize);
  arg_mem (&a, &call->out[0], s->esize);
  arg_raw (&a, sizeof (CopyArg), &s->u.copy);
  return launch_1d (call, &a, (size_t) s->u.copy.n, error);
}

static const NnpOclKernel strided_kernel = {
  .supports = strided_supports, .prepare = strided_prepare, .run = strided_run,
  .free_state = state_free,
};

/* Concat / Split: outer rows of part_row bytes per part (rows_copy_N). */
static gpointer
concat_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpValue *v = node->op == NNP_OP_SPLIT ? nnp_node_input (graph, node, 0)
                                                : nnp_node_output (graph, node, 0);
  gsize esize = nnp_dtype_size (v->dtype);
  g_autofree char *name = g_strconcat ("rows_copy_", esize_suffix (esize), NULL);
  OpState *s = state_new (dev, node, "copy.cl", name, NULL, error);

  if (s)
    s->esize = esize;
  return s;
}

static gboolean
concat_run (const NnpOclCall *call, GError **error)
{
  const NnpConcatParams *p = call->node->params;
  OpState *s = call->state;
  gboolean split = call->node->op == NNP_OP_SPLIT;
  int64_t col = 0;
  int whole = (int) (p->whole_row / (int64_t) s->esize);

  for (int k = 0; k < p->n_parts; k++) {
    int part = (int) (p->part_row[k] / (int64_t) s->esize);
    const NnpOclMem *src = split ? &call->in[0] : &call->in[k];
    const NnpOclMem *dst = split ? &call->out[k] : &call->out[0];
    Args a = { s->k[0], 0, CL_SUCCESS };

    if (part > 0 && p->outer > 0 && src->mem && dst->mem) {
      arg_mem (&a, src, s->esize);
      arg_mem (&a, dst, s->esize);
      arg_int (&a, (int) p->outer);
      arg_int (&a, part);
      arg_int (&a, whole);
      arg_int (&a, (int) col);
      arg_int (&a, !split);
      if (!launch_1d (call, &a, (size_t) p->outer * part, error))
        return FALSE;
    }
    col += part;
  }
  return TRUE;
}

static const NnpOclKernel concat_kernel = {
  .supports = esize_supports, .prepare = concat_prepare, .run = concat_run,
  .free_state = state_free,
};

/* Gather */
static gboolean
gather_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpGatherParams *p = node->params;

  if (p == NULL || (p->index_esize != 4 && p->index_esize != 8))
    return reject (why, node, "index type");
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
  nnp_node_set_error (error, NNP_ERROR_INVALID, node, "index %" G_GINT64_FORMAT " is out of "
                      "range for axis %d of size %" G_GINT64_FORMAT, index, p->axis,
                      p->axis_dim);
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
  g_autofree char *name = g_strconcat ("gather_", esize_suffix (esize), NULL);
  OpState *s;

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
  s = state_new (dev, node, "copy.cl", name, NULL, error);
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
gather_report (const NnpGraph *graph, const NnpNode *node, const cl_int *status,
               GError **error)
{
  gint64 index = (gint64) (((guint64) (guint32) status[2] << 32) | (guint32) status[1]);

  gather_set_error (node, index, error);
}

static gboolean
gather_run (const NnpOclCall *call, GError **error)
{
  const NnpGatherParams *p = call->node->params;
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };
  int inner = (int) (p->inner_bytes / (int64_t) s->esize);
  size_t n = (size_t) (p->outer * p->n_indices * inner);
  int n_check = call->status.mem ? (int) p->n_indices : 0;

  arg_mem (&a, &call->in[0], s->esize);
  arg_raw (&a, sizeof (cl_mem), &call->in[1].mem);
  arg_raw (&a, sizeof (cl_mem), &call->in[1].mem);
  arg_int (&a, (int) (call->in[1].offset / (gsize) p->index_esize));
  arg_mem (&a, &call->out[0], s->esize);
  arg_int (&a, p->index_esize == 8);
  arg_int (&a, (int) p->axis_dim);
  arg_int (&a, MAX (inner, 1));
  arg_int (&a, (int) MAX (p->n_indices, 1));
  arg_int (&a, (int) n);
  /* a NULL buffer when unchecked (constant indices, validated in prepare) */
  arg_mem (&a, &call->status, sizeof (cl_int));
  arg_int (&a, n_check);
  /* every index is validated even when no element is copied (empty data) */
  return launch_1d (call, &a, MAX (n, (size_t) n_check), error);
}

static const NnpOclKernel gather_kernel = {
  .supports = gather_supports, .prepare = gather_prepare, .run = gather_run,
  .free_state = state_free, .checks = gather_checks, .report = gather_report,
};

/* Pad */
static gboolean
pad_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpPadParams *p = node->params;

  if (p == NULL || esize_suffix ((gsize) p->esize) == NULL)
    return reject (why, node, "element size");
  if (p->rank > OCL_MAX_RANK)
    return reject (why, node, "rank too large");
  return no_act (node, why);
}

static gpointer
pad_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpPadParams *p = node->params;
  g_autofree char *name = g_strconcat ("pad_", esize_suffix ((gsize) p->esize), NULL);
  OpState *s = state_new (dev, node, "copy.cl", name, NULL, error);
  int64_t n = 1;

  if (s == NULL)
    return NULL;
  s->esize = (gsize) p->esize;
  s->u.pad.rank = p->rank;
  for (int d = 0; d < p->rank; d++) {
    s->u.pad.in[d] = (cl_int) p->in[d];
    s->u.pad.out[d] = (cl_int) p->out[d];
    s->u.pad.pad_begin[d] = (cl_int) p->pad_begin[d];
    n *= p->out[d];
  }
  s->u.pad.mode = p->mode == NNP_PAD_CONSTANT ? 0 : p->mode == NNP_PAD_REFLECT ? 1
                  : p->mode == NNP_PAD_EDGE ? 2 : 3;
  s->u.pad.n = (cl_int) n;
  return s;
}

static gboolean
pad_run (const NnpOclCall *call, GError **error)
{
  const NnpPadParams *p = call->node->params;
  OpState *s = call->state;
  Args a = { s->k[0], 0, CL_SUCCESS };

  arg_mem (&a, &call->in[0], s->esize);
  arg_mem (&a, &call->out[0], s->esize);
  arg_raw (&a, sizeof (PadArg), &s->u.pad);
  arg_raw (&a, s->esize, p->value);
  return launch_1d (call, &a, (size_t) s->u.pad.n, error);
}

static const NnpOclKernel pad_kernel = {
  .supports = pad_supports, .prepare = pad_prepare, .run = pad_run, .free_state = state_free,
};

/* ------------------------------------------------------------------ */
/* The table, generated from op-list.h */

#define K_conv (&conv_kernel)
#define K_conv_transpose (&conv_kernel)
#define K_batch_normalization (&bn_kernel)
#define K_max_pool (&pool_kernel)
#define K_average_pool (&pool_kernel)
#define K_global_average_pool (&gpool_kernel)
#define K_global_max_pool (&gpool_kernel)
#define K_mat_mul (&gemm_kernel)
#define K_gemm (&gemm_kernel)
#define K_softmax (&softmax_kernel)
#define K_log_softmax (&softmax_kernel)
#define K_resize (&resize_kernel)
#define K_pad (&pad_kernel)
#define K_reduce_mean (&reduce_kernel)
#define K_reduce_sum (&reduce_kernel)
#define K_reduce_max (&reduce_kernel)
#define K_reduce_min (&reduce_kernel)
#define K_arg_max (&softmax_kernel)
#define K_add (&binary_kernel)
#define K_sub (&binary_kernel)
#define K_mul (&binary_kernel)
#define K_div (&binary_kernel)
#define K_pow (&binary_kernel)
#define K_max (&binary_kernel)
#define K_min (&binary_kernel)
#define K_sum (&binary_kernel)
#define K_equal (&binary_kernel)
#define K_less (&binary_kernel)
#define K_greater (&binary_kernel)
#define K_where (&binary_kernel)
#define K_relu (&unary_kernel)
#define K_leaky_relu (&unary_kernel)
#define K_clip (&unary_kernel)
#define K_hard_sigmoid (&unary_kernel)
#define K_hard_swish (&unary_kernel)
#define K_sigmoid (&unary_kernel)
#define K_tanh (&unary_kernel)
#define K_exp (&unary_kernel)
#define K_log (&unary_kernel)
#define K_erf (&unary_kernel)
#define K_sqrt (&unary_kernel)
#define K_reciprocal (&unary_kernel)
#define K_neg (&unary_kernel)
#define K_abs (&unary_kernel)
#define K_floor (&unary_kernel)
#define K_ceil (&unary_kernel)
#define K_cast (&cast_kernel)
#define K_constant NULL
#define K_identity (&alias_kernel)
#define K_dropout (&alias_kernel)
#define K_shape (&made_kernel)
#define K_reshape (&alias_kernel)
#define K_flatten (&alias_kernel)
#define K_squeeze (&alias_kernel)
#define K_unsqueeze (&alias_kernel)
#define K_transpose (&strided_kernel)
#define K_concat (&concat_kernel)
#define K_split (&concat_kernel)
#define K_slice (&strided_kernel)
#define K_gather (&gather_kernel)
#define K_expand (&strided_kernel)
#define K_constant_of_shape (&made_kernel)
#define K_range (&made_kernel)

static const NnpOclKernel *const kernel_table[] = {
#define NNP_OP(ID, id, onnx, ...) K_##id,
#include <nnpipe/op-list.h>
#undef NNP_OP
};

G_STATIC_ASSERT (G_N_ELEMENTS (kernel_table) == NNP_OP_COUNT);

const NnpOclKernel *
nnp_ocl_kernel (NnpOpType op)
{
  if ((int) op < 0 || op >= NNP_OP_COUNT)
    return NULL;
  return kernel_table[op];
}

gboolean
nnp_ocl_supports_node (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpOclKernel *k = nnp_ocl_kernel (node->op);

  if (why)
    *why = NULL;
  if (k == NULL)
    return reject (why, node, "no OpenCL kernel");
  /* kernels index with 32-bit ints */
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? node->n_outputs : node->n_inputs;
    for (int i = 0; i < n; i++) {
      NnpValue *v = pass ? nnp_node_output (graph, node, i) : nnp_node_input (graph, node, i);
      if (v && (nnp_shape_numel (&v->shape) < 0 || nnp_shape_numel (&v->shape) >= G_MAXINT32))
        return reject (why, node, "tensor too large or shape not static");
    }
  }
  if (node->params == NULL && node->op != NNP_OP_IDENTITY && node->op != NNP_OP_RESHAPE
      && node->op != NNP_OP_FLATTEN && node->op != NNP_OP_SQUEEZE && node->op != NNP_OP_UNSQUEEZE
      && node->op != NNP_OP_DROPOUT)
    return reject (why, node, "not specialised");
  return k->supports ? k->supports (graph, node, why) : TRUE;
}
