/* libnnpipe: CPU kernels for Conv and ConvTranspose (float32, NCHW).
 *
 * Conv, by node->params->algo (chosen at infer time):
 *   GEMM       1x1 / stride 1 / no padding: Y_g = W_g x X_g, X read in place.
 *   IM2COL     everything else: the GEMM's B operand is produced directly in
 *              packed form from X by an im2col callback, block by block, so
 *              no column matrix is ever materialised.
 *   DIRECT     1-D/2-D, other cases: indirect GEMM (no packing of B) on a
 *              padded, stride-phase-split copy of X (cpu-conv-direct.c; with
 *              K = 64 or fewer products, pixels along the lanes), or,
 *              for stride 1 with enough channels on AVX-512, the
 *              blocked-channel kernel (cpu-conv-blocked.c), or for 3x3
 *              ones Winograd F(4x4, 3x3) (cpu-conv-winograd.c).
 *   DEPTHWISE  one input channel per group, 1-D/2-D: cpu-conv-dw.c.
 * A residual Add the executor fused into the Conv (NnpCpuCall.sum) is added
 * in the indirect GEMM's tasks and the blocked and Winograd kernels' tiles, otherwise by
 * nnp_cpu_conv_add_sum() after the kernel.
 * Constant weights are packed once by `prepare`; otherwise they are packed
 * on the fly from the weight input (conformance tests feed W as an input).
 *
 * ConvTranspose: cpu-conv-transpose.c, with the packed weights and the
 * scratch slots of this file (cpu-conv.h). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-act.h"
#include "backends/cpu/cpu-conv.h"
#include "ops/conv-params.h"
#include "graph/derived.h"

#include <nnpipe/log.h>

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define NR NNP_SGEMM_NR

static gboolean
have_avx2 (void)
{
#if HAVE_X86
  static gsize once = 0;
  static gboolean yes;

  if (g_once_init_enter (&once)) {
    __builtin_cpu_init ();
    yes = __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
          && g_getenv ("NNPIPE_CPU_GENERIC") == NULL;
    g_once_init_leave (&once, 1);
  }
  return yes;
#else
  return FALSE;
#endif
}

/* ---------------------------------------------------------------- packed weights */

void
nnp_cpu_conv_state_free (gpointer data)
{
  ConvState *st = data;

  if (st == NULL)
    return;
  g_aligned_free (st->own_packed);
  g_free (st->koff);
  g_free (st->tap_off);
  g_free (st->tap_channels);
  g_free (st->tiles);
  g_free (st);
}

void
nnp_cpu_conv_group_mk (const NnpConvParams *p, gboolean transpose, int64_t *m, int64_t *k)
{
  int64_t kvol = vol3 (p->kernel);

  if (transpose) {
    *m = p->out_channels / p->group * kvol;
    *k = p->in_channels / p->group;
  } else {
    *m = p->out_channels / p->group;
    *k = p->in_channels / p->group * kvol;
  }
}

/* A operand of group g from the weight tensor (see group_mk). */
static void
group_a (const NnpConvParams *p, gboolean transpose, const float *w, int64_t g, const float **a,
         int64_t *rs, int64_t *cs)
{
  int64_t m, k;

  nnp_cpu_conv_group_mk (p, transpose, &m, &k);
  *a = w + g * m * k;
  if (transpose) {
    *rs = 1;
    *cs = m;
  } else {
    *rs = k;
    *cs = 1;
  }
}

typedef struct {
  const NnpConvParams *p;
  const float *w;
  gboolean transpose;
  gboolean blocked;  /* for cpu-conv-blocked.c */
  gboolean winograd; /* for cpu-conv-winograd.c */
  int64_t m, k;
} PackJob;

/* All groups' packed weights (g_aligned_free) */
static gpointer
pack_weights (gpointer data)
{
  const PackJob *j = data;

  if (j->winograd)
    return nnp_cpu_conv_winograd_pack (j->p, j->w);
  if (j->blocked)
    return nnp_cpu_conv_blocked_pack (j->p, j->w);
  gsize group_floats = nnp_sgemm_packed_a_size (j->m, j->k);
  float *packed = g_aligned_alloc (group_floats * j->p->group, sizeof (float), 64);

  for (int64_t g = 0; g < j->p->group; g++) {
    const float *a;
    int64_t rs, cs;
    group_a (j->p, j->transpose, j->w, g, &a, &rs, &cs);
    nnp_sgemm_pack_a (j->m, j->k, a, rs, cs, 1.f, packed + g * group_floats);
  }
  return packed;
}

gpointer
nnp_cpu_conv_prepare_common (const NnpGraph *graph, const NnpNode *node, gboolean transpose)
{
  const NnpConvParams *p = node->params;
  NnpValue *wv = nnp_node_input (graph, node, 1);
  ConvState *st;
  PackJob job;

  if (p == NULL || wv == NULL || wv->constant == NULL)
    return NULL;
  if (!transpose && p->algo == NNP_CONV_ALGO_DEPTHWISE)
    return NULL;
  job.p = p;
  job.w = wv->constant->data;
  job.transpose = transpose;
  job.winograd = !transpose && nnp_cpu_conv_winograd_ok (p);
  job.blocked = !transpose && !job.winograd && nnp_cpu_conv_blocked_ok (p);
  nnp_cpu_conv_group_mk (p, transpose, &job.m, &job.k);
  st = g_new0 (ConvState, 1);
  st->blocked = job.blocked;
  st->winograd = job.winograd;
  if (job.blocked)
    nnp_cpu_conv_blocked_plan (p, st);
  st->group_floats = nnp_sgemm_packed_a_size (job.m, job.k);
  /* the packing depends on the weights alone: once per model, shared by
   * every specialisation (lib/graph/derived.h); a weight that is not one
   * of the model's gets this state's own copy */
  {
    int64_t key[4] = { transpose, job.m, job.k, p->group };
    st->packed =
        nnp_derived_get (nnp_graph_get_derived (graph),
                         job.winograd  ? "conv-winograd-a"
                         : job.blocked ? "conv-blocked-a"
                                       : "conv-packed-a",
                         &wv->constant, 1, key, sizeof (key), pack_weights, &job, g_aligned_free);
  }
  if (st->packed == NULL)
    st->packed = st->own_packed = pack_weights (&job);
  if ((transpose || p->algo == NNP_CONV_ALGO_GEMM) && job.k * vol3 (p->in_dims) < G_MAXINT32) {
    st->koff = g_new (int32_t, MAX (job.k, 1));
    for (int64_t q = 0; q < job.k; q++)
      st->koff[q] = (int32_t) (q * vol3 (p->in_dims));
  }
  NNP_DEBUG ("nnp-cpu",
             "%s: packed %" G_GINT64_FORMAT " group(s) of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
             " weights (%s kernel%s)",
             node->name, p->group, job.m, job.k,
             job.winograd  ? "winograd F(4x4,3x3) avx512"
             : job.blocked ? "blocked-channel avx512"
                           : nnp_sgemm_kernel_name (),
             st->own_packed ? "" : ", shared");
  return st;
}

/* ---------------------------------------------------------------- im2col */

typedef struct {
  const NnpConvParams *p;
} Im2colCtx;

/* Packed B block of the implicit column matrix: row q = (ci, kd, kh, kw),
 * column j = (od, oh, ow); g->b is the first input channel of the group. */
static void
im2col_pack (gpointer data, const NnpSgemm *g, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
             float *dst)
{
  const NnpConvParams *p = ((Im2colCtx *) data)->p;
  const float *x = g->b;
  const int64_t ID = p->in_dims[0], IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t KD = p->kernel[0], KH = p->kernel[1], KW = p->kernel[2];
  const int64_t sd = p->strides[0], sh = p->strides[1], sw = p->strides[2];
  const int64_t dd = p->dilations[0], dh = p->dilations[1], dw = p->dilations[2];
  const int64_t ihw = IH * IW, idhw = ID * ihw;
  int64_t bd[NR], bh[NR], bw[NR];

  for (int64_t j0 = 0; j0 < nc; j0 += NR) {
    int64_t cnt = MIN (NR, nc - j0);
    float *panel = dst + j0 * kc;
    gboolean same_row;
    int64_t ci, kd, kh, kw, rem;

    for (int64_t jj = 0; jj < cnt; jj++) {
      int64_t col = n0 + j0 + jj;
      int64_t ow = col % OW, oh = (col / OW) % OH, od = col / (OW * OH);
      bd[jj] = od * sd - p->pads_begin[0];
      bh[jj] = oh * sh - p->pads_begin[1];
      bw[jj] = ow * sw - p->pads_begin[2];
    }
    same_row = cnt == NR && bh[0] == bh[NR - 1] && bd[0] == bd[NR - 1]
               && bw[NR - 1] == bw[0] + (NR - 1) * sw;

    ci = k0 / (KD * KH * KW);
    rem = k0 % (KD * KH * KW);
    kd = rem / (KH * KW);
    kh = (rem / KW) % KH;
    kw = rem % KW;
    for (int64_t q = 0; q < kc; q++) {
      float *row = panel + q * NR;
      const float *xc = x + ci * idhw;
      int64_t offd = kd * dd, offh = kh * dh, offw = kw * dw;

      if (same_row) {
        int64_t id = bd[0] + offd, ih = bh[0] + offh, iw0 = bw[0] + offw;
        int64_t iwl = iw0 + (NR - 1) * sw;
        if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
          memset (row, 0, NR * sizeof (float));
        } else {
          const float *src = xc + id * ihw + ih * IW;
          if (iw0 >= 0 && iwl < IW) {
            if (sw == 1) {
              memcpy (row, src + iw0, NR * sizeof (float));
            } else {
              for (int jj = 0; jj < NR; jj++)
                row[jj] = src[iw0 + jj * sw];
            }
          } else {
            for (int jj = 0; jj < NR; jj++) {
              int64_t iw = iw0 + jj * sw;
              row[jj] = iw >= 0 && iw < IW ? src[iw] : 0.f;
            }
          }
        }
      } else {
        int64_t jj;
        for (jj = 0; jj < cnt; jj++) {
          int64_t id = bd[jj] + offd, ih = bh[jj] + offh, iw = bw[jj] + offw;
          row[jj] = (id >= 0 && id < ID && ih >= 0 && ih < IH && iw >= 0 && iw < IW)
                        ? xc[id * ihw + ih * IW + iw]
                        : 0.f;
        }
        for (; jj < NR; jj++)
          row[jj] = 0.f;
      }
      /* next (ci, kd, kh, kw) */
      if (++kw == KW) {
        kw = 0;
        if (++kh == KH) {
          kh = 0;
          if (++kd == KD) {
            kd = 0;
            ci++;
          }
        }
      }
    }
  }
}

/* ---------------------------------------------------------------- Conv via GEMM */

void
nnp_cpu_conv_gemm_setup (gpointer data, int64_t index, NnpSgemm *g)
{
  ConvGemmCtx *c = data;
  const NnpConvParams *p = c->p;
  int64_t grp = index % p->group, b = index / p->group;
  int64_t cin_g = p->in_channels / p->group;
  int64_t in_sp = vol3 (p->in_dims), out_sp = vol3 (p->out_dims);

  if (c->st) {
    g->a_packed = c->st->packed + grp * c->st->group_floats;
  } else {
    group_a (p, c->transpose, c->w, grp, &g->a, &g->a_rs, &g->a_cs);
  }
  g->b = c->x + (b * p->in_channels + grp * cin_g) * in_sp;
  if (c->transpose) {
    g->c = c->cols + grp * c->m * in_sp;
  } else {
    g->c = c->y + (b * p->out_channels + grp * c->m) * out_sp;
    if (c->bias)
      g->bias = c->bias + grp * c->m;
    if (c->sum)
      g->sum = c->sum + (b * p->out_channels + grp * c->m) * out_sp;
  }
}

/* 1x1 convolution of a single pixel (squeeze-and-excitation after a global
 * pool): a matrix-vector product, y[i] = W[i, :] . x + bias[i]; the GEMM
 * would compute 16 columns to keep one. */
static float
dot_generic (const float *a, const float *b, int64_t n)
{
  float acc = 0.f;

  for (int64_t q = 0; q < n; q++)
    acc += a[q] * b[q];
  return acc;
}

#if HAVE_X86
__attribute__ ((target ("avx2,fma"))) static float
dot_avx2 (const float *a, const float *b, int64_t n)
{
  __m256 a0 = _mm256_setzero_ps (), a1 = _mm256_setzero_ps ();
  __m128 h;
  int64_t q = 0;

  for (; q + 16 <= n; q += 16) {
    a0 = _mm256_fmadd_ps (_mm256_loadu_ps (a + q), _mm256_loadu_ps (b + q), a0);
    a1 = _mm256_fmadd_ps (_mm256_loadu_ps (a + q + 8), _mm256_loadu_ps (b + q + 8), a1);
  }
  for (; q + 8 <= n; q += 8)
    a0 = _mm256_fmadd_ps (_mm256_loadu_ps (a + q), _mm256_loadu_ps (b + q), a0);
  a0 = _mm256_add_ps (a0, a1);
  h = _mm_add_ps (_mm256_castps256_ps128 (a0), _mm256_extractf128_ps (a0, 1));
  h = _mm_add_ps (h, _mm_movehl_ps (h, h));
  h = _mm_add_ss (h, _mm_movehdup_ps (h));
  return _mm_cvtss_f32 (h) + dot_generic (a + q, b + q, n - q);
}
#endif

static void
conv_gemv_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  const float *x = call->inputs[0]->data, *w = call->inputs[1]->data;
  const float *bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  float *y = call->outputs[0]->data;
  const NnpNode *node = call->node;
  int64_t m, k;

  nnp_cpu_conv_group_mk (p, FALSE, &m, &k);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t grp = 0; grp < p->group; grp++) {
      const float *xg = x + b * p->in_channels + grp * k;
      float *yg = y + b * p->out_channels + grp * m;
      for (int64_t i = 0; i < m; i++) {
        const float *wr = w + (grp * m + i) * k;
        float v;
#if HAVE_X86
        if (have_avx2 ())
          v = dot_avx2 (wr, xg, k);
        else
#endif
          v = dot_generic (wr, xg, k);
        yg[i] = v + (bias ? bias[grp * m + i] : 0.f);
      }
      nnp_sgemm_activate (yg, m, node->act, node->act_alpha, node->act_beta);
    }
  }
}

static gboolean
conv_gemm_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  const NnpNode *node = call->node;
  ConvGemmCtx ctx = { 0 };
  Im2colCtx ic = { p };
  NnpSgemm g = { 0 };

  ctx.p = p;
  ctx.st = call->state;
  ctx.x = call->inputs[0]->data;
  ctx.w = call->inputs[1]->data;
  ctx.bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  ctx.y = call->outputs[0]->data;
  nnp_cpu_conv_group_mk (p, FALSE, &ctx.m, &ctx.k);

  g.m = ctx.m;
  g.n = vol3 (p->out_dims);
  g.k = ctx.k;
  g.alpha = 1.f;
  if (p->algo == NNP_CONV_ALGO_GEMM && vol3 (p->out_dims) == 1) {
    conv_gemv_run (call, p);
    nnp_cpu_conv_add_sum (call);
    return TRUE;
  }
  if (p->algo == NNP_CONV_ALGO_GEMM && ctx.st && ctx.st->koff && ctx.m >= NNP_CONV_LANES_MIN_M
      && nnp_cpu_conv_lanes_ok (call, ctx.k, MIN (g.n, nnp_cpu_conv_lanes_chunk (ctx.k)))) {
    /* at most 256 input channels, many output channels: pixels along the
     * lanes, the plane cut in chunks (a chunk's input in L1 for all the
     * panels) */
    const int64_t chunk = nnp_cpu_conv_lanes_chunk (ctx.k), hw = g.n;
    const int64_t n_rows = (hw + chunk - 1) / chunk;
    ctx.sum = call->sum ? call->sum->data : NULL;
    for (int64_t index = 0; index < p->batch * p->group; index++) {
      NnpSgemm gi = g;
      nnp_cpu_conv_gemm_setup (&ctx, index, &gi);
      NnpConvLanes lanes = { .in = gi.b,
                             .koff = ctx.st->koff,
                             .a = gi.a_packed,
                             .bias = gi.bias,
                             .y = gi.c,
                             .m = ctx.m,
                             .k = ctx.k,
                             .n_rows = n_rows,
                             .width = MIN (hw, chunk),
                             .last_width = hw - (n_rows - 1) * chunk,
                             .in_rs = chunk,
                             .out_rs = chunk,
                             .out_cs = hw,
                             .sum = gi.sum };
      nnp_cpu_conv_lanes_run (&lanes, call);
    }
    return TRUE;
  }
  if (p->algo == NNP_CONV_ALGO_GEMM && ctx.st && ctx.st->koff
      && (ctx.m <= 4 * NNP_SGEMM_MR || nnp_sgemm_has_avx512 ())) {
    /* 1x1 with few output channels: the indirect GEMM reads X in place (no
     * packing of B, whose cost is only shared by m / MR panels).  With
     * more rows and the AVX2 kernel the packed GEMM is faster (measured:
     * 70-79 against 56-62 GFLOP/s on the recognizer's 240- and 480-channel
     * 1x1 convolutions); with the AVX-512 kernels the indirect one is
     * (measured: 1x1 128->128 and 64->128 at 160x160, 12-15 % less time;
     * the recognizer and detector unchanged) */
    g.ldc = g.n;
    g.bias_rs = 1;
    g.bias_cs = 0;
    g.beta = 1.f;
    g.act = node->act;
    g.act_alpha = node->act_alpha;
    g.act_beta = node->act_beta;
    /* the fused residual in the driver's tasks */
    ctx.sum = call->sum ? call->sum->data : NULL;
    g.sum_act = call->sum_act;
    g.sum_alpha = call->sum_alpha;
    g.sum_beta = call->sum_beta;
    for (int64_t index = 0; index < p->batch * p->group; index++) {
      NnpSgemm gi = g;
      nnp_cpu_conv_gemm_setup (&ctx, index, &gi);
      nnp_sgemm_run_indirect_full (&gi, gi.b, ctx.st->koff, 0, 1, g.n, FALSE, call->pool);
    }
    return TRUE;
  }
  if (p->algo == NNP_CONV_ALGO_GEMM) {
    g.b_rs = vol3 (p->in_dims);
    g.b_cs = 1;
  } else {
    g.pack_b = im2col_pack;
    g.pack_b_data = &ic;
  }
  g.ldc = g.n;
  g.bias_rs = 1;
  g.bias_cs = 0;
  g.beta = 1.f;
  g.act = node->act;
  g.act_alpha = node->act_alpha;
  g.act_beta = node->act_beta;
  nnp_sgemm_run (&g, p->batch * p->group, nnp_cpu_conv_gemm_setup, &ctx, call->pool, call->scratch);
  nnp_cpu_conv_add_sum (call);
  return TRUE;
}

/* ---------------------------------------------------------------- Conv */

static gpointer
conv_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return nnp_cpu_conv_prepare_common (graph, node, FALSE);
}

static gsize
conv_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpConvParams *p = node->params;

  if (p == NULL)
    return 0;
  if (p->algo == NNP_CONV_ALGO_DIRECT) {
    NnpValue *wv = nnp_node_input (graph, node, 1);
    if (wv && wv->constant && nnp_cpu_conv_winograd_ok (p))
      return nnp_cpu_conv_winograd_workspace (p);
    if (wv && wv->constant && nnp_cpu_conv_blocked_ok (p))
      return nnp_cpu_conv_blocked_workspace (p);
    return nnp_cpu_conv_direct_workspace (p, wv && wv->constant);
  }
  if (p->algo == NNP_CONV_ALGO_GEMM) {
    NnpValue *wv = nnp_node_input (graph, node, 1);
    if (wv && wv->constant && nnp_cpu_conv_blocked_ok (p))
      return nnp_cpu_conv_blocked_workspace (p);
  }
  if (p->algo != NNP_CONV_ALGO_DEPTHWISE)
    return nnp_sgemm_scratch_size ();
  return nnp_cpu_conv_depthwise_workspace (p);
}

void
nnp_cpu_conv_add_sum (const NnpCpuCall *call)
{
  if (call->sum)
    nnp_sgemm_add_act (call->outputs[0]->data, call->sum->data, nnp_tensor_numel (call->outputs[0]),
                       call->sum_act, call->sum_alpha, call->sum_beta);
}

static gboolean
conv_run (const NnpCpuCall *call, GError **error)
{
  const NnpConvParams *p = call->node->params;

  g_return_val_if_fail (p != NULL, FALSE);
  if (p->algo == NNP_CONV_ALGO_DEPTHWISE) {
    gboolean ok = nnp_cpu_conv_depthwise_run (call, p);
    nnp_cpu_conv_add_sum (call);
    return ok;
  }
  if (p->algo == NNP_CONV_ALGO_DIRECT) {
    const ConvState *st = call->state;
    if (st && st->winograd)
      return nnp_cpu_conv_winograd_run (call, p, st);
    if (st && st->blocked)
      return nnp_cpu_conv_blocked_run (call, p, st);
    return nnp_cpu_conv_direct_run (call, p);
  }
  if (p->algo == NNP_CONV_ALGO_GEMM && call->state && ((const ConvState *) call->state)->blocked)
    return nnp_cpu_conv_blocked_run (call, p, call->state);
  return conv_gemm_run (call, p);
}

static const char *
conv_algo_name (gconstpointer state)
{
  const ConvState *st = state;

  return st && st->winograd ? "winograd" : st && st->blocked ? "blocked" : NULL;
}

const NnpCpuKernel nnp_cpu_conv = {
  .run = conv_run,
  .workspace = conv_workspace,
  .prepare = conv_prepare,
  .free_state = nnp_cpu_conv_state_free,
  .algo_name = conv_algo_name,
};
