/* libnnpipe: CPU kernel of the DIRECT Conv algorithm (float32, NCHW, 1-D/2-D
 * convolutions that are neither 1x1 GEMMs nor depthwise): an indirect GEMM
 * (nnp_sgemm_run_indirect, no packing of B) on a padded, stride-phase-split
 * copy of X, or, with few products per output (stems), output pixels along
 * the vector lanes from the same copy (smallk_rows).  Called by cpu-conv.c;
 * the packed weights come from its `prepare` (cpu-conv.h). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-conv.h"
#include "ops/conv-params.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define NR NNP_SGEMM_NR
#define MR NNP_SGEMM_MR

/* Padded copy of one group's input, split into stride phases: for phase
 * (ph, pw) of channel ci, plane[i][j] = padded[i * sh + ph][j * sw + pw]
 * (padded = X with the pads as zeros), Hp x Wp per plane, planes at a stride
 * `cs` (an odd number of cache lines, so planes spread over cache sets).
 * Tap (kh, kw) of output (oh, ow) is then plane (ci, (kh*dh) % sh,
 * (kw*dw) % sw) at row oh + (kh*dh) / sh, column ow + (kw*dw) / sw: a
 * stride-1 access, so the indirect GEMM reads B rows in place.  With
 * stride 1 there is one phase and this is the plain padded input. */
typedef struct {
  int64_t hp, wp, cs, sh, sw;
  gsize pad_bytes, koff_bytes, a_bytes;
} DirectGeometry;

/* The GEMM shape of one group (nnp_cpu_conv_group_mk of a Conv; computed
 * here so that this file does not call back into cpu-conv.c). */
static void
direct_mk (const NnpConvParams *p, int64_t *m, int64_t *k)
{
  *m = p->out_channels / p->group;
  *k = p->in_channels / p->group * vol3 (p->kernel);
}

static void
direct_geometry (const NnpConvParams *p, gboolean packed_weights, DirectGeometry *dg)
{
  int64_t cin_g = p->in_channels / p->group, m, k;

  dg->sh = p->strides[1];
  dg->sw = p->strides[2];
  dg->hp = p->out_dims[1] + (p->kernel[1] - 1) * p->dilations[1] / dg->sh;
  dg->wp = p->out_dims[2] + (p->kernel[2] - 1) * p->dilations[2] / dg->sw;
  dg->cs = (dg->hp * dg->wp + 15) / 16 * 16;
  if ((dg->cs / 16) % 2 == 0)
    dg->cs += 16;
  direct_mk (p, &m, &k);
  dg->pad_bytes = round_up_bytes ((cin_g * dg->sh * dg->sw * dg->cs + 2 * NR) * sizeof (float));
  dg->koff_bytes = round_up_bytes (k * sizeof (int32_t));
  dg->a_bytes =
      packed_weights ? 0 : round_up_bytes (nnp_sgemm_packed_a_size (m, k) * sizeof (float));
}

typedef struct {
  const NnpConvParams *p;
  const DirectGeometry *dg;
  const float *x; /* first channel of the group */
  float *pad;
} PadCtx;

/* even[k] = src[2k], odd[k] = src[2k + 1] for k < n. */
static void
deinterleave2_generic (const float *src, int64_t n, float *even, float *odd)
{
  for (int64_t k = 0; k < n; k++) {
    even[k] = src[2 * k];
    odd[k] = src[2 * k + 1];
  }
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static void
deinterleave2_avx2 (const float *src, int64_t n, float *even, float *odd)
{
  int64_t k = 0;

  for (; k + 8 <= n; k += 8) {
    __m256 lo = _mm256_loadu_ps (src + 2 * k), hi = _mm256_loadu_ps (src + 2 * k + 8);
    /* lanes: lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 -> in order by a 64-bit permute */
    __m256 ev = _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (2, 0, 2, 0));
    __m256 od = _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (3, 1, 3, 1));
    ev = _mm256_castpd_ps (_mm256_permute4x64_pd (_mm256_castps_pd (ev), _MM_SHUFFLE (3, 1, 2, 0)));
    od = _mm256_castpd_ps (_mm256_permute4x64_pd (_mm256_castps_pd (od), _MM_SHUFFLE (3, 1, 2, 0)));
    _mm256_storeu_ps (even + k, ev);
    _mm256_storeu_ps (odd + k, od);
  }
  deinterleave2_generic (src + 2 * k, n - k, even + k, odd + k);
}
#endif

/* Stride 2 along W: both column phases of one padded row in one pass. */
static void
pad_row_sw2 (const float *xr, int64_t IW, int64_t pl, int64_t wp, float *d0, float *d1)
{
  /* iw_e: first input column landing in phase 0; the pair (iw_e + 2k,
   * iw_e + 2k + 1) lands at column j0 + k of phases 0 and 1 */
  int64_t iw_e = pl & 1, j0 = (iw_e + pl) >> 1;
  int64_t n = (IW - iw_e) / 2;

  memset (d0, 0, wp * sizeof (float));
  memset (d1, 0, wp * sizeof (float));
  n = CLAMP (MIN (n, wp - j0), 0, G_MAXINT64);
#if HAVE_X86
  if (nnp_cpu_avx2_ok ())
    deinterleave2_avx2 (xr + iw_e, n, d0 + j0, d1 + j0);
  else
#endif
    deinterleave2_generic (xr + iw_e, n, d0 + j0, d1 + j0);
  if (iw_e == 1 && (pl >> 1) < wp) /* column 0 lands in phase 1 */
    d1[pl >> 1] = xr[0];
  if ((IW - iw_e) % 2 == 1 && IW >= 1) { /* the last column, unpaired */
    int64_t col = IW - 1 + pl;
    if ((col >> 1) < wp)
      ((col & 1) ? d1 : d0)[col >> 1] = xr[IW - 1];
  }
}

static void
pad_channels (gpointer data, gsize begin, gsize end, int thread)
{
  PadCtx *c = data;
  const NnpConvParams *p = c->p;
  const DirectGeometry *dg = c->dg;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t pt = p->pads_begin[1], pl = p->pads_begin[2];
  const int64_t wp = dg->wp, sh = dg->sh, sw = dg->sw;
  guint64 rows_used = 0; /* the row phases a tap reads (a 1x1 of stride 2: one of two) */

  for (int64_t kh = 0; kh < p->kernel[1]; kh++)
    rows_used |= G_GUINT64_CONSTANT (1) << MIN ((kh * p->dilations[1]) % sh, 63);
  if (sh > 64)
    rows_used = G_MAXUINT64;
  if (sw == 2) {
    for (gsize ci = begin; ci < end; ci++) {
      const float *x = c->x + ci * IH * IW;
      for (int64_t ph = 0; ph < sh; ph++) {
        if (!(rows_used & (G_GUINT64_CONSTANT (1) << MIN (ph, 63))))
          continue;
        float *p0 = c->pad + ((ci * sh + ph) * sw + 0) * dg->cs;
        float *p1 = c->pad + ((ci * sh + ph) * sw + 1) * dg->cs;
        for (int64_t i = 0; i < dg->hp; i++) {
          int64_t ih = i * sh + ph - pt;
          if (ih < 0 || ih >= IH) {
            memset (p0 + i * wp, 0, wp * sizeof (float));
            memset (p1 + i * wp, 0, wp * sizeof (float));
          } else {
            pad_row_sw2 (x + ih * IW, IW, pl, wp, p0 + i * wp, p1 + i * wp);
          }
        }
        memset (p0 + dg->hp * wp, 0, (dg->cs - dg->hp * wp) * sizeof (float));
        memset (p1 + dg->hp * wp, 0, (dg->cs - dg->hp * wp) * sizeof (float));
      }
    }
    return;
  }
  for (gsize ci = begin; ci < end; ci++) {
    const float *x = c->x + ci * IH * IW;
    for (int64_t ph = 0; ph < sh; ph++) {
      if (!(rows_used & (G_GUINT64_CONSTANT (1) << MIN (ph, 63))))
        continue;
      for (int64_t pw = 0; pw < sw; pw++) {
        float *d = c->pad + ((ci * sh + ph) * sw + pw) * dg->cs;
        /* columns j with 0 <= j * sw + pw - pl < IW: [j_lo, j_hi) */
        int64_t j_lo = pl - pw <= 0 ? 0 : (pl - pw + sw - 1) / sw;
        int64_t j_hi = IW + pl - pw <= 0 ? 0 : (IW + pl - pw + sw - 1) / sw;
        j_lo = MIN (j_lo, wp);
        j_hi = CLAMP (j_hi, j_lo, wp);
        for (int64_t i = 0; i < dg->hp; i++) {
          float *dr = d + i * wp;
          int64_t ih = i * sh + ph - pt;
          if (ih < 0 || ih >= IH || j_lo == j_hi) {
            memset (dr, 0, wp * sizeof (float));
            continue;
          }
          memset (dr, 0, j_lo * sizeof (float));
          if (sw == 1) {
            memcpy (dr + j_lo, x + ih * IW + j_lo - pl, (j_hi - j_lo) * sizeof (float));
          } else {
            const float *xr = x + ih * IW;
            for (int64_t j = j_lo; j < j_hi; j++)
              dr[j] = xr[j * sw + pw - pl];
          }
          memset (dr + j_hi, 0, (wp - j_hi) * sizeof (float));
        }
        /* the gap up to the next plane (read by the tail tiles, results unused) */
        memset (d + dg->hp * wp, 0, (dg->cs - dg->hp * wp) * sizeof (float));
      }
    }
  }
}

#if HAVE_X86
/* Few products per output (stems: 3 channels x 3x3 = 27; 1x1
 * convolutions of at most 256 input channels and many output channels):
 * output pixels along the vector lanes.  The output is rows of pixels (a convolution's output rows, read
 * from the padded phase planes and tap offsets of the indirect GEMM; or a
 * 1x1's whole plane cut in chunks, read in place).  A tile is 6 output
 * channels (one panel of the packed A: weight (q, r) at panel + q * MR + r)
 * x 64 pixels of one row (4 vectors, the row's last vector masked): per tap
 * 4 loads and 6 broadcasts for 24 FMAs, stored straight into the output
 * with bias and activation.  The indirect GEMM computed 12-row tiles (a
 * 16-channel stem as 12 + 12, a third wasted), over the planes' padded
 * rows, with a tile store per K taps of 27: 25-35 GFLOP/s on stems. */
#define SMALLK_V 4

#define UK512 __attribute__ ((target ("avx512f,avx512dq,avx2,fma")))

/* The activations lanes_tile applies in registers (inlined: no call that
 * would spill the accumulators still live) */
static inline gboolean
on_registers (NnpActivation act)
{
  return act == NNP_ACT_NONE || act == NNP_ACT_RELU || act == NNP_ACT_CLIP;
}

/* The activation of the tile's stored outputs (at out, channel r's at out
 * + r * out_cs), out of line with the activation inlined: a call per
 * vector cost a 1x1 of 48 channels with HardSwish a fifth of its time. */
UK512 __attribute__ ((noinline)) static void
lanes_act (const NnpConvLanes *c, float *out, int mr, int nv, __mmask16 last)
{
  for (int r = 0; r < mr; r++, out += c->out_cs)
    for (int v = 0; v < nv; v++) {
      __mmask16 m = v == nv - 1 ? last : (__mmask16) 0xffff;
      __m512 o = nnp_act_avx512_any (_mm512_maskz_loadu_ps (m, out + 16 * v), c->act, c->act_alpha,
                                     c->act_beta);
      _mm512_mask_storeu_ps (out + 16 * v, m, o);
    }
}

/* Row `row`'s outputs [ox, ox + 16 * nv) of channels [co, co + mr) (the
 * last vector's lanes in `last` only). */
UK512 __attribute__ ((always_inline)) static inline void
lanes_tile (const NnpConvLanes *c, const float *panel, int64_t co, int mr, int64_t row, int64_t ox,
            const int nv, __mmask16 last)
{
  const float *in = c->in + row * c->in_rs + ox;
  const int64_t k = c->k;
  __m512 acc[MR][SMALLK_V];

#pragma GCC unroll 6
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
      acc[r][v] = _mm512_setzero_ps ();
  for (int64_t q = 0; q < k; q++) {
    const float *iq = in + c->koff[q];
    __m512 x[SMALLK_V];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
      x[v] =
          v == nv - 1 ? _mm512_maskz_loadu_ps (last, iq + 16 * v) : _mm512_loadu_ps (iq + 16 * v);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      __m512 w = _mm512_set1_ps (panel[q * MR + r]);
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++)
        acc[r][v] = _mm512_fmadd_ps (w, x[v], acc[r][v]);
    }
  }
  /* Relu and Clip on the registers; the others (a call each, which would
   * spill every accumulator still live) on what was stored */
  const NnpActivation act = on_registers (c->act) ? c->act : NNP_ACT_NONE;
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) {
    const int64_t off = (co + r) * c->out_cs + row * c->out_rs + ox;
    float *out = c->y + off;
    const float *sum = c->sum ? c->sum + off : NULL;
    __m512 b = _mm512_set1_ps (c->bias && r < mr ? c->bias[co + r] : 0.f);
    if (r >= mr)
      break;
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
      __mmask16 m = v == nv - 1 ? last : (__mmask16) 0xffff;
      __m512 o = nnp_act_avx512 (_mm512_add_ps (acc[r][v], b), act, c->act_alpha, c->act_beta);
      if (c->sum) /* Relu, Clip or none here and before (nnp_cpu_conv_lanes_ok) */
        o = nnp_act_avx512 (_mm512_add_ps (o, _mm512_maskz_loadu_ps (m, sum + 16 * v)), c->sum_act,
                            c->sum_alpha, c->sum_beta);
      _mm512_mask_storeu_ps (out + 16 * v, m, o);
    }
  }
  if (act != c->act)
    lanes_act (c, c->y + co * c->out_cs + row * c->out_rs + ox, mr, nv, last);
}

/* Tasks: (row, panel) pairs, the panels of a row one after the other (its
 * input read from L1 by all of them: panel by panel, the whole input went
 * through the caches once a panel, 22 % slower inside a model) */
UK512 static void
lanes_rows (gpointer data, gsize begin, gsize end, int thread)
{
  const NnpConvLanes *c = data;
  const int64_t n_panels = (c->m + MR - 1) / MR;

  for (gsize t = begin; t < end; t++) {
    int64_t row = (int64_t) t / n_panels, co = ((int64_t) t % n_panels) * MR;
    int64_t width = row == c->n_rows - 1 ? c->last_width : c->width;
    const float *panel = c->a + co * c->k;
    int mr = (int) MIN (MR, c->m - co);
    for (int64_t ox = 0; ox < width; ox += 16 * SMALLK_V) {
      int64_t left = width - ox, nv = MIN (SMALLK_V, (left + 15) / 16);
      int64_t tail = MIN (16, left - 16 * (nv - 1)); /* lanes of the last vector */
      __mmask16 last = tail == 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << tail) - 1u);
      switch (nv) {
        case 4: lanes_tile (c, panel, co, mr, row, ox, 4, last); break;
        case 3: lanes_tile (c, panel, co, mr, row, ox, 3, last); break;
        case 2: lanes_tile (c, panel, co, mr, row, ox, 2, last); break;
        default: lanes_tile (c, panel, co, mr, row, ox, 1, last); break;
      }
    }
  }
}
#endif

gboolean
nnp_cpu_conv_lanes_ok (const NnpCpuCall *call, int64_t k, int64_t width)
{
#if HAVE_X86
  return nnp_sgemm_has_avx512 () && k <= NNP_CONV_LANES_MAX_K && k <= NNP_SGEMM_KC && width >= 32
         && (call->sum == NULL || (on_registers (call->node->act) && on_registers (call->sum_act)));
#else
  return FALSE;
#endif
}

int64_t
nnp_cpu_conv_lanes_chunk (int64_t k)
{
  return CLAMP (8192 / MAX (k, 1) / 64 * 64, 64, 256);
}

void
nnp_cpu_conv_lanes_run (const NnpConvLanes *lanes, const NnpCpuCall *call)
{
#if HAVE_X86
  NnpConvLanes c = *lanes;

  c.act = call->node->act;
  c.act_alpha = call->node->act_alpha;
  c.act_beta = call->node->act_beta;
  c.sum_act = call->sum_act;
  c.sum_alpha = call->sum_alpha;
  c.sum_beta = call->sum_beta;
  nnp_parallel_for (call->pool, c.n_rows * ((c.m + MR - 1) / MR), 4, lanes_rows, &c);
#endif
}

gsize
nnp_cpu_conv_direct_workspace (const NnpConvParams *p, gboolean packed_weights)
{
  DirectGeometry dg;

  direct_geometry (p, packed_weights, &dg);
  return dg.pad_bytes + dg.koff_bytes + dg.a_bytes;
}

gboolean
nnp_cpu_conv_direct_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  const NnpNode *node = call->node;
  const ConvState *st = call->state;
  DirectGeometry dg;
  int64_t cin_g = p->in_channels / p->group, m, k;
  int64_t in_sp = vol3 (p->in_dims), out_sp = vol3 (p->out_dims);
  guint8 *ws = call->scratch;
  float *pad, *apack;
  int32_t *koff;
  const float *x = call->inputs[0]->data, *w = call->inputs[1]->data;
  const float *bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  float *y = call->outputs[0]->data;
  NnpSgemm g = { 0 };
  int64_t q = 0;

  direct_geometry (p, st != NULL, &dg);
  direct_mk (p, &m, &k);
  pad = (float *) ws;
  koff = (int32_t *) (ws + dg.pad_bytes);
  apack = (float *) (ws + dg.pad_bytes + dg.koff_bytes);
  memset (pad + cin_g * dg.sh * dg.sw * dg.cs, 0, 2 * NR * sizeof (float));
  for (int64_t ci = 0; ci < cin_g; ci++)
    for (int64_t kh = 0; kh < p->kernel[1]; kh++)
      for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
        int64_t oh = kh * p->dilations[1], ow = kw * p->dilations[2];
        int64_t plane = (ci * dg.sh + oh % dg.sh) * dg.sw + ow % dg.sw;
        koff[q++] = (int32_t) (plane * dg.cs + (oh / dg.sh) * dg.wp + ow / dg.sw);
      }

  g.m = m;
  g.k = k;
  g.ldc = out_sp;
  g.bias_rs = 1;
  g.bias_cs = 0;
  g.beta = 1.f;
  g.act = node->act;
  g.act_alpha = node->act_alpha;
  g.act_beta = node->act_beta;
  g.sum_act = call->sum_act;
  g.sum_alpha = call->sum_alpha;
  g.sum_beta = call->sum_beta;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t grp = 0; grp < p->group; grp++) {
      PadCtx pc = { p, &dg, x + (b * p->in_channels + grp * cin_g) * in_sp, pad };
      nnp_parallel_for (call->pool, cin_g, 1, pad_channels, &pc);
      if (st) {
        g.a_packed = st->packed + grp * st->group_floats;
      } else {
        /* group grp's rows of W, row i at w + (grp * m + i) * k */
        nnp_sgemm_pack_a (m, k, w + grp * m * k, k, 1, 1.f, apack);
        g.a_packed = apack;
      }
      g.c = y + (b * p->out_channels + grp * m) * out_sp;
      g.sum = call->sum ? (const float *) call->sum->data + (b * p->out_channels + grp * m) * out_sp
                        : NULL;
      g.bias = bias ? bias + grp * m : NULL;
      if (nnp_cpu_conv_lanes_ok (call, k, p->out_dims[2])) {
        NnpConvLanes lanes = { .in = pad,
                               .koff = koff,
                               .a = g.a_packed,
                               .bias = g.bias,
                               .y = g.c,
                               .m = m,
                               .k = k,
                               .n_rows = p->out_dims[1],
                               .width = p->out_dims[2],
                               .last_width = p->out_dims[2],
                               .in_rs = dg.wp,
                               .out_rs = p->out_dims[2],
                               .out_cs = out_sp,
                               .sum = g.sum };
        nnp_cpu_conv_lanes_run (&lanes, call);
        continue;
      }
      nnp_sgemm_run_indirect (&g, pad, koff, dg.wp, p->out_dims[1], p->out_dims[2], call->pool);
    }
  }
  return TRUE;
}
