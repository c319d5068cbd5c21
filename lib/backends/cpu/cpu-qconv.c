/* libnnpipe: CPU kernels of the integer convolutions: ConvInteger,
 * QLinearConv, NnpConvIntegerToFloat, on the 8-bit GEMM of cpu-qgemm.c
 * (exact int32 sums; zero points as rank-1 corrections); the matrix
 * products are in cpu-qmatmul.c.
 *
 * Conv: S = the weights of a group (M/g x C/g*kvol), packed once per model
 * (the derived-data cache) when constant, else per run; U = the implicit
 * im2col matrix of X, packed block by block (NC columns, all of K) straight
 * from X, padding with X's zero point.  A task is one (image, group, column
 * block).
 *
 * Requantisation (QLinear*) as ONNX Runtime computes it: multiplier =
 * x_scale * w_scale / y_scale in float32, then (float) sum * multiplier,
 * round half to even, + y_zero_point, saturate.  The fused float ops:
 * (float) sum * scale + bias, then the fused activation. */
#include "backends/cpu/cpu-qcommon.h"
#include "backends/cpu/cpu-conv.h"

#include <nnpipe/log.h>
#include <string.h>

typedef struct {
  const NnpQConvParams *p;
  int64_t m, k, kp; /* per group: rows, K (kp: K as packed) */
  int64_t n;        /* output pixels per image */
  int64_t nc;       /* columns per block */
  /* the direct form (see qconv_direct_*): X of a group once as X4 =
   * [c4][hp][wp][4] (4 channels interleaved, padded with the zero point),
   * K ordered (c4, tap, channel mod 4), U read in place */
  gboolean direct;
  int64_t c4, kvol, hp, wp;
} QConvGeom;

static void
qconv_geom (const NnpGraph *graph, const NnpNode *node, QConvGeom *g)
{
  const NnpQConvParams *p = node->params;
  const NnpConvParams *c = &p->conv;
  NnpValue *wv = nnp_node_input (graph, node, p->q.w);
  NnpQgemmEpilogue probe = { 0 };

  g->p = p;
  g->m = c->out_channels / c->group;
  g->k = c->in_channels / c->group * vol3 (c->kernel);
  g->kp = nnp_qgemm_kp (g->k);
  g->n = vol3 (c->out_dims);
  g->kvol = vol3 (c->kernel);
  g->c4 = (c->in_channels / c->group + 3) / 4;
  g->hp = c->in_dims[1] + c->pads_begin[1] + c->pads_end[1];
  g->wp = c->in_dims[2] + c->pads_begin[2] + c->pads_end[2];
  /* direct: AVX512-VNNI and an epilogue it does in registers, constant
   * weights, 2-D, stride 1 along W and rows of whole 16-column chunks */
  probe.out = p->q.out == NNP_QOUT_FLOAT ? NNP_QGEMM_OUT_FLOAT : NNP_QGEMM_OUT_INT32;
  probe.act = p->q.out == NNP_QOUT_FLOAT ? node->act : NNP_ACT_NONE;
  probe.chan_rows = TRUE;
  g->direct = nnp_qgemm_indirect_ok (&probe) && wv && wv->constant && c->n_spatial <= 2
              && c->strides[2] == 1 && c->out_dims[2] % NNP_QGEMM_NRP == 0
              && (double) g->c4 * g->hp * g->wp * 4 < (double) (G_MAXINT32 / 2);
  if (g->direct) {
    g->kp = g->c4 * g->kvol * 4;
    g->nc = MIN (512, (g->n + NNP_QGEMM_NT - 1) / NNP_QGEMM_NT * NNP_QGEMM_NT);
    return;
  }
  /* the U block (kp x nc bytes) about 384 KiB: L2 */
  g->nc = CLAMP ((384 * 1024 / g->kp) / NNP_QGEMM_NT * NNP_QGEMM_NT, NNP_QGEMM_NT, 1024);
  g->nc = MIN (g->nc, (g->n + NNP_QGEMM_NT - 1) / NNP_QGEMM_NT * NNP_QGEMM_NT);
}

static gsize
qconv_slot_bytes (const QConvGeom *g)
{
  if (g->direct)
    return ALIGN64 (g->nc * sizeof (int32_t)) + ALIGN64 (TILE_BYTES);
  return ALIGN64 (nnp_qgemm_u_size (g->nc, g->k)) + ALIGN64 (g->nc * sizeof (int32_t))
         + ALIGN64 (4 * g->nc) + ALIGN64 (TILE_BYTES);
}

typedef struct {
  int64_t m, k, kp;
  int64_t group;
  gboolean w_unsigned;
  const guint8 *w;
  gboolean direct;
  int64_t cg, kvol; /* direct: channels per group, taps */
} QConvPackJob;

static gpointer
qconv_pack (gpointer data)
{
  const QConvPackJob *j = data;
  QPacked *pk = g_new0 (QPacked, 1);
  guint8 *order = NULL;

  pk->group_bytes = ALIGN64 (nnp_qgemm_s_size (j->m, j->kp));
  pk->data = g_aligned_alloc (MAX (pk->group_bytes * j->group, 1), 1, 64);
  pk->sums = g_new (int32_t, MAX (j->m * j->group, 1));
  if (j->direct) /* W rows in the direct K order; missing channels are 0 once shifted */
    order = g_malloc (MAX (j->m * j->kp, 1));
  for (int64_t g = 0; g < j->group; g++) {
    const guint8 *w = j->w + g * j->m * j->k;
    int64_t k = j->k;
    if (j->direct) {
      k = j->kp;
      for (int64_t i = 0; i < j->m; i++)
        for (int64_t q = 0; q < j->kp / 4; q++)
          for (int t = 0; t < 4; t++) {
            int64_t c = q / j->kvol * 4 + t, tap = q % j->kvol;
            order[i * j->kp + q * 4 + t] =
                c < j->cg ? w[i * j->k + c * j->kvol + tap] : (j->w_unsigned ? 0x80 : 0);
          }
      w = order;
    }
    nnp_qgemm_pack_s (j->m, k, w, k, j->w_unsigned, (gint8 *) pk->data + g * pk->group_bytes,
                      pk->sums + g * j->m);
  }
  g_free (order);
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
  qconv_geom (graph, node, &g);
  job.m = g.m;
  job.k = g.k;
  job.kp = g.kp;
  job.group = p->conv.group;
  job.w_unsigned = p->q.w_dtype == NNP_DTYPE_UINT8;
  job.w = wv->constant->data;
  job.direct = g.direct;
  job.cg = p->conv.in_channels / p->conv.group;
  job.kvol = g.kvol;
  {
    int64_t key[6] = { g.m, g.k, job.group, job.w_unsigned, job.direct, g.kvol };
    st = nnp_qstate_new (graph, wv, "qconv-packed-s", key, sizeof (key), qconv_pack, &job);
  }
  NNP_DEBUG ("nnp-cpu",
             "%s: packed %" G_GINT64_FORMAT " group(s) of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
             " int8 weights (%s kernel%s%s)",
             node->name, job.group, g.m, g.k, nnp_qgemm_isa_name (nnp_qgemm_isa ()),
             g.direct ? ", direct" : "", st->own ? "" : ", shared");
  return st;
}

static gsize
qconv_header_bytes (const NnpQConvParams *p, const QConvGeom *g, gboolean packed)
{
  gsize h = nnp_qrun_bytes (p->q.w_zp_n, 1, MAX (p->q.w_scale_n, p->q.scale_n));

  if (g->direct) /* the offsets of the q-groups, X4 */
    h += ALIGN64 (g->kp / 4 * sizeof (int32_t)) + ALIGN64 (g->c4 * g->hp * g->wp * 4);

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
  qconv_geom (graph, node, &g);
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
    /* one output row (od, oh) at a time: the 4 source rows are fixed */
    for (int64_t c = 0; c < nc;) {
      int64_t seg = MIN (OW - ow, nc - c);
      const guint8 *row[4]; /* image row (at x = 0), or the pad / zero bytes */
      gboolean img[4];
      int64_t lo = 0, hi = OW; /* chunks starting in [lo, hi) read every image row in place */

      for (int t = 0; t < 4; t++) {
        int64_t iz = od * p->strides[0] + dz[t], iy = oh * p->strides[1] + dy[t];
        img[t] = base[t] && iz >= 0 && iz < ID && iy >= 0 && iy < IH;
        row[t] = !base[t] ? zero : !img[t] ? pad : base[t] + (iz * IH + iy) * IW;
        if (img[t]) {
          lo = MAX (lo, -dx[t]);
          hi = MIN (hi, IW - dx[t] - NNP_QGEMM_NRP + 1);
        }
      }
      if (flip)
        lo = hi = 0;
      for (int64_t cc = 0; cc < seg; cc += NNP_QGEMM_NRP) {
        int64_t o = ow + cc;
        const guint8 *r[4];
        if (o >= lo && o < hi) {
          for (int t = 0; t < 4; t++)
            r[t] = img[t] ? row[t] + o + dx[t] : row[t];
        } else {
          for (int t = 0; t < 4; t++) {
            int64_t ix = o + dx[t];
            if (!img[t]) {
              r[t] = row[t];
              continue;
            }
            for (int e = 0; e < NNP_QGEMM_NRP; e++)
              tmp[t][e] = ix + e >= 0 && ix + e < IW ? row[t][ix + e] ^ flip : J->pad_value;
            r[t] = tmp[t];
          }
        }
        nnp_qgemm_interleave16 (r[0], r[1], r[2], r[3],
                                u + ((c + cc) / NNP_QGEMM_NRP) * g->kp * NNP_QGEMM_NRP
                                    + q * 4 * NNP_QGEMM_NRP,
                                colsum ? colsum + c + cc : NULL);
      }
      c += seg;
      ow += seg;
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

  nnp_qepilogue_init (&e, J->call, &J->p->q, &J->run, g->k, TRUE, grp * g->m, 0);
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

/* ---------------------------------------------------------------- direct */

typedef struct {
  const QConvJob *J;
  int64_t b, grp;
  guint8 *x4;
} X4Job;

/* X4 planes [c4 ...] of image b, group grp: 4 channels interleaved per
 * pixel, padded with the (shifted) zero point; channels past the group's
 * are 0 (their weights are 0 too, and they must not enter the column sums). */
static void
x4_build (gpointer data, gsize begin, gsize end, int thread)
{
  const X4Job *xj = data;
  const QConvJob *J = xj->J;
  const NnpConvParams *p = &J->p->conv;
  const QConvGeom *g = &J->g;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2], cg = p->in_channels / p->group;
  const int64_t pt = p->pads_begin[1], pl = p->pads_begin[2];
  const guint8 *x = (const guint8 *) J->call->inputs[J->p->q.x]->data
                    + (xj->b * p->in_channels + xj->grp * cg) * IH * IW;

  (void) thread;
  for (gsize c4 = begin; c4 < end; c4++) {
    guint8 pad[4];
    const guint8 *plane[4];
    gboolean plain = J->x_flip == 0;
    for (int t = 0; t < 4; t++) {
      int64_t c = (int64_t) c4 * 4 + t;
      pad[t] = c < cg ? J->pad_value : 0;
      plane[t] = c < cg ? x + c * IH * IW : NULL;
      plain = plain && plane[t];
    }
    for (int64_t y = 0; y < g->hp; y++) {
      guint8 *dst = xj->x4 + (((int64_t) c4 * g->hp + y) * g->wp) * 4;
      int64_t iy = y - pt, ix = 0;
      if (iy < 0 || iy >= IH) {
        for (int64_t xx = 0; xx < g->wp; xx++)
          memcpy (dst + xx * 4, pad, 4);
        continue;
      }
      for (int64_t xx = 0; xx < pl; xx++)
        memcpy (dst + xx * 4, pad, 4);
      dst += pl * 4;
      if (plain)
        for (; ix + 16 <= IW; ix += 16)
          nnp_qgemm_interleave16 (plane[0] + iy * IW + ix, plane[1] + iy * IW + ix,
                                  plane[2] + iy * IW + ix, plane[3] + iy * IW + ix, dst + ix * 4,
                                  NULL);
      for (; ix < IW; ix++)
        for (int t = 0; t < 4; t++)
          dst[ix * 4 + t] = plane[t] ? plane[t][iy * IW + ix] ^ J->x_flip : 0;
      for (int64_t xx = IW; xx < g->wp - pl; xx++)
        memcpy (dst + xx * 4, pad, 4);
    }
  }
}

typedef struct {
  const QConvJob *J;
  int64_t b, grp;
  const guint8 *x4;
  const int32_t *koff;
} DirectJob;

/* U of output column j: the X4 pixel its taps start from */
static inline const guint8 *
direct_u (const DirectJob *dj, int64_t j)
{
  const NnpConvParams *p = &dj->J->p->conv;
  int64_t oh = j / p->out_dims[2], ow = j % p->out_dims[2];

  return dj->x4 + ((oh * p->strides[1]) * dj->J->g.wp + ow) * 4;
}

static void
direct_task (gpointer data, int64_t blk, void *slot)
{
  const DirectJob *dj = data;
  const QConvJob *J = dj->J;
  const NnpConvParams *p = &J->p->conv;
  const QConvGeom *g = &J->g;
  int64_t n0 = blk * g->nc, nc = MIN (g->nc, g->n - n0), kq = g->kp / 4;
  int32_t *colsum = slot;
  const gint8 *s = (const gint8 *) (J->s_data + dj->grp * J->s_group_bytes);
  gsize esize = nnp_dtype_size (J->p->q.y_dtype);
  NnpQgemmEpilogue e;

  nnp_qepilogue_init (&e, J->call, &J->p->q, &J->run, g->k, TRUE, dj->grp * g->m, 0);
  e.rowsum = J->rowsum ? J->rowsum + dj->grp * g->m : NULL;
  e.colsum = J->need_colsum ? colsum : NULL;
  e.c = (guint8 *) J->call->outputs[0]->data
        + ((dj->b * p->out_channels + dj->grp * g->m) * g->n + n0) * esize;
  e.ldc = g->n;
  /* a tile's U (kq x 128 bytes) stays in L1 across the row panels */
  for (int64_t j0 = 0; j0 < nc; j0 += NNP_QGEMM_NT) {
    int cols = (int) MIN (NNP_QGEMM_NT, nc - j0);
    const guint8 *u0 = direct_u (dj, n0 + j0);
    const guint8 *u1 = cols > NNP_QGEMM_NRP ? direct_u (dj, n0 + j0 + NNP_QGEMM_NRP) : u0;
    if (J->need_colsum)
      nnp_qgemm_colsum_indirect (u0, u1, dj->koff, kq, cols, colsum + j0);
    for (int64_t i0 = 0; i0 < g->m; i0 += NNP_QGEMM_MR)
      nnp_qgemm_tile_store_indirect (&e, s + i0 * g->kp, u0, u1, dj->koff, kq, i0,
                                     (int) MIN (NNP_QGEMM_MR, g->m - i0), j0, cols);
  }
}

static void
qconv_run_direct (const NnpCpuCall *call, QConvJob *J, guint8 *mem)
{
  const NnpConvParams *p = &J->p->conv;
  const QConvGeom *g = &J->g;
  int64_t kq = g->kp / 4;
  int32_t *koff = (int32_t *) mem;
  guint8 *x4 = mem + ALIGN64 (kq * sizeof (int32_t));
  guint8 *slots = x4 + ALIGN64 (g->c4 * g->hp * g->wp * 4);

  for (int64_t q = 0; q < kq; q++) {
    int64_t c4 = q / g->kvol, tap = q % g->kvol;
    int64_t kh = tap / p->kernel[2], kw = tap % p->kernel[2];
    koff[q] = (int32_t) (((c4 * g->hp + kh * p->dilations[1]) * g->wp + kw * p->dilations[2]) * 4);
  }
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t grp = 0; grp < p->group; grp++) {
      X4Job xj = { J, b, grp, x4 };
      DirectJob dj = { J, b, grp, x4, koff };
      nnp_parallel_for (call->pool, g->c4, 1, x4_build, &xj);
      nnp_cpu_run_in_slots (call->pool, J->n_blocks, slots, qconv_slot_bytes (g), direct_task, &dj);
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
  qconv_geom (call->graph, call->node, &J.g);
  mem = nnp_qrun_fill (call, &p->q, TRUE, &J.run, mem);
  if (!nnp_qrun_check (call, &p->q, &J.run, error))
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
  J.need_colsum = !nnp_qall_zero (J.run.zs, J.run.zs_n);
  J.x_flip = p->q.x_dtype == NNP_DTYPE_INT8 ? 0x80 : 0;
  J.pad_value = (guint8) J.run.zu[0];
  J.n_blocks = (J.g.n + J.g.nc - 1) / J.g.nc;
  if (J.g.direct) {
    qconv_run_direct (call, &J,
                      (guint8 *) call->scratch
                          + nnp_qrun_bytes (p->q.w_zp_n, 1, MAX (p->q.w_scale_n, p->q.scale_n)));
    return TRUE;
  }
  nnp_cpu_run_in_slots (call->pool, p->conv.batch * p->conv.group * J.n_blocks,
                        (guint8 *) call->scratch + qconv_header_bytes (p, &J.g, st && st->packed),
                        qconv_slot_bytes (&J.g), qconv_task, &J);
  return TRUE;
}

#define QCONV_KERNEL \
  { \
    .run = qconv_run, .workspace = qconv_workspace, .prepare = qconv_prepare, \
    .free_state = nnp_qstate_free, \
  }

const NnpCpuKernel nnp_cpu_conv_integer = QCONV_KERNEL;
const NnpCpuKernel nnp_cpu_qlinear_conv = QCONV_KERNEL;
const NnpCpuKernel nnp_cpu_conv_integer_to_float = QCONV_KERNEL;
