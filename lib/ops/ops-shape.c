/* libnnpipe: shape inference for the shape / data-movement ops (Identity,
 * Dropout, Shape, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
 * Split, Slice, Gather, Expand; the ops that make tensors, Constant,
 * ConstantOfShape and Range, are in ops-make.c).
 *
 * All of them are dtype-generic (byte copies).  Inputs that decide an output
 * shape must be constants at infer time; everything the kernels need is
 * parsed into the structs of shape-params.h. */
#include "ops/ops.h"
#include "ops/shape-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

void
nnp_strided_copy_init (NnpStridedCopy *copy, gsize esize, int rank, const int64_t *dims,
                       const int64_t *src_strides, int64_t src_offset)
{
  int r = 0, m = 0;

  g_return_if_fail (rank >= 0 && rank <= NNP_MAX_RANK);

  memset (copy, 0, sizeof (*copy));
  copy->esize = (int64_t) esize;
  copy->src_offset = src_offset * (int64_t) esize;
  copy->tile_axis = -1;

  for (int k = 0; k < rank; k++) {
    if (dims[k] == 0) {
      copy->rank = 1;
      copy->dims[0] = 0;
      copy->src_strides[0] = (int64_t) esize;
      return;
    }
  }
  /* drop size-1 dims */
  for (int k = 0; k < rank; k++) {
    if (dims[k] == 1)
      continue;
    copy->dims[r] = dims[k];
    copy->src_strides[r] = src_strides[k] * (int64_t) esize;
    r++;
  }
  /* merge an axis into the previous one when they are contiguous in the input */
  for (int k = 0; k < r; k++) {
    if (m > 0 && copy->src_strides[m - 1] == copy->dims[k] * copy->src_strides[k]) {
      copy->dims[m - 1] *= copy->dims[k];
      copy->src_strides[m - 1] = copy->src_strides[k];
    } else {
      copy->dims[m] = copy->dims[k];
      copy->src_strides[m] = copy->src_strides[k];
      m++;
    }
  }
  for (int k = m; k < NNP_MAX_RANK; k++) {
    copy->dims[k] = 0;
    copy->src_strides[k] = 0;
  }
  if (m == 0) {
    copy->rank = 1;
    copy->dims[0] = 1;
    copy->src_strides[0] = (int64_t) esize;
    return;
  }
  copy->rank = m;
  if (copy->src_strides[m - 1] != (int64_t) esize) {
    for (int k = 0; k < m - 1; k++) {
      if (copy->src_strides[k] == (int64_t) esize) {
        copy->tile_axis = k;
        break;
      }
    }
  }
}

/* Element size of input k; UNSUPPORTED for dtypes without one (string). */
static gboolean
input_esize (const NnpNode *node, const NnpValue *v, int k, gsize *esize, GError **error)
{
  gsize s = nnp_dtype_size (v->dtype);

  if (s == 0) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d ('%s') has unsupported dtype %s", k, v->name,
                        nnp_dtype_name (v->dtype));
    return FALSE;
  }
  *esize = s;
  return TRUE;
}

void
nnp_op_set_output (NnpGraph *graph, NnpNode *node, int k, NnpDType dtype, const NnpShape *shape)
{
  NnpValue *v = nnp_node_output (graph, node, k);

  if (v == NULL)
    return;
  v->dtype = dtype;
  v->shape = *shape;
}

NnpTensor *
nnp_op_new_1d (NnpDType dtype, int n, const void *data, gsize esize)
{
  NnpShape shape;
  int64_t dim = n;
  NnpTensor *t;

  nnp_shape_set (&shape, 1, &dim);
  t = nnp_tensor_new (dtype, &shape, NULL);
  if (t && n > 0)
    memcpy (t->data, data, (gsize) n * esize);
  return t;
}

/* Replace a value's constant; takes the reference `t`. */
void
nnp_op_set_constant (NnpValue *v, NnpTensor *t)
{
  if (v->constant)
    nnp_tensor_unref (v->constant);
  v->constant = t;
}

static void
contiguous_strides (const NnpShape *shape, int64_t *strides)
{
  int64_t s = 1;

  for (int k = shape->rank - 1; k >= 0; k--) {
    strides[k] = s;
    s *= shape->dims[k];
  }
}

/* "5x-1" for a requested shape (may hold 0 / -1); "scalar" when empty. */
static char *
ints_to_string (const int64_t *v, int n)
{
  GString *s;

  if (n == 0)
    return g_strdup ("scalar");
  s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "x" : "", v[i]);
  return g_string_free (s, FALSE);
}

/* Product of dims [begin, end); -1 on overflow. */
static int64_t
dims_product (const NnpShape *shape, int begin, int end)
{
  int64_t p = 1;

  for (int k = begin; k < end; k++) {
    if (shape->dims[k] != 0 && p > G_MAXINT64 / shape->dims[k])
      return -1;
    p *= shape->dims[k];
  }
  return p;
}

/* An int list from constant input `input` (from_input) or from attribute
 * `attr`.  *v is g_malloc'ed (NULL with *n = 0 and *present = FALSE when
 * absent). */
static gboolean
input_or_attr_ints (const NnpGraph *graph, const NnpNode *node, int input, const char *attr,
                    gboolean from_input, int64_t **v, int *n, gboolean *present, GError **error)
{
  *v = NULL;
  *n = 0;
  *present = FALSE;
  if (from_input) {
    if (nnp_node_input (graph, node, input) == NULL)
      return TRUE;
    if (!nnp_node_const_ints (graph, node, input, v, n, error))
      return FALSE;
  } else {
    const int64_t *a = nnp_node_attr_ints (node, attr, n);
    if (nnp_node_get_attr (node, attr) == NULL)
      return TRUE;
    *v = g_new (int64_t, MAX (*n, 1));
    if (*n > 0)
      memcpy (*v, a, *n * sizeof (int64_t));
  }
  *present = TRUE;
  return TRUE;
}

/* Axes from a constant input (opset >= 13 style, or given) or from an attribute. */
static gboolean
get_axes (const NnpGraph *graph, const NnpNode *node, int input, const char *attr, int64_t **axes,
          int *n, gboolean *present, GError **error)
{
  gboolean from_input = graph->opset >= 13 || nnp_node_input (graph, node, input) != NULL;

  return input_or_attr_ints (graph, node, input, attr, from_input, axes, n, present, error);
}

/* Shape-like int list to an NnpShape: every entry >= 0, rank <= NNP_MAX_RANK. */
gboolean
nnp_op_ints_to_shape (const NnpNode *node, const char *what, const int64_t *v, int n,
                      NnpShape *shape, GError **error)
{
  if (n > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "%s has %d dims, at most %d are supported", what, n, NNP_MAX_RANK);
    return FALSE;
  }
  for (int i = 0; i < n; i++) {
    if (v[i] < 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "%s[%d] = %" G_GINT64_FORMAT " is negative", what, i, v[i]);
      return FALSE;
    }
  }
  nnp_shape_set (shape, n, v);
  if (nnp_shape_numel (shape) < 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "%s is too large", what);
    return FALSE;
  }
  return TRUE;
}

/* Data input 0 passes through with the same dtype and a new shape. */
static gboolean
reshape_like (NnpGraph *graph, NnpNode *node, const NnpShape *shape, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  gsize esize;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  g_free (node->params);
  node->params = NULL;
  node->params_size = 0;
  nnp_op_set_output (graph, node, 0, x->dtype, shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Identity, Dropout */

gboolean
nnp_op_identity_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return reshape_like (graph, node, &nnp_node_input (graph, node, 0)->shape, error);
}

gboolean
nnp_op_dropout_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *training = nnp_node_input (graph, node, 2);
  NnpValue *mask = nnp_node_output (graph, node, 1);
  NnpDropoutParams *p;
  NnpDType mask_dtype;
  gsize esize;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (training != NULL) {
    NnpTensor *c = training->constant;
    if (c == NULL) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "input 2 ('%s', training_mode) must be a constant", training->name);
      return FALSE;
    }
    for (gsize i = 0; i < c->nbytes; i++) {
      if (((const guint8 *) c->data)[i] != 0) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "training mode is not supported");
        return FALSE;
      }
    }
  }

  p = NNP_NODE_NEW_PARAMS (node, NnpDropoutParams);
  /* opset >= 10: the mask is bool; before, it has the data's (float) type */
  mask_dtype = graph->opset >= 10 ? NNP_DTYPE_BOOL : x->dtype;
  p->mask_esize = (int64_t) nnp_dtype_size (mask_dtype);
  switch (mask_dtype) {
    case NNP_DTYPE_FLOAT32: {
      float one = 1.f;
      memcpy (p->mask_value, &one, sizeof (one));
      break;
    }
    case NNP_DTYPE_FLOAT64: {
      double one = 1.;
      memcpy (p->mask_value, &one, sizeof (one));
      break;
    }
    case NNP_DTYPE_FLOAT16: {
      guint16 one = 0x3c00;
      memcpy (p->mask_value, &one, sizeof (one));
      break;
    }
    default: {
      /* bool and integers: 1 in the element's (host, little-endian) layout */
      guint64 one = 1;
      memcpy (p->mask_value, &one, sizeof (p->mask_value));
      break;
    }
  }
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  if (mask)
    nnp_op_set_output (graph, node, 1, mask_dtype, &x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Shape */

gboolean
nnp_op_shape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *out = nnp_node_output (graph, node, 0);
  int rank = x->shape.rank;
  int64_t start = nnp_node_attr_int (node, "start", 0);
  int64_t end = nnp_node_attr_int (node, "end", rank);
  NnpShapeParams *p;
  NnpShape shape;
  int64_t n;

  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = CLAMP (start, 0, rank);
  end = CLAMP (end, 0, rank);
  n = MAX (end - start, 0);

  p = NNP_NODE_NEW_PARAMS (node, NnpShapeParams);
  p->start = (int) start;
  p->end = (int) MAX (end, start);
  nnp_shape_set (&shape, 1, &n);
  nnp_op_set_output (graph, node, 0, NNP_DTYPE_INT64, &shape);
  if (out) {
    NnpTensor *t =
        nnp_op_new_1d (NNP_DTYPE_INT64, (int) n, x->shape.dims + start, sizeof (int64_t));
    nnp_op_set_constant (out, t);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- Reshape, Flatten */

gboolean
nnp_op_reshape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  gboolean allowzero = nnp_node_attr_int (node, "allowzero", 0) != 0;
  g_autofree int64_t *req = NULL;
  int n, infer_axis = -1;
  int64_t known = 1, numel = nnp_shape_numel (&x->shape);
  NnpShape shape;

  if (graph->opset < 5) {
    /* Reshape 1: the shape is an attribute */
    const int64_t *a = nnp_node_attr_ints (node, "shape", &n);
    if (a == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no 'shape' attribute");
      return FALSE;
    }
    req = g_memdup2 (a, sizeof (int64_t) * MAX (n, 1));
  } else if (nnp_node_input (graph, node, 1) == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no shape input");
    return FALSE;
  } else if (!nnp_node_const_ints (graph, node, 1, &req, &n, error)) {
    return FALSE;
  }
  if (n > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "shape has %d dims, at most %d are supported", n, NNP_MAX_RANK);
    return FALSE;
  }
  memset (&shape, 0, sizeof (shape));
  shape.rank = n;
  for (int i = 0; i < n; i++) {
    int64_t d = req[i];
    if (d == -1) {
      if (infer_axis >= 0) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "shape has more than one -1");
        return FALSE;
      }
      infer_axis = i;
      continue;
    }
    if (d == 0 && !allowzero) {
      if (i >= x->shape.rank) {
        g_autofree char *in = nnp_shape_to_string (&x->shape);
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "shape[%d] = 0 copies a dim that input %s does not have", i, in);
        return FALSE;
      }
      d = x->shape.dims[i];
    } else if (d < 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "shape[%d] = %" G_GINT64_FORMAT " is invalid", i, d);
      return FALSE;
    }
    shape.dims[i] = d;
    if (d != 0 && known > G_MAXINT64 / d) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "shape is too large");
      return FALSE;
    }
    known *= d;
  }
  if (infer_axis >= 0) {
    if (known == 0 || numel % known != 0)
      goto mismatch;
    shape.dims[infer_axis] = numel / known;
  }
  if (nnp_shape_numel (&shape) != numel)
    goto mismatch;
  return reshape_like (graph, node, &shape, error);

mismatch : {
  g_autofree char *in = nnp_shape_to_string (&x->shape);
  g_autofree char *to = ints_to_string (req, n);
  nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                      "cannot reshape %s (%" G_GINT64_FORMAT " elements) to %s", in, numel, to);
  return FALSE;
}
}

gboolean
nnp_op_flatten_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  int64_t axis = nnp_node_attr_int (node, "axis", 1);
  int64_t dims[2];
  NnpShape shape;

  if (axis < -rank || axis > rank) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, rank);
    return FALSE;
  }
  if (axis < 0)
    axis += rank;
  dims[0] = dims_product (&x->shape, 0, (int) axis);
  dims[1] = dims_product (&x->shape, (int) axis, rank);
  nnp_shape_set (&shape, 2, dims);
  return reshape_like (graph, node, &shape, error);
}

/* ---------------------------------------------------------------- Squeeze, Unsqueeze */

gboolean
nnp_op_squeeze_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  g_autofree int64_t *axes = NULL;
  gboolean drop[NNP_MAX_RANK] = { FALSE };
  gboolean present;
  NnpShape shape;
  int n;

  if (!get_axes (graph, node, 1, "axes", &axes, &n, &present, error))
    return FALSE;
  if (present) {
    for (int i = 0; i < n; i++) {
      int a;
      if (!nnp_normalize_axis (axes[i], rank, &a)) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "axis %" G_GINT64_FORMAT " is out of range for rank %d", axes[i], rank);
        return FALSE;
      }
      if (drop[a]) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis %d is given twice", a);
        return FALSE;
      }
      if (x->shape.dims[a] != 1) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "cannot squeeze axis %d of size %" G_GINT64_FORMAT, a,
                            x->shape.dims[a]);
        return FALSE;
      }
      drop[a] = TRUE;
    }
  } else {
    for (int a = 0; a < rank; a++)
      drop[a] = x->shape.dims[a] == 1;
  }
  memset (&shape, 0, sizeof (shape));
  for (int a = 0; a < rank; a++)
    if (!drop[a])
      shape.dims[shape.rank++] = x->shape.dims[a];
  return reshape_like (graph, node, &shape, error);
}

gboolean
nnp_op_unsqueeze_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  g_autofree int64_t *axes = NULL;
  gboolean add[NNP_MAX_RANK] = { FALSE };
  gboolean present;
  NnpShape shape;
  int n, out_rank, j = 0;

  if (!get_axes (graph, node, 1, "axes", &axes, &n, &present, error))
    return FALSE;
  if (!present) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no axes");
    return FALSE;
  }
  out_rank = x->shape.rank + n;
  if (out_rank > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "output rank %d is above %d", out_rank,
                        NNP_MAX_RANK);
    return FALSE;
  }
  for (int i = 0; i < n; i++) {
    int a;
    if (!nnp_normalize_axis (axes[i], out_rank, &a)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %" G_GINT64_FORMAT " is out of range for output rank %d", axes[i],
                          out_rank);
      return FALSE;
    }
    if (add[a]) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis %d is given twice", a);
      return FALSE;
    }
    add[a] = TRUE;
  }
  memset (&shape, 0, sizeof (shape));
  shape.rank = out_rank;
  for (int a = 0; a < out_rank; a++)
    shape.dims[a] = add[a] ? 1 : x->shape.dims[j++];
  return reshape_like (graph, node, &shape, error);
}

/* ---------------------------------------------------------------- Transpose */

gboolean
nnp_op_transpose_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank, n;
  const int64_t *perm_attr = nnp_node_attr_ints (node, "perm", &n);
  int64_t perm[NNP_MAX_RANK], in_strides[NNP_MAX_RANK];
  int64_t dims[NNP_MAX_RANK], strides[NNP_MAX_RANK];
  gboolean seen[NNP_MAX_RANK] = { FALSE };
  NnpCopyParams *p;
  NnpShape shape;
  gsize esize;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (nnp_node_get_attr (node, "perm") == NULL) {
    for (int k = 0; k < rank; k++)
      perm[k] = rank - 1 - k;
  } else {
    if (n != rank) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "perm has %d entries for an input of rank %d", n, rank);
      return FALSE;
    }
    for (int k = 0; k < rank; k++) {
      if (perm_attr[k] < 0 || perm_attr[k] >= rank || seen[perm_attr[k]]) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "perm is not a permutation of 0..%d",
                            rank - 1);
        return FALSE;
      }
      seen[perm_attr[k]] = TRUE;
      perm[k] = perm_attr[k];
    }
  }
  contiguous_strides (&x->shape, in_strides);
  for (int k = 0; k < rank; k++) {
    dims[k] = x->shape.dims[perm[k]];
    strides[k] = in_strides[perm[k]];
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpCopyParams);
  nnp_strided_copy_init (&p->copy, esize, rank, dims, strides, 0);
  nnp_shape_set (&shape, rank, dims);
  nnp_op_set_output (graph, node, 0, x->dtype, &shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Concat, Split */

/* Same rank and the same dims except along axis. */
static gboolean
concat_compatible (const NnpShape *a, const NnpShape *b, int axis)
{
  if (a->rank != b->rank)
    return FALSE;
  for (int k = 0; k < a->rank; k++)
    if (k != axis && a->dims[k] != b->dims[k])
      return FALSE;
  return TRUE;
}

gboolean
nnp_op_concat_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x0 = nnp_node_input (graph, node, 0);
  int rank, axis;
  int64_t axis_attr, inner;
  NnpConcatParams *p;
  NnpShape shape;
  gsize esize;

  if (x0 == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 0 is missing");
    return FALSE;
  }
  if (!input_esize (node, x0, 0, &esize, error))
    return FALSE;
  rank = x0->shape.rank;
  if (nnp_node_get_attr (node, "axis") == NULL && graph->opset >= 4) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no axis attribute");
    return FALSE;
  }
  axis_attr = nnp_node_attr_int (node, "axis", 1);
  if (!nnp_normalize_axis (axis_attr, rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis_attr, rank);
    return FALSE;
  }
  shape = x0->shape;
  shape.dims[axis] = 0;
  inner = dims_product (&x0->shape, axis + 1, rank) * (int64_t) esize;

  p = NNP_NODE_NEW_PARAMS (node, NnpConcatParams);
  p->axis = axis;
  p->n_parts = node->n_inputs;
  p->outer = dims_product (&x0->shape, 0, axis);
  for (int i = 0; i < node->n_inputs; i++) {
    NnpValue *x = nnp_node_input (graph, node, i);
    if (x == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is missing", i);
      return FALSE;
    }
    if (x->dtype != x0->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is %s, input 0 is %s", i,
                          nnp_dtype_name (x->dtype), nnp_dtype_name (x0->dtype));
      return FALSE;
    }
    if (!concat_compatible (&x0->shape, &x->shape, axis)) {
      g_autofree char *s0 = nnp_shape_to_string (&x0->shape);
      g_autofree char *si = nnp_shape_to_string (&x->shape);
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "cannot concatenate %s (input %d) and %s (input 0) along axis %d", si, i,
                          s0, axis);
      return FALSE;
    }
    shape.dims[axis] += x->shape.dims[axis];
    p->part_row[i] = x->shape.dims[axis] * inner;
    p->whole_row += p->part_row[i];
  }
  nnp_op_set_output (graph, node, 0, x0->dtype, &shape);
  return TRUE;
}

gboolean
nnp_op_split_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank, axis, n_out = node->n_outputs;
  int64_t axis_attr = nnp_node_attr_int (node, "axis", 0);
  g_autofree int64_t *sizes = NULL;
  int64_t dim, inner, total = 0;
  NnpConcatParams *p;
  gsize esize;
  int n = 0;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (!nnp_normalize_axis (axis_attr, rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis_attr, rank);
    return FALSE;
  }
  dim = x->shape.dims[axis];

  if (nnp_node_input (graph, node, 1) != NULL) {
    if (!nnp_node_const_ints (graph, node, 1, &sizes, &n, error))
      return FALSE;
  } else if (nnp_node_get_attr (node, "split") != NULL) {
    const int64_t *a = nnp_node_attr_ints (node, "split", &n);
    sizes = g_new (int64_t, MAX (n, 1));
    if (n > 0)
      memcpy (sizes, a, n * sizeof (int64_t));
  } else if (nnp_node_get_attr (node, "num_outputs") != NULL) {
    int64_t num = nnp_node_attr_int (node, "num_outputs", 0), chunk;
    if (num != n_out) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "num_outputs is %" G_GINT64_FORMAT " but the node has %d outputs", num,
                          n_out);
      return FALSE;
    }
    chunk = (dim + n_out - 1) / n_out;
    n = n_out;
    sizes = g_new (int64_t, n);
    for (int i = 0; i < n; i++)
      sizes[i] = MIN (chunk, MAX (dim - chunk * i, 0));
  } else {
    if (dim % n_out != 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "cannot split axis %d of size %" G_GINT64_FORMAT " into %d equal parts",
                          axis, dim, n_out);
      return FALSE;
    }
    n = n_out;
    sizes = g_new (int64_t, n);
    for (int i = 0; i < n; i++)
      sizes[i] = dim / n_out;
  }
  if (n != n_out) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "split has %d sizes for %d outputs", n,
                        n_out);
    return FALSE;
  }
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0 || sizes[i] > dim - total) {
      total = -1;
      break;
    }
    total += sizes[i];
  }
  if (total != dim) {
    g_autofree char *s = ints_to_string (sizes, n);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "split sizes %s do not add up to %" G_GINT64_FORMAT " (axis %d)", s, dim,
                        axis);
    return FALSE;
  }

  inner = dims_product (&x->shape, axis + 1, rank) * (int64_t) esize;
  p = NNP_NODE_NEW_PARAMS (node, NnpConcatParams);
  p->axis = axis;
  p->n_parts = n;
  p->outer = dims_product (&x->shape, 0, axis);
  p->whole_row = dim * inner;
  for (int i = 0; i < n; i++) {
    NnpShape shape = x->shape;
    shape.dims[axis] = sizes[i];
    p->part_row[i] = sizes[i] * inner;
    nnp_op_set_output (graph, node, i, x->dtype, &shape);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- Slice */

/* Slice attributes (opset < 10) or constant inputs (opset >= 10). */
static gboolean
slice_get (const NnpGraph *graph, const NnpNode *node, int input, const char *attr, int64_t **v,
           int *n, gboolean *present, GError **error)
{
  return input_or_attr_ints (graph, node, input, attr, graph->opset >= 10, v, n, present, error);
}

gboolean
nnp_op_slice_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  g_autofree int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  int n_starts, n_ends, n_axes, n_steps;
  gboolean has_starts, has_ends, has_axes, has_steps;
  gboolean seen[NNP_MAX_RANK] = { FALSE };
  int64_t in_strides[NNP_MAX_RANK], strides[NNP_MAX_RANK], offset = 0;
  NnpCopyParams *p;
  NnpShape shape;
  gsize esize;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (graph->opset < 10 && node->n_inputs > 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "has %d inputs; before opset 10 Slice takes starts/ends as attributes",
                        node->n_inputs);
    return FALSE;
  }
  if (!slice_get (graph, node, 1, "starts", &starts, &n_starts, &has_starts, error)
      || !slice_get (graph, node, 2, "ends", &ends, &n_ends, &has_ends, error)
      || !slice_get (graph, node, 3, "axes", &axes, &n_axes, &has_axes, error))
    return FALSE;
  if (graph->opset >= 10
      && !slice_get (graph, node, 4, "steps", &steps, &n_steps, &has_steps, error))
    return FALSE;
  if (graph->opset < 10)
    has_steps = FALSE, n_steps = 0;
  if (!has_starts || !has_ends) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "needs starts and ends");
    return FALSE;
  }
  if (n_ends != n_starts || (has_axes && n_axes != n_starts)
      || (has_steps && n_steps != n_starts)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "starts, ends, axes and steps have different lengths (%d, %d, %d, %d)",
                        n_starts, n_ends, has_axes ? n_axes : n_starts,
                        has_steps ? n_steps : n_starts);
    return FALSE;
  }

  shape = x->shape;
  contiguous_strides (&x->shape, in_strides);
  for (int k = 0; k < rank; k++)
    strides[k] = in_strides[k];
  for (int i = 0; i < n_starts; i++) {
    int64_t axis_v = has_axes ? axes[i] : i;
    int64_t step = has_steps ? steps[i] : 1, s = starts[i], e = ends[i], dim, lim, count;
    int a;

    if (!nnp_normalize_axis (axis_v, rank, &a)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis_v, rank);
      return FALSE;
    }
    if (seen[a]) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis %d is given twice", a);
      return FALSE;
    }
    seen[a] = TRUE;
    if (step == 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "step for axis %d is 0", a);
      return FALSE;
    }
    dim = x->shape.dims[a];
    /* a step longer than the axis takes one element at most: clamp it so
     * that the arithmetic below cannot overflow */
    lim = MAX (dim, 1);
    step = CLAMP (step, -lim, lim);
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (dim == 0) {
      count = 0;
      s = 0;
    } else if (step > 0) {
      s = CLAMP (s, 0, dim);
      e = CLAMP (e, 0, dim);
      count = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = CLAMP (s, 0, dim - 1);
      e = CLAMP (e, -1, dim - 1);
      count = s > e ? (s - e - 1) / -step + 1 : 0;
    }
    shape.dims[a] = count;
    strides[a] = in_strides[a] * step;
    if (count > 0)
      offset += s * in_strides[a];
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpCopyParams);
  nnp_strided_copy_init (&p->copy, esize, rank, shape.dims, strides, offset);
  nnp_op_set_output (graph, node, 0, x->dtype, &shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Gather */

gboolean
nnp_op_gather_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *idx = nnp_node_input (graph, node, 1);
  int rank = x->shape.rank, q = idx->shape.rank, axis, out_rank;
  int64_t axis_attr = nnp_node_attr_int (node, "axis", 0);
  NnpGatherParams *p;
  NnpShape shape;
  gsize esize;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (idx->dtype != NNP_DTYPE_INT64 && idx->dtype != NNP_DTYPE_INT32) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "indices ('%s') must be int32 or int64, got %s", idx->name,
                        nnp_dtype_name (idx->dtype));
    return FALSE;
  }
  if (!nnp_normalize_axis (axis_attr, rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis_attr, rank);
    return FALSE;
  }
  out_rank = rank - 1 + q;
  if (out_rank > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "output rank %d is above %d", out_rank,
                        NNP_MAX_RANK);
    return FALSE;
  }
  memset (&shape, 0, sizeof (shape));
  shape.rank = out_rank;
  for (int k = 0; k < axis; k++)
    shape.dims[k] = x->shape.dims[k];
  for (int k = 0; k < q; k++)
    shape.dims[axis + k] = idx->shape.dims[k];
  for (int k = axis + 1; k < rank; k++)
    shape.dims[k - 1 + q] = x->shape.dims[k];
  if (nnp_shape_numel (&shape) < 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output is too large");
    return FALSE;
  }

  p = NNP_NODE_NEW_PARAMS (node, NnpGatherParams);
  p->axis = axis;
  p->index_esize = (int) nnp_dtype_size (idx->dtype);
  p->outer = dims_product (&x->shape, 0, axis);
  p->axis_dim = x->shape.dims[axis];
  p->inner_bytes = dims_product (&x->shape, axis + 1, rank) * (int64_t) esize;
  p->n_indices = nnp_shape_numel (&idx->shape);
  nnp_op_set_output (graph, node, 0, x->dtype, &shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Expand */

gboolean
nnp_op_expand_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  g_autofree int64_t *req = NULL;
  int64_t in_strides[NNP_MAX_RANK], strides[NNP_MAX_RANK];
  const NnpShape *shapes[2];
  NnpShape want, shape;
  NnpCopyParams *p;
  gsize esize;
  int n;

  if (!input_esize (node, x, 0, &esize, error))
    return FALSE;
  if (!nnp_node_const_ints (graph, node, 1, &req, &n, error))
    return FALSE;
  if (!nnp_op_ints_to_shape (node, "shape", req, n, &want, error))
    return FALSE;
  shapes[0] = &x->shape;
  shapes[1] = &want;
  if (!nnp_broadcast_shapes (shapes, 2, &shape) || nnp_shape_numel (&shape) < 0) {
    g_autofree char *in = nnp_shape_to_string (&x->shape);
    g_autofree char *to = ints_to_string (req, n);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cannot expand %s to %s", in, to);
    return FALSE;
  }
  contiguous_strides (&x->shape, in_strides);
  for (int d = 0; d < shape.rank; d++) {
    int k = d - (shape.rank - x->shape.rank);
    if (k < 0 || (x->shape.dims[k] == 1 && shape.dims[d] != 1))
      strides[d] = 0;
    else
      strides[d] = in_strides[k];
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpCopyParams);
  nnp_strided_copy_init (&p->copy, esize, shape.rank, shape.dims, strides, 0);
  nnp_op_set_output (graph, node, 0, x->dtype, &shape);
  return TRUE;
}
