/* libnnpipe: CPU kernel for ConvTranspose (float32, NCHW).
 *
 * cols (Cout * kvol x HW_in) = W^T x X per group with the GEMM of
 * cpu-gemm.c (weights packed once as for Conv, cpu-conv.h), then col2im
 * (scatter-add) per output channel, bias and activation; cols lives in the
 * workspace.  Kernel == stride without padding takes a tiled path. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-conv.h"

#include <string.h>

static gsize
convt_cols_bytes (const NnpConvParams *p)
{
  return round_up_bytes ((gsize) p->out_channels * vol3 (p->kernel) * vol3 (p->in_dims)
                         * sizeof (float));
}

static gpointer
convt_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_cpu_conv_prepare_common (graph, node, TRUE);
}

/* Kernel == stride, no dilation, no padding: every output element gets
 * exactly one contribution, and input row ih only touches output rows
 * [ih * KH, ih * KH + KH). */
static gboolean
convt_tiled (const NnpConvParams *p)
{
  for (int d = 0; d < NNP_CONV_SPATIAL; d++)
    if (p->kernel[d] != p->strides[d] || p->dilations[d] != 1 || p->pads_begin[d] != 0
        || p->out_dims[d] != p->in_dims[d] * p->strides[d])
      return FALSE;
  return p->in_dims[0] == 1 && p->kernel[0] == 1;
}

/* Tiled ConvTranspose with packed weights: input rows per task, so the
 * task's columns (M x rows * IW) stay in L2. */
static int64_t
convt_chunk_rows (const NnpConvParams *p)
{
  int64_t m = p->out_channels / p->group * vol3 (p->kernel);
  int64_t r = 32768 / MAX (m * p->in_dims[2], 1);

  return CLAMP (r, 1, MAX (p->in_dims[1], 1));
}

static gsize
convt_chunk_bytes (const NnpConvParams *p)
{
  int64_t m = p->out_channels / p->group * vol3 (p->kernel);

  return round_up_bytes ((gsize) m * convt_chunk_rows (p) * p->in_dims[2] * sizeof (float));
}

static gsize
convt_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpConvParams *p = node->params;
  NnpValue *wv = nnp_node_input (graph, node, 1);

  if (p == NULL)
    return 0;
  /* as in nnp_cpu_conv_prepare_common (koff) and convt_run */
  if (convt_tiled (p) && wv && wv->constant
      && p->in_channels / p->group * vol3 (p->in_dims) < G_MAXINT32)
    return convt_chunk_bytes (p) * nnp_sgemm_slots ();
  return convt_cols_bytes (p) + nnp_sgemm_scratch_size ();
}

typedef struct {
  const NnpConvParams *p;
  const ConvState *st;
  const float *x, *bias;
  float *y;
  int64_t m, k, chunk_rows, n_chunks;
  NnpActivation act;
  float act_alpha, act_beta;
} ConvtTiledCtx;

/* Task = (batch item, group, chunk of input rows): columns of the chunk by
 * the indirect GEMM into the slot, then each output channel's rows. */
static void
convt_tiled_task (gpointer data, int64_t task, void *slot)
{
  ConvtTiledCtx *c = data;
  const NnpConvParams *p = c->p;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t KH = p->kernel[1], KW = p->kernel[2], kvol = KH * KW;
  const int64_t in_sp = IH * IW, out_sp = OH * OW;
  int64_t chunk = task % c->n_chunks, grp = (task / c->n_chunks) % p->group;
  int64_t b = task / (c->n_chunks * p->group);
  int64_t ih0 = chunk * c->chunk_rows, nrows = MIN (c->chunk_rows, IH - ih0);
  int64_t cog = p->out_channels / p->group, cig = p->in_channels / p->group;
  int64_t n = nrows * IW;
  float *cols = slot;
  NnpSgemm g = { 0 };

  g.m = c->m;
  g.k = c->k;
  g.a_packed = c->st->packed + grp * c->st->group_floats;
  g.c = cols;
  g.ldc = n;
  g.act = NNP_ACT_NONE;
  nnp_sgemm_run_indirect_full (&g, c->x + (b * p->in_channels + grp * cig) * in_sp + ih0 * IW,
                               c->st->koff, 0, 1, n, FALSE, NULL);

  for (int64_t j = 0; j < cog; j++) {
    int64_t co = grp * cog + j;
    float bias = c->bias ? c->bias[co] : 0.f;
    float *y = c->y + (b * p->out_channels + co) * out_sp;
    const float *src_c = cols + j * kvol * n; /* rows (j, kh, kw) of the chunk */
    for (int64_t r = 0; r < nrows; r++) {
      for (int64_t kh = 0; kh < KH; kh++) {
        float *d = y + ((ih0 + r) * KH + kh) * OW;
        const float *s0 = src_c + (kh * KW) * n + r * IW;
        if (KW == 2) {
          const float *s1 = s0 + n;
          for (int64_t iw = 0; iw < IW; iw++) {
            d[2 * iw] = s0[iw] + bias;
            d[2 * iw + 1] = s1[iw] + bias;
          }
        } else {
          for (int64_t ow = 0; ow < OW; ow++)
            d[ow] = s0[(ow % KW) * n + ow / KW] + bias;
        }
        nnp_sgemm_activate (d, OW, c->act, c->act_alpha, c->act_beta);
      }
    }
  }
}

static void
convt_tiled_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  ConvtTiledCtx ctx;

  ctx.p = p;
  ctx.st = call->state;
  ctx.x = call->inputs[0]->data;
  ctx.bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  ctx.y = call->outputs[0]->data;
  nnp_cpu_conv_group_mk (p, TRUE, &ctx.m, &ctx.k);
  ctx.chunk_rows = convt_chunk_rows (p);
  ctx.n_chunks = (p->in_dims[1] + ctx.chunk_rows - 1) / ctx.chunk_rows;
  ctx.act = call->node->act;
  ctx.act_alpha = call->node->act_alpha;
  ctx.act_beta = call->node->act_beta;
  nnp_cpu_run_in_slots (call->pool, p->batch * p->group * ctx.n_chunks, call->scratch,
                        convt_chunk_bytes (p), convt_tiled_task, &ctx);
}

typedef struct {
  const NnpConvParams *p;
  const float *cols, *bias;
  float *y; /* this batch item */
  NnpActivation act;
  float act_alpha, act_beta;
} Col2imCtx;

/* Output channels [begin, end): bias, scatter-add of the columns, activation. */
static void
col2im_range (gpointer data, gsize begin, gsize end, int thread)
{
  Col2imCtx *c = data;
  const NnpConvParams *p = c->p;
  const int64_t ID = p->in_dims[0], IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OD = p->out_dims[0], OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t KD = p->kernel[0], KH = p->kernel[1], KW = p->kernel[2];
  const int64_t sw = p->strides[2], dw = p->dilations[2];
  const int64_t in_sp = ID * IH * IW, out_sp = OD * OH * OW, kvol = KD * KH * KW;

  gboolean tiled = TRUE; /* kernel == stride, no dilation, no padding: each
                               * output element gets exactly one contribution */

  for (int d = 0; d < NNP_CONV_SPATIAL; d++)
    if (p->kernel[d] != p->strides[d] || p->dilations[d] != 1 || p->pads_begin[d] != 0
        || p->out_dims[d] != p->in_dims[d] * p->strides[d])
      tiled = FALSE;

  for (gsize co = begin; co < end; co++) {
    float *y = c->y + co * out_sp;
    float b = c->bias ? c->bias[co] : 0.f;

    if (tiled) {
      for (int64_t od = 0; od < OD; od++) {
        for (int64_t oh = 0; oh < OH; oh++) {
          int64_t kp0 = ((od % KD) * KH + oh % KH) * KW;
          const float *src = c->cols + (co * kvol + kp0) * in_sp + ((od / KD) * IH + oh / KH) * IW;
          float *d = y + (od * OH + oh) * OW;
          if (KW == 2) {
            const float *s0 = src, *s1 = src + in_sp;
            for (int64_t iw = 0; iw < IW; iw++) {
              d[2 * iw] = s0[iw] + b;
              d[2 * iw + 1] = s1[iw] + b;
            }
          } else {
            for (int64_t ow = 0; ow < OW; ow++)
              d[ow] = src[(ow % KW) * in_sp + ow / KW] + b;
          }
        }
      }
      nnp_sgemm_activate (y, out_sp, c->act, c->act_alpha, c->act_beta);
      continue;
    }
    for (int64_t i = 0; i < out_sp; i++)
      y[i] = b;
    for (int64_t kp = 0; kp < kvol; kp++) {
      int64_t kd = kp / (KH * KW), kh = (kp / KW) % KH, kw = kp % KW;
      const float *src = c->cols + (co * kvol + kp) * in_sp;
      int64_t offw = kw * dw - p->pads_begin[2];
      /* iw range with 0 <= iw * sw + offw < OW */
      int64_t iw_lo = offw >= 0 ? 0 : (-offw + sw - 1) / sw;
      int64_t iw_hi = OW - offw <= 0 ? 0 : MIN (IW, (OW - offw + sw - 1) / sw);
      if (iw_lo >= iw_hi)
        continue;
      for (int64_t id = 0; id < ID; id++) {
        int64_t od = id * p->strides[0] + kd * p->dilations[0] - p->pads_begin[0];
        if (od < 0 || od >= OD)
          continue;
        for (int64_t ih = 0; ih < IH; ih++) {
          int64_t oh = ih * p->strides[1] + kh * p->dilations[1] - p->pads_begin[1];
          const float *s;
          float *d;
          if (oh < 0 || oh >= OH)
            continue;
          s = src + (id * IH + ih) * IW;
          d = y + (od * OH + oh) * OW;
          if (sw == 1) {
            for (int64_t iw = iw_lo; iw < iw_hi; iw++)
              d[iw + offw] += s[iw];
          } else {
            for (int64_t iw = iw_lo; iw < iw_hi; iw++)
              d[iw * sw + offw] += s[iw];
          }
        }
      }
    }
    nnp_sgemm_activate (y, out_sp, c->act, c->act_alpha, c->act_beta);
  }
}

static gboolean
convt_run (const NnpCpuCall *call, GError **error)
{
  const NnpConvParams *p = call->node->params;
  const NnpNode *node = call->node;
  ConvGemmCtx ctx = { 0 };
  Col2imCtx cc;
  NnpSgemm g = { 0 };
  int64_t in_sp, out_sp;

  g_return_val_if_fail (p != NULL, FALSE);
  if (convt_tiled (p) && call->state && ((const ConvState *) call->state)->koff) {
    convt_tiled_run (call, p);
    return TRUE;
  }
  in_sp = vol3 (p->in_dims);
  out_sp = vol3 (p->out_dims);
  ctx.p = p;
  ctx.st = call->state;
  ctx.w = call->inputs[1]->data;
  ctx.transpose = TRUE;
  ctx.cols = call->scratch;
  nnp_cpu_conv_group_mk (p, TRUE, &ctx.m, &ctx.k);

  g.m = ctx.m;
  g.n = in_sp;
  g.k = ctx.k;
  g.alpha = 1.f;
  g.b_rs = in_sp;
  g.b_cs = 1;
  g.ldc = in_sp;

  cc.p = p;
  cc.cols = ctx.cols;
  cc.bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  cc.act = node->act;
  cc.act_alpha = node->act_alpha;
  cc.act_beta = node->act_beta;
  for (int64_t b = 0; b < p->batch; b++) {
    ctx.x = (const float *) call->inputs[0]->data + b * p->in_channels * in_sp;
    nnp_sgemm_run (&g, p->group, nnp_cpu_conv_gemm_setup, &ctx, call->pool,
                   (guint8 *) call->scratch + convt_cols_bytes (p));
    cc.y = (float *) call->outputs[0]->data + b * p->out_channels * out_sp;
    nnp_parallel_for (call->pool, p->out_channels, 1, col2im_range, &cc);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_conv_transpose = {
  .run = convt_run,
  .workspace = convt_workspace,
  .prepare = convt_prepare,
  .free_state = nnp_cpu_conv_state_free,
};
