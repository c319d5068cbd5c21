/* libnnpipe: the selection ops TopK, Compress, NonZero, Unique and
 * NonMaxSuppression.
 *
 * nnpipe plans memory for static shapes, so an output whose shape depends on
 * data needs that data at specialisation: TopK's K and Compress's condition
 * must be constants (the data input may change every run: the CPU kernels in
 * cpu-select.c); NonZero, Unique and NonMaxSuppression need all their inputs
 * constant and are computed here, once, their outputs becoming constants
 * (the specialiser folds the node).  Anything else is refused with
 * NNP_ERROR_UNSUPPORTED naming the input, as Reshape's shape is. */
#include "ops/ops.h"
#include "ops/index-params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static gboolean
need_constant (const NnpNode *node, const NnpValue *v, int k, GError **error)
{
  if (v == NULL || v->constant != NULL)
    return TRUE;
  nnp_node_set_error (
      error, NNP_ERROR_UNSUPPORTED, node,
      "input %d ('%s') must be a constant (data-dependent shapes are not supported)", k, v->name);
  return FALSE;
}

static double
elem (const NnpTensor *t, int64_t i)
{
  const void *d = t->data;

  switch (t->dtype) {
    case NNP_DTYPE_FLOAT32: return ((const float *) d)[i];
    case NNP_DTYPE_FLOAT64: return ((const double *) d)[i];
    case NNP_DTYPE_INT8: return ((const gint8 *) d)[i];
    case NNP_DTYPE_UINT8:
    case NNP_DTYPE_BOOL: return ((const guint8 *) d)[i];
    case NNP_DTYPE_INT16: return ((const gint16 *) d)[i];
    case NNP_DTYPE_UINT16: return ((const guint16 *) d)[i];
    case NNP_DTYPE_INT32: return ((const gint32 *) d)[i];
    case NNP_DTYPE_UINT32: return ((const guint32 *) d)[i];
    case NNP_DTYPE_INT64: return (double) ((const gint64 *) d)[i];
    case NNP_DTYPE_UINT64: return (double) ((const guint64 *) d)[i];
    default: return NAN;
  }
}

static gboolean
plain_dtype (NnpDType t)
{
  return t != NNP_DTYPE_FLOAT16 && t != NNP_DTYPE_STRING && nnp_dtype_size (t) > 0;
}

static NnpTensor *
new_tensor (NnpDType dtype, int rank, const int64_t *dims)
{
  NnpShape s;

  nnp_shape_set (&s, rank, dims);
  return nnp_tensor_new (dtype, &s, NULL);
}

/* ---------------------------------------------------------------- TopK */

gboolean
nnp_op_top_k_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int64_t k;
  NnpIndexParams *p;
  NnpShape out;
  int axis;

  if (!plain_dtype (x->dtype) || x->dtype == NNP_DTYPE_BOOL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (graph->opset < 10) {
    k = nnp_node_attr_int (node, "k", -1);
  } else {
    g_autofree int64_t *kv = NULL;
    int n;
    if (nnp_node_input (graph, node, 1) == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no K input");
      return FALSE;
    }
    if (!nnp_node_const_ints (graph, node, 1, &kv, &n, error))
      return FALSE;
    if (n != 1) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "K has %d values, expected 1", n);
      return FALSE;
    }
    k = kv[0];
  }
  if (!nnp_normalize_axis (nnp_node_attr_int (node, "axis", -1), x->shape.rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis is out of range for rank %d",
                        x->shape.rank);
    return FALSE;
  }
  if (k < 0 || k > x->shape.dims[axis]) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "K = %" G_GINT64_FORMAT " is out of 0..%" G_GINT64_FORMAT, k,
                        x->shape.dims[axis]);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpIndexParams);
  p->dtype = x->dtype;
  p->esize = (int) nnp_dtype_size (x->dtype);
  p->in = x->shape;
  p->axis = axis;
  p->k = k;
  p->flag = nnp_node_attr_int (node, "largest", 1) != 0;
  out = x->shape;
  out.dims[axis] = k;
  p->idx = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  nnp_op_set_output (graph, node, 1, NNP_DTYPE_INT64, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- Compress */

gboolean
nnp_op_compress_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *c = nnp_node_input (graph, node, 1);
  const NnpAttr *axis_attr = nnp_node_get_attr (node, "axis");
  NnpIndexParams *p;
  NnpShape out;
  int64_t dim, n = 0, len;
  int axis = -1;

  if (c->dtype != NNP_DTYPE_BOOL || c->shape.rank != 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "condition must be a 1-D bool tensor");
    return FALSE;
  }
  if (!plain_dtype (x->dtype)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (!need_constant (node, c, 1, error))
    return FALSE;
  if (axis_attr && !nnp_normalize_axis (axis_attr->i, x->shape.rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis is out of range for rank %d",
                        x->shape.rank);
    return FALSE;
  }
  dim = axis < 0 ? nnp_shape_numel (&x->shape) : x->shape.dims[axis];
  len = MIN (dim, c->shape.dims[0]);
  for (int64_t i = 0; i < len; i++)
    n += ((const guint8 *) c->constant->data)[i] != 0;
  p = NNP_NODE_NEW_PARAMS (node, NnpIndexParams);
  p->dtype = x->dtype;
  p->esize = (int) nnp_dtype_size (x->dtype);
  p->in = x->shape;
  p->axis = axis;
  if (axis < 0) {
    out.rank = 1;
    out.dims[0] = n;
  } else {
    out = x->shape;
    out.dims[axis] = n;
  }
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- NonZero */

gboolean
nnp_op_non_zero_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *y = nnp_node_output (graph, node, 0);
  int64_t n = nnp_shape_numel (&x->shape), nz = 0, dims[2], idx[NNP_MAX_RANK] = { 0 };
  int rank = x->shape.rank;
  NnpTensor *t;

  if (!plain_dtype (x->dtype)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (!need_constant (node, x, 0, error))
    return FALSE;
  for (int64_t i = 0; i < n; i++)
    nz += elem (x->constant, i) != 0;
  dims[0] = MAX (rank, 1);
  dims[1] = nz;
  t = new_tensor (NNP_DTYPE_INT64, 2, dims);
  if (t == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output too large");
    return FALSE;
  }
  for (int64_t i = 0, j = 0; i < n; i++) {
    if (elem (x->constant, i) != 0) {
      for (int d = 0; d < rank; d++)
        ((int64_t *) t->data)[d * nz + j] = idx[d];
      if (rank == 0)
        ((int64_t *) t->data)[j] = 0;
      j++;
    }
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < x->shape.dims[d])
        break;
      idx[d] = 0;
    }
  }
  nnp_op_set_output (graph, node, 0, NNP_DTYPE_INT64, &t->shape);
  if (y)
    nnp_op_set_constant (y, t);
  else
    nnp_tensor_unref (t);
  return TRUE;
}

/* ---------------------------------------------------------------- Unique */

typedef struct {
  const NnpTensor *x;
  int64_t outer, n, inner; /* x viewed as outer x n slices x inner */
} SliceSet;

static int
compare_slices (const SliceSet *s, int64_t a, int64_t b)
{
  for (int64_t o = 0; o < s->outer; o++)
    for (int64_t i = 0; i < s->inner; i++) {
      double va = elem (s->x, (o * s->n + a) * s->inner + i);
      double vb = elem (s->x, (o * s->n + b) * s->inner + i);
      if (va < vb)
        return -1;
      if (va > vb)
        return 1;
    }
  return 0;
}

static gint
compare_order (gconstpointer a, gconstpointer b, gpointer set)
{
  int64_t ia = *(const int64_t *) a, ib = *(const int64_t *) b;
  int c = compare_slices (set, ia, ib);

  return c != 0 ? c : (ia > ib) - (ia < ib);
}

gboolean
nnp_op_unique_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  const NnpAttr *axis_attr = nnp_node_get_attr (node, "axis");
  gboolean sorted = nnp_node_attr_int (node, "sorted", 1) != 0;
  SliceSet s = { x->constant, 1, nnp_shape_numel (&x->shape), 1 };
  g_autofree int64_t *order = NULL, *group = NULL, *first = NULL, *count = NULL, *rank = NULL;
  int64_t n_unique = 0, dims[NNP_MAX_RANK];
  NnpTensor *out[4] = { NULL };
  gsize es = nnp_dtype_size (x->dtype);
  int axis = -1;

  if (!plain_dtype (x->dtype)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (!need_constant (node, x, 0, error))
    return FALSE;
  if (axis_attr) {
    if (!nnp_normalize_axis (axis_attr->i, x->shape.rank, &axis)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis is out of range for rank %d",
                          x->shape.rank);
      return FALSE;
    }
    s.outer = s.inner = 1;
    for (int d = 0; d < axis; d++)
      s.outer *= x->shape.dims[d];
    for (int d = axis + 1; d < x->shape.rank; d++)
      s.inner *= x->shape.dims[d];
    s.n = x->shape.dims[axis];
  }
  order = g_new (int64_t, MAX (s.n, 1));
  group = g_new (int64_t, MAX (s.n, 1));
  first = g_new (int64_t, MAX (s.n, 1));
  count = g_new0 (int64_t, MAX (s.n, 1));
  rank = g_new (int64_t, MAX (s.n, 1));
  for (int64_t i = 0; i < s.n; i++)
    order[i] = i;
  g_qsort_with_data (order, (gint) s.n, sizeof (int64_t), compare_order, &s);
  /* sorted groups: group[slice], first occurrence and count per group */
  for (int64_t i = 0; i < s.n; i++) {
    if (i == 0 || compare_slices (&s, order[i - 1], order[i]) != 0) {
      first[n_unique] = order[i];
      n_unique++;
    }
    group[order[i]] = n_unique - 1;
    count[n_unique - 1]++;
  }
  /* output position of each group: sorted order, or first occurrence */
  for (int64_t g = 0; g < n_unique; g++)
    rank[g] = g;
  if (!sorted) {
    for (int64_t g = 0; g < n_unique; g++) {
      int64_t r = 0;
      for (int64_t h = 0; h < n_unique; h++)
        r += first[h] < first[g];
      rank[g] = r;
    }
  }
  if (axis < 0) {
    dims[0] = n_unique;
    out[0] = new_tensor (x->dtype, 1, dims);
  } else {
    memcpy (dims, x->shape.dims, sizeof (int64_t) * x->shape.rank);
    dims[axis] = n_unique;
    out[0] = new_tensor (x->dtype, x->shape.rank, dims);
  }
  dims[0] = n_unique;
  out[1] = new_tensor (NNP_DTYPE_INT64, 1, dims);
  out[3] = new_tensor (NNP_DTYPE_INT64, 1, dims);
  dims[0] = s.n;
  out[2] = new_tensor (NNP_DTYPE_INT64, 1, dims);
  for (int k = 0; k < 4; k++) {
    if (out[k] == NULL) {
      for (int j = 0; j < 4; j++)
        if (out[j])
          nnp_tensor_unref (out[j]);
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output too large");
      return FALSE;
    }
  }
  for (int64_t g = 0; g < n_unique; g++) {
    int64_t r = rank[g];
    for (int64_t o = 0; o < s.outer; o++)
      memcpy ((guint8 *) out[0]->data + ((o * n_unique + r) * s.inner) * es,
              (const guint8 *) x->constant->data + ((o * s.n + first[g]) * s.inner) * es,
              s.inner * es);
    ((int64_t *) out[1]->data)[r] = first[g];
    ((int64_t *) out[3]->data)[r] = count[g];
  }
  for (int64_t i = 0; i < s.n; i++)
    ((int64_t *) out[2]->data)[i] = rank[group[i]];
  for (int k = 0; k < 4; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    nnp_op_set_output (graph, node, k, out[k]->dtype, &out[k]->shape);
    if (v)
      nnp_op_set_constant (v, out[k]);
    else
      nnp_tensor_unref (out[k]);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- NonMaxSuppression */

typedef struct {
  double score;
  int64_t index;
} Cand;

static int
compare_cand (const void *a, const void *b)
{
  const Cand *x = a, *y = b;

  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* corners (y1, x1, y2, x2) ordered, of box i */
static void
box_corners (const NnpTensor *boxes, int64_t base, gboolean center, double *c)
{
  double a = elem (boxes, base), b = elem (boxes, base + 1);
  double d = elem (boxes, base + 2), e = elem (boxes, base + 3);

  if (center) {
    /* x_center, y_center, width, height */
    c[0] = b - e / 2;
    c[1] = a - d / 2;
    c[2] = b + e / 2;
    c[3] = a + d / 2;
  } else {
    c[0] = MIN (a, d);
    c[1] = MIN (b, e);
    c[2] = MAX (a, d);
    c[3] = MAX (b, e);
  }
}

static double
iou (const double *a, const double *b)
{
  double ih = MIN (a[2], b[2]) - MAX (a[0], b[0]);
  double iw = MIN (a[3], b[3]) - MAX (a[1], b[1]);
  double aa = (a[2] - a[0]) * (a[3] - a[1]), ab = (b[2] - b[0]) * (b[3] - b[1]), inter;

  if (aa <= 0 || ab <= 0 || ih <= 0 || iw <= 0)
    return 0;
  inter = ih * iw;
  return inter / (aa + ab - inter);
}

static double
scalar_input (const NnpGraph *graph, const NnpNode *node, int k, double dflt)
{
  NnpValue *v = nnp_node_input (graph, node, k);

  return v && v->constant && nnp_tensor_numel (v->constant) > 0 ? elem (v->constant, 0) : dflt;
}

gboolean
nnp_op_non_max_suppression_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *bv = nnp_node_input (graph, node, 0), *sv = nnp_node_input (graph, node, 1);
  NnpValue *y = nnp_node_output (graph, node, 0);
  gboolean center = nnp_node_attr_int (node, "center_point_box", 0) != 0;
  gboolean has_thr = nnp_node_input (graph, node, 4) != NULL;
  int64_t nb, nbox, nc, max_out, dims[2];
  double iou_thr, score_thr;
  g_autofree Cand *cand = NULL;
  g_autofree int64_t *sel = NULL;
  g_autofree double *corners = NULL;
  GArray *found;
  NnpTensor *t;

  for (int k = 0; k < node->n_inputs; k++)
    if (!need_constant (node, nnp_node_input (graph, node, k), k, error))
      return FALSE;
  if (bv->shape.rank != 3 || bv->shape.dims[2] != 4 || sv->shape.rank != 3
      || sv->shape.dims[0] != bv->shape.dims[0] || sv->shape.dims[2] != bv->shape.dims[1]) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "boxes must be [batch, boxes, 4] and scores [batch, classes, boxes]");
    return FALSE;
  }
  nb = bv->shape.dims[0];
  nbox = bv->shape.dims[1];
  nc = sv->shape.dims[1];
  max_out = (int64_t) scalar_input (graph, node, 2, 0);
  iou_thr = scalar_input (graph, node, 3, 0);
  score_thr = scalar_input (graph, node, 4, 0);
  cand = g_new (Cand, MAX (nbox, 1));
  sel = g_new (int64_t, MAX (nbox, 1));
  corners = g_new (double, 4 * MAX (nbox, 1));
  found = g_array_new (FALSE, FALSE, sizeof (int64_t));
  for (int64_t b = 0; b < nb; b++) {
    for (int64_t i = 0; i < nbox; i++)
      box_corners (bv->constant, (b * nbox + i) * 4, center, corners + 4 * i);
    for (int64_t c = 0; c < nc; c++) {
      int64_t n = 0, n_sel = 0;
      for (int64_t i = 0; i < nbox; i++) {
        double s = elem (sv->constant, (b * nc + c) * nbox + i);
        if (!has_thr || s > score_thr) {
          cand[n].score = s;
          cand[n].index = i;
          n++;
        }
      }
      qsort (cand, n, sizeof (Cand), compare_cand);
      for (int64_t i = 0; i < n && n_sel < max_out; i++) {
        gboolean keep = TRUE;
        for (int64_t j = 0; j < n_sel && keep; j++)
          keep = iou (corners + 4 * cand[i].index, corners + 4 * sel[j]) <= iou_thr;
        if (!keep)
          continue;
        sel[n_sel++] = cand[i].index;
        g_array_append_val (found, b);
        g_array_append_val (found, c);
        g_array_append_val (found, cand[i].index);
      }
    }
  }
  dims[0] = found->len / 3;
  dims[1] = 3;
  t = new_tensor (NNP_DTYPE_INT64, 2, dims);
  if (t && found->len)
    memcpy (t->data, found->data, found->len * sizeof (int64_t));
  g_array_free (found, TRUE);
  if (t == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output too large");
    return FALSE;
  }
  nnp_op_set_output (graph, node, 0, NNP_DTYPE_INT64, &t->shape);
  if (y)
    nnp_op_set_constant (y, t);
  else
    nnp_tensor_unref (t);
  return TRUE;
}
