/* libnnpipe: shape inference for the ops that make tensors from attributes
 * and constant inputs (Constant, ConstantOfShape, Range): their outputs are
 * constants computed here, at specialisation.  The helpers they share with
 * the shape ops are in ops-shape.c (ops.h). */
#include "ops/ops.h"
#include "ops/shape-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- Constant */

static NnpTensor *
new_scalar (NnpDType dtype, const void *data, gsize esize)
{
  NnpShape shape;
  NnpTensor *t;

  nnp_shape_set (&shape, 0, NULL);
  t = nnp_tensor_new (dtype, &shape, NULL);
  if (t)
    memcpy (t->data, data, esize);
  return t;
}

gboolean
nnp_op_constant_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *out = nnp_node_output (graph, node, 0);
  NnpTensor *t = NULL;
  const NnpAttr *a;

  if ((a = nnp_node_get_attr (node, "value")) != NULL) {
    if (a->type != NNP_ATTR_TENSOR || a->t == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "attribute 'value' is not a tensor");
      return FALSE;
    }
    if (nnp_dtype_size (a->t->dtype) == 0) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "value of dtype %s is not supported",
                          nnp_dtype_name (a->t->dtype));
      return FALSE;
    }
    if (!nnp_shape_is_static (&a->t->shape)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "value has no static shape");
      return FALSE;
    }
    t = nnp_tensor_ref (a->t);
  } else if ((a = nnp_node_get_attr (node, "value_float")) != NULL && a->type == NNP_ATTR_FLOAT) {
    t = new_scalar (NNP_DTYPE_FLOAT32, &a->f, sizeof (float));
  } else if ((a = nnp_node_get_attr (node, "value_floats")) != NULL && a->type == NNP_ATTR_FLOATS) {
    t = nnp_op_new_1d (NNP_DTYPE_FLOAT32, a->n, a->floats, sizeof (float));
  } else if ((a = nnp_node_get_attr (node, "value_int")) != NULL && a->type == NNP_ATTR_INT) {
    t = new_scalar (NNP_DTYPE_INT64, &a->i, sizeof (int64_t));
  } else if ((a = nnp_node_get_attr (node, "value_ints")) != NULL && a->type == NNP_ATTR_INTS) {
    t = nnp_op_new_1d (NNP_DTYPE_INT64, a->n, a->ints, sizeof (int64_t));
  } else if (nnp_node_get_attr (node, "value_string") || nnp_node_get_attr (node, "value_strings")
             || nnp_node_get_attr (node, "sparse_value")) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "string and sparse constants are not supported");
    return FALSE;
  } else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no value attribute");
    return FALSE;
  }
  if (t == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cannot build the value tensor");
    return FALSE;
  }
  g_free (node->params);
  node->params = NULL;
  node->params_size = 0;
  if (out == NULL) {
    nnp_tensor_unref (t);
    return TRUE;
  }
  out->dtype = t->dtype;
  out->shape = t->shape;
  nnp_op_set_constant (out, t);
  return TRUE;
}

/* ---------------------------------------------------------------- ConstantOfShape */

gboolean
nnp_op_constant_of_shape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const NnpAttr *value = nnp_node_get_attr (node, "value");
  g_autofree int64_t *req = NULL;
  NnpDType dtype = NNP_DTYPE_FLOAT32;
  NnpFillParams *p;
  NnpShape shape;
  int n;

  if (!nnp_node_const_ints (graph, node, 0, &req, &n, error))
    return FALSE;
  if (!nnp_op_ints_to_shape (node, "shape", req, n, &shape, error))
    return FALSE;
  if (value != NULL) {
    gsize esize;
    if (value->type != NNP_ATTR_TENSOR || value->t == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "attribute 'value' is not a tensor");
      return FALSE;
    }
    esize = nnp_dtype_size (value->t->dtype);
    if (esize == 0 || esize > 8) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "value of dtype %s is not supported",
                          nnp_dtype_name (value->t->dtype));
      return FALSE;
    }
    if (nnp_tensor_numel (value->t) != 1) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "value must have one element, has %" G_GINT64_FORMAT,
                          nnp_tensor_numel (value->t));
      return FALSE;
    }
    dtype = value->t->dtype;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpFillParams);
  p->esize = (int64_t) nnp_dtype_size (dtype);
  if (value != NULL)
    memcpy (p->value, value->t->data, p->esize);
  nnp_op_set_output (graph, node, 0, dtype, &shape);
  return TRUE;
}

/* ---------------------------------------------------------------- Range */

static gboolean
range_scalar (const NnpGraph *graph, const NnpNode *node, int k, NnpDType dtype, double *f,
              int64_t *i, GError **error)
{
  NnpValue *v = nnp_node_input (graph, node, k);
  const NnpTensor *t = v->constant;

  if (t == NULL) {
    nnp_node_set_error (
        error, NNP_ERROR_UNSUPPORTED, node,
        "input %d ('%s') must be a constant (data-dependent shapes are not supported)", k, v->name);
    return FALSE;
  }
  if (t->dtype != dtype || nnp_tensor_numel (t) != 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d ('%s') must be a %s scalar", k,
                        v->name, nnp_dtype_name (dtype));
    return FALSE;
  }
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: *f = *(const float *) t->data; break;
    case NNP_DTYPE_FLOAT64: *f = *(const double *) t->data; break;
    case NNP_DTYPE_INT16: *i = *(const int16_t *) t->data; break;
    case NNP_DTYPE_INT32: *i = *(const int32_t *) t->data; break;
    default: *i = *(const int64_t *) t->data; break;
  }
  return TRUE;
}

gboolean
nnp_op_range_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpDType dtype = nnp_node_input (graph, node, 0)->dtype;
  double fs = 0, fl = 0, fd = 0;
  int64_t is = 0, il = 0, id = 0, count;
  NnpRangeParams *p;
  NnpShape shape;

  if (dtype != NNP_DTYPE_FLOAT32 && dtype != NNP_DTYPE_FLOAT64 && dtype != NNP_DTYPE_INT16
      && dtype != NNP_DTYPE_INT32 && dtype != NNP_DTYPE_INT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "dtype %s is not supported",
                        nnp_dtype_name (dtype));
    return FALSE;
  }
  if (!range_scalar (graph, node, 0, dtype, &fs, &is, error)
      || !range_scalar (graph, node, 1, dtype, &fl, &il, error)
      || !range_scalar (graph, node, 2, dtype, &fd, &id, error))
    return FALSE;

  if (dtype == NNP_DTYPE_FLOAT32 || dtype == NNP_DTYPE_FLOAT64) {
    double c;
    if (fd == 0 || !isfinite (fs) || !isfinite (fl) || !isfinite (fd)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "start, limit and delta must be finite and delta non-zero");
      return FALSE;
    }
    if (dtype == NNP_DTYPE_FLOAT32)
      c = ceilf (((float) fl - (float) fs) / (float) fd);
    else
      c = ceil ((fl - fs) / fd);
    if (c > (double) G_MAXINT32) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output of %g elements is too large", c);
      return FALSE;
    }
    count = c > 0 ? (int64_t) c : 0;
  } else {
    if (id == 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "delta is 0");
      return FALSE;
    }
    /* unsigned differences: exact even when limit - start overflows int64 */
    if (id > 0 && il > is)
      count = (int64_t) (((guint64) il - (guint64) is - 1) / (guint64) id + 1);
    else if (id < 0 && is > il)
      count = (int64_t) (((guint64) is - (guint64) il - 1) / (0 - (guint64) id) + 1);
    else
      count = 0;
    if (count > G_MAXINT32) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "output of %" G_GINT64_FORMAT " elements is too large", count);
      return FALSE;
    }
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpRangeParams);
  p->dtype = dtype;
  p->count = count;
  p->istart = is;
  p->idelta = id;
  p->fstart = fs;
  p->fdelta = fd;
  nnp_shape_set (&shape, 1, &count);
  nnp_op_set_output (graph, node, 0, dtype, &shape);
  return TRUE;
}
