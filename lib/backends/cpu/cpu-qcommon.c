/* libnnpipe: what the CPU kernels of the integer convolutions and matrix
 * products share (cpu-qcommon.h). */
#include "backends/cpu/cpu-qcommon.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- shared */

void
nnp_qpacked_free (gpointer data)
{
  QPacked *p = data;

  if (p == NULL)
    return;
  g_aligned_free (p->data);
  g_free (p->sums);
  g_free (p);
}

void
nnp_qstate_free (gpointer data)
{
  QState *st = data;

  if (st == NULL)
    return;
  nnp_qpacked_free (st->own);
  g_free (st);
}

/* The state of a node whose weight value `wv` is a constant: make (job)'s
 * packing, from the model's derived-data cache under (kind, key) or owned. */
QState *
nnp_qstate_new (const NnpGraph *graph, NnpValue *wv, const char *kind, const int64_t *key,
                gsize key_size, NnpDerivedMake make, gpointer job)
{
  QState *st = g_new0 (QState, 1);

  st->packed = nnp_derived_get (nnp_graph_get_derived (graph), kind, &wv->constant, 1, key,
                                key_size, make, job, nnp_qpacked_free);
  if (st->packed == NULL)
    st->packed = st->own = make (job);
  return st;
}

gsize
nnp_qrun_bytes (int64_t zs_n, int64_t zu_n, int64_t chan_n)
{
  return ALIGN64 (zs_n * sizeof (int32_t)) + ALIGN64 (zu_n * sizeof (int32_t))
         + ALIGN64 (chan_n * sizeof (float));
}

/* Fill a QRun in `mem` (nnp_qrun_bytes).  The S operand is the one whose zero
 * point is zs (conv: W; matmul: A). */
guint8 *
nnp_qrun_fill (const NnpCpuCall *call, const NnpQOperands *q, gboolean s_is_w, QRun *r, guint8 *mem)
{
  const NnpTensor *xzp = nnp_qinput (call, q->x_zp), *wzp = nnp_qinput (call, q->w_zp);
  const NnpTensor *szp = s_is_w ? wzp : xzp, *uzp = s_is_w ? xzp : wzp;
  NnpDType st = s_is_w ? q->w_dtype : q->x_dtype, ut = s_is_w ? q->x_dtype : q->w_dtype;
  int64_t chan_n = q->out == NNP_QOUT_QUANT   ? q->w_scale_n
                   : q->out == NNP_QOUT_FLOAT ? q->scale_n
                                              : 0;

  r->zs_n = s_is_w ? q->w_zp_n : q->x_zp_n;
  r->zu_n = s_is_w ? q->x_zp_n : q->w_zp_n;
  r->chan_n = chan_n;
  r->zs = (int32_t *) mem;
  mem += ALIGN64 (r->zs_n * sizeof (int32_t));
  r->zu = (int32_t *) mem;
  mem += ALIGN64 (r->zu_n * sizeof (int32_t));
  r->chan = (float *) mem;
  mem += ALIGN64 (chan_n * sizeof (float));
  /* S is int8 in the kernel: uint8 sources are shifted by -128; U is uint8:
   * int8 sources by +128 */
  for (int64_t i = 0; i < r->zs_n; i++)
    r->zs[i] = nnp_qzp_at (szp, i) - (st == NNP_DTYPE_UINT8 ? 128 : 0);
  for (int64_t i = 0; i < r->zu_n; i++)
    r->zu[i] = nnp_qzp_at (uzp, i) + (ut == NNP_DTYPE_INT8 ? 128 : 0);
  if (q->out == NNP_QOUT_QUANT) {
    float xs = *(const float *) call->inputs[q->x_scale]->data;
    float ys = *(const float *) call->inputs[q->y_scale]->data;
    const float *ws = call->inputs[q->w_scale]->data;
    for (int64_t i = 0; i < chan_n; i++)
      r->chan[i] = xs * ws[i] / ys;
  } else if (q->out == NNP_QOUT_FLOAT) {
    memcpy (r->chan, call->inputs[q->scale]->data, chan_n * sizeof (float));
  }
  return mem;
}

/* QLinear*: the multipliers must be finite (a zero or non-finite y_scale
 * would make the rounding undefined). */
gboolean
nnp_qrun_check (const NnpCpuCall *call, const NnpQOperands *q, const QRun *r, GError **error)
{
  if (q->out != NNP_QOUT_QUANT)
    return TRUE;
  for (int64_t i = 0; i < r->chan_n; i++) {
    if (!isfinite (r->chan[i])) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "x_scale * w_scale / y_scale is %g for channel %" G_GINT64_FORMAT
                          ": the scales must be positive and finite",
                          r->chan[i], i);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
nnp_qall_zero (const int32_t *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    if (v[i] != 0)
      return FALSE;
  return TRUE;
}

/* The epilogue of a block: rows from row0, columns from col0 of the whole
 * product (channel arrays follow rows when chan_rows). */
void
nnp_qepilogue_init (NnpQgemmEpilogue *e, const NnpCpuCall *call, const NnpQOperands *q,
                    const QRun *r, int64_t k, gboolean chan_rows, int64_t row0, int64_t col0)
{
  const NnpTensor *bias = nnp_qinput (call, q->bias);
  const NnpTensor *yzp = nnp_qinput (call, q->y_zp);
  int64_t ch0 = chan_rows ? row0 : col0;

  memset (e, 0, sizeof (*e));
  e->out = q->out == NNP_QOUT_INT32   ? NNP_QGEMM_OUT_INT32
           : q->out == NNP_QOUT_QUANT ? NNP_QGEMM_OUT_QUANT8
                                      : NNP_QGEMM_OUT_FLOAT;
  e->k = k;
  e->zs = r->zs + (r->zs_n > 1 ? row0 : 0);
  e->zs_per = r->zs_n > 1;
  e->zu = r->zu + (r->zu_n > 1 ? col0 : 0);
  e->zu_per = r->zu_n > 1;
  e->chan_rows = chan_rows;
  e->bias_per = q->bias_n > 1;
  if (bias && q->out == NNP_QOUT_FLOAT)
    e->fbias = (const float *) bias->data + (e->bias_per ? ch0 : 0);
  else if (bias)
    e->ibias = (const int32_t *) bias->data + (e->bias_per ? ch0 : 0);
  e->scale_per = r->chan_n > 1;
  e->scale = r->chan + (e->scale_per ? ch0 : 0);
  if (q->out == NNP_QOUT_QUANT) {
    e->y_signed = q->y_dtype == NNP_DTYPE_INT8;
    e->y_lo = e->y_signed ? -128 : 0;
    e->y_hi = e->y_signed ? 127 : 255;
    e->y_zp = nnp_qzp_at (yzp, 0);
  }
  if (q->out == NNP_QOUT_FLOAT) {
    e->act = call->node->act;
    e->act_alpha = call->node->act_alpha;
    e->act_beta = call->node->act_beta;
  } else if (q->out == NNP_QOUT_QUANT && call->node->act == NNP_ACT_RELU) {
    /* a Relu before the quantisation (QDQ pass): clamp at the zero point */
    e->y_lo = MAX (e->y_lo, e->y_zp);
  }
}

/* ---------------------------------------------------------------- Conv */
