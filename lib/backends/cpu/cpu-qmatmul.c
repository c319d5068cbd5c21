/* libnnpipe: CPU kernels of the integer matrix products: MatMulInteger,
 * QLinearMatMul (with our optional int32 bias, a QDQ Gemm's), and
 * NnpMatMulIntegerToFloat, on the 8-bit GEMM of cpu-qgemm.c.
 *
 * S = rows of A (packed per task), U = B, packed once per model when it is
 * a constant without batch dims, else per task.  A task is one (batch, row
 * block, column block).  Requantisation and scaling as in cpu-qconv.c. */
#include "backends/cpu/cpu-qcommon.h"
#include "backends/cpu/cpu-conv.h"

#include <string.h>

#define MM_MC 64 /* MatMul rows per task */

/* ---------------------------------------------------------------- MatMul */

/* Columns per task block */
static int64_t
qmm_nc (const NnpQMatMulParams *p)
{
  int64_t kp = nnp_qgemm_kp (p->mm.k);
  int64_t nc = CLAMP ((256 * 1024 / kp) / NNP_QGEMM_NT * NNP_QGEMM_NT, NNP_QGEMM_NT, 512);
  return MIN (nc, (p->mm.n + NNP_QGEMM_NT - 1) / NNP_QGEMM_NT * NNP_QGEMM_NT);
}

static gboolean
b_unbatched (const NnpQMatMulParams *p)
{
  for (int d = 0; d < p->mm.batch_rank; d++)
    if (p->mm.b_batch_strides[d] != 0)
      return FALSE;
  return TRUE;
}

typedef struct {
  int64_t k, n;
  gboolean b_signed;
  const guint8 *b;
} QmmPackJob;

static gpointer
qmm_pack (gpointer data)
{
  const QmmPackJob *j = data;
  QPacked *pk = g_new0 (QPacked, 1);

  pk->group_bytes = nnp_qgemm_u_size (j->n, j->k);
  pk->data = g_aligned_alloc (pk->group_bytes, 1, 64);
  pk->sums = g_new (int32_t, MAX (j->n, 1));
  nnp_qgemm_pack_u (j->k, j->n, j->b, j->n, j->b_signed, pk->data, pk->sums);
  return pk;
}

static gpointer
qmm_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpQMatMulParams *p = node->params;
  NnpValue *bv;
  QmmPackJob job;

  (void) error;
  if (p == NULL)
    return NULL;
  bv = nnp_node_input (graph, node, p->q.w);
  if (bv == NULL || bv->constant == NULL || !b_unbatched (p))
    return NULL;
  job.k = p->mm.k;
  job.n = p->mm.n;
  job.b_signed = p->q.w_dtype == NNP_DTYPE_INT8;
  job.b = bv->constant->data;
  {
    int64_t key[3] = { job.k, job.n, job.b_signed };
    return nnp_qstate_new (graph, bv, "qmatmul-packed-u", key, sizeof (key), qmm_pack, &job);
  }
}

static gsize
qmm_slot_bytes (const NnpQMatMulParams *p)
{
  int64_t nc = qmm_nc (p);

  return ALIGN64 (nnp_qgemm_s_size (MM_MC, p->mm.k)) + ALIGN64 (MM_MC * sizeof (int32_t))
         + ALIGN64 (nnp_qgemm_u_size (nc, p->mm.k)) + ALIGN64 (nc * sizeof (int32_t))
         + ALIGN64 (TILE_BYTES);
}

static gsize
qmm_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpQMatMulParams *p = node->params;

  (void) graph;
  if (p == NULL)
    return 0;
  return nnp_qrun_bytes (p->q.x_zp_n, p->q.w_zp_n, MAX (p->q.w_scale_n, p->q.scale_n))
         + qmm_slot_bytes (p) * (gsize) nnp_sgemm_slots ();
}

typedef struct {
  const NnpCpuCall *call;
  const NnpQMatMulParams *p;
  QRun run;
  const QPacked *packed; /* B, or NULL */
  int64_t nc, n_rb, n_cb;
  gboolean need_rowsum, need_colsum;
} QmmJob;

static void
qmm_task (gpointer data, int64_t task, void *slot)
{
  const QmmJob *J = data;
  const NnpQMatMulParams *p = J->p;
  const NnpMatMulParams *mm = &p->mm;
  int64_t cb = task % J->n_cb, rb = (task / J->n_cb) % J->n_rb, bi = task / (J->n_cb * J->n_rb);
  int64_t i0 = rb * MM_MC, mc = MIN (MM_MC, mm->m - i0);
  int64_t n0 = cb * J->nc, nc = MIN (J->nc, mm->n - n0);
  int64_t kp = nnp_qgemm_kp (mm->k), a_off = 0, b_off = 0, rest = bi;
  gint8 *s = slot;
  int32_t *rowsum = (int32_t *) ((guint8 *) s + ALIGN64 (nnp_qgemm_s_size (MM_MC, mm->k)));
  guint8 *u = (guint8 *) rowsum + ALIGN64 (MM_MC * sizeof (int32_t));
  int32_t *colsum = (int32_t *) (u + ALIGN64 (nnp_qgemm_u_size (J->nc, mm->k)));
  int32_t *tile = (int32_t *) ((guint8 *) colsum + ALIGN64 (J->nc * sizeof (int32_t)));
  const guint8 *a = J->call->inputs[p->q.x]->data, *b = J->call->inputs[p->q.w]->data;
  const guint8 *up;
  const int32_t *cs;
  gsize esize = nnp_dtype_size (p->q.y_dtype);
  NnpQgemmEpilogue e;

  for (int d = mm->batch_rank - 1; d >= 0; d--) {
    int64_t idx = rest % mm->batch_dims[d];
    rest /= mm->batch_dims[d];
    a_off += idx * mm->a_batch_strides[d];
    b_off += idx * mm->b_batch_strides[d];
  }
  nnp_qgemm_pack_s (mc, mm->k, a + a_off + i0 * mm->k, mm->k, p->q.x_dtype == NNP_DTYPE_UINT8, s,
                    J->need_rowsum ? rowsum : NULL);
  if (J->packed) {
    up = J->packed->data + (n0 / NNP_QGEMM_NRP) * kp * NNP_QGEMM_NRP;
    cs = J->packed->sums + n0;
  } else {
    /* the block of B, columns [n0, n0 + nc) */
    nnp_qgemm_pack_u (mm->k, nc, b + b_off + n0, mm->n, p->q.w_dtype == NNP_DTYPE_INT8, u,
                      J->need_colsum ? colsum : NULL);
    up = u;
    cs = colsum;
  }
  nnp_qepilogue_init (&e, J->call, &p->q, &J->run, mm->k, FALSE, i0, n0);
  e.rowsum = J->need_rowsum ? rowsum : NULL;
  e.colsum = J->need_colsum ? cs : NULL;
  e.c = (guint8 *) J->call->outputs[0]->data + ((bi * mm->m + i0) * mm->n + n0) * esize;
  e.ldc = mm->n;
  for (int64_t r0 = 0; r0 < mc; r0 += NNP_QGEMM_MR) {
    for (int64_t j0 = 0; j0 < nc; j0 += NNP_QGEMM_NT) {
      int cols = (int) MIN (NNP_QGEMM_NT, nc - j0);
      const guint8 *u0 = up + (j0 / NNP_QGEMM_NRP) * kp * NNP_QGEMM_NRP;
      nnp_qgemm_tile_store (&e, s + r0 * kp, u0, u0 + kp * NNP_QGEMM_NRP, kp, r0,
                            (int) MIN (NNP_QGEMM_MR, mc - r0), j0, cols, tile);
    }
  }
}

static gboolean
qmm_run (const NnpCpuCall *call, GError **error)
{
  const NnpQMatMulParams *p = call->node->params;
  const QState *st = call->state;
  QmmJob J;

  g_return_val_if_fail (p != NULL, FALSE);
  memset (&J, 0, sizeof (J));
  J.call = call;
  J.p = p;
  nnp_qrun_fill (call, &p->q, FALSE, &J.run, call->scratch);
  if (!nnp_qrun_check (call, &p->q, &J.run, error))
    return FALSE;
  J.packed = st ? st->packed : NULL;
  J.nc = qmm_nc (p);
  J.n_rb = (p->mm.m + MM_MC - 1) / MM_MC;
  J.n_cb = (p->mm.n + J.nc - 1) / J.nc;
  J.need_rowsum = !nnp_qall_zero (J.run.zu, J.run.zu_n);
  J.need_colsum = !nnp_qall_zero (J.run.zs, J.run.zs_n);
  if (p->mm.m == 0 || p->mm.n == 0)
    return TRUE;
  nnp_cpu_run_in_slots (
      call->pool, p->mm.n_batch * J.n_rb * J.n_cb,
      (guint8 *) call->scratch
          + nnp_qrun_bytes (p->q.x_zp_n, p->q.w_zp_n, MAX (p->q.w_scale_n, p->q.scale_n)),
      qmm_slot_bytes (p), qmm_task, &J);
  return TRUE;
}

#define QMM_KERNEL \
  { \
    .run = qmm_run, .workspace = qmm_workspace, .prepare = qmm_prepare, \
    .free_state = nnp_qstate_free, \
  }

const NnpCpuKernel nnp_cpu_mat_mul_integer = QMM_KERNEL;
const NnpCpuKernel nnp_cpu_qlinear_mat_mul = QMM_KERNEL;
const NnpCpuKernel nnp_cpu_mat_mul_integer_to_float = QMM_KERNEL;
