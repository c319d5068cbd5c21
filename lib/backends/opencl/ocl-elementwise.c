/* OpenCL backend: launch code of the elementwise ops (kernels/elementwise.cl):
 * unary ops, broadcast binary ops (with variadic Sum/Max/Min), comparisons,
 * Where.  As lib/backends/cpu/cpu-elementwise.c. */
#include "backends/opencl/ocl-ops.h"
#include "ops/elementwise-params.h"

#include <math.h>
#include <string.h>

/* Host mirror of the kernels' Bcast (4-byte fields only): output element i
 * (row-major over dims) reads input k at sum_d coord_d * s[k][d]. */
typedef struct {
  cl_int rank;
  cl_int dims[NNP_OCL_MAX_RANK];
  cl_int s[3][NNP_OCL_MAX_RANK];
} BcastArg;

/* ------------------------------------------------------------------ */
/* Unary ops */

static int
unary_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_RELU: return NNP_OCL_UN_RELU;
    case NNP_OP_LEAKY_RELU: return NNP_OCL_UN_LEAKY_RELU;
    case NNP_OP_CLIP: return NNP_OCL_UN_CLIP;
    case NNP_OP_HARD_SIGMOID: return NNP_OCL_UN_HARD_SIGMOID;
    case NNP_OP_HARD_SWISH: return NNP_OCL_UN_HARD_SWISH;
    case NNP_OP_SIGMOID: return NNP_OCL_UN_SIGMOID;
    case NNP_OP_TANH: return NNP_OCL_UN_TANH;
    case NNP_OP_EXP: return NNP_OCL_UN_EXP;
    case NNP_OP_LOG: return NNP_OCL_UN_LOG;
    case NNP_OP_ERF: return NNP_OCL_UN_ERF;
    case NNP_OP_SQRT: return NNP_OCL_UN_SQRT;
    case NNP_OP_RECIPROCAL: return NNP_OCL_UN_RECIPROCAL;
    case NNP_OP_NEG: return NNP_OCL_UN_NEG;
    case NNP_OP_ABS: return NNP_OCL_UN_ABS;
    case NNP_OP_FLOOR: return NNP_OCL_UN_FLOOR;
    case NNP_OP_CEIL: return NNP_OCL_UN_CEIL;
    default: return NNP_OCL_UN_COPY;
  }
}

static gboolean
unary_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpUnaryParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32)
    return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  if (node->op == NNP_OP_CLIP
      && ((p->has_min && p->min_input >= 0) || (p->has_max && p->max_input >= 0)))
    return nnp_ocl_reject (why, node, "bounds computed at run time");
  return nnp_ocl_no_act (node, why);
}

typedef struct {
  NnpOclState base;
  int code; /* NNP_OCL_UN_* */
} UnaryState;

static gpointer
unary_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  UnaryState *s = nnp_ocl_state_new (dev, node, sizeof (UnaryState), "elementwise.cl", "unary_f32",
                                     NULL, error);

  if (s)
    s->code = unary_code (node->op);
  return s;
}

static gboolean
unary_run (const NnpOclCall *call, GError **error)
{
  const NnpUnaryParams *p = call->node->params;
  UnaryState *s = call->state;
  const NnpValue *y = nnp_node_output (call->graph, call->node, 0);
  size_t n = (size_t) nnp_shape_numel (&y->shape);
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };
  float alpha = p->alpha, beta = p->beta;

  if (call->node->op == NNP_OP_CLIP) {
    alpha = -INFINITY;
    beta = INFINITY;
    if (p->has_min)
      memcpy (&alpha, p->min_value, sizeof alpha);
    if (p->has_max)
      memcpy (&beta, p->max_value, sizeof beta);
  }
  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_int (&a, (int) n);
  nnp_ocl_arg_int (&a, s->code);
  nnp_ocl_arg_float (&a, alpha);
  nnp_ocl_arg_float (&a, beta);
  return nnp_ocl_launch_1d (call, &a, n, error);
}

#define UNARY_KERNEL \
  { \
    .supports = unary_supports, .prepare = unary_prepare, .run = unary_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_relu = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_leaky_relu = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_clip = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_hard_sigmoid = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_hard_swish = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_sigmoid = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_tanh = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_exp = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_log = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_erf = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_sqrt = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_reciprocal = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_neg = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_abs = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_floor = UNARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_ceil = UNARY_KERNEL;

/* ------------------------------------------------------------------ */
/* Broadcast binary ops, variadic Sum/Max/Min, comparisons, Where */

static int
binary_code (NnpOpType op)
{
  switch (op) {
    case NNP_OP_ADD:
    case NNP_OP_SUM: return NNP_OCL_BIN_ADD;
    case NNP_OP_SUB: return NNP_OCL_BIN_SUB;
    case NNP_OP_MUL: return NNP_OCL_BIN_MUL;
    case NNP_OP_DIV: return NNP_OCL_BIN_DIV;
    case NNP_OP_POW: return NNP_OCL_BIN_POW;
    case NNP_OP_MAX: return NNP_OCL_BIN_MAX;
    case NNP_OP_MIN: return NNP_OCL_BIN_MIN;
    case NNP_OP_EQUAL: return NNP_OCL_BIN_EQUAL;
    case NNP_OP_LESS: return NNP_OCL_BIN_LESS;
    case NNP_OP_GREATER: return NNP_OCL_BIN_GREATER;
    default: return NNP_OCL_BIN_FIRST;
  }
}

static gboolean
binary_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpBinaryParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32 || p->dtype_b != NNP_DTYPE_FLOAT32)
    return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  if (p->bc.rank > NNP_OCL_MAX_RANK)
    return nnp_ocl_reject (why, node, "rank too large");
  if (node->op == NNP_OP_WHERE && nnp_ocl_in_dtype (graph, node, 0) != NNP_DTYPE_BOOL)
    return nnp_ocl_reject (why, node, "condition is not bool");
  if (node->op == NNP_OP_EQUAL || node->op == NNP_OP_LESS || node->op == NNP_OP_GREATER
      || node->op == NNP_OP_WHERE)
    return nnp_ocl_no_act (node, why);
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

typedef struct {
  NnpOclState base;
  int code;     /* NNP_OCL_BIN_* */
  int n_steps;  /* Sum/Max/Min with > 2 inputs: one launch per input */
  BcastArg *bc; /* n_steps entries */
} BinaryState;

static void
binary_free (gpointer state)
{
  BinaryState *s = state;

  if (s)
    g_free (s->bc);
  nnp_ocl_state_free (s);
}

static gpointer
binary_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpBinaryParams *p = node->params;
  const char *kname =
      node->op == NNP_OP_WHERE ? "where_f32"
      : (node->op == NNP_OP_EQUAL || node->op == NNP_OP_LESS || node->op == NNP_OP_GREATER)
          ? "compare_f32"
          : "binary_f32";
  BinaryState *s =
      nnp_ocl_state_new (dev, node, sizeof (BinaryState), "elementwise.cl", kname, NULL, error);
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
      s->code = NNP_OCL_BIN_FIRST;
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
  BinaryState *s = call->state;
  size_t n = (size_t) p->bc.numel;
  const NnpNode *node = call->node;

  if (node->op == NNP_OP_WHERE) {
    NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };
    nnp_ocl_arg_mem (&a, &call->in[0], 1);
    nnp_ocl_arg_mem (&a, &call->in[1], 4);
    nnp_ocl_arg_mem (&a, &call->in[2], 4);
    nnp_ocl_arg_mem (&a, &call->out[0], 4);
    nnp_ocl_arg_raw (&a, sizeof (BcastArg), &s->bc[0]);
    nnp_ocl_arg_int (&a, (int) n);
    return nnp_ocl_launch_1d (call, &a, n, error);
  }
  if (s->code == NNP_OCL_BIN_EQUAL || s->code == NNP_OCL_BIN_LESS
      || s->code == NNP_OCL_BIN_GREATER) {
    NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };
    nnp_ocl_arg_mem (&a, &call->in[0], 4);
    nnp_ocl_arg_mem (&a, &call->in[1], 4);
    nnp_ocl_arg_mem (&a, &call->out[0], 1);
    nnp_ocl_arg_raw (&a, sizeof (BcastArg), &s->bc[0]);
    nnp_ocl_arg_int (&a, (int) n);
    nnp_ocl_arg_int (&a, s->code);
    return nnp_ocl_launch_1d (call, &a, n, error);
  }
  for (int st = 0; st < s->n_steps; st++) {
    NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };
    NnpOclActArg none = { 0, 0.f, 0.f };
    const NnpOclMem *x0 = st == 0 ? &call->in[0] : &call->out[0];
    const NnpOclMem *x1 = node->n_inputs == 1 ? &call->in[0] : &call->in[st + 1];

    nnp_ocl_arg_mem (&a, x0, 4);
    nnp_ocl_arg_mem (&a, x1, 4);
    nnp_ocl_arg_mem (&a, &call->out[0], 4);
    nnp_ocl_arg_raw (&a, sizeof (BcastArg), &s->bc[st]);
    nnp_ocl_arg_int (&a, (int) n);
    nnp_ocl_arg_int (&a, s->code);
    nnp_ocl_arg_raw (&a, sizeof (NnpOclActArg), st == s->n_steps - 1 ? &s->base.act : &none);
    if (!nnp_ocl_launch_1d (call, &a, n, error))
      return FALSE;
  }
  return TRUE;
}

#define BINARY_KERNEL \
  { \
    .supports = binary_supports, .prepare = binary_prepare, .run = binary_run, \
    .free_state = binary_free \
  }

const NnpOclKernel nnp_ocl_kernel_add = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_sub = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_mul = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_div = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_pow = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_max = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_min = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_sum = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_equal = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_less = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_greater = BINARY_KERNEL;
const NnpOclKernel nnp_ocl_kernel_where = BINARY_KERNEL;
