/* libnnpipe: CPU kernel of depthwise Conv (float32, NCHW; one input
 * channel per group, 1-D/2-D): direct, per output plane, on a zero-padded
 * copy of the input plane, vectorised along W (AVX2 for strides 1 and 2),
 * the node's activation applied in the store.  Dispatched by cpu-conv.c
 * (algo NNP_CONV_ALGO_DEPTHWISE). */
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

typedef struct {
  const NnpConvParams *p;
  const float *x, *w, *bias;
  float *y;
  NnpActivation act;
  float act_alpha, act_beta;
  int64_t hp, wp; /* padded plane */
} DwCtx;

static void
dw_geometry (const NnpConvParams *p, int64_t *hp, int64_t *wp)
{
  *hp = (p->out_dims[1] - 1) * p->strides[1] + (p->kernel[1] - 1) * p->dilations[1] + 1;
  *wp = (p->out_dims[2] - 1) * p->strides[2] + (p->kernel[2] - 1) * p->dilations[2] + 1 + 2 * NR;
}

/* One output row from the padded plane rows: generic scalar version. */
static void
dw_row_generic (const float *pl, int64_t wp, const float *w, int64_t kh_n, int64_t kw_n, int64_t dh,
                int64_t dw, int64_t sw, int64_t ow0, int64_t ow_n, float bias, float *out)
{
  for (int64_t ow = ow0; ow < ow_n; ow++) {
    float acc = bias;
    const float *base = pl + ow * sw;
    for (int64_t kh = 0; kh < kh_n; kh++)
      for (int64_t kw = 0; kw < kw_n; kw++)
        acc += w[kh * kw_n + kw] * base[kh * dh * wp + kw * dw];
    out[ow] = acc;
  }
}

#if HAVE_X86
/* Returns the first output column it did not compute; the activation is
 * applied to the columns it computed. */
__attribute__ ((target ("avx2,fma"))) static int64_t
dw_row_avx2 (const float *pl, int64_t wp, const float *w, int64_t kh_n, int64_t kw_n, int64_t dh,
             int64_t dw, int64_t sw, int64_t ow_n, float bias, float *out, NnpActivation act,
             float act_alpha, float act_beta)
{
  const __m256 va = _mm256_set1_ps (act_alpha), vb = _mm256_set1_ps (act_beta);
  int64_t ow = 0;
#define STORE(ptr, v) _mm256_storeu_ps ((ptr), nnp_act_avx2 ((v), act, va, vb))

  if (sw == 1) {
    /* 32 outputs, taps of even and odd kernel rows in separate accumulators:
     * 8 independent FMA chains */
    for (; ow + 32 <= ow_n; ow += 32) {
      __m256 e0 = _mm256_set1_ps (bias), e1 = e0, e2 = e0, e3 = e0;
      __m256 o0 = _mm256_setzero_ps (), o1 = o0, o2 = o0, o3 = o0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow;
        if (kh & 1) {
          for (int64_t kw = 0; kw < kw_n; kw++) {
            __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
            const float *rk = r + kw * dw;
            o0 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk), o0);
            o1 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 8), o1);
            o2 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 16), o2);
            o3 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 24), o3);
          }
        } else {
          for (int64_t kw = 0; kw < kw_n; kw++) {
            __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
            const float *rk = r + kw * dw;
            e0 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk), e0);
            e1 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 8), e1);
            e2 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 16), e2);
            e3 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (rk + 24), e3);
          }
        }
      }
      STORE (out + ow, _mm256_add_ps (e0, o0));
      STORE (out + ow + 8, _mm256_add_ps (e1, o1));
      STORE (out + ow + 16, _mm256_add_ps (e2, o2));
      STORE (out + ow + 24, _mm256_add_ps (e3, o3));
    }
    for (; ow + 16 <= ow_n; ow += 16) {
      __m256 a0 = _mm256_set1_ps (bias), a1 = a0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
          a0 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (r + kw * dw), a0);
          a1 = _mm256_fmadd_ps (wv, _mm256_loadu_ps (r + kw * dw + 8), a1);
        }
      }
      STORE (out + ow, a0);
      STORE (out + ow + 8, a1);
    }
    for (; ow + 8 <= ow_n; ow += 8) {
      __m256 a0 = _mm256_set1_ps (bias);
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow;
        for (int64_t kw = 0; kw < kw_n; kw++)
          a0 = _mm256_fmadd_ps (_mm256_broadcast_ss (w + kh * kw_n + kw),
                                _mm256_loadu_ps (r + kw * dw), a0);
      }
      STORE (out + ow, a0);
    }
  } else if (sw == 2) {
    for (; ow + 16 <= ow_n; ow += 16) {
      __m256 a0 = _mm256_set1_ps (bias), a1 = a0;
      __m256 b0 = _mm256_setzero_ps (), b1 = b0;
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow * 2;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          const float *rk = r + kw * dw;
          __m256 wv = _mm256_broadcast_ss (w + kh * kw_n + kw);
          __m256 ev0 = _mm256_shuffle_ps (_mm256_loadu_ps (rk), _mm256_loadu_ps (rk + 8),
                                          _MM_SHUFFLE (2, 0, 2, 0));
          __m256 ev1 = _mm256_shuffle_ps (_mm256_loadu_ps (rk + 16), _mm256_loadu_ps (rk + 24),
                                          _MM_SHUFFLE (2, 0, 2, 0));
          /* the lane permutation commutes with the FMA: apply it once at the end */
          if (kh & 1) {
            b0 = _mm256_fmadd_ps (wv, ev0, b0);
            b1 = _mm256_fmadd_ps (wv, ev1, b1);
          } else {
            a0 = _mm256_fmadd_ps (wv, ev0, a0);
            a1 = _mm256_fmadd_ps (wv, ev1, a1);
          }
        }
      }
      a0 = _mm256_add_ps (a0, b0);
      a1 = _mm256_add_ps (a1, b1);
      a0 = _mm256_castpd_ps (
          _mm256_permute4x64_pd (_mm256_castps_pd (a0), _MM_SHUFFLE (3, 1, 2, 0)));
      a1 = _mm256_castpd_ps (
          _mm256_permute4x64_pd (_mm256_castps_pd (a1), _MM_SHUFFLE (3, 1, 2, 0)));
      STORE (out + ow, a0);
      STORE (out + ow + 8, a1);
    }
    for (; ow + 8 <= ow_n; ow += 8) {
      __m256 a0 = _mm256_set1_ps (bias);
      for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = pl + kh * dh * wp + ow * 2;
        for (int64_t kw = 0; kw < kw_n; kw++) {
          __m256 lo = _mm256_loadu_ps (r + kw * dw), hi = _mm256_loadu_ps (r + kw * dw + 8);
          /* even elements: lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 -> lo0 lo2 lo4 lo6 hi0 .. */
          __m256 ev = _mm256_shuffle_ps (lo, hi, _MM_SHUFFLE (2, 0, 2, 0));
          ev = _mm256_castpd_ps (
              _mm256_permute4x64_pd (_mm256_castps_pd (ev), _MM_SHUFFLE (3, 1, 2, 0)));
          a0 = _mm256_fmadd_ps (_mm256_broadcast_ss (w + kh * kw_n + kw), ev, a0);
        }
      }
      STORE (out + ow, a0);
    }
  }
#undef STORE
  return ow;
}
#endif


static void
dw_task (gpointer data, int64_t task, void *slot)
{
  DwCtx *c = data;
  const NnpConvParams *p = c->p;
  const int64_t IH = p->in_dims[1], IW = p->in_dims[2];
  const int64_t OH = p->out_dims[1], OW = p->out_dims[2];
  const int64_t KH = p->kernel[1], KW = p->kernel[2];
  const int64_t pt = p->pads_begin[1], pl = p->pads_begin[2];
  int64_t oc = task % p->out_channels, b = task / p->out_channels;
  int64_t ic = oc / (p->out_channels / p->group);
  const float *x = c->x + (b * p->in_channels + ic) * IH * IW;
  const float *w = c->w + oc * KH * KW;
  float *y = c->y + (b * p->out_channels + oc) * OH * OW;
  float bias = c->bias ? c->bias[oc] : 0.f;
  float *pad = slot;
  gboolean avx2 = nnp_cpu_avx2_ok ();

  /* zero-padded copy: pad[r][col] = x[r - pt][col - pl]; rows outside the
   * input are never read (their taps are skipped below) */
  for (int64_t r = MAX (pt, 0); r < MIN (c->hp, IH + pt); r++) {
    float *dr = pad + r * c->wp;
    int64_t ih = r - pt;
    int64_t lo = MIN (pl, c->wp), n = MAX (0, MIN (IW, c->wp - lo));
    memset (dr, 0, lo * sizeof (float));
    memcpy (dr + lo, x + ih * IW, n * sizeof (float));
    if (lo + n < c->wp)
      memset (dr + lo + n, 0, (c->wp - lo - n) * sizeof (float));
  }
  for (int64_t oh = 0; oh < OH; oh++) {
    const int64_t dh = p->dilations[1], r0 = oh * p->strides[1];
    float *out = y + oh * OW;
    int64_t done = 0, kh_lo = 0, kh_hi = KH;
    const float *rows, *wk;

    /* taps kh with 0 <= r0 + kh * dh - pt < IH */
    while (kh_lo < KH && r0 + kh_lo * dh - pt < 0)
      kh_lo++;
    while (kh_hi > kh_lo && r0 + (kh_hi - 1) * dh - pt >= IH)
      kh_hi--;
    if (kh_lo == kh_hi) {
      for (int64_t ow = 0; ow < OW; ow++)
        out[ow] = bias;
      nnp_sgemm_activate (out, OW, c->act, c->act_alpha, c->act_beta);
      continue;
    }
    rows = pad + (r0 + kh_lo * dh) * c->wp;
    wk = w + kh_lo * KW;
#if HAVE_X86
    if (avx2)
      done = dw_row_avx2 (rows, c->wp, wk, kh_hi - kh_lo, KW, dh, p->dilations[2], p->strides[2],
                          OW, bias, out, c->act, c->act_alpha, c->act_beta);
#endif
    dw_row_generic (rows, c->wp, wk, kh_hi - kh_lo, KW, dh, p->dilations[2], p->strides[2], done,
                    OW, bias, out);
    nnp_sgemm_activate (out + done, OW - done, c->act, c->act_alpha, c->act_beta);
  }
  (void) avx2;
}

gboolean
nnp_cpu_conv_depthwise_run (const NnpCpuCall *call, const NnpConvParams *p)
{
  DwCtx ctx;

  ctx.p = p;
  ctx.x = call->inputs[0]->data;
  ctx.w = call->inputs[1]->data;
  ctx.bias = p->has_bias && call->inputs[2] ? call->inputs[2]->data : NULL;
  ctx.y = call->outputs[0]->data;
  ctx.act = call->node->act;
  ctx.act_alpha = call->node->act_alpha;
  ctx.act_beta = call->node->act_beta;
  dw_geometry (p, &ctx.hp, &ctx.wp);
  nnp_cpu_run_in_slots (call->pool, p->batch * p->out_channels, call->scratch,
                        round_up_bytes (ctx.hp * ctx.wp * sizeof (float)), dw_task, &ctx);
  return TRUE;
}

gsize
nnp_cpu_conv_depthwise_workspace (const NnpConvParams *p)
{
  int64_t hp, wp;

  dw_geometry (p, &hp, &wp);
  return round_up_bytes (hp * wp * sizeof (float)) * nnp_sgemm_slots ();
}
