/* libnnpipe internal: what the integer convolution (cpu-qconv.c) and matrix
 * product (cpu-qmatmul.c) kernels share (cpu-qcommon.c): packed constant
 * weights in the derived-data cache, the per-run operand values (shifted
 * zero points, multipliers) and the epilogue set-up. */
#pragma once

#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-qgemm.h"
#include "graph/derived.h"
#include "ops/quant-params.h"

G_BEGIN_DECLS

#define ALIGN64(n) (((gsize) (n) + 63) & ~(gsize) 63)
#define TILE_BYTES (NNP_QGEMM_MR * NNP_QGEMM_NT * sizeof (int32_t))

/* Packed constant weights with their sums (a derived-cache value). */
typedef struct {
  guint8 *data;  /* conv: S panels per group; matmul: U panels */
  int32_t *sums; /* conv: row sums [M]; matmul: column sums [N] */
  gsize group_bytes;
} QPacked;

typedef struct {
  const QPacked *packed; /* borrowed from the cache, or own */
  QPacked *own;
} QState;

/* Per-run values shared by the tasks: shifted zero points, multipliers. */
typedef struct {
  int32_t *zs, *zu; /* S / U zero points, shifted (zs_n / zu_n entries) */
  int64_t zs_n, zu_n;
  float *chan; /* QLinear: multiplier per channel; fused: the scale */
  int64_t chan_n;
} QRun;

void nnp_qpacked_free (gpointer data);
void nnp_qstate_free (gpointer data);
/* The state of a node whose weight value `wv` is a constant: make (job)'s
 * packing (a QPacked), from the model's derived-data cache under (kind, key)
 * or owned. */
QState *nnp_qstate_new (const NnpGraph *graph, NnpValue *wv, const char *kind, const int64_t *key,
                        gsize key_size, NnpDerivedMake make, gpointer job);

/* A zero point's element i (0 without a zero point). */
static inline int32_t
nnp_qzp_at (const NnpTensor *t, int64_t i)
{
  if (t == NULL)
    return 0;
  return t->dtype == NNP_DTYPE_INT8 ? ((const gint8 *) t->data)[i] : ((const guint8 *) t->data)[i];
}

/* Input idx of the call, NULL when absent. */
static inline const NnpTensor *
nnp_qinput (const NnpCpuCall *call, int idx)
{
  return idx >= 0 && idx < call->node->n_inputs ? call->inputs[idx] : NULL;
}

gsize nnp_qrun_bytes (int64_t zs_n, int64_t zu_n, int64_t chan_n);
/* Fill a QRun in `mem` (nnp_qrun_bytes); returns the memory after it.  The
 * S operand is the one whose zero point is zs (conv: W; matmul: A). */
guint8 *nnp_qrun_fill (const NnpCpuCall *call, const NnpQOperands *q, gboolean s_is_w, QRun *r,
                       guint8 *mem);
/* QLinear*: FALSE (error naming the node) when a multiplier is not finite. */
gboolean nnp_qrun_check (const NnpCpuCall *call, const NnpQOperands *q, const QRun *r,
                         GError **error);
gboolean nnp_qall_zero (const int32_t *v, int64_t n);
/* The epilogue of a block whose rows start at row0 and columns at col0 of
 * the whole product (channel arrays follow rows when chan_rows). */
void nnp_qepilogue_init (NnpQgemmEpilogue *e, const NnpCpuCall *call, const NnpQOperands *q,
                         const QRun *r, int64_t k, gboolean chan_rows, int64_t row0, int64_t col0);

G_END_DECLS
