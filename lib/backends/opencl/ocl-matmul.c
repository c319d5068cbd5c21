/* OpenCL backend: launch code of MatMul and Gemm, one strided batched GEMM
 * (kernels/gemm.cl).  As lib/backends/cpu/cpu-matmul.c. */
#include "backends/opencl/ocl-ops.h"
#include "ops/conv-params.h"

/* Host mirror of the kernels' GemmP (4-byte fields only). */
typedef struct {
  cl_int m, n, k;
  cl_int a_rs, a_cs, b_rs, b_cs;
  cl_int c_rs, c_cs, has_c;
  cl_float alpha, beta;
  cl_int batch_rank;
  cl_int bdims[NNP_OCL_MAX_RANK];
  cl_int a_bs[NNP_OCL_MAX_RANK];
  cl_int b_bs[NNP_OCL_MAX_RANK];
} GemmArg;

/* ------------------------------------------------------------------ */
/* MatMul / Gemm */

static gboolean
gemm_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (!nnp_ocl_float_io (graph, node, why))
    return FALSE;
  if (node->op == NNP_OP_MAT_MUL) {
    const NnpMatMulParams *p = node->params;
    if (p == NULL || p->batch_rank > NNP_OCL_MAX_RANK)
      return nnp_ocl_reject (why, node, "batch rank too large");
  }
  return TRUE;
}

typedef struct {
  NnpOclState base;
  gboolean tiled; /* gemm_tiled (k[1]) rather than gemm_naive (k[0]) */
  GemmArg gemm;
} GemmState;

static gpointer
gemm_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  GemmState *s = nnp_ocl_state_new (dev, node, sizeof (GemmState), "gemm.cl", "gemm_naive",
                                    "gemm_tiled", error);
  GemmArg *g;

  if (s == NULL)
    return NULL;
  g = &s->gemm;
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
  s->tiled = (size_t) g->m * g->n >= 256 && nnp_ocl_work_group_max (dev, s->base.k[1]) >= 64;
  return s;
}

static gboolean
gemm_run (const NnpOclCall *call, GError **error)
{
  GemmState *s = call->state;
  const GemmArg *g = &s->gemm;
  size_t batch = 1;
  const NnpOclMem *c = g->has_c ? &call->in[2] : &call->in[0];
  NnpOclArgs a = { s->tiled ? s->base.k[1] : s->base.k[0], 0, CL_SUCCESS };

  for (int d = 0; d < g->batch_rank; d++)
    batch *= (size_t) g->bdims[d];
  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->in[1], 4);
  nnp_ocl_arg_mem (&a, c, 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_raw (&a, sizeof (GemmArg), g);
  nnp_ocl_arg_raw (&a, sizeof (NnpOclActArg), &s->base.act);
  if (s->tiled) {
    size_t global[3] = { (size_t) (g->n + NNP_OCL_TILE - 1) / NNP_OCL_TILE * NNP_OCL_TILE_LOCAL,
                         (size_t) (g->m + NNP_OCL_TILE - 1) / NNP_OCL_TILE * NNP_OCL_TILE_LOCAL,
                         batch };
    size_t local[3] = { NNP_OCL_TILE_LOCAL, NNP_OCL_TILE_LOCAL, 1 };
    return nnp_ocl_launch (call, &a, 3, global, local, error);
  } else {
    size_t global[3] = { (size_t) g->n, (size_t) g->m, batch };
    return nnp_ocl_launch (call, &a, 3, global, NULL, error);
  }
}

#define GEMM_KERNEL \
  { \
    .supports = gemm_supports, .prepare = gemm_prepare, .run = gemm_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_mat_mul = GEMM_KERNEL;
const NnpOclKernel nnp_ocl_kernel_gemm = GEMM_KERNEL;
