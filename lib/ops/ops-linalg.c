/* libnnpipe: shape inference for Einsum (explicit and implicit output,
 * ellipsis with broadcasting, repeated labels as diagonals) and Det
 * (linalg-params.h). */
#include "ops/ops.h"
#include "ops/linalg-params.h"

#include <string.h>

#define ELL_BASE 52 /* label ids 0..51: letters; 52..: ellipsis dims */

static int
letter_id (char c)
{
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + c - 'A';
  return -1;
}

/* Parse one term ("ab...c") for a tensor of `rank` dims (rank < 0: the
 * output) into label ids; ellipsis dims are right-aligned to ell_rank. */
static gboolean
parse_term (const NnpNode *node, const char *t, gsize len, int rank, int ell_rank, gint8 *labels,
            int *n_out, int *ell_seen, GError **error)
{
  int n = 0, letters = 0;
  gboolean has_ell = FALSE;

  for (gsize i = 0; i < len; i++) {
    if (t[i] == '.') {
      if (has_ell || i + 2 >= len + 0 || t[i + 1] != '.' || t[i + 2] != '.')
        goto bad;
      has_ell = TRUE;
      i += 2;
    } else if (letter_id (t[i]) >= 0) {
      letters++;
    } else if (t[i] != ' ') {
      goto bad;
    }
  }
  {
    int ell = has_ell ? (rank >= 0 ? rank - letters : ell_rank) : 0;
    if (ell < 0 || (rank >= 0 && !has_ell && letters != rank) || letters + ell > NNP_MAX_RANK)
      goto bad;
    if (ell_seen)
      *ell_seen = MAX (*ell_seen, ell);
    for (gsize i = 0; i < len; i++) {
      if (t[i] == '.') {
        for (int e = 0; e < ell; e++)
          labels[n++] = (gint8) (ELL_BASE + ell_rank - ell + e);
        i += 2;
      } else if (letter_id (t[i]) >= 0) {
        labels[n++] = (gint8) letter_id (t[i]);
      }
    }
  }
  *n_out = n;
  return TRUE;
bad:
  nnp_node_set_error (error, NNP_ERROR_INVALID, node, "bad equation term '%.*s'", (int) len, t);
  return FALSE;
}

gboolean
nnp_op_einsum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const char *eq = nnp_node_attr_string (node, "equation", "");
  const char *arrow = strstr (eq, "->");
  g_auto (GStrv) terms = NULL;
  g_autofree char *lhs = g_strndup (eq, arrow ? (gsize) (arrow - eq) : strlen (eq));
  NnpLinalgParams *p;
  NnpValue *x0 = nnp_node_input (graph, node, 0);
  int ell_rank = 0, count[NNP_EINSUM_MAX_LABELS] = { 0 };
  NnpShape out = { 0 };

  if (x0->dtype != NNP_DTYPE_FLOAT32 && x0->dtype != NNP_DTYPE_FLOAT64
      && x0->dtype != NNP_DTYPE_INT32 && x0->dtype != NNP_DTYPE_INT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "dtype %s is not supported",
                        nnp_dtype_name (x0->dtype));
    return FALSE;
  }
  terms = g_strsplit (lhs, ",", -1);
  if ((int) g_strv_length (terms) != node->n_inputs || node->n_inputs > NNP_EINSUM_MAX_INPUTS) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "equation '%s' has %u terms for %d inputs",
                        eq, g_strv_length (terms), node->n_inputs);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpLinalgParams);
  p->dtype = x0->dtype;
  p->n_inputs = node->n_inputs;
  /* pass 1: the ellipsis rank (the largest); pass 2: labels */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < node->n_inputs; i++) {
      NnpValue *v = nnp_node_input (graph, node, i);
      if (v->dtype != x0->dtype) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "inputs differ in dtype");
        return FALSE;
      }
      if (!parse_term (node, terms[i], strlen (terms[i]), v->shape.rank, ell_rank, p->labels[i],
                       &p->rank[i], pass == 0 ? &ell_rank : NULL, error))
        return FALSE;
    }
  }
  for (int l = 0; l < NNP_EINSUM_MAX_LABELS; l++)
    p->size[l] = -1;
  for (int i = 0; i < node->n_inputs; i++) {
    NnpValue *v = nnp_node_input (graph, node, i);
    for (int d = 0; d < p->rank[i]; d++) {
      int l = p->labels[i][d];
      int64_t s = v->shape.dims[d];
      if (l < ELL_BASE)
        count[l]++;
      if (p->size[l] < 0 || (p->size[l] == 1 && l >= ELL_BASE))
        p->size[l] = s;
      else if (s != p->size[l] && !(s == 1 && l >= ELL_BASE)) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "label '%c' has sizes %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                            l < 26 ? 'a' + l : 'A' + l - 26, p->size[l], s);
        return FALSE;
      }
    }
  }
  for (int i = 0; i < node->n_inputs; i++)
    for (int d = 0; d < p->rank[i]; d++)
      p->bcast[i][d] = nnp_node_input (graph, node, i)->shape.dims[d] != p->size[p->labels[i][d]];
  if (arrow) {
    if (!parse_term (node, arrow + 2, strlen (arrow + 2), -1, ell_rank, p->out_labels, &p->out_rank,
                     NULL, error))
      return FALSE;
  } else {
    /* implicit: the ellipsis, then the letters used once, in alphabetical order */
    for (int e = 0; e < ell_rank; e++)
      p->out_labels[p->out_rank++] = (gint8) (ELL_BASE + e);
    for (int l = 0; l < ELL_BASE && p->out_rank < NNP_MAX_RANK; l++)
      if (count[l] == 1)
        p->out_labels[p->out_rank++] = (gint8) l;
  }
  for (int d = 0; d < p->out_rank; d++) {
    if (p->size[p->out_labels[d]] < 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output label not in the inputs");
      return FALSE;
    }
    out.dims[d] = p->size[p->out_labels[d]];
  }
  for (int l = 0; l < NNP_EINSUM_MAX_LABELS; l++)
    if (p->size[l] >= 0)
      p->n_labels = l + 1;
  out.rank = p->out_rank;
  nnp_op_set_output (graph, node, 0, x0->dtype, &out);
  return TRUE;
}

gboolean
nnp_op_det_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int r = x->shape.rank;
  NnpLinalgParams *p;
  NnpShape out;

  if (x->dtype != NNP_DTYPE_FLOAT32 && x->dtype != NNP_DTYPE_FLOAT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "dtype %s is not supported",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2]) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "needs [*, M, M]");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpLinalgParams);
  p->dtype = x->dtype;
  p->n = x->shape.dims[r - 1];
  out = x->shape;
  out.rank = r - 2;
  p->count = nnp_shape_numel (&out);
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}
