/* libnnpipe: shape inference for the indexing ops (index-params.h):
 * GatherElements, ScatterElements, Scatter (opsets 9-10), GatherND,
 * ScatterND, Trilu, CumSum, Hardmax, EyeLike, OneHot, DepthToSpace,
 * SpaceToDepth, Tile, ReverseSequence, Size and CastLike.
 *
 * Indices are read at run time (the kernels check their range); inputs
 * that decide an output shape (OneHot's depth, Tile's repeats) must be
 * constants. */
#include "ops/ops.h"
#include "ops/index-params.h"
#include "ops/elementwise-params.h"

#include <string.h>

static gboolean
is_index (NnpDType t)
{
  return t == NNP_DTYPE_INT32 || t == NNP_DTYPE_INT64;
}

static gboolean
has_size (NnpDType t)
{
  gsize s = nnp_dtype_size (t);
  return s == 1 || s == 2 || s == 4 || s == 8;
}

static gboolean
is_float (NnpDType t)
{
  return t == NNP_DTYPE_FLOAT32 || t == NNP_DTYPE_FLOAT64;
}

static gboolean
fail_dtype (const NnpNode *node, const NnpValue *v, int k, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                      "input %d ('%s') has dtype %s, which is not supported", k, v->name,
                      nnp_dtype_name (v->dtype));
  return FALSE;
}

static gboolean
get_axis (const NnpNode *node, int64_t axis, int rank, int *out, GError **error)
{
  if (!nnp_normalize_axis (axis, rank, out)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, rank);
    return FALSE;
  }
  return TRUE;
}

static NnpIndexParams *
new_params (NnpNode *node, const NnpValue *x)
{
  NnpIndexParams *p = NNP_NODE_NEW_PARAMS (node, NnpIndexParams);

  p->dtype = x->dtype;
  p->to = x->dtype;
  p->esize = (int) nnp_dtype_size (x->dtype);
  p->in = x->shape;
  return p;
}

static gboolean
parse_reduction (const NnpNode *node, NnpIndexParams *p, GError **error)
{
  static const char *const names[] = { "none", "add", "mul", "max", "min" };
  const char *r = nnp_node_attr_string (node, "reduction", "none");

  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    if (strcmp (r, names[i]) == 0) {
      p->reduction = (NnpReduction) i;
      if (i != NNP_REDUCTION_NONE && p->dtype != NNP_DTYPE_FLOAT32 && p->dtype != NNP_DTYPE_FLOAT64
          && p->dtype != NNP_DTYPE_INT32 && p->dtype != NNP_DTYPE_INT64) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                            "reduction '%s' on %s is not supported", r, nnp_dtype_name (p->dtype));
        return FALSE;
      }
      return TRUE;
    }
  }
  nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown reduction '%s'", r);
  return FALSE;
}

/* ---------------------------------------------------------------- Gather/Scatter Elements */

gboolean
nnp_op_gather_elements_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *i = nnp_node_input (graph, node, 1);
  NnpIndexParams *p;
  int axis;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (!is_index (i->dtype))
    return fail_dtype (node, i, 1, error);
  if (i->shape.rank != x->shape.rank || x->shape.rank < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "indices have rank %d, data rank %d",
                        i->shape.rank, x->shape.rank);
    return FALSE;
  }
  if (!get_axis (node, nnp_node_attr_int (node, "axis", 0), x->shape.rank, &axis, error))
    return FALSE;
  p = new_params (node, x);
  p->axis = axis;
  p->idx = i->shape;
  nnp_op_set_output (graph, node, 0, x->dtype, &i->shape);
  return TRUE;
}

gboolean
nnp_op_scatter_elements_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *i = nnp_node_input (graph, node, 1);
  NnpValue *u = nnp_node_input (graph, node, 2);
  NnpIndexParams *p;
  int axis;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (!is_index (i->dtype))
    return fail_dtype (node, i, 1, error);
  if (u->dtype != x->dtype || !nnp_shape_equal (&u->shape, &i->shape)
      || i->shape.rank != x->shape.rank || x->shape.rank < 1) {
    nnp_node_set_error (
        error, NNP_ERROR_INVALID, node,
        "updates must have the indices' shape and the data's dtype, indices the data's rank");
    return FALSE;
  }
  if (!get_axis (node, nnp_node_attr_int (node, "axis", 0), x->shape.rank, &axis, error))
    return FALSE;
  p = new_params (node, x);
  p->axis = axis;
  p->idx = i->shape;
  if (!parse_reduction (node, p, error))
    return FALSE;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_scatter_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_scatter_elements_infer (graph, node, error);
}

/* ---------------------------------------------------------------- GatherND / ScatterND */

gboolean
nnp_op_gather_nd_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *i = nnp_node_input (graph, node, 1);
  int64_t b = nnp_node_attr_int (node, "batch_dims", 0), k;
  NnpIndexParams *p;
  NnpShape out = { 0 };
  int q = i->shape.rank, r = x->shape.rank;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (i->dtype != NNP_DTYPE_INT64)
    return fail_dtype (node, i, 1, error);
  if (q < 1 || r < 1 || b < 0 || b >= MIN (q, r)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "batch_dims %" G_GINT64_FORMAT " does not fit ranks %d and %d", b, r, q);
    return FALSE;
  }
  k = i->shape.dims[q - 1];
  if (k < 1 || k > r - b) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "indices' last dim %" G_GINT64_FORMAT " is out of 1..%" G_GINT64_FORMAT, k,
                        r - b);
    return FALSE;
  }
  for (int d = 0; d < b; d++) {
    if (x->shape.dims[d] != i->shape.dims[d]) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "batch dim %d differs", d);
      return FALSE;
    }
  }
  out.rank = q - 1 + r - (int) b - (int) k;
  if (out.rank > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "output rank %d is too large",
                        out.rank);
    return FALSE;
  }
  for (int d = 0; d < q - 1; d++)
    out.dims[d] = i->shape.dims[d];
  for (int d = (int) (b + k); d < r; d++)
    out.dims[q - 1 + d - (int) (b + k)] = x->shape.dims[d];
  p = new_params (node, x);
  p->idx = i->shape;
  p->k = b;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

gboolean
nnp_op_scatter_nd_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *i = nnp_node_input (graph, node, 1);
  NnpValue *u = nnp_node_input (graph, node, 2);
  NnpIndexParams *p;
  int q = i->shape.rank, r = x->shape.rank;
  int64_t k;
  gboolean ok;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (i->dtype != NNP_DTYPE_INT64)
    return fail_dtype (node, i, 1, error);
  k = q >= 1 ? i->shape.dims[q - 1] : 0;
  ok = u->dtype == x->dtype && q >= 1 && k >= 1 && k <= r && u->shape.rank == q - 1 + r - k;
  for (int d = 0; ok && d < q - 1; d++)
    ok = u->shape.dims[d] == i->shape.dims[d];
  for (int d = (int) k; ok && d < r; d++)
    ok = u->shape.dims[q - 1 + d - k] == x->shape.dims[d];
  if (!ok) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "updates do not match indices[:-1] + data[k:] (or dtype differs)");
    return FALSE;
  }
  p = new_params (node, x);
  p->idx = i->shape;
  if (!parse_reduction (node, p, error))
    return FALSE;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Trilu, CumSum, Hardmax */

gboolean
nnp_op_trilu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *k = nnp_node_input (graph, node, 1);
  NnpIndexParams *p;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (x->shape.rank < 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input has rank %d, expected >= 2",
                        x->shape.rank);
    return FALSE;
  }
  if (k && (k->dtype != NNP_DTYPE_INT64 || nnp_shape_numel (&k->shape) != 1)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "k must be one int64");
    return FALSE;
  }
  p = new_params (node, x);
  p->flag = nnp_node_attr_int (node, "upper", 1) != 0;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_cum_sum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *a = nnp_node_input (graph, node, 1);
  NnpIndexParams *p;

  switch (x->dtype) {
    case NNP_DTYPE_FLOAT32:
    case NNP_DTYPE_FLOAT64:
    case NNP_DTYPE_INT32:
    case NNP_DTYPE_INT64:
    case NNP_DTYPE_UINT32:
    case NNP_DTYPE_UINT64: break;
    default: return fail_dtype (node, x, 0, error);
  }
  if (!is_index (a->dtype) || nnp_shape_numel (&a->shape) != 1 || x->shape.rank < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis must be one int32/int64 and the input not a scalar");
    return FALSE;
  }
  p = new_params (node, x);
  p->axis = -1; /* read at run time unless constant */
  if (a->constant) {
    int64_t v = a->dtype == NNP_DTYPE_INT64 ? ((int64_t *) a->constant->data)[0]
                                            : ((int32_t *) a->constant->data)[0];
    if (!get_axis (node, v, x->shape.rank, &p->axis, error))
      return FALSE;
  }
  p->flag = nnp_node_attr_int (node, "exclusive", 0) != 0;
  p->flag2 = nnp_node_attr_int (node, "reverse", 0) != 0;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_hardmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  gboolean coerce = graph->opset < 13;
  NnpIndexParams *p;
  int axis;

  if (!is_float (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (x->shape.rank < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input is a scalar");
    return FALSE;
  }
  if (!get_axis (node, nnp_node_attr_int (node, "axis", coerce ? 1 : -1), x->shape.rank, &axis,
                 error))
    return FALSE;
  p = new_params (node, x);
  p->axis = axis;
  p->flag = coerce;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- EyeLike, OneHot */

static gboolean
is_plain (NnpDType t)
{
  return has_size (t) && t != NNP_DTYPE_FLOAT16 && t != NNP_DTYPE_STRING;
}

gboolean
nnp_op_eye_like_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpDType to = (NnpDType) nnp_node_attr_int (node, "dtype", x->dtype);
  NnpIndexParams *p;

  if (x->shape.rank != 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input has rank %d, expected 2",
                        x->shape.rank);
    return FALSE;
  }
  if (!is_plain (to)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "dtype %s is not supported",
                        nnp_dtype_name (to));
    return FALSE;
  }
  p = new_params (node, x);
  p->to = to;
  p->k = nnp_node_attr_int (node, "k", 0);
  nnp_op_set_output (graph, node, 0, to, &x->shape);
  return TRUE;
}

gboolean
nnp_op_one_hot_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *ind = nnp_node_input (graph, node, 0);
  NnpValue *depth = nnp_node_input (graph, node, 1);
  NnpValue *values = nnp_node_input (graph, node, 2);
  NnpIndexParams *p;
  NnpShape out;
  double d;
  int axis;

  if (ind->dtype == NNP_DTYPE_BOOL || !has_size (ind->dtype) || ind->dtype == NNP_DTYPE_FLOAT16)
    return fail_dtype (node, ind, 0, error);
  if (!is_plain (values->dtype))
    return fail_dtype (node, values, 2, error);
  if (nnp_shape_numel (&values->shape) != 2 || nnp_shape_numel (&depth->shape) != 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "depth must be one value and values two");
    return FALSE;
  }
  if (depth->constant == NULL) {
    nnp_node_set_error (
        error, NNP_ERROR_UNSUPPORTED, node,
        "input 1 ('%s') must be a constant (data-dependent shapes are not supported)", depth->name);
    return FALSE;
  }
  switch (depth->dtype) {
    case NNP_DTYPE_FLOAT32: d = ((float *) depth->constant->data)[0]; break;
    case NNP_DTYPE_FLOAT64: d = ((double *) depth->constant->data)[0]; break;
    case NNP_DTYPE_INT32: d = ((int32_t *) depth->constant->data)[0]; break;
    case NNP_DTYPE_INT64: d = (double) ((int64_t *) depth->constant->data)[0]; break;
    case NNP_DTYPE_UINT8: d = ((uint8_t *) depth->constant->data)[0]; break;
    case NNP_DTYPE_INT8: d = ((int8_t *) depth->constant->data)[0]; break;
    default: return fail_dtype (node, depth, 1, error);
  }
  if (!(d >= 1 && d <= G_MAXINT32) || ind->shape.rank + 1 > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "depth %g is out of range", d);
    return FALSE;
  }
  if (!get_axis (node, nnp_node_attr_int (node, "axis", -1), ind->shape.rank + 1, &axis, error))
    return FALSE;
  out.rank = ind->shape.rank + 1;
  for (int i = 0, j = 0; i < out.rank; i++)
    out.dims[i] = i == axis ? (int64_t) d : ind->shape.dims[j++];
  p = new_params (node, ind);
  p->to = values->dtype;
  p->axis = axis;
  p->k = (int64_t) d;
  p->idx = out;
  nnp_op_set_output (graph, node, 0, values->dtype, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- DepthToSpace, SpaceToDepth */

static gboolean
block_infer (NnpGraph *graph, NnpNode *node, gboolean to_space, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int64_t b = nnp_node_attr_int (node, "blocksize", 0);
  const char *mode = nnp_node_attr_string (node, "mode", "DCR");
  NnpIndexParams *p;
  NnpShape out;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (x->shape.rank != 4 || b < 1 || b > 65536) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "needs a 4-D input and a blocksize >= 1 (got rank %d, %" G_GINT64_FORMAT
                        ")",
                        x->shape.rank, b);
    return FALSE;
  }
  out = x->shape;
  if (to_space) {
    if (x->shape.dims[1] % (b * b) != 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "channels %" G_GINT64_FORMAT " are not a multiple of %" G_GINT64_FORMAT,
                          x->shape.dims[1], b * b);
      return FALSE;
    }
    if (strcmp (mode, "DCR") != 0 && strcmp (mode, "CRD") != 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown mode '%s'", mode);
      return FALSE;
    }
    out.dims[1] /= b * b;
    out.dims[2] *= b;
    out.dims[3] *= b;
  } else {
    if (x->shape.dims[2] % b != 0 || x->shape.dims[3] % b != 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "height and width are not multiples of %" G_GINT64_FORMAT, b);
      return FALSE;
    }
    out.dims[1] *= b * b;
    out.dims[2] /= b;
    out.dims[3] /= b;
  }
  p = new_params (node, x);
  p->k = b;
  p->flag = to_space && strcmp (mode, "CRD") == 0;
  p->idx = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

gboolean
nnp_op_depth_to_space_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return block_infer (graph, node, TRUE, error);
}

gboolean
nnp_op_space_to_depth_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return block_infer (graph, node, FALSE, error);
}

/* ---------------------------------------------------------------- Tile */

gboolean
nnp_op_tile_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  g_autofree int64_t *rep = NULL;
  NnpIndexParams *p;
  NnpShape out;
  int n;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (graph->opset < 6) {
    /* Tile 1: tiles (a scalar) repeats along the scalar input 'axis' */
    g_autofree int64_t *tiles = NULL, *axis = NULL;
    int nt, na, a;
    if (!nnp_node_const_ints (graph, node, 1, &tiles, &nt, error)
        || !nnp_node_const_ints (graph, node, 2, &axis, &na, error))
      return FALSE;
    if (nt != 1 || na != 1 || !get_axis (node, axis[0], x->shape.rank, &a, error)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "tiles and axis must be scalars");
      return FALSE;
    }
    n = x->shape.rank;
    rep = g_new (int64_t, MAX (n, 1));
    for (int i = 0; i < n; i++)
      rep[i] = i == a ? tiles[0] : 1;
  } else if (!nnp_node_const_ints (graph, node, 1, &rep, &n, error)) {
    return FALSE;
  }
  if (n != x->shape.rank) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "repeats has %d values for rank %d", n,
                        x->shape.rank);
    return FALSE;
  }
  out = x->shape;
  for (int i = 0; i < n; i++) {
    if (rep[i] < 0 || (x->shape.dims[i] > 0 && rep[i] > G_MAXINT32 / x->shape.dims[i])) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "repeats[%d] = %" G_GINT64_FORMAT " is out of range", i, rep[i]);
      return FALSE;
    }
    out.dims[i] *= rep[i];
  }
  p = new_params (node, x);
  p->idx = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- ReverseSequence */

gboolean
nnp_op_reverse_sequence_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *l = nnp_node_input (graph, node, 1);
  int64_t ta = nnp_node_attr_int (node, "time_axis", 0);
  int64_t ba = nnp_node_attr_int (node, "batch_axis", 1);
  NnpIndexParams *p;

  if (!has_size (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (x->shape.rank < 2 || (ta != 0 && ta != 1) || (ba != 0 && ba != 1) || ta == ba
      || l->dtype != NNP_DTYPE_INT64 || l->shape.rank != 1
      || l->shape.dims[0] != x->shape.dims[ba]) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "needs rank >= 2, time/batch axes 0 and 1 and int64 lengths per batch");
    return FALSE;
  }
  p = new_params (node, x);
  p->axis = (int) ta;
  p->axis2 = (int) ba;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Size, CastLike */

gboolean
nnp_op_size_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *out = nnp_node_output (graph, node, 0);
  NnpShape scalar = { .rank = 0 };
  int64_t n = nnp_shape_numel (&x->shape);

  (void) error;
  new_params (node, x);
  nnp_op_set_output (graph, node, 0, NNP_DTYPE_INT64, &scalar);
  if (out) {
    NnpTensor *t = nnp_tensor_new (NNP_DTYPE_INT64, &scalar, NULL);
    if (t)
      *(int64_t *) t->data = n;
    nnp_op_set_constant (out, t);
  }
  return TRUE;
}

/* Cast's kernel runs it (NnpUnaryParams, as Cast) */
static gboolean
is_castable (NnpDType t)
{
  return has_size (t) && t != NNP_DTYPE_STRING;
}

gboolean
nnp_op_cast_like_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *like = nnp_node_input (graph, node, 1);
  NnpUnaryParams *p;

  if (!is_castable (x->dtype))
    return fail_dtype (node, x, 0, error);
  if (!is_castable (like->dtype))
    return fail_dtype (node, like, 1, error);
  p = NNP_NODE_NEW_PARAMS (node, NnpUnaryParams);
  p->dtype = x->dtype;
  p->to = like->dtype;
  p->min_input = p->max_input = -1;
  nnp_op_set_output (graph, node, 0, like->dtype, &x->shape);
  return TRUE;
}
