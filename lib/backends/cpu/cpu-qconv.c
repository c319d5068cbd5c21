/* libnnpipe: CPU kernels of the integer convolutions and matrix products:
 * ConvInteger, QLinearConv, NnpConvIntegerToFloat (Conv), MatMulInteger,
 * QLinearMatMul, NnpMatMulIntegerToFloat (MatMul), on the 8-bit GEMM of
 * cpu-qgemm.c (exact int32 sums; zero points as rank-1 corrections).
 *
 * Conv: S = the weights of a group (M/g x C/g*kvol), packed once per model
 * (the derived-data cache) when constant, else per run; U = the implicit
 * im2col matrix of X, packed block by block (NC columns, all of K) straight
 * from X, padding with X's zero point.  A task is one (image, group, column
 * block).
 * MatMul: S = rows of A (packed per task), U = B, packed once per model when
 * it is a constant without batch dims, else per task.  A task is one
 * (batch, row block, column block).
 *
 * Requantisation (QLinear*) as ONNX Runtime computes it: multiplier =
 * x_scale * w_scale / y_scale in float32, then (float) sum * multiplier,
 * round half to even, + y_zero_point, saturate.  The fused float ops:
 * (float) sum * scale + bias, then the fused activation. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-conv.h"
#include "backends/cpu/cpu-qgemm.h"
#include "graph/derived.h"
#include "ops/quant-params.h"

#include <nnpipe/log.h>
#include <math.h>
#include <string.h>

#define ALIGN64(n) (((gsize) (n) + 63) & ~(gsize) 63)
#define TILE_BYTES (NNP_QGEMM_MR * NNP_QGEMM_NT * sizeof (int32_t))
#define MM_MC 64 /* MatMul rows per task */

/* ---------------------------------------------------------------- shared */

/* Packed constant weights with their sums (a derived-cache value). */
typedef struct {
  guint8 *data;  /* conv: S panels per group; matmul: U panels */
  int32_t *sums; /* conv: row sums [M]; matmul: column sums [N] */
  gsize group_bytes;
} QPacked;

static void
qpacked_free (gpointer data)
{
  QPacked *p = data;

  if (p == NULL)
    return;
  g_aligned_free (p->data);
  g_free (p->sums);
  g_free (p);
}

typedef struct {
  const QPacked *packed; /* borrowed from the cache, or own */
  QPacked *own;
} QState;

static void
qstate_free (gpointer data)
{
  QState *st = data;

  if (st == NULL)
    return;
  qpacked_free (st->own);
  g_free (st);
}

static inline int32_t
zp_at (const NnpTensor *t, int64_t i)
{
  if (t == NULL)
    return 0;
  return t->dtype == NNP_DTYPE_INT8 ? ((const gint8 *) t->data)[i] : ((const guint8 *) t->data)[i];
}

static const NnpTensor *
in_or_null (const NnpCpuCall *call, int idx)
{
  return idx >= 0 && idx < call->node->n_inputs ? call->inputs[idx] : NULL;
}

/* Per-run values shared by the tasks: shifted zero points, multipliers. */
typedef struct {
  int32_t *zs, *zu; /* S / U zero points, shifted (zs_n / zu_n entries) */
  int64_t zs_n, zu_n;
  float *chan; /* QLinear: multiplier per channel; fused: the scale */
  int64_t chan_n;
} QRun;

static gsize
qrun_bytes (int64_t zs_n, int64_t zu_n, int64_t chan_n)
{
  return ALIGN64 (zs_n * sizeof (int32_t)) + ALIGN64 (zu_n * sizeof (int32_t))
         + ALIGN64 (chan_n * sizeof (float));
}

/* Fill a QRun in `mem` (qrun_bytes).  The S operand is the one whose zero
 * point is zs (conv: W; matmul: A). */
static guint8 *
qrun_fill (const NnpCpuCall *call, const NnpQOperands *q, gboolean s_is_w, QRun *r, guint8 *mem)
{
  const NnpTensor *xzp = in_or_null (call, q->x_zp), *wzp = in_or_null (call, q->w_zp);
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
    r->zs[i] = zp_at (szp, i) - (st == NNP_DTYPE_UINT8 ? 128 : 0);
  for (int64_t i = 0; i < r->zu_n; i++)
    r->zu[i] = zp_at (uzp, i) + (ut == NNP_DTYPE_INT8 ? 128 : 0);
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
static gboolean
qrun_check (const NnpCpuCall *call, const NnpQOperands *q, const QRun *r, GError **error)
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

static gboolean
all_zero (const int32_t *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    if (v[i] != 0)
      return FALSE;
  return TRUE;
}

/* The epilogue of a block: rows from row0, columns from col0 of the whole
 * product (channel arrays follow rows when chan_rows). */
static void
epilogue_init (NnpQgemmEpilogue *e, const NnpCpuCall *call, const NnpQOperands *q, const QRun *r,
               int64_t k, gboolean chan_rows, int64_t row0, int64_t col0)
{
  const NnpTensor *bias = in_or_null (call, q->bias);
  const NnpTensor *yzp = in_or_null (call, q->y_zp);
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
    e->y_zp = zp_at (yzp, 0);
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

typedef struct {
  const NnpQConvParams *p;
  int64_t m, k, kp; /* per group: rows, K */
  int64_t n;        /* output pixels per image */
  int64_t nc;       /* columns per block */
} QConvGeom;

static void
qconv_geom (const NnpQConvParams *p, QConvGeom *g)
{
  const NnpConvParams *c = &p->conv;

  g->p = p;
  g->m = c->out_channels / c->group;
  g->k = c->in_channels / c->group * vol3 (c->kernel);
  g->kp = nnp_qgemm_kp (g->k);
  g->n = vol3 (c->out_dims);
  /* the U block (kp x nc bytes) about 384 KiB: L2 */
  g->nc = CLAMP ((384 * 1024 / g->kp) / NNP_QGEMM_NT * NNP_QGEMM_NT, NNP_QGEMM_NT, 1024);
  g->nc = MIN (g->nc, (g->n + NNP_QGEMM_NT - 1) / NNP_QGEMM_NT * NNP_QGEMM_NT);
}

static gsize
qconv_slot_bytes (const QConvGeom *g)
{
  return ALIGN64 (nnp_qgemm_u_size (g->nc, g->k)) + ALIGN64 (g->nc * sizeof (int32_t))
         + ALIGN64 (4 * g->nc) + ALIGN64 (TILE_BYTES);
}

typedef struct {
  int64_t m, k;
  int64_t group;
  gboolean w_unsigned;
  const guint8 *w;
} QConvPackJob;

static gpointer
qconv_pack (gpointer data)
{
  const QConvPackJob *j = data;
  QPacked *pk = g_new0 (QPacked, 1);

  pk->group_bytes = ALIGN64 (nnp_qgemm_s_size (j->m, j->k));
  pk->data = g_aligned_alloc (MAX (pk->group_bytes * j->group, 1), 1, 64);
  pk->sums = g_new (int32_t, MAX (j->m * j->group, 1));
  for (int64_t g = 0; g < j->group; g++)
    nnp_qgemm_pack_s (j->m, j->k, j->w + g * j->m * j->k, j->k, j->w_unsigned,
                      (gint8 *) pk->data + g * pk->group_bytes, pk->sums + g * j->m);
  return pk;
}

static gpointer
qconv_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpQConvParams *p = node->params;
  NnpValue *wv;
  QConvGeom g;
  QConvPackJob job;
  QState *st;

  (void) error;
  if (p == NULL)
    return NULL;
  wv = nnp_node_input (graph, node, p->q.w);
  if (wv == NULL || wv->constant == NULL)
    return NULL;
  qconv_geom (p, &g);
  job.m = g.m;
  job.k = g.k;
  job.group = p->conv.group;
  job.w_unsigned = p->q.w_dtype == NNP_DTYPE_UINT8;
  job.w = wv->constant->data;
  st = g_new0 (QState, 1);
  {
    int64_t key[4] = { g.m, g.k, job.group, job.w_unsigned };
    st->packed = nnp_derived_get (nnp_graph_get_derived (graph), "qconv-packed-s", &wv->constant, 1,
                                  key, sizeof (key), qconv_pack, &job, qpacked_free);
  }
  if (st->packed == NULL)
    st->packed = st->own = qconv_pack (&job);
  NNP_DEBUG ("nnp-cpu",
             "%s: packed %" G_GINT64_FORMAT " group(s) of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
             " int8 weights (%s kernel%s)",
             node->name, job.group, g.m, g.k, nnp_qgemm_isa_name (nnp_qgemm_isa ()),
             st->own ? "" : ", shared");
  return st;
}

static gsize
qconv_header_bytes (const NnpQConvParams *p, const QConvGeom *g, gboolean packed)
{
  gsize h = qrun_bytes (p->q.w_zp_n, 1, MAX (p->q.w_scale_n, p->q.scale_n));

  if (!packed)
    h += ALIGN64 (nnp_qgemm_s_size (g->m, g->k)) * p->conv.group
         + ALIGN64 (g->m * p->conv.group * sizeof (int32_t));
  return h;
}

static gsize
qconv_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpQConvParams *p = node->params;
  NnpValue *wv;
  QConvGeom g;

  if (p == NULL)
    return 0;
  wv = nnp_node_input (graph, node, p->q.w);
  qconv_geom (p, &g);
  /* without constant weights, room to pack them per run */
  return qconv_header_bytes (p, &g, wv && wv->constant)
         + qconv_slot_bytes (&g) * (gsize) nnp_sgemm_slots ();
}

typedef struct {
  const NnpCpuCall *call;
  const NnpQConvParams *p;
  QConvGeom g;
  QRun run;
  const guint8 *s_data; /* packed S of group 0 */
  gsize s_group_bytes;
  const int32_t *rowsum;    /* [M], NULL when zu == 0 */
  gboolean need_colsum;     /* some zs != 0 */
  guint8 x_flip, pad_value; /* U bytes = x ^ x_flip; padding = the shifted x zero point */
  int64_t n_blocks;
} QConvJob;

/* Row kk of the implicit column matrix of image b, group g, columns
 * [n0, n0 + nc): a pointer into X when it is a plain run of the input,
 * else built in `buf`. */
static const guint8 *
im2col_row (const QConvJob *J, int64_t b, int64_t grp, int64_t kk, int64_t n0, int64_t nc,
            guint8 *buf)
{
  const NnpConvParams *p = &J->p->conv;
  const int64_t ID = p->in_dims[0], IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t kvol = vol3 (p->kernel);
  const int64_t ci = kk / kvol, rem = kk % kvol;
  const int64_t kd = rem / (p->kernel[1] * p->kernel[2]);
  const int64_t kh = (rem / p->kernel[2]) % p->kernel[1], kw = rem % p->kernel[2];
  const int64_t sd = p->strides[0], sh = p->strides[1], sw = p->strides[2];
  const guint8 *plane =
      (const guint8 *) J->call->inputs[J->p->q.x]->data
      + ((b * p->in_channels + grp * (p->in_channels / p->group) + ci) * ID * IH * IW);
  const guint8 flip = J->x_flip, padv = J->pad_value;
  int64_t j = n0, jend = n0 + nc;

  if (kvol == 1 && sd * sh * sw == 1 && p->pads_begin[0] + p->pads_begin[1] + p->pads_begin[2] == 0
      && p->pads_end[0] + p->pads_end[1] + p->pads_end[2] == 0 && flip == 0)
    return plane + n0; /* 1x1: the column matrix is X */
  while (j < jend) {
    int64_t ow = j % OW, rest = j / OW, oh = rest % OH, od = rest / OH;
    int64_t run = MIN (OW - ow, jend - j);
    int64_t iz = od * sd - p->pads_begin[0] + kd * p->dilations[0];
    int64_t iy = oh * sh - p->pads_begin[1] + kh * p->dilations[1];
    int64_t ix0 = ow * sw - p->pads_begin[2] + kw * p->dilations[2];
    guint8 *dst = buf + (j - n0);

    if (iz < 0 || iz >= ID || iy < 0 || iy >= IH) {
      memset (dst, padv, run);
    } else {
      const guint8 *src = plane + (iz * IH + iy) * IW;
      if (sw == 1) {
        /* in-bounds part [t0, t1) of ix0 + t */
        int64_t t0 = CLAMP (-ix0, 0, run), t1 = CLAMP (IW - ix0, t0, run);
        memset (dst, padv, t0);
        if (flip)
          for (int64_t t = t0; t < t1; t++)
            dst[t] = src[ix0 + t] ^ flip;
        else
          memcpy (dst + t0, src + ix0 + t0, t1 - t0);
        memset (dst + t1, padv, run - t1);
      } else {
        for (int64_t t = 0; t < run; t++) {
          int64_t ix = ix0 + t * sw;
          dst[t] = ix >= 0 && ix < IW ? src[ix] ^ flip : padv;
        }
      }
    }
    j += run;
  }
  return buf;
}

/* The U block straight from X, 16 columns at a time, when a run of 16
 * columns is always inside one output row and stride 1 along W: each group
 * of 4 rows is read in place (or, at the borders and for int8 X, through a
 * 16-byte copy) and interleaved once.  FALSE when the geometry does not
 * allow it (then im2col_row builds whole rows). */
static gboolean
pack_u_direct (const QConvJob *J, int64_t b, int64_t grp, int64_t n0, int64_t nc, guint8 *u,
               int32_t *colsum)
{
  const NnpConvParams *p = &J->p->conv;
  const QConvGeom *g = &J->g;
  const int64_t ID = p->in_dims[0], IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t kvol = vol3 (p->kernel), plane = ID * IH * IW;
  const guint8 *x = (const guint8 *) J->call->inputs[J->p->q.x]->data
                    + (b * p->in_channels + grp * (p->in_channels / p->group)) * plane;
  const guint8 flip = J->x_flip;
  guint8 pad[NNP_QGEMM_NRP], zero[NNP_QGEMM_NRP], tmp[4][NNP_QGEMM_NRP];

  if (p->strides[2] != 1 || OW % NNP_QGEMM_NRP != 0 || n0 % NNP_QGEMM_NRP != 0
      || nc % NNP_QGEMM_NRP != 0)
    return FALSE;
  memset (pad, J->pad_value, sizeof (pad));
  memset (zero, 0, sizeof (zero));
  for (int64_t q = 0; q < g->kp / 4; q++) {
    const guint8 *base[4];
    int64_t dz[4], dy[4], dx[4];
    int64_t od = n0 / (OW * OH), oh = (n0 / OW) % OH, ow = n0 % OW;

    for (int t = 0; t < 4; t++) {
      int64_t kk = q * 4 + t, ci = kk / kvol, rem = kk % kvol;
      base[t] = kk < g->k ? x + ci * plane : NULL;
      dz[t] = (rem / (p->kernel[1] * p->kernel[2])) * p->dilations[0] - p->pads_begin[0];
      dy[t] = ((rem / p->kernel[2]) % p->kernel[1]) * p->dilations[1] - p->pads_begin[1];
      dx[t] = (rem % p->kernel[2]) * p->dilations[2] - p->pads_begin[2];
    }
    for (int64_t c = 0; c < nc; c += NNP_QGEMM_NRP) {
      const guint8 *r[4];
      for (int t = 0; t < 4; t++) {
        int64_t iz = od * p->strides[0] + dz[t], iy = oh * p->strides[1] + dy[t];
        int64_t ix = ow + dx[t];
        const guint8 *src;
        if (base[t] == NULL) {
          r[t] = zero;
          continue;
        }
        if (iz < 0 || iz >= ID || iy < 0 || iy >= IH) {
          r[t] = pad;
          continue;
        }
        src = base[t] + (iz * IH + iy) * IW;
        if (ix >= 0 && ix + NNP_QGEMM_NRP <= IW && flip == 0) {
          r[t] = src + ix;
          continue;
        }
        for (int e = 0; e < NNP_QGEMM_NRP; e++)
          tmp[t][e] = ix + e >= 0 && ix + e < IW ? src[ix + e] ^ flip : J->pad_value;
        r[t] = tmp[t];
      }
      nnp_qgemm_interleave16 (r[0], r[1], r[2], r[3],
                              u + (c / NNP_QGEMM_NRP) * g->kp * NNP_QGEMM_NRP
                                  + q * 4 * NNP_QGEMM_NRP,
                              colsum ? colsum + c : NULL);
      ow += NNP_QGEMM_NRP;
      if (ow == OW) {
        ow = 0;
        if (++oh == OH) {
          oh = 0;
          od++;
        }
      }
    }
  }
  return TRUE;
}

static void
qconv_task (gpointer data, int64_t task, void *slot)
{
  const QConvJob *J = data;
  const NnpConvParams *p = &J->p->conv;
  const QConvGeom *g = &J->g;
  int64_t blk = task % J->n_blocks, rest = task / J->n_blocks;
  int64_t grp = rest % p->group, b = rest / p->group;
  int64_t n0 = blk * g->nc, nc = MIN (g->nc, g->n - n0);
  int64_t kq = g->kp / 4;
  guint8 *u = slot;
  int32_t *colsum = (int32_t *) (u + ALIGN64 (nnp_qgemm_u_size (g->nc, g->k)));
  guint8 *rows = (guint8 *) colsum + ALIGN64 (g->nc * sizeof (int32_t));
  int32_t *tile = (int32_t *) (rows + ALIGN64 (4 * g->nc));
  const gint8 *s = (const gint8 *) (J->s_data + grp * J->s_group_bytes);
  gsize esize = nnp_dtype_size (J->p->q.y_dtype);
  NnpQgemmEpilogue e;

  /* pack U: the im2col block, 4 rows at a time */
  if (J->need_colsum)
    memset (colsum, 0, nc * sizeof (int32_t));
  for (int64_t q = pack_u_direct (J, b, grp, n0, nc, u, J->need_colsum ? colsum : NULL) ? kq : 0;
       q < kq; q++) {
    const guint8 *r[4];
    for (int t = 0; t < 4; t++) {
      int64_t kk = q * 4 + t;
      guint8 *buf = rows + t * g->nc;
      if (kk < g->k) {
        r[t] = im2col_row (J, b, grp, kk, n0, nc, buf);
      } else {
        memset (buf, 0, nc);
        r[t] = buf;
      }
    }
    nnp_qgemm_interleave_u (r, nc, g->kp, q, u, J->need_colsum ? colsum : NULL);
  }

  epilogue_init (&e, J->call, &J->p->q, &J->run, g->k, TRUE, grp * g->m, 0);
  e.rowsum = J->rowsum ? J->rowsum + grp * g->m : NULL;
  e.colsum = J->need_colsum ? colsum : NULL;
  e.c = (guint8 *) J->call->outputs[0]->data
        + ((b * p->out_channels + grp * g->m) * g->n + n0) * esize;
  e.ldc = g->n;
  for (int64_t i0 = 0; i0 < g->m; i0 += NNP_QGEMM_MR) {
    const gint8 *sp = s + i0 * g->kp;
    for (int64_t j0 = 0; j0 < nc; j0 += NNP_QGEMM_NT) {
      int cols = (int) MIN (NNP_QGEMM_NT, nc - j0);
      const guint8 *u0 = u + (j0 / NNP_QGEMM_NRP) * g->kp * NNP_QGEMM_NRP;
      nnp_qgemm_tile_store (&e, sp, u0, u0 + g->kp * NNP_QGEMM_NRP, g->kp, i0,
                            (int) MIN (NNP_QGEMM_MR, g->m - i0), j0, cols, tile);
    }
  }
}

static gboolean
qconv_run (const NnpCpuCall *call, GError **error)
{
  const NnpQConvParams *p = call->node->params;
  const QState *st = call->state;
  QConvJob J;
  guint8 *mem = call->scratch;

  g_return_val_if_fail (p != NULL, FALSE);
  memset (&J, 0, sizeof (J));
  J.call = call;
  J.p = p;
  qconv_geom (p, &J.g);
  mem = qrun_fill (call, &p->q, TRUE, &J.run, mem);
  if (!qrun_check (call, &p->q, &J.run, error))
    return FALSE;
  if (st && st->packed) {
    J.s_data = st->packed->data;
    J.s_group_bytes = st->packed->group_bytes;
    J.rowsum = st->packed->sums;
  } else {
    /* weights fed as an input: pack them for this run */
    int32_t *sums;
    J.s_group_bytes = ALIGN64 (nnp_qgemm_s_size (J.g.m, J.g.k));
    J.s_data = mem;
    sums = (int32_t *) (mem + J.s_group_bytes * p->conv.group);
    for (int64_t grp = 0; grp < p->conv.group; grp++)
      nnp_qgemm_pack_s (J.g.m, J.g.k,
                        (const guint8 *) call->inputs[p->q.w]->data + grp * J.g.m * J.g.k, J.g.k,
                        p->q.w_dtype == NNP_DTYPE_UINT8, (gint8 *) mem + grp * J.s_group_bytes,
                        sums + grp * J.g.m);
    J.rowsum = sums;
    mem += J.s_group_bytes * p->conv.group + ALIGN64 (J.g.m * p->conv.group * sizeof (int32_t));
  }
  if (J.run.zu[0] == 0)
    J.rowsum = NULL;
  J.need_colsum = !all_zero (J.run.zs, J.run.zs_n);
  J.x_flip = p->q.x_dtype == NNP_DTYPE_INT8 ? 0x80 : 0;
  J.pad_value = (guint8) J.run.zu[0];
  J.n_blocks = (J.g.n + J.g.nc - 1) / J.g.nc;
  nnp_cpu_run_in_slots (call->pool, p->conv.batch * p->conv.group * J.n_blocks,
                        (guint8 *) call->scratch + qconv_header_bytes (p, &J.g, st && st->packed),
                        qconv_slot_bytes (&J.g), qconv_task, &J);
  return TRUE;
}

#define QCONV_KERNEL \
  { \
    .run = qconv_run, .workspace = qconv_workspace, .prepare = qconv_prepare, \
    .free_state = qstate_free, \
  }

const NnpCpuKernel nnp_cpu_conv_integer = QCONV_KERNEL;
const NnpCpuKernel nnp_cpu_qlinear_conv = QCONV_KERNEL;
const NnpCpuKernel nnp_cpu_conv_integer_to_float = QCONV_KERNEL;

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
  QState *st;

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
  st = g_new0 (QState, 1);
  {
    int64_t key[3] = { job.k, job.n, job.b_signed };
    st->packed = nnp_derived_get (nnp_graph_get_derived (graph), "qmatmul-packed-u", &bv->constant,
                                  1, key, sizeof (key), qmm_pack, &job, qpacked_free);
  }
  if (st->packed == NULL)
    st->packed = st->own = qmm_pack (&job);
  return st;
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
  return qrun_bytes (p->q.x_zp_n, p->q.w_zp_n, MAX (p->q.w_scale_n, p->q.scale_n))
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
  epilogue_init (&e, J->call, &p->q, &J->run, mm->k, FALSE, i0, n0);
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
  qrun_fill (call, &p->q, FALSE, &J.run, call->scratch);
  if (!qrun_check (call, &p->q, &J.run, error))
    return FALSE;
  J.packed = st ? st->packed : NULL;
  J.nc = qmm_nc (p);
  J.n_rb = (p->mm.m + MM_MC - 1) / MM_MC;
  J.n_cb = (p->mm.n + J.nc - 1) / J.nc;
  J.need_rowsum = !all_zero (J.run.zu, J.run.zu_n);
  J.need_colsum = !all_zero (J.run.zs, J.run.zs_n);
  if (p->mm.m == 0 || p->mm.n == 0)
    return TRUE;
  nnp_cpu_run_in_slots (
      call->pool, p->mm.n_batch * J.n_rb * J.n_cb,
      (guint8 *) call->scratch
          + qrun_bytes (p->q.x_zp_n, p->q.w_zp_n, MAX (p->q.w_scale_n, p->q.scale_n)),
      qmm_slot_bytes (p), qmm_task, &J);
  return TRUE;
}

#define QMM_KERNEL \
  { \
    .run = qmm_run, .workspace = qmm_workspace, .prepare = qmm_prepare, .free_state = qstate_free, \
  }

const NnpCpuKernel nnp_cpu_mat_mul_integer = QMM_KERNEL;
const NnpCpuKernel nnp_cpu_qlinear_mat_mul = QMM_KERNEL;
const NnpCpuKernel nnp_cpu_mat_mul_integer_to_float = QMM_KERNEL;
