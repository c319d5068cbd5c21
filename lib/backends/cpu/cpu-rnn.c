/* CPU kernels of RNN, GRU and LSTM (lib/ops/ops-rnn.c, rnn-params.h).
 *
 * One direction at a time, one time step at a time, every batch row on its
 * own (sequence_lens differ per row): the gate pre-activations are
 * x_t W^T + h R^T + Wb + Rb (LSTM: + peepholes), clipped when `clip` is set,
 * then the ONNX gate equations.  State and gates are double in the scratch
 * area.  Steps at or past a row's sequence length write zeros to Y and leave
 * that row's state alone, so Y_h / Y_c hold the last valid step. */
#include "backends/cpu/cpu.h"
#include "ops/rnn-params.h"

#include <math.h>
#include <string.h>

static inline double
ld (const NnpTensor *t, int64_t i)
{
  return t->dtype == NNP_DTYPE_FLOAT64 ? ((const double *) t->data)[i]
                                       : ((const float *) t->data)[i];
}

static inline void
st (NnpTensor *t, int64_t i, double v)
{
  if (t->dtype == NNP_DTYPE_FLOAT64)
    ((double *) t->data)[i] = v;
  else
    ((float *) t->data)[i] = (float) v;
}

static inline double
act (NnpRnnAct a, double x, double alpha, double beta)
{
  switch (a) {
    case NNP_RNN_ACT_SIGMOID: return 1.0 / (1.0 + exp (-x));
    case NNP_RNN_ACT_TANH: return tanh (x);
    case NNP_RNN_ACT_RELU: return x > 0 ? x : 0;
    case NNP_RNN_ACT_AFFINE: return alpha * x + beta;
    case NNP_RNN_ACT_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case NNP_RNN_ACT_THRESHOLDED_RELU: return x > alpha ? x : 0;
    case NNP_RNN_ACT_SCALED_TANH: return alpha * tanh (beta * x);
    case NNP_RNN_ACT_HARD_SIGMOID: return MAX (0.0, MIN (1.0, alpha * x + beta));
    case NNP_RNN_ACT_ELU: return x < 0 ? alpha * (exp (x) - 1) : x;
    case NNP_RNN_ACT_SOFTSIGN: return x / (1 + fabs (x));
    case NNP_RNN_ACT_SOFTPLUS: return log1p (exp (x));
    default: return x;
  }
}

static gsize
rnn_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpRnnParams *p = node->params;

  (void) graph;
  /* h, c, h_new, gates, hr (GRU: h R_h^T) per batch row */
  return sizeof (double) * (gsize) MAX (p->batch * p->hidden * (4 + p->gates), 1);
}

/* Y element of (t, dir, b, j) */
static inline int64_t
y_index (const NnpRnnParams *p, int64_t t, int d, int64_t b, int64_t j)
{
  if (p->layout)
    return ((b * p->seq + t) * p->num_dir + d) * p->hidden + j;
  return ((t * p->num_dir + d) * p->batch + b) * p->hidden + j;
}

/* Y_h / Y_c / initial_h / initial_c element of (dir, b, j) */
static inline int64_t
h_index (const NnpRnnParams *p, int d, int64_t b, int64_t j)
{
  if (p->layout)
    return (b * p->num_dir + d) * p->hidden + j;
  return (d * p->batch + b) * p->hidden + j;
}

static inline int64_t
x_index (const NnpRnnParams *p, int64_t t, int64_t b, int64_t i)
{
  if (p->layout)
    return (b * p->seq + t) * p->input + i;
  return (t * p->batch + b) * p->input + i;
}

static gboolean
rnn_run (const NnpCpuCall *call, GError **error)
{
  const NnpRnnParams *p = call->node->params;
  const int n_in = call->node->n_inputs, n_out = call->node->n_outputs;
  const NnpTensor *X = call->inputs[0], *W = call->inputs[1], *R = call->inputs[2];
  const NnpTensor *B = n_in > 3 ? call->inputs[3] : NULL;
  const NnpTensor *L = n_in > 4 ? call->inputs[4] : NULL;
  const NnpTensor *H0 = n_in > 5 ? call->inputs[5] : NULL;
  const NnpTensor *C0 = p->gates == 4 && n_in > 6 ? call->inputs[6] : NULL;
  const NnpTensor *P = p->gates == 4 && n_in > 7 ? call->inputs[7] : NULL;
  NnpTensor *Y = n_out > 0 ? call->outputs[0] : NULL;
  NnpTensor *Yh = n_out > 1 ? call->outputs[1] : NULL;
  NnpTensor *Yc = p->gates == 4 && n_out > 2 ? call->outputs[2] : NULL;
  const int64_t H = p->hidden, G = p->gates, I = p->input, NB = p->batch;
  double *h = call->scratch, *c = h + NB * H, *hn = c + NB * H, *g = hn + NB * H;
  double *hr = g + NB * G * H;

  for (int64_t b = 0; L && b < NB; b++) {
    int32_t len = ((const int32_t *) L->data)[b];
    if (len < 0 || len > p->seq) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "sequence_lens[%" G_GINT64_FORMAT "] = %d is out of 0..%" G_GINT64_FORMAT,
                          b, len, p->seq);
      return FALSE;
    }
  }
  for (int d = 0; d < p->num_dir; d++) {
    const gboolean reverse = p->direction == 1 || d == 1;
    const int64_t w0 = (int64_t) d * G * H * I, r0 = (int64_t) d * G * H * H;
    const int64_t b0 = (int64_t) d * 2 * G * H, p0 = (int64_t) d * 3 * H;
    const NnpRnnAct f = p->act[d][0], ga = p->act[d][1], ha = p->act[d][2];
    const double fa = p->alpha[d][0], fb = p->beta[d][0], gaa = p->alpha[d][1];
    const double gab = p->beta[d][1], haa = p->alpha[d][2], hab = p->beta[d][2];

    for (int64_t b = 0; b < NB; b++)
      for (int64_t j = 0; j < H; j++) {
        h[b * H + j] = H0 ? ld (H0, h_index (p, d, b, j)) : 0;
        c[b * H + j] = C0 ? ld (C0, h_index (p, d, b, j)) : 0;
      }
    for (int64_t s = 0; s < p->seq; s++) {
      for (int64_t b = 0; b < NB; b++) {
        int64_t len = L ? ((const int32_t *) L->data)[b] : p->seq, t;
        double *gb = g + b * G * H, *hb = h + b * H, *cb = c + b * H, *hrb = hr + b * H;

        if (s >= len) {
          for (int64_t j = 0; Y && j < H; j++)
            st (Y, y_index (p, s, d, b, j), 0);
          continue;
        }
        t = reverse ? len - 1 - s : s;
        /* pre-activations; GRU keeps h R_h^T apart (hr) */
        for (int64_t k = 0; k < G * H; k++) {
          double v = B ? ld (B, b0 + k) : 0, r = B ? ld (B, b0 + G * H + k) : 0;
          for (int64_t i = 0; i < I; i++)
            v += ld (X, x_index (p, t, b, i)) * ld (W, w0 + k * I + i);
          for (int64_t j = 0; j < H && !(G == 3 && k >= 2 * H); j++)
            r += hb[j] * ld (R, r0 + k * H + j);
          if (G == 3 && k >= 2 * H)
            hrb[k - 2 * H] = r; /* R_h bias only so far */
          else
            v += r;
          gb[k] = v;
        }
        if (G == 1) {
          for (int64_t j = 0; j < H; j++) {
            double v = gb[j];
            if (p->has_clip)
              v = CLAMP (v, -p->clip, p->clip);
            hn[b * H + j] = act (f, v, fa, fb);
          }
        } else if (G == 3) {
          /* z, r, h */
          for (int64_t j = 0; j < 2 * H; j++) {
            double v = gb[j];
            if (p->has_clip)
              v = CLAMP (v, -p->clip, p->clip);
            gb[j] = act (f, v, fa, fb);
          }
          for (int64_t j = 0; j < H; j++) {
            double rj = gb[H + j], v = gb[2 * H + j], hrj = 0;
            if (p->linear_before_reset) {
              hrj = hrb[j];
              for (int64_t k = 0; k < H; k++)
                hrj += hb[k] * ld (R, r0 + (2 * H + j) * H + k);
              v += rj * hrj;
            } else {
              hrj = hrb[j];
              for (int64_t k = 0; k < H; k++)
                hrj += gb[H + k] * hb[k] * ld (R, r0 + (2 * H + j) * H + k);
              v += hrj;
            }
            if (p->has_clip)
              v = CLAMP (v, -p->clip, p->clip);
            v = act (ga, v, gaa, gab);
            hn[b * H + j] = (1 - gb[j]) * v + gb[j] * hb[j];
          }
        } else {
          /* i, o, f, c */
          for (int64_t j = 0; j < H; j++) {
            double vi = gb[j], vo = gb[H + j], vf = gb[2 * H + j], vc = gb[3 * H + j], ig, fg, cg,
                   og, cn;
            if (P) {
              vi += ld (P, p0 + j) * cb[j];
              vf += ld (P, p0 + 2 * H + j) * cb[j];
            }
            if (p->has_clip) {
              vi = CLAMP (vi, -p->clip, p->clip);
              vf = CLAMP (vf, -p->clip, p->clip);
              vc = CLAMP (vc, -p->clip, p->clip);
            }
            ig = act (f, vi, fa, fb);
            fg = p->input_forget ? 1 - ig : act (f, vf, fa, fb);
            cg = act (ga, vc, gaa, gab);
            cn = fg * cb[j] + ig * cg;
            if (P)
              vo += ld (P, p0 + H + j) * cn;
            if (p->has_clip)
              vo = CLAMP (vo, -p->clip, p->clip);
            og = act (f, vo, fa, fb);
            gb[3 * H + j] = cn; /* new cell state, copied below */
            hn[b * H + j] = og * act (ha, cn, haa, hab);
          }
          for (int64_t j = 0; j < H; j++)
            cb[j] = gb[3 * H + j];
        }
        for (int64_t j = 0; j < H; j++) {
          hb[j] = hn[b * H + j];
          if (Y)
            st (Y, y_index (p, t, d, b, j), hb[j]);
        }
      }
    }
    for (int64_t b = 0; b < NB; b++)
      for (int64_t j = 0; j < H; j++) {
        if (Yh)
          st (Yh, h_index (p, d, b, j), h[b * H + j]);
        if (Yc)
          st (Yc, h_index (p, d, b, j), c[b * H + j]);
      }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_rnn = { .run = rnn_run, .workspace = rnn_workspace };
const NnpCpuKernel nnp_cpu_gru = { .run = rnn_run, .workspace = rnn_workspace };
const NnpCpuKernel nnp_cpu_lstm = { .run = rnn_run, .workspace = rnn_workspace };
