/* libnnpipe: CPU kernel of the DIRECT Conv algorithm in a blocked channel
 * layout (float32, 2-D, stride 1 or 2, any dilation, output panels of 32
 * channels at most 1/9 padding, AVX-512, constant weights:
 * nnp_cpu_conv_blocked_ok()), and of 1x1 convolutions on small planes (the
 * GEMM algo's, and 1x1 of stride 2): what ONNX Runtime's NCHWc convolutions
 * do, with NCHW tensors on both sides.
 *
 * The input of a group is copied, padded, into blocks of 16 channels with
 * the channel innermost: block cb holds hp x wp pixels of 16 floats
 * (element (c, i, j) of the padded input at [cb][i * wp + j][c % 16]).
 * A group of fewer than 16 channels (a 7x7 stem: PLANAR_MIN_K) is copied
 * padded in X's own layout instead, one block of cin planes of hp x wp.
 * A 1x1 convolution without padding reads X in place instead (channel c of
 * pixel (i, j) at c * IH * IW + i * IW + j): nothing to copy.
 *
 * Output rows are cut into tiles of at most 12 pixels, as evenly as they
 * go (a 7-wide row is one tile of 7, a 56-wide one 12 + 4 x 11; a 1x1
 * convolution of stride 1 cuts the whole plane as one row), so no pixel is
 * computed that is not stored.  The micro-kernel holds n <= 12 pixels x 32
 * output channels in 2n zmm registers: per input channel it loads the 32
 * weights (two aligned vectors, packed once per model) and broadcasts the n
 * pixels' values (stride-1 pixels of a blocked copy: one cache line serves
 * 16 channels of a pixel), 2n FMAs.  The finished tile goes to a small
 * buffer and into Y's channel planes 16 channels at a time by an
 * in-register 16 x 16 transpose, with the bias, the activation and a fused
 * residual in one masked store per channel.
 *
 * Weights: panels of 32 output channels (zero rows past m), each K x 32
 * with K in the order (cb, kh, kw, c < the block's channels). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-conv.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-transpose.h"
#include "ops/conv-params.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define BC 16 /* channels per block */
#define TP 12 /* pixels per tile, at most */
#define TC 32 /* output channels per panel */
/* A tile's transposed store and its weights' reloads cost about as much
 * as this many input channels more per pixel (fitted on 1x1 convolutions
 * at 7x7, 14x14 and 16x16 with 64-960 input channels) */
#define STORE_COST_K 24
/* Fewer than 16 input channels per group (a planar copy) only from this
 * many products per output (cin x kh x kw): below it the tile's store
 * costs more than the indirect GEMM's whole run (3 -> 32 3x3 s2 at 224:
 * 0.42 -> 0.55 ms; 8 -> 32 3x3 at 112 (72): 0.70 -> 0.73; 12 -> 64 3x3
 * (108): 0.47 -> 0.48), above it less (3 -> 64 7x7 s2 (147): 3.0 -> 2.8) */
#define PLANAR_MIN_K 128

/* 1x1 without padding: X read in place (no blocked copy) */
static gboolean
reads_in_place (const NnpConvParams *p)
{
  return p->kernel[1] == 1 && p->kernel[2] == 1 && p->pads_begin[1] == 0 && p->pads_begin[2] == 0;
}

/* Whether a 1x1 convolution without padding is cheaper here than on the
 * indirect GEMM, whose tiles are 32 columns wide (a last tile of fewer
 * columns costs about as much as a whole one, the AVX2 tile of 1-8
 * columns included): a 7x7 plane's 49 pixels cost it 64 columns
 * (MobileNetV2's 1x1s at 7x7: 0.56 -> 0.42 ms for 320 -> 1280), a 16x16
 * plane's 256 nothing (there this kernel is 1.2x slower).  At 14x14 it
 * chose right on 576 -> 96 (here 0.195 ms against 0.216), 96 -> 576 and
 * 64 -> 384 (the GEMM 10-20 % faster). */
static gboolean
pointwise_cheaper (const NnpConvParams *p, int64_t cin)
{
  int64_t px = vol3 (p->out_dims);
  int64_t cols = (px + 31) / 32 * 32;

  return px * (cin + STORE_COST_K) < cols * cin;
}

gboolean
nnp_cpu_conv_blocked_ok (const NnpConvParams *p)
{
#if HAVE_X86
  int64_t m = p->out_channels / p->group, cin = p->in_channels / p->group;
  gboolean fits;

  /* panels of 32 output channels, at most 1/9 of them padding (the
   * detector's 24-channel convolutions are faster on the indirect GEMM's
   * 12-row blocks: 19.3 against 22.4 ms a run) */
  if (!nnp_sgemm_has_avx512 () || p->kernel[0] != 1 || p->in_dims[0] != 1 || m < BC
      || (m + TC - 1) / TC * TC * 8 > m * 9
      || (cin < BC && (reads_in_place (p) || cin * p->kernel[1] * p->kernel[2] < PLANAR_MIN_K)))
    return FALSE;
  fits = p->strides[1] >= 1 && p->strides[1] <= 2 && p->strides[2] >= 1 && p->strides[2] <= 2;
  if (reads_in_place (p) && !pointwise_cheaper (p, cin))
    return FALSE;
  return fits && (p->algo == NNP_CONV_ALGO_GEMM || p->algo == NNP_CONV_ALGO_DIRECT);
#else
  return FALSE;
#endif
}

typedef struct {
  int64_t cin, m, cb, hp, wp, block; /* block: floats per channel block */
  int64_t k, panels;
  gboolean in_place; /* X read as it is (1x1 without padding) */
  gboolean planar;   /* fewer than 16 channels: a padded copy in X's layout */
  int64_t cs;        /* floats between two channels of a pixel */
  int64_t ps;        /* floats between two pixels of a tile */
  int64_t rs;        /* floats between two output rows' first pixels */
} Geometry;

static void
geometry (const NnpConvParams *p, Geometry *ge)
{
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t sh = p->strides[1], sw = p->strides[2];

  ge->cin = p->in_channels / p->group;
  ge->m = p->out_channels / p->group;
  ge->cb = (ge->cin + BC - 1) / BC;
  ge->hp = (OH - 1) * sh + (p->kernel[1] - 1) * p->dilations[1] + 1;
  ge->wp = (OW - 1) * sw + (p->kernel[2] - 1) * p->dilations[2] + 1;
  ge->block = ge->hp * ge->wp * BC;
  ge->k = ge->cin * p->kernel[1] * p->kernel[2];
  ge->panels = (ge->m + TC - 1) / TC;
  ge->in_place = reads_in_place (p);
  ge->planar = !ge->in_place && ge->cin < BC;
  if (ge->in_place) {
    ge->cs = p->in_dims[1] * p->in_dims[2];
    ge->ps = sw;
    ge->rs = sh * p->in_dims[2];
  } else if (ge->planar) {
    ge->block = ge->cin * ge->hp * ge->wp; /* the one block: cin padded planes */
    ge->cs = ge->hp * ge->wp;
    ge->ps = sw;
    ge->rs = sh * ge->wp;
  } else {
    ge->cs = 1;
    ge->ps = sw * BC;
    ge->rs = sh * ge->wp * BC;
  }
}

float *
nnp_cpu_conv_blocked_pack (const NnpConvParams *p, const float *w)
{
  Geometry ge;
  const int64_t KH = p->kernel[1], KW = p->kernel[2];
  gsize group_floats;
  float *packed;

  geometry (p, &ge);
  group_floats = (gsize) (ge.panels * ge.k * TC);
  packed = g_aligned_alloc0 (group_floats * p->group, sizeof (float), 64);
  for (int64_t grp = 0; grp < p->group; grp++)
    for (int64_t pn = 0; pn < ge.panels; pn++) {
      const float *wg = w + grp * ge.m * ge.k;
      float *d = packed + grp * group_floats + pn * ge.k * TC;
      for (int64_t cb = 0; cb < ge.cb; cb++) {
        int64_t cbn = MIN (BC, ge.cin - cb * BC);
        for (int64_t kh = 0; kh < KH; kh++)
          for (int64_t kw = 0; kw < KW; kw++)
            for (int64_t c = 0; c < cbn; c++, d += TC)
              for (int64_t o = 0; o < TC && pn * TC + o < ge.m; o++)
                d[o] = wg[(((pn * TC + o) * ge.cin + cb * BC + c) * KH + kh) * KW + kw];
      }
    }
  return packed;
}

void
nnp_cpu_conv_blocked_plan (const NnpConvParams *p, ConvState *st)
{
  Geometry ge;
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  /* a 1x1 of stride 1 read in place: the plane is one row */
  const gboolean one_row = reads_in_place (p) && p->strides[1] == 1 && p->strides[2] == 1;
  const int64_t rows = one_row ? 1 : OH, width = one_row ? OH * OW : OW;
  const int64_t per_row = (width + TP - 1) / TP;
  int64_t q = 0;

  geometry (p, &ge);
  if (ge.in_place) {
    st->n_taps = 1;
    st->tap_off = g_new0 (int64_t, 1);
    st->tap_channels = g_new (int, 1);
    st->tap_channels[0] = (int) ge.cin;
  } else {
    st->n_taps = ge.cb * p->kernel[1] * p->kernel[2];
    st->tap_off = g_new (int64_t, MAX (st->n_taps, 1));
    st->tap_channels = g_new (int, MAX (st->n_taps, 1));
    for (int64_t cb = 0; cb < ge.cb; cb++)
      for (int64_t kh = 0; kh < p->kernel[1]; kh++)
        for (int64_t kw = 0; kw < p->kernel[2]; kw++, q++) {
          st->tap_off[q] =
              cb * ge.block
              + (kh * p->dilations[1] * ge.wp + kw * p->dilations[2]) * (ge.planar ? 1 : BC);
          st->tap_channels[q] = (int) MIN (BC, ge.cin - cb * BC);
        }
  }
  /* tiles: each row cut into per_row runs, the first width % per_row one
   * pixel longer */
  st->n_tiles = rows * per_row;
  st->tiles = g_new (NnpConvTile, MAX (st->n_tiles, 1));
  q = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t t = 0, j = 0; t < per_row; t++, q++) {
      int64_t n = width / per_row + (t < width % per_row);
      st->tiles[q].in_off = r * ge.rs + j * ge.ps;
      st->tiles[q].out_off = r * width + j;
      st->tiles[q].n = (int) n;
      j += n;
    }
}

gsize
nnp_cpu_conv_blocked_workspace (const NnpConvParams *p)
{
  Geometry ge;

  geometry (p, &ge);
  return ge.in_place ? 0 : round_up_bytes ((gsize) (ge.cb * ge.block) * sizeof (float));
}

#if HAVE_X86

typedef struct {
  const NnpConvParams *p;
  int64_t cin, hp, wp, block; /* the copy's channels, padded plane, floats per block */
  const float *x;             /* first channel of the group */
  float *pad;
} PadCtx;

/* One input row of a block's cbn channels into padded row dr (pixel iw at
 * dr[(iw + pl) * BC + c]); the columns outside the input are left alone. */
__attribute__ ((target ("avx2,fma"))) static void
pad_row (const float *x, int64_t plane, int64_t IW, int64_t cbn, int64_t pl, int64_t wp, float *dr)
{
  int64_t iw = MAX (0, -pl), end = MIN (IW, wp - pl);

  if (cbn == BC)
    for (; iw + 8 <= end; iw += 8)
      for (int h = 0; h < 2; h++) {
        __m256 r[8];
        for (int c = 0; c < 8; c++)
          r[c] = _mm256_loadu_ps (x + (h * 8 + c) * plane + iw);
        nnp_transpose8_avx2 (r);
        for (int t = 0; t < 8; t++)
          _mm256_storeu_ps (dr + (iw + t + pl) * BC + h * 8, r[t]);
      }
  for (; iw < end; iw++)
    for (int64_t c = 0; c < cbn; c++)
      dr[(iw + pl) * BC + c] = x[c * plane + iw];
}

/* Blocks [begin, end) of the padded blocked copy: the pad pixels (and a
 * part block's missing channels) zero, the rest from X. */
static void
pad_blocks (gpointer data, gsize begin, gsize end, int thread)
{
  const PadCtx *c = data;
  const int64_t IH = c->p->in_dims[1], IW = c->p->in_dims[2];
  const int64_t pt = c->p->pads_begin[1], pl = c->p->pads_begin[2];
  const int64_t wp = c->wp, rowf = wp * BC;
  /* data columns [pl, pl + IW) of rows [pt, pt + IH), within the padded planes */
  const int64_t c0 = MAX (0, pl), c1 = MIN (wp, pl + IW);
  const int64_t r0 = MAX (0, pt), r1 = MIN (c->hp, pt + IH);

  for (gsize cb = begin; cb < end; cb++) {
    float *d = c->pad + cb * c->block;
    int64_t cbn = MIN (BC, c->cin - (int64_t) cb * BC);
    if (cbn < BC || r1 <= r0 || c1 <= c0) {
      memset (d, 0, c->block * sizeof (float));
    } else {
      memset (d, 0, r0 * rowf * sizeof (float));
      for (int64_t i = r0; i < r1; i++) {
        memset (d + i * rowf, 0, c0 * BC * sizeof (float));
        memset (d + i * rowf + c1 * BC, 0, (wp - c1) * BC * sizeof (float));
      }
      memset (d + r1 * rowf, 0, (c->block - r1 * rowf) * sizeof (float));
    }
    for (int64_t i = r0; i < r1; i++)
      pad_row (c->x + (int64_t) cb * BC * IH * IW + (i - pt) * IW, IH * IW, IW, cbn, pl, wp,
               d + i * rowf);
  }
}

void
nnp_cpu_conv_blocked_pad (NnpThreadPool *pool, const NnpConvParams *p, const float *x, int64_t cin,
                          int64_t hp, int64_t wp, int64_t block, float *dst)
{
  PadCtx pc = { p, cin, hp, wp, block, x, dst };

  nnp_parallel_for (pool, (cin + BC - 1) / BC, 1, pad_blocks, &pc);
}

/* Channels [begin, end) of the planar padded copy (fewer than 16 channels):
 * element (c, i, j) of the padded input at [c][i * wp + j], zero outside X. */
static void
pad_planes (gpointer data, gsize begin, gsize end, int thread)
{
  const PadCtx *c = data;
  const int64_t IH = c->p->in_dims[1], IW = c->p->in_dims[2];
  const int64_t pt = c->p->pads_begin[1], pl = c->p->pads_begin[2];
  const int64_t hp = c->hp, wp = c->wp, plane = hp * wp;
  const int64_t c0 = MAX (0, pl), c1 = MIN (wp, pl + IW);
  const int64_t r0 = MAX (0, pt), r1 = MIN (hp, pt + IH);

  for (gsize ch = begin; ch < end; ch++) {
    float *d = c->pad + ch * plane;
    const float *x = c->x + ch * IH * IW;
    if (r1 <= r0 || c1 <= c0) {
      memset (d, 0, plane * sizeof (float));
      continue;
    }
    memset (d, 0, r0 * wp * sizeof (float));
    for (int64_t i = r0; i < r1; i++) {
      float *dr = d + i * wp;
      memset (dr, 0, c0 * sizeof (float));
      memcpy (dr + c0, x + (i - pt) * IW + (c0 - pl), (c1 - c0) * sizeof (float));
      memset (dr + c1, 0, (wp - c1) * sizeof (float));
    }
    memset (d + r1 * wp, 0, (hp - r1) * wp * sizeof (float));
  }
}

typedef struct {
  const NnpConvParams *p;
  const Geometry *ge;
  const float *in, *a, *bias; /* blocked copy or X's group, packed weights, bias */
  float *y;                   /* first output channel of the group */
  const float *sum;           /* the fused residual at the same places as y, or NULL */
  NnpActivation sum_act;
  float sum_alpha, sum_beta;
  int64_t ldc; /* floats between output channels */
  const NnpConvTile *tiles;
  int64_t n_tiles, chunk; /* tiles, and tiles per task */
  const int64_t *toff;    /* per (cb, kh, kw): float offset of the tap (ConvState) */
  const int *tn;          /* per (cb, kh, kw): channels of the block */
  int64_t taps;
  NnpActivation act;
  float act_alpha, act_beta;
} RunCtx;

#define UKB __attribute__ ((target ("avx512f,avx512dq,avx2,fma")))
#define B_DECL(t) __m512 c##t##_0 = _mm512_setzero_ps (), c##t##_1 = _mm512_setzero_ps ()
#define B_FMA(t) \
  do { \
    if ((t) < n) { \
      __m512 bv_ = _mm512_set1_ps (s[(t) *ps]); \
      c##t##_0 = _mm512_fmadd_ps (a0, bv_, c##t##_0); \
      c##t##_1 = _mm512_fmadd_ps (a1, bv_, c##t##_1); \
    } \
  } while (0)
#define B_STORE(t) \
  do { \
    if ((t) < n) { \
      _mm512_store_ps (tile + (t) *TC, c##t##_0); \
      _mm512_store_ps (tile + (t) *TC + 16, c##t##_1); \
    } \
  } while (0)

/* Weight rows (32 floats) a tile prefetches ahead of the one it reads */
#define BLK_PREFETCH 32

/* One tile: n pixels (ps floats apart from base) x one panel of 32 output
 * channels, into tile[n][32]; n and ps are constants in each instance. */
UKB static inline __attribute__ ((always_inline)) void
tile_nx32 (const RunCtx *ctx, const float *a, const float *base, float *tile, const int n,
           const int64_t ps)
{
  B_DECL (0);
  B_DECL (1);
  B_DECL (2);
  B_DECL (3);
  B_DECL (4);
  B_DECL (5);
  B_DECL (6);
  B_DECL (7);
  B_DECL (8);
  B_DECL (9);
  B_DECL (10);
  B_DECL (11);
  const int64_t cs = ctx->ge->cs;

  for (int64_t tap = 0; tap < ctx->taps; tap++) {
    const float *s = base + ctx->toff[tap];
    const int nc = ctx->tn[tap];
    for (int c = 0; c < nc; c++, a += TC, s += cs) {
      __m512 a0 = _mm512_load_ps (a), a1 = _mm512_load_ps (a + 16);
      _mm_prefetch ((const char *) (a + BLK_PREFETCH * TC), _MM_HINT_T0);
      _mm_prefetch ((const char *) (a + BLK_PREFETCH * TC + 16), _MM_HINT_T0);
      B_FMA (0);
      B_FMA (1);
      B_FMA (2);
      B_FMA (3);
      B_FMA (4);
      B_FMA (5);
      B_FMA (6);
      B_FMA (7);
      B_FMA (8);
      B_FMA (9);
      B_FMA (10);
      B_FMA (11);
    }
  }
  B_STORE (0);
  B_STORE (1);
  B_STORE (2);
  B_STORE (3);
  B_STORE (4);
  B_STORE (5);
  B_STORE (6);
  B_STORE (7);
  B_STORE (8);
  B_STORE (9);
  B_STORE (10);
  B_STORE (11);
}

typedef void (*TileFunc) (const RunCtx *ctx, const float *a, const float *base, float *tile);

/* the instances: pixel stride 1 or 2 (X in place), 16 or 32 (blocked copy) */
#define TILE_FUNCS(n) \
  UKB static void tile_##n##_p1 (const RunCtx *c, const float *a, const float *b, float *t) \
  { \
    tile_nx32 (c, a, b, t, n, 1); \
  } \
  UKB static void tile_##n##_p2 (const RunCtx *c, const float *a, const float *b, float *t) \
  { \
    tile_nx32 (c, a, b, t, n, 2); \
  } \
  UKB static void tile_##n##_p16 (const RunCtx *c, const float *a, const float *b, float *t) \
  { \
    tile_nx32 (c, a, b, t, n, BC); \
  } \
  UKB static void tile_##n##_p32 (const RunCtx *c, const float *a, const float *b, float *t) \
  { \
    tile_nx32 (c, a, b, t, n, 2 * BC); \
  }
TILE_FUNCS (1)
TILE_FUNCS (2)
TILE_FUNCS (3)
TILE_FUNCS (4)
TILE_FUNCS (5)
TILE_FUNCS (6)
TILE_FUNCS (7)
TILE_FUNCS (8)
TILE_FUNCS (9)
TILE_FUNCS (10)
TILE_FUNCS (11)
TILE_FUNCS (12)
#define TILE_ROW(n) \
  { \
    tile_##n##_p1, tile_##n##_p2, tile_##n##_p16, tile_##n##_p32 \
  }
static const TileFunc tile_funcs[TP + 1][4] = {
  { NULL, NULL, NULL, NULL },
  TILE_ROW (1),
  TILE_ROW (2),
  TILE_ROW (3),
  TILE_ROW (4),
  TILE_ROW (5),
  TILE_ROW (6),
  TILE_ROW (7),
  TILE_ROW (8),
  TILE_ROW (9),
  TILE_ROW (10),
  TILE_ROW (11),
  TILE_ROW (12),
};

static int
ps_index (int64_t ps)
{
  return ps == 1 ? 0 : ps == 2 ? 1 : ps == BC ? 2 : 3;
}

/* The tile (tile[t][o], n pixels) into Y's planes o0.. from pixel out_off:
 * transposed 16 channels at a time, each channel's n pixels with the bias,
 * the activation and the fused residual in one masked store. */
UKB static void
tile_store (const RunCtx *ctx, const float *tile, int n, int64_t o0, int64_t on, int64_t out_off)
{
  const __mmask16 mk = (__mmask16) ((1u << n) - 1);

  for (int64_t h = 0; h < on; h += 16) {
    __m512 r[16];
    for (int t = 0; t < 16; t++)
      r[t] = t < n ? _mm512_load_ps (tile + t * TC + h) : _mm512_setzero_ps ();
    nnp_transpose16_avx512 (r);
    for (int64_t o = 0; o < MIN (16, on - h); o++) {
      int64_t plane = (o0 + h + o) * ctx->ldc + out_off;
      float *yo = ctx->y + plane;
      __m512 v = r[o];
      if (ctx->bias)
        v = _mm512_add_ps (v, _mm512_set1_ps (ctx->bias[o0 + h + o]));
      v = nnp_act_avx512 (v, ctx->act, ctx->act_alpha, ctx->act_beta);
      if (ctx->sum) {
        v = _mm512_add_ps (v, _mm512_maskz_loadu_ps (mk, ctx->sum + plane));
        v = nnp_act_avx512 (v, ctx->sum_act, ctx->sum_alpha, ctx->sum_beta);
      }
      _mm512_mask_storeu_ps (yo, mk, v);
    }
  }
}

/* Tasks: (chunk of tiles, panel), the panels of a chunk one after the
 * other (its input stays in L2 while they run). */
static void
run_tasks (gpointer data, gsize begin, gsize end, int thread)
{
  const RunCtx *ctx = data;
  const Geometry *ge = ctx->ge;
  const int psi = ps_index (ge->ps);
  float tile[TP * TC] __attribute__ ((aligned (64)));

  for (gsize task = begin; task < end; task++) {
    int64_t pn = (int64_t) task % ge->panels, ch = (int64_t) task / ge->panels;
    int64_t t0 = ch * ctx->chunk, t1 = MIN (ctx->n_tiles, t0 + ctx->chunk);
    int64_t o0 = pn * TC, on = MIN (TC, ge->m - o0);
    const float *a = ctx->a + pn * ge->k * TC;

    for (int64_t ti = t0; ti < t1; ti++) {
      const NnpConvTile *tl = &ctx->tiles[ti];
      const int n = tl->n;
      tile_funcs[n][psi](ctx, a, ctx->in + tl->in_off, tile);
      tile_store (ctx, tile, n, o0, on, tl->out_off);
    }
  }
}

gboolean
nnp_cpu_conv_blocked_run (const NnpCpuCall *call, const NnpConvParams *p, const ConvState *st)
{
  const NnpNode *node = call->node;
  const float *packed = st->packed;
  Geometry ge;
  const float *x = call->inputs[0]->data;
  const float *bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  float *y = call->outputs[0]->data;
  int64_t in_sp = vol3 (p->in_dims), out_sp = vol3 (p->out_dims);
  int threads = nnp_thread_pool_get_n_threads (call->pool);
  RunCtx ctx = { 0 };

  if (st->n_tiles == 0 || p->batch == 0)
    return TRUE; /* an empty output */
  geometry (p, &ge);
  ctx.p = p;
  ctx.ge = &ge;
  ctx.ldc = out_sp;
  ctx.tiles = st->tiles;
  ctx.n_tiles = st->n_tiles;
  ctx.toff = st->tap_off;
  ctx.tn = st->tap_channels;
  ctx.taps = st->n_taps;
  ctx.act = node->act;
  ctx.act_alpha = node->act_alpha;
  ctx.act_beta = node->act_beta;
  ctx.sum_act = call->sum_act;
  ctx.sum_alpha = call->sum_alpha;
  ctx.sum_beta = call->sum_beta;
  /* chunks of up to 16 tiles, enough tasks for the threads */
  ctx.chunk = MIN (ctx.n_tiles, 16);
  while (ge.panels * ((ctx.n_tiles + ctx.chunk - 1) / ctx.chunk) < 4 * threads && ctx.chunk > 1)
    ctx.chunk = MAX (1, ctx.chunk / 2);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t grp = 0; grp < p->group; grp++) {
      const float *xg = x + (b * p->in_channels + grp * ge.cin) * in_sp;
      if (ge.in_place) {
        ctx.in = xg;
      } else if (ge.planar) {
        PadCtx pc = { p, ge.cin, ge.hp, ge.wp, ge.block, xg, call->scratch };
        nnp_parallel_for (call->pool, ge.cin, 1, pad_planes, &pc);
        ctx.in = call->scratch;
      } else {
        nnp_cpu_conv_blocked_pad (call->pool, p, xg, ge.cin, ge.hp, ge.wp, ge.block, call->scratch);
        ctx.in = call->scratch;
      }
      ctx.a = packed + grp * ge.panels * ge.k * TC;
      ctx.bias = bias ? bias + grp * ge.m : NULL;
      ctx.y = y + (b * p->out_channels + grp * ge.m) * out_sp;
      ctx.sum = call->sum
                    ? (const float *) call->sum->data + (b * p->out_channels + grp * ge.m) * out_sp
                    : NULL;
      nnp_parallel_for (call->pool, ge.panels * ((ctx.n_tiles + ctx.chunk - 1) / ctx.chunk), 1,
                        run_tasks, &ctx);
    }
  }
  return TRUE;
}

#else

gboolean
nnp_cpu_conv_blocked_run (const NnpCpuCall *call, const NnpConvParams *p, const ConvState *st)
{
  return FALSE;
}

void
nnp_cpu_conv_blocked_pad (NnpThreadPool *pool, const NnpConvParams *p, const float *x, int64_t cin,
                          int64_t hp, int64_t wp, int64_t block, float *dst)
{
}

#endif
