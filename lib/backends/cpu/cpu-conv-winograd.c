/* libnnpipe: CPU kernel of 3x3 stride-1 convolutions by Winograd's minimal
 * filtering F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2016), float32, 2-D, AVX-512, constant
 * weights, enough channels (nnp_cpu_conv_winograd_ok()).
 *
 * Each 4x4 tile of output pixels is computed from a 6x6 patch of the padded
 * input: V = B^T d B per input channel, U = G g G^T per (output, input)
 * channel pair (once per model), M(xi) = sum over c of U(xi)[o][c] V(xi)[c]
 * for each of the 36 positions xi (36 small GEMMs: 36 x Cin x Cout
 * multiply-adds per tile where the direct kernel does 144 x Cin x Cout),
 * Y = A^T M A.  The transforms (B, G, A of the interpolation points 0, 1,
 * -1, 2, -2, infinity) are the paper's.  A dilated convolution is dh x dw
 * ordinary ones, one per phase of its output grid: a tile's 16 pixels are
 * dh rows and dw columns apart, its patch's 36 pixels too (the output
 * transform then scatters instead of storing rows).  The sums are reordered
 * against the direct kernel and the transforms scale values by up to 8 and
 * back: the results differ from the direct kernel's by a few float32 steps
 * of the largest term (checked against ONNX Runtime by the model tests at their
 * 1e-4 tolerances, and against the direct kernel by ops-vs-ort's cases).
 *
 * Layout: the input is first copied, padded, into blocks of 16 channels with
 * the channel innermost (nnp_cpu_conv_blocked_pad(), as the blocked direct
 * kernel reads it), so a 6x6 patch of 16 channels is 36 vector loads.  Work
 * is split in one task per thread, an equal share of the tiles, in chunks of
 * NT tiles on the thread's scratch slot:
 *   1. input transform of the chunk's tiles: V[xi][cb][tile][16 channels];
 *   2. per panel of 32 output channels: for each xi, a 12-tile x 32-channel
 *      register tile accumulates over the input channels (weights U of xi:
 *      Cin x 32, 16 KB at 128 channels, in L1 across the chunk's tiles)
 *      into M[xi][tile][32];
 *   3. output transform, bias, activation, the fused residual, stored into
 *      Y's channel planes (a 16x16 transpose turns the 16 pixels x 16
 *      channels of a tile into rows of 4 pixels per channel).
 *
 * Weights: per group, panels of 32 output channels (zero past m), each
 * 36 x Kp x 32 (Kp: the input channels rounded up to 16, zero past cin;
 * the blocked copy's missing channels are zero too). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-conv.h"
#include "backends/cpu/cpu-transpose.h"
#include "ops/conv-params.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define BC 16  /* channels per block */
#define TC 32  /* output channels per panel */
#define TS 12  /* tiles per register tile */
#define NSUB 2 /* register tiles per chunk */
#define NT (TS * NSUB)
#define XI 36 /* 6 x 6 positions */

gboolean
nnp_cpu_conv_winograd_ok (const NnpConvParams *p)
{
#if HAVE_X86
  static gsize once = 0;
  static gboolean off;
  int64_t cin = p->in_channels / p->group, m = p->out_channels / p->group;

  if (g_once_init_enter (&once)) {
    /* for A/B measurements against the direct kernels */
    off = g_getenv ("NNPIPE_CPU_NO_WINOGRAD") != NULL;
    /* its stores of 4-pixel rows are AVX-512VL (nnp_sgemm_has_avx512() asks for F and DQ) */
    __builtin_cpu_init ();
    off = off || !__builtin_cpu_supports ("avx512vl");
    g_once_init_leave (&once, 1);
  }
  /* at least 16 input and output channels (fewer: the transforms cost
   * more than the multiplications they save), panels at most 1/4 padding
   * (as the blocked direct kernel), at least one whole tile a phase and 20
   * tiles in all: the transformed weights are 4x the direct ones and are
   * read once per chunk of tiles (a ResNet's 512-channel 3x3 at 7x7, 4
   * tiles: 3.4 ms against 2.2 direct; at 14x14, 16 tiles, a tie; M-LSD's
   * 128-channel 20x20, 25 tiles, 0.59 against 0.76 ms) */
  return !off && p->algo == NNP_CONV_ALGO_DIRECT && nnp_sgemm_has_avx512 () && p->kernel[0] == 1
         && p->in_dims[0] == 1 && p->kernel[1] == 3 && p->kernel[2] == 3 && p->strides[1] == 1
         && p->strides[2] == 1 && cin >= BC && m >= BC && (m + TC - 1) / TC * TC * 3 <= m * 4
         && p->out_dims[1] >= 4 * p->dilations[1] && p->out_dims[2] >= 4 * p->dilations[2]
         && (p->out_dims[1] + 3) / 4 * ((p->out_dims[2] + 3) / 4) >= 20;
#else
  return FALSE;
#endif
}

typedef struct {
  int64_t cin, m, cb, kp, panels;
  int64_t dh, dw;                       /* dilations: dh x dw phases */
  int64_t th, tw, tiles, hp, wp, block; /* tiles a phase (th x tw) and in all,
                                         * padded plane, floats per channel block */
  int64_t v_floats, m_floats;           /* per slot */
} Geometry;

static void
geometry (const NnpConvParams *p, Geometry *ge)
{
  ge->cin = p->in_channels / p->group;
  ge->m = p->out_channels / p->group;
  ge->cb = (ge->cin + BC - 1) / BC;
  ge->kp = ge->cb * BC;
  ge->panels = (ge->m + TC - 1) / TC;
  ge->dh = p->dilations[1];
  ge->dw = p->dilations[2];
  ge->th = ((p->out_dims[1] + ge->dh - 1) / ge->dh + 3) / 4;
  ge->tw = ((p->out_dims[2] + ge->dw - 1) / ge->dw + 3) / 4;
  ge->tiles = ge->dh * ge->dw * ge->th * ge->tw;
  ge->hp = ge->dh * (ge->th * 4 + 2);
  ge->wp = ge->dw * (ge->tw * 4 + 2);
  ge->block = ge->hp * ge->wp * BC;
  ge->v_floats = XI * ge->kp * NT;
  ge->m_floats = XI * NT * TC;
}

/* u = G g for the 3 values g[0], g[s], g[2s] (doubles) */
static void
g_column (const double *g, int s, double *u)
{
  u[0] = g[0] / 4;
  u[1] = -(g[0] + g[s] + g[2 * s]) / 6;
  u[2] = -(g[0] - g[s] + g[2 * s]) / 6;
  u[3] = g[0] / 24 + g[s] / 12 + g[2 * s] / 6;
  u[4] = g[0] / 24 - g[s] / 12 + g[2 * s] / 6;
  u[5] = g[2 * s];
}

float *
nnp_cpu_conv_winograd_pack (const NnpConvParams *p, const float *w)
{
  Geometry ge;
  gsize group_floats;
  float *packed;

  geometry (p, &ge);
  group_floats = (gsize) (ge.panels * XI * ge.kp * TC);
  packed = g_aligned_alloc0 (group_floats * p->group, sizeof (float), 64);
  for (int64_t grp = 0; grp < p->group; grp++)
    for (int64_t o = 0; o < ge.m; o++)
      for (int64_t c = 0; c < ge.cin; c++) {
        const float *wf = w + ((grp * ge.m + o) * ge.cin + c) * 9;
        double g[9], gt[18], u[36];
        float *d = packed + grp * group_floats + (o / TC) * XI * ge.kp * TC;

        for (int i = 0; i < 9; i++)
          g[i] = wf[i];
        /* columns: (G g) 6x3, then rows: (G g) G^T 6x6 */
        for (int j = 0; j < 3; j++) {
          double col[6];
          g_column (g + j, 3, col);
          for (int i = 0; i < 6; i++)
            gt[i * 3 + j] = col[i];
        }
        for (int i = 0; i < 6; i++)
          g_column (gt + i * 3, 1, u + i * 6);
        for (int xi = 0; xi < XI; xi++)
          d[((int64_t) xi * ge.kp + c) * TC + o % TC] = (float) u[xi];
      }
  return packed;
}

gsize
nnp_cpu_conv_winograd_workspace (const NnpConvParams *p)
{
  Geometry ge;

  geometry (p, &ge);
  return round_up_bytes ((gsize) (ge.cb * ge.block) * sizeof (float))
         + (gsize) nnp_sgemm_slots ()
               * round_up_bytes ((gsize) (ge.v_floats + ge.m_floats) * sizeof (float));
}

#if HAVE_X86

#define UKW __attribute__ ((target ("avx512f,avx512dq,avx512vl,avx2,fma")))
/* the maskz forms of the shuffles: GCC 12's plain ones warn of an undefined operand */
#define ALL ((__mmask16) -1)
#define ALL4 ((__mmask8) -1)

typedef struct {
  const NnpConvParams *p;
  const Geometry *ge;
  const float *pad, *u, *bias; /* the group's blocked copy, packed weights, bias (or NULL) */
  float *y;                    /* first output channel of the group */
  const float *sum;            /* the fused residual at the same places as y, or NULL */
  NnpActivation act, sum_act;
  float act_alpha, act_beta, sum_alpha, sum_beta;
  int64_t n_tasks; /* one per thread (wino_task) */
  /* dilated: the offsets of a tile's 16 pixels from its first (row-major) */
  int32_t dil_off[16] __attribute__ ((aligned (64)));
} WinoCtx;

/* v = B^T d on 6 vectors */
UKW static inline void
bt6 (const __m512 *d, __m512 *v)
{
  const __m512 two = _mm512_set1_ps (2.f), four = _mm512_set1_ps (4.f), five = _mm512_set1_ps (5.f);

  v[0] = _mm512_fmadd_ps (four, d[0], _mm512_fnmadd_ps (five, d[2], d[4]));
  v[1] = _mm512_fnmadd_ps (four, _mm512_add_ps (d[1], d[2]), _mm512_add_ps (d[3], d[4]));
  v[2] = _mm512_fmadd_ps (four, _mm512_sub_ps (d[1], d[2]), _mm512_sub_ps (d[4], d[3]));
  v[3] = _mm512_fmadd_ps (two, _mm512_sub_ps (d[3], d[1]), _mm512_sub_ps (d[4], d[2]));
  v[4] = _mm512_fmadd_ps (two, _mm512_sub_ps (d[1], d[3]), _mm512_sub_ps (d[4], d[2]));
  v[5] = _mm512_fmadd_ps (four, d[1], _mm512_fnmadd_ps (five, d[3], d[5]));
}

/* y = A^T m: 6 vectors to 4 */
UKW static inline void
at6 (const __m512 *m, __m512 *y)
{
  __m512 s12 = _mm512_add_ps (m[1], m[2]), d12 = _mm512_sub_ps (m[1], m[2]);
  __m512 s34 = _mm512_add_ps (m[3], m[4]), d34 = _mm512_sub_ps (m[3], m[4]);

  y[0] = _mm512_add_ps (_mm512_add_ps (m[0], s12), s34);
  y[1] = _mm512_fmadd_ps (_mm512_set1_ps (2.f), d34, d12);
  y[2] = _mm512_fmadd_ps (_mm512_set1_ps (4.f), s34, s12);
  y[3] = _mm512_add_ps (_mm512_fmadd_ps (_mm512_set1_ps (8.f), d34, d12), m[5]);
}

/* Where a tile is: its first output pixel (y0, x0); its pixels are dh
 * rows and dw columns apart (a phase of the dilation), its patch's top-left
 * padded pixel is (y0, x0) too. */
static void
tile_origin (const Geometry *ge, int64_t tile, int64_t *y0, int64_t *x0)
{
  int64_t phase = tile / (ge->th * ge->tw), in = tile % (ge->th * ge->tw);

  *y0 = phase / ge->dw + ge->dh * 4 * (in / ge->tw);
  *x0 = phase % ge->dw + ge->dw * 4 * (in % ge->tw);
}

/* V of tile t (0 <= t < NT) of the chunk from the 6x6 patch whose top-left
 * padded pixel is (r, c), every channel block. */
UKW static void
input_tile (const WinoCtx *ctx, float *v, int64_t t, int64_t r, int64_t c)
{
  const Geometry *ge = ctx->ge;
  const int64_t rs = ge->dh * ge->wp * BC, cs = ge->dw * BC; /* patch row, column steps */

  for (int64_t cb = 0; cb < ge->cb; cb++) {
    const float *s = ctx->pad + cb * ge->block + (r * ge->wp + c) * BC;
    __m512 rows[6][6];

    for (int i = 0; i < 6; i++) {
      __m512 d[6];
      for (int j = 0; j < 6; j++)
        d[j] = _mm512_load_ps (s + i * rs + j * cs);
      bt6 (d, rows[i]);
    }
    for (int j = 0; j < 6; j++) {
      __m512 d[6], o[6];
      for (int i = 0; i < 6; i++)
        d[i] = rows[i][j];
      bt6 (d, o);
      for (int i = 0; i < 6; i++)
        _mm512_store_ps (v + (((int64_t) (i * 6 + j) * ge->cb + cb) * NT + t) * BC, o[i]);
    }
  }
}

/* out[t][0..31] += nothing: = sum over the kp channels of u[c][0..31] * v[cb][t][c % 16]
 * for the TS tiles at v (tile stride BC floats, block stride NT * BC). */
UKW static void
gemm_tile (const float *v, const float *u, int64_t cb, float *out)
{
  __m512 acc[2 * TS];

#pragma GCC unroll 24
  for (int i = 0; i < 2 * TS; i++)
    acc[i] = _mm512_setzero_ps ();
  for (int64_t b = 0; b < cb; b++, v += NT * BC)
    for (int c = 0; c < BC; c++, u += TC) {
      __m512 a0 = _mm512_load_ps (u), a1 = _mm512_load_ps (u + 16);
#pragma GCC unroll 12
      for (int t = 0; t < TS; t++) {
        __m512 bv = _mm512_set1_ps (v[t * BC + c]);
        acc[2 * t] = _mm512_fmadd_ps (a0, bv, acc[2 * t]);
        acc[2 * t + 1] = _mm512_fmadd_ps (a1, bv, acc[2 * t + 1]);
      }
    }
#pragma GCC unroll 12
  for (int t = 0; t < TS; t++) {
    _mm512_store_ps (out + t * TC, acc[2 * t]);
    _mm512_store_ps (out + t * TC + 16, acc[2 * t + 1]);
  }
}

/* The bias of output channels o0.. o0 + 15 of the group (zero past m or
 * without a bias). */
UKW static __m512
bias_vector (const WinoCtx *ctx, int64_t o0)
{
  float bb[BC] __attribute__ ((aligned (64)));

  for (int o = 0; o < BC; o++)
    bb[o] = ctx->bias && o0 + o < ctx->ge->m ? ctx->bias[o0 + o] : 0.f;
  return _mm512_load_ps (bb);
}

/* Output tile at (y0, x0) (tile_origin()), 16 channels from o0 (of the
 * group, their bias in `bias`), from m[xi * NT * TC] (the tile's first of
 * those channels). */
UKW static void
output_tile (const WinoCtx *ctx, const float *m, int64_t o0, __m512 bias, int64_t y0, int64_t x0)
{
  const Geometry *ge = ctx->ge;
  const int64_t OH = ctx->p->out_dims[1], OW = ctx->p->out_dims[2], plane = OH * OW;
  /* rows and columns of the tile inside the output */
  const int64_t nr = MIN (4, (OH - y0 + ge->dh - 1) / ge->dh);
  const int64_t nc = MIN (4, (OW - x0 + ge->dw - 1) / ge->dw);
  const __mmask8 cols = (__mmask8) ((1u << nc) - 1);
  const int64_t on = MIN (BC, ge->m - o0);
  __m512 cols4[6][4], px[16];
  __m512i at = _mm512_setzero_si512 (); /* dilated: the 16 pixels' offsets from (y0, x0) */
  __mmask16 valid = 0;                  /* dilated: those inside the output */

  if (nr <= 0 || nc <= 0)
    return;
  if (ge->dh > 1 || ge->dw > 1) {
    at = _mm512_load_si512 (ctx->dil_off);
    for (int64_t i = 0; i < nr; i++)
      valid |= (__mmask16) (cols << (4 * i));
  }
  /* rows of the 6x6 M first (A^T along each row), then the columns */
  for (int i = 0; i < 6; i++) {
    __m512 row[6];
    for (int j = 0; j < 6; j++)
      row[j] = _mm512_load_ps (m + (int64_t) (i * 6 + j) * NT * TC);
    at6 (row, cols4[i]);
  }
  for (int j = 0; j < 4; j++) {
    __m512 col[6], out[4];
    for (int i = 0; i < 6; i++)
      col[i] = cols4[i][j];
    at6 (col, out);
    for (int i = 0; i < 4; i++)
      px[i * 4 + j] =
          nnp_act_avx512 (_mm512_add_ps (out[i], bias), ctx->act, ctx->act_alpha, ctx->act_beta);
  }
  nnp_transpose16_avx512 (px);
  for (int64_t o = 0; o < on; o++) {
    float *yo = ctx->y + (o0 + o) * plane + y0 * OW + x0;
    __m512 v = px[o];
    if (valid) {
      /* a dilated tile: its pixels dh rows, dw columns apart */
      if (ctx->sum)
        v = nnp_act_avx512 (_mm512_add_ps (v, _mm512_mask_i32gather_ps (
                                                  _mm512_setzero_ps (), valid, at,
                                                  ctx->sum + (o0 + o) * plane + y0 * OW + x0, 4)),
                            ctx->sum_act, ctx->sum_alpha, ctx->sum_beta);
      _mm512_mask_i32scatter_ps (yo, valid, at, v, 4);
      continue;
    }
    if (ctx->sum) {
      const float *so = ctx->sum + (o0 + o) * plane + y0 * OW + x0;
      float sb[16] __attribute__ ((aligned (64))) = { 0 };
      for (int64_t i = 0; i < nr; i++)
        _mm_store_ps (sb + i * 4, _mm_maskz_loadu_ps (cols, so + i * OW));
      v = nnp_act_avx512 (_mm512_add_ps (v, _mm512_load_ps (sb)), ctx->sum_act, ctx->sum_alpha,
                          ctx->sum_beta);
    }
    if (nc == 4) {
      _mm_storeu_ps (yo, _mm512_maskz_extractf32x4_ps (ALL4, v, 0));
      if (nr > 1)
        _mm_storeu_ps (yo + OW, _mm512_maskz_extractf32x4_ps (ALL4, v, 1));
      if (nr > 2)
        _mm_storeu_ps (yo + 2 * OW, _mm512_maskz_extractf32x4_ps (ALL4, v, 2));
      if (nr > 3)
        _mm_storeu_ps (yo + 3 * OW, _mm512_maskz_extractf32x4_ps (ALL4, v, 3));
    } else {
      _mm_mask_storeu_ps (yo, cols, _mm512_maskz_extractf32x4_ps (ALL4, v, 0));
      if (nr > 1)
        _mm_mask_storeu_ps (yo + OW, cols, _mm512_maskz_extractf32x4_ps (ALL4, v, 1));
      if (nr > 2)
        _mm_mask_storeu_ps (yo + 2 * OW, cols, _mm512_maskz_extractf32x4_ps (ALL4, v, 2));
      if (nr > 3)
        _mm_mask_storeu_ps (yo + 3 * OW, cols, _mm512_maskz_extractf32x4_ps (ALL4, v, 3));
    }
  }
}

/* Tiles [t0, t0 + n), n <= NT, on one slot (V then M). */
UKW static void
wino_chunk (const WinoCtx *ctx, int64_t t0, int64_t n, void *slot)
{
  const Geometry *ge = ctx->ge;
  float *v = slot, *mb = v + ge->v_floats;
  const int64_t subs = (n + TS - 1) / TS;

  for (int64_t t = 0; t < n; t++) {
    int64_t y0, x0;
    tile_origin (ge, t0 + t, &y0, &x0);
    input_tile (ctx, v, t, y0, x0);
  }
  /* the register tiles read whole TS-tile runs: the missing tiles' V zero */
  if (n < subs * TS)
    for (int64_t xb = 0; xb < XI * ge->cb; xb++)
      memset (v + (xb * NT + n) * BC, 0, (gsize) (subs * TS - n) * BC * sizeof (float));
  for (int64_t pn = 0; pn < ge->panels; pn++) {
    const float *u = ctx->u + pn * XI * ge->kp * TC;
    const __m512 bias[2] = { bias_vector (ctx, pn * TC), bias_vector (ctx, pn * TC + BC) };
    for (int xi = 0; xi < XI; xi++)
      for (int64_t s = 0; s < subs; s++)
        gemm_tile (v + (xi * ge->cb * NT + s * TS) * BC, u + xi * ge->kp * TC, ge->cb,
                   mb + ((int64_t) xi * NT + s * TS) * TC);
    for (int64_t t = 0; t < n; t++) {
      int64_t y0, x0;
      tile_origin (ge, t0 + t, &y0, &x0);
      for (int h = 0; h < TC / BC && pn * TC + h * BC < ge->m; h++)
        output_tile (ctx, mb + t * TC + h * BC, pn * TC + h * BC, bias[h], y0, x0);
    }
  }
}

/* Task `task` of n_tasks (one per thread): an equal share of the runs of
 * TS tiles (a contiguous range: the last run may be short), in chunks of
 * NT.  Equal shares, not tasks of NT dealt out in turn: 400 tiles are 17
 * chunks of 24, 9 of them on one of two threads. */
static void
wino_task (gpointer data, int64_t task, void *slot)
{
  const WinoCtx *ctx = data;
  const int64_t runs = (ctx->ge->tiles + TS - 1) / TS;
  const int64_t t0 = task * runs / ctx->n_tasks * TS;
  const int64_t t1 = MIN ((task + 1) * runs / ctx->n_tasks * TS, ctx->ge->tiles);

  for (int64_t t = t0; t < t1; t += NT)
    wino_chunk (ctx, t, MIN (NT, t1 - t), slot);
}

gboolean
nnp_cpu_conv_winograd_run (const NnpCpuCall *call, const NnpConvParams *p, const ConvState *st)
{
  const NnpNode *node = call->node;
  const float *x = call->inputs[0]->data;
  const float *bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  float *y = call->outputs[0]->data;
  int64_t in_sp = vol3 (p->in_dims), out_sp = vol3 (p->out_dims);
  Geometry ge;
  WinoCtx ctx = { 0 };
  gsize pad_bytes;

  geometry (p, &ge);
  pad_bytes = round_up_bytes ((gsize) (ge.cb * ge.block) * sizeof (float));
  ctx.p = p;
  ctx.ge = &ge;
  ctx.pad = call->scratch;
  ctx.act = node->act;
  ctx.act_alpha = node->act_alpha;
  ctx.act_beta = node->act_beta;
  ctx.sum_act = call->sum_act;
  ctx.sum_alpha = call->sum_alpha;
  ctx.sum_beta = call->sum_beta;
  ctx.n_tasks = MIN (MIN (nnp_thread_pool_get_n_threads (call->pool), nnp_sgemm_slots ()),
                     (ge.tiles + TS - 1) / TS);
  for (int k = 0; k < 16; k++)
    ctx.dil_off[k] = (int32_t) ((k / 4) * ge.dh * p->out_dims[2] + (k % 4) * ge.dw);
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t grp = 0; grp < p->group; grp++) {
      nnp_cpu_conv_blocked_pad (call->pool, p, x + (b * p->in_channels + grp * ge.cin) * in_sp,
                                ge.cin, ge.hp, ge.wp, ge.block, call->scratch);
      ctx.u = st->packed + grp * ge.panels * XI * ge.kp * TC;
      ctx.bias = bias ? bias + grp * ge.m : NULL;
      ctx.y = y + (b * p->out_channels + grp * ge.m) * out_sp;
      ctx.sum = call->sum
                    ? (const float *) call->sum->data + (b * p->out_channels + grp * ge.m) * out_sp
                    : NULL;
      nnp_cpu_run_in_slots (call->pool, ctx.n_tasks, (guint8 *) call->scratch + pad_bytes,
                            round_up_bytes ((gsize) (ge.v_floats + ge.m_floats) * sizeof (float)),
                            wino_task, &ctx);
    }
  return TRUE;
}

#else

gboolean
nnp_cpu_conv_winograd_run (const NnpCpuCall *call, const NnpConvParams *p, const ConvState *st)
{
  return FALSE;
}

#endif
