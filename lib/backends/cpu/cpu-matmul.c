/* libnnpipe: CPU kernels for MatMul and Gemm (float32), on the packed GEMM
 * of cpu-gemm.c.  A constant B (the usual weight operand) is packed once by
 * `prepare`. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "ops/conv-params.h"
#include "graph/derived.h"

typedef struct {
  const float *packed_b; /* own_packed, or borrowed from the graph's derived-data cache */
  float *own_packed;     /* owned, or NULL */
} MatState;

static void
mat_state_free (gpointer data)
{
  MatState *st = data;

  if (st == NULL)
    return;
  g_aligned_free (st->own_packed);
  g_free (st);
}

typedef struct {
  const float *b;
  int64_t k, n, rs, cs;
} PackJob;

static gpointer
pack_b (gpointer data)
{
  const PackJob *j = data;
  float *packed = g_aligned_alloc (nnp_sgemm_packed_b_size (j->k, j->n), sizeof (float), 64);

  nnp_sgemm_pack_b (j->k, j->n, j->b, j->rs, j->cs, 1.f, packed);
  return packed;
}

/* The constant B packed: once per model, shared by every specialisation
 * (lib/graph/derived.h); a B that is not one of the model's weights gets
 * this state's own copy. */
static MatState *
pack_b_state (const NnpGraph *graph, NnpTensor *b, int64_t k, int64_t n, int64_t rs, int64_t cs)
{
  MatState *st = g_new0 (MatState, 1);
  PackJob job = { b->data, k, n, rs, cs };
  int64_t key[4] = { k, n, rs, cs };

  st->packed_b = nnp_derived_get (nnp_graph_get_derived (graph), "packed-b", &b, 1, key,
                                  sizeof (key), pack_b, &job, g_aligned_free);
  if (st->packed_b == NULL)
    st->packed_b = st->own_packed = pack_b (&job);
  return st;
}

static gsize
mat_workspace (const NnpGraph *graph, const NnpNode *node)
{
  return nnp_sgemm_scratch_size ();
}

/* ---------------------------------------------------------------- MatMul */

typedef struct {
  const NnpMatMulParams *p;
  const float *a, *b;
  float *c;
  gboolean b_packed;
} MatMulCtx;

static void
mat_mul_setup (gpointer data, int64_t index, NnpSgemm *g)
{
  MatMulCtx *ctx = data;
  const NnpMatMulParams *p = ctx->p;
  int64_t ao = 0, bo = 0, rem = index;

  for (int d = p->batch_rank - 1; d >= 0; d--) {
    int64_t i = rem % p->batch_dims[d];
    rem /= p->batch_dims[d];
    ao += i * p->a_batch_strides[d];
    bo += i * p->b_batch_strides[d];
  }
  g->a = ctx->a + ao;
  if (!ctx->b_packed)
    g->b = ctx->b + bo;
  g->c = ctx->c + index * p->m * p->n;
}

static gboolean
b_is_single (const NnpMatMulParams *p)
{
  for (int d = 0; d < p->batch_rank; d++)
    if (p->b_batch_strides[d] != 0)
      return FALSE;
  return TRUE;
}

static gpointer
mat_mul_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpMatMulParams *p = node->params;
  NnpValue *bv = nnp_node_input (graph, node, 1);

  if (p == NULL || bv == NULL || bv->constant == NULL || !b_is_single (p))
    return NULL;
  return pack_b_state (graph, bv->constant, p->k, p->n, p->n, 1);
}

static gboolean
mat_mul_run (const NnpCpuCall *call, GError **error)
{
  const NnpMatMulParams *p = call->node->params;
  const MatState *st = call->state;
  MatMulCtx ctx;
  NnpSgemm g = { 0 };

  g_return_val_if_fail (p != NULL, FALSE);
  ctx.p = p;
  ctx.a = call->inputs[0]->data;
  ctx.b = call->inputs[1]->data;
  ctx.c = call->outputs[0]->data;
  ctx.b_packed = st != NULL;

  g.m = p->fold_batch ? p->m * p->n_batch : p->m;
  g.n = p->n;
  g.k = p->k;
  g.a = ctx.a;
  g.a_rs = p->k;
  g.a_cs = 1;
  g.alpha = 1.f;
  if (st)
    g.b_packed = st->packed_b;
  g.b = ctx.b;
  g.b_rs = p->n;
  g.b_cs = 1;
  g.c = ctx.c;
  g.ldc = p->n;
  g.act = call->node->act;
  g.act_alpha = call->node->act_alpha;
  g.act_beta = call->node->act_beta;
  if (call->bias) {
    /* a bias Add fused by the executor (NnpCpuCall.bias) */
    g.bias = call->bias->data;
    g.bias_rs = 0;
    g.bias_cs = 1;
    g.beta = 1.f;
    g.act = call->sum_act;
    g.act_alpha = call->sum_alpha;
    g.act_beta = call->sum_beta;
  }
  if (p->fold_batch || p->n_batch == 1)
    nnp_sgemm_run (&g, 1, NULL, NULL, call->pool, call->scratch);
  else
    nnp_sgemm_run (&g, p->n_batch, mat_mul_setup, &ctx, call->pool, call->scratch);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_mat_mul = {
  .run = mat_mul_run,
  .workspace = mat_workspace,
  .prepare = mat_mul_prepare,
  .free_state = mat_state_free,
};

/* ---------------------------------------------------------------- Gemm */

static gpointer
gemm_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpGemmParams *p = node->params;
  NnpValue *bv = nnp_node_input (graph, node, 1);

  if (p == NULL || bv == NULL || bv->constant == NULL)
    return NULL;
  return pack_b_state (graph, bv->constant, p->k, p->n, p->trans_b ? 1 : p->n,
                       p->trans_b ? p->k : 1);
}

static gboolean
gemm_run (const NnpCpuCall *call, GError **error)
{
  const NnpGemmParams *p = call->node->params;
  const MatState *st = call->state;
  NnpSgemm g = { 0 };

  g_return_val_if_fail (p != NULL, FALSE);
  g.m = p->m;
  g.n = p->n;
  g.k = p->k;
  g.a = call->inputs[0]->data;
  g.a_rs = p->trans_a ? 1 : p->k;
  g.a_cs = p->trans_a ? p->m : 1;
  g.alpha = p->alpha;
  if (st)
    g.b_packed = st->packed_b;
  g.b = call->inputs[1]->data;
  g.b_rs = p->trans_b ? 1 : p->n;
  g.b_cs = p->trans_b ? p->k : 1;
  g.c = call->outputs[0]->data;
  g.ldc = p->n;
  if (p->has_c && call->node->n_inputs > 2 && call->inputs[2]) {
    g.bias = call->inputs[2]->data;
    g.bias_rs = p->c_rs;
    g.bias_cs = p->c_cs;
    g.beta = p->beta;
  }
  g.act = call->node->act;
  g.act_alpha = call->node->act_alpha;
  g.act_beta = call->node->act_beta;
  nnp_sgemm_run (&g, 1, NULL, NULL, call->pool, call->scratch);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_gemm = {
  .run = gemm_run,
  .workspace = mat_workspace,
  .prepare = gemm_prepare,
  .free_state = mat_state_free,
};
