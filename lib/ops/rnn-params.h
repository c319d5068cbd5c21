/* libnnpipe internal: parsed parameters of the recurrent ops RNN, GRU and
 * LSTM (lib/ops/ops-rnn.c), read by lib/backends/cpu/cpu-rnn.c.
 *
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
  NNP_RNN_ACT_SIGMOID,
  NNP_RNN_ACT_TANH,
  NNP_RNN_ACT_RELU,
  NNP_RNN_ACT_AFFINE,
  NNP_RNN_ACT_LEAKY_RELU,
  NNP_RNN_ACT_THRESHOLDED_RELU,
  NNP_RNN_ACT_SCALED_TANH,
  NNP_RNN_ACT_HARD_SIGMOID,
  NNP_RNN_ACT_ELU,
  NNP_RNN_ACT_SOFTSIGN,
  NNP_RNN_ACT_SOFTPLUS,
} NnpRnnAct;

typedef struct {
  NnpDType dtype; /* FLOAT32 or FLOAT64 */
  int gates;      /* RNN 1, GRU 3, LSTM 4 */
  int64_t seq, batch, input, hidden;
  int num_dir;
  int direction;   /* 0 forward, 1 reverse, 2 bidirectional */
  gboolean layout; /* 1: batch first */
  gboolean has_clip;
  float clip;
  gboolean linear_before_reset; /* GRU */
  gboolean input_forget;        /* LSTM */
  /* per direction: f, g, h (RNN: f only; GRU: f, g) */
  NnpRnnAct act[2][3];
  float alpha[2][3], beta[2][3];
} NnpRnnParams;

G_END_DECLS
