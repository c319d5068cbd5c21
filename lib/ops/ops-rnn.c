/* libnnpipe: shape inference for the recurrent ops RNN, GRU and LSTM
 * (rnn-params.h): every attribute of opsets 7 to 14 (activations with their
 * alpha/beta, clip, direction, layout, linear_before_reset, input_forget)
 * and the optional inputs (B, sequence_lens, initial_h, initial_c, P). */
#include "ops/ops.h"
#include "ops/rnn-params.h"

#include <string.h>

static const struct {
  const char *name;
  NnpRnnAct act;
  float alpha, beta;
} acts[] = {
  { "Sigmoid", NNP_RNN_ACT_SIGMOID, 0, 0 },
  { "Tanh", NNP_RNN_ACT_TANH, 0, 0 },
  { "Relu", NNP_RNN_ACT_RELU, 0, 0 },
  { "Affine", NNP_RNN_ACT_AFFINE, 1.0f, 0.0f },
  { "LeakyRelu", NNP_RNN_ACT_LEAKY_RELU, 0.01f, 0 },
  { "ThresholdedRelu", NNP_RNN_ACT_THRESHOLDED_RELU, 1.0f, 0 },
  { "ScaledTanh", NNP_RNN_ACT_SCALED_TANH, 1.0f, 1.0f },
  { "HardSigmoid", NNP_RNN_ACT_HARD_SIGMOID, 0.2f, 0.5f },
  { "Elu", NNP_RNN_ACT_ELU, 1.0f, 0 },
  { "Softsign", NNP_RNN_ACT_SOFTSIGN, 0, 0 },
  { "Softplus", NNP_RNN_ACT_SOFTPLUS, 0, 0 },
};

/* alpha/beta taken by an activation, in the order of activation_alpha/_beta */
static gboolean
takes_alpha (NnpRnnAct a)
{
  return a == NNP_RNN_ACT_AFFINE || a == NNP_RNN_ACT_LEAKY_RELU || a == NNP_RNN_ACT_THRESHOLDED_RELU
         || a == NNP_RNN_ACT_SCALED_TANH || a == NNP_RNN_ACT_HARD_SIGMOID || a == NNP_RNN_ACT_ELU;
}

static gboolean
takes_beta (NnpRnnAct a)
{
  return a == NNP_RNN_ACT_AFFINE || a == NNP_RNN_ACT_SCALED_TANH || a == NNP_RNN_ACT_HARD_SIGMOID;
}

static gboolean
check_shape (const NnpNode *node, const NnpValue *v, int k, int rank, const int64_t *dims,
             GError **error)
{
  gboolean ok = v->shape.rank == rank;

  for (int d = 0; ok && d < rank; d++)
    ok = v->shape.dims[d] == dims[d];
  if (!ok) {
    NnpShape want = { .rank = rank };
    g_autofree char *got = nnp_shape_to_string (&v->shape);
    g_autofree char *exp = NULL;
    memcpy (want.dims, dims, sizeof (int64_t) * rank);
    exp = nnp_shape_to_string (&want);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d ('%s') has shape %s, expected %s",
                        k, v->name, got, exp);
  }
  return ok;
}

static gboolean
rnn_infer (NnpGraph *graph, NnpNode *node, int gates, int n_act, GError **error)
{
  static const NnpRnnAct dflt[3][3] = { { NNP_RNN_ACT_TANH },
                                        { NNP_RNN_ACT_SIGMOID, NNP_RNN_ACT_TANH },
                                        { NNP_RNN_ACT_SIGMOID, NNP_RNN_ACT_TANH,
                                          NNP_RNN_ACT_TANH } };
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *w = nnp_node_input (graph, node, 1);
  const char *dir = nnp_node_attr_string (node, "direction", "forward");
  int64_t hidden = nnp_node_attr_int (node, "hidden_size", -1);
  int n_names = 0, n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
  const NnpAttr *names_attr = nnp_node_get_attr (node, "activations");
  const float *alpha = nnp_node_attr_floats (node, "activation_alpha", &n_alpha);
  const float *beta = nnp_node_attr_floats (node, "activation_beta", &n_beta);
  NnpRnnParams *p;
  NnpShape y, yh;
  int64_t dims[3];

  if (x->dtype != NNP_DTYPE_FLOAT32 && x->dtype != NNP_DTYPE_FLOAT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  for (int k = 1; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v && k != 4 && v->dtype != x->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is %s, X is %s", k,
                          nnp_dtype_name (v->dtype), nnp_dtype_name (x->dtype));
      return FALSE;
    }
  }
  if (x->shape.rank != 3 || w->shape.rank != 3) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "X and W must have rank 3");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpRnnParams);
  p->dtype = x->dtype;
  p->gates = gates;
  p->layout = nnp_node_attr_int (node, "layout", 0) != 0;
  p->seq = x->shape.dims[p->layout ? 1 : 0];
  p->batch = x->shape.dims[p->layout ? 0 : 1];
  p->input = x->shape.dims[2];
  if (strcmp (dir, "forward") == 0)
    p->direction = 0;
  else if (strcmp (dir, "reverse") == 0)
    p->direction = 1;
  else if (strcmp (dir, "bidirectional") == 0)
    p->direction = 2;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown direction '%s'", dir);
    return FALSE;
  }
  p->num_dir = p->direction == 2 ? 2 : 1;
  if (hidden < 0)
    hidden = w->shape.dims[1] / gates;
  p->hidden = hidden;
  p->has_clip = nnp_node_get_attr (node, "clip") != NULL;
  p->clip = nnp_node_attr_float (node, "clip", 0);
  p->linear_before_reset = nnp_node_attr_int (node, "linear_before_reset", 0) != 0;
  p->input_forget = nnp_node_attr_int (node, "input_forget", 0) != 0;

  dims[0] = p->num_dir;
  dims[1] = gates * hidden;
  dims[2] = p->input;
  if (!check_shape (node, w, 1, 3, dims, error))
    return FALSE;
  dims[2] = hidden;
  if (!check_shape (node, nnp_node_input (graph, node, 2), 2, 3, dims, error))
    return FALSE;
  if (nnp_node_input (graph, node, 3)) {
    dims[1] = 2 * gates * hidden;
    if (!check_shape (node, nnp_node_input (graph, node, 3), 3, 2, dims, error))
      return FALSE;
  }
  if (nnp_node_input (graph, node, 4)) {
    NnpValue *l = nnp_node_input (graph, node, 4);
    if (l->dtype != NNP_DTYPE_INT32 || !check_shape (node, l, 4, 1, &p->batch, error)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "sequence_lens must be int32 [batch]");
      return FALSE;
    }
  }
  dims[1] = p->batch;
  dims[2] = hidden;
  for (int k = 5; k <= 6 && k < node->n_inputs; k++) {
    if (k == 6 && gates != 4)
      break;
    if (nnp_node_input (graph, node, k)) {
      NnpShape hs = { .rank = 3 };
      if (p->layout) {
        hs.dims[0] = p->batch;
        hs.dims[1] = p->num_dir;
        hs.dims[2] = hidden;
      } else {
        memcpy (hs.dims, dims, sizeof (dims));
      }
      if (!check_shape (node, nnp_node_input (graph, node, k), k, 3, hs.dims, error))
        return FALSE;
    }
  }
  if (gates == 4 && nnp_node_input (graph, node, 7)) {
    dims[1] = 3 * hidden;
    if (!check_shape (node, nnp_node_input (graph, node, 7), 7, 2, dims, error))
      return FALSE;
  }

  /* activations: n_act per direction, forward first */
  if (names_attr)
    n_names = names_attr->n;
  if (names_attr && n_names != n_act * p->num_dir) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "%d activations, expected %d", n_names,
                        n_act * p->num_dir);
    return FALSE;
  }
  for (int d = 0; d < p->num_dir; d++) {
    for (int a = 0; a < n_act; a++) {
      const char *name = names_attr ? names_attr->strings[d * n_act + a] : NULL;
      int found = -1;
      if (name == NULL) {
        p->act[d][a] = dflt[gates == 1 ? 0 : gates == 3 ? 1 : 2][a];
        continue;
      }
      for (guint i = 0; i < G_N_ELEMENTS (acts); i++)
        if (g_ascii_strcasecmp (name, acts[i].name) == 0)
          found = (int) i;
      if (found < 0) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "activation '%s' is not supported",
                            name);
        return FALSE;
      }
      p->act[d][a] = acts[found].act;
      p->alpha[d][a] = acts[found].alpha;
      p->beta[d][a] = acts[found].beta;
      if (takes_alpha (p->act[d][a]) && ia < n_alpha)
        p->alpha[d][a] = alpha[ia++];
      if (takes_beta (p->act[d][a]) && ib < n_beta)
        p->beta[d][a] = beta[ib++];
    }
  }

  /* Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]) */
  y.rank = 4;
  yh.rank = 3;
  if (p->layout) {
    y.dims[0] = p->batch;
    y.dims[1] = p->seq;
    y.dims[2] = p->num_dir;
    yh.dims[0] = p->batch;
    yh.dims[1] = p->num_dir;
  } else {
    y.dims[0] = p->seq;
    y.dims[1] = p->num_dir;
    y.dims[2] = p->batch;
    yh.dims[0] = p->num_dir;
    yh.dims[1] = p->batch;
  }
  y.dims[3] = hidden;
  yh.dims[2] = hidden;
  nnp_op_set_output (graph, node, 0, x->dtype, &y);
  nnp_op_set_output (graph, node, 1, x->dtype, &yh);
  nnp_op_set_output (graph, node, 2, x->dtype, &yh);
  return TRUE;
}

gboolean
nnp_op_rnn_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return rnn_infer (graph, node, 1, 1, error);
}

gboolean
nnp_op_gru_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return rnn_infer (graph, node, 3, 2, error);
}

gboolean
nnp_op_lstm_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return rnn_infer (graph, node, 4, 3, error);
}
