/* libnnpipe: shape inference for the "nn" ops: BatchNormalization, MaxPool,
 * AveragePool, GlobalAveragePool, GlobalMaxPool, Softmax, LogSoftmax,
 * Resize, Pad, ReduceMean, ReduceSum, ReduceMax, ReduceMin, ArgMax.
 *
 * Everything the kernels need is parsed into the structs of nn-params.h.
 * Inputs that decide an output shape (Resize scales/sizes/roi, Pad pads,
 * reduction axes) must be constants at infer time. */
#include "ops/ops.h"
#include "ops/nn-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void
set_output (NnpGraph *graph, NnpNode *node, int k, NnpDType dtype, const NnpShape *shape)
{
  NnpValue *v = nnp_node_output (graph, node, k);

  if (v == NULL)
    return;
  v->dtype = dtype;
  v->shape = *shape;
}

/* Input 0 must be one of the listed dtypes (UNSUPPORTED otherwise). */
static gboolean
check_dtype (const NnpNode *node, const NnpValue *v, int k, const NnpDType *ok, int n_ok,
             GError **error)
{
  for (int i = 0; i < n_ok; i++)
    if (v->dtype == ok[i])
      return TRUE;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                      "input %d ('%s') has unsupported dtype %s", k, v->name,
                      nnp_dtype_name (v->dtype));
  return FALSE;
}

static gboolean
check_float (const NnpNode *node, const NnpValue *v, int k, GError **error)
{
  static const NnpDType ok[] = { NNP_DTYPE_FLOAT32 };
  return check_dtype (node, v, k, ok, G_N_ELEMENTS (ok), error);
}

static int64_t
dims_product (const NnpShape *shape, int begin, int end)
{
  int64_t p = 1;

  for (int k = begin; k < end; k++)
    p *= shape->dims[k];
  return p;
}

/* An optional input counts as absent when omitted or when it has no elements. */
static NnpValue *
optional_input (const NnpGraph *graph, const NnpNode *node, int k)
{
  NnpValue *v = nnp_node_input (graph, node, k);

  if (v == NULL || nnp_shape_numel (&v->shape) == 0)
    return NULL;
  return v;
}

/* Reject non-omitted outputs from index `first` on (training outputs, Indices). */
static gboolean
check_no_extra_outputs (const NnpGraph *graph, const NnpNode *node, int first, const char *what,
                        GError **error)
{
  for (int k = first; k < node->n_outputs; k++) {
    if (nnp_node_output (graph, node, k) != NULL) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "output %d (%s) is not supported", k,
                          what);
      return FALSE;
    }
  }
  return TRUE;
}

/* Read a constant float tensor (float32 or float64) into a new double array. */
static gboolean
const_doubles (const NnpGraph *graph, const NnpNode *node, int input, double **out, int *n,
               GError **error)
{
  NnpValue *v = nnp_node_input (graph, node, input);
  NnpTensor *t;
  int64_t count;

  *out = NULL;
  *n = 0;
  if (v == NULL || v->constant == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d%s%s%s must be a constant (" NNP_DATA_DEPENDENT_NOTE ")", input,
                        v ? " ('" : "", v ? v->name : "", v ? "')" : "");
    return FALSE;
  }
  t = v->constant;
  count = nnp_tensor_numel (t);
  if (count < 0 || count > NNP_MAX_RANK * 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input %d ('%s') has %" G_GINT64_FORMAT " elements", input, v->name, count);
    return FALSE;
  }
  *out = g_new0 (double, MAX (count, 1));
  if (t->dtype == NNP_DTYPE_FLOAT32) {
    const float *src = t->data;
    for (int64_t i = 0; i < count; i++)
      (*out)[i] = src[i];
  } else if (t->dtype == NNP_DTYPE_FLOAT64) {
    const double *src = t->data;
    for (int64_t i = 0; i < count; i++)
      (*out)[i] = src[i];
  } else {
    g_clear_pointer (out, g_free);
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d ('%s') has unsupported dtype %s", input, v->name,
                        nnp_dtype_name (t->dtype));
    return FALSE;
  }
  *n = (int) count;
  return TRUE;
}

/* Normalise a list of axes (no duplicates) into a mask over rank dims. */
static gboolean
axes_to_mask (const NnpNode *node, const int64_t *axes, int n, int rank, gboolean *mask,
              GError **error)
{
  memset (mask, 0, sizeof (gboolean) * NNP_MAX_RANK);
  for (int i = 0; i < n; i++) {
    int a;
    if (!nnp_normalize_axis (axes[i], rank, &a)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %" G_GINT64_FORMAT " is out of range for rank %d", axes[i], rank);
      return FALSE;
    }
    if (mask[a]) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis %" G_GINT64_FORMAT " is repeated",
                          axes[i]);
      return FALSE;
    }
    mask[a] = TRUE;
  }
  return TRUE;
}

/* ------------------------------------------------------ BatchNormalization */

gboolean
nnp_op_batch_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpBatchNormParams *p;
  gboolean spatial;
  int64_t c;

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (graph->opset >= 14 && nnp_node_attr_int (node, "training_mode", 0) != 0) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "training_mode is not supported");
    return FALSE;
  }
  if (!check_no_extra_outputs (graph, node, 1, "training statistics", error))
    return FALSE;
  if (x->shape.rank < 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 0 ('%s') has %d dims, expected at least 2", x->name, x->shape.rank);
    return FALSE;
  }
  c = x->shape.dims[1];
  /* spatial=0 (before opset 9): statistics per element of x's dims 1.. */
  spatial = graph->opset >= 9 || nnp_node_attr_int (node, "spatial", 1) != 0;
  if (!spatial)
    c = dims_product (&x->shape, 1, x->shape.rank);
  for (int k = 1; k < 5; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is missing", k);
      return FALSE;
    }
    if (!check_float (node, v, k, error))
      return FALSE;
    if (spatial ? (v->shape.rank != 1 || v->shape.dims[0] != c)
                : nnp_shape_numel (&v->shape) != c) {
      g_autofree char *s = nnp_shape_to_string (&v->shape);
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input %d ('%s') has shape %s, expected %" G_GINT64_FORMAT, k, v->name, s,
                          c);
      return FALSE;
    }
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpBatchNormParams);
  p->epsilon = nnp_node_attr_float (node, "epsilon", 1e-5f);
  p->n = x->shape.dims[0];
  p->c = c;
  p->inner = spatial ? dims_product (&x->shape, 2, x->shape.rank) : 1;
  set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

/* ------------------------------------------------------------------ pools */

/* Read an ints attribute of exactly n entries (or dflt for all when absent). */
static gboolean
pool_ints (const NnpNode *node, const char *name, int n, int64_t dflt, int64_t min, int64_t *out,
           GError **error)
{
  int count;
  const int64_t *v = nnp_node_attr_ints (node, name, &count);

  if (v == NULL) {
    for (int i = 0; i < n; i++)
      out[i] = dflt;
    return TRUE;
  }
  if (count != n) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "attribute '%s' has %d values, expected %d",
                        name, count, n);
    return FALSE;
  }
  for (int i = 0; i < n; i++) {
    if (v[i] < min) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "attribute '%s'[%d] = %" G_GINT64_FORMAT " is out of range", name, i,
                          v[i]);
      return FALSE;
    }
    out[i] = v[i];
  }
  return TRUE;
}

static gboolean
pool_infer (NnpGraph *graph, NnpNode *node, gboolean is_max, GError **error)
{
  static const NnpDType max_ok[] = { NNP_DTYPE_FLOAT32, NNP_DTYPE_UINT8, NNP_DTYPE_INT8 };
  NnpValue *x = nnp_node_input (graph, node, 0);
  const char *auto_pad = nnp_node_attr_string (node, "auto_pad", "NOTSET");
  gboolean ceil_mode = nnp_node_attr_int (node, "ceil_mode", 0) != 0;
  int64_t kernel[NNP_POOL_MAX_SPATIAL], stride[NNP_POOL_MAX_SPATIAL];
  int64_t dilation[NNP_POOL_MAX_SPATIAL], pads[2 * NNP_POOL_MAX_SPATIAL];
  NnpPoolParams *p;
  NnpShape out_shape;
  int ns, off;

  if (is_max) {
    if (!check_dtype (node, x, 0, max_ok, G_N_ELEMENTS (max_ok), error))
      return FALSE;
    if (!check_no_extra_outputs (graph, node, 1, "Indices", error))
      return FALSE;
  } else if (!check_float (node, x, 0, error)) {
    return FALSE;
  }
  if (x->shape.rank < 3) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 0 ('%s') has %d dims, expected at least 3", x->name, x->shape.rank);
    return FALSE;
  }
  ns = x->shape.rank - 2;
  if (ns > NNP_POOL_MAX_SPATIAL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "%d spatial dims are not supported (at most %d)", ns, NNP_POOL_MAX_SPATIAL);
    return FALSE;
  }
  if (nnp_node_get_attr (node, "kernel_shape") == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "attribute 'kernel_shape' is missing");
    return FALSE;
  }
  if (!pool_ints (node, "kernel_shape", ns, 1, 1, kernel, error)
      || !pool_ints (node, "strides", ns, 1, 1, stride, error)
      || !pool_ints (node, "dilations", ns, 1, 1, dilation, error)
      || !pool_ints (node, "pads", 2 * ns, 0, 0, pads, error))
    return FALSE;

  p = NNP_NODE_NEW_PARAMS (node, NnpPoolParams);
  p->dtype = x->dtype;
  p->planes = x->shape.dims[0] * x->shape.dims[1];
  p->count_include_pad = nnp_node_attr_int (node, "count_include_pad", 0) != 0;
  out_shape = x->shape;
  off = NNP_POOL_MAX_SPATIAL - ns;
  for (int i = 0; i < off; i++) {
    p->in[i] = p->out[i] = p->kernel[i] = p->stride[i] = p->dilation[i] = 1;
    p->pad_begin[i] = p->pad_end[i] = 0;
  }
  for (int i = 0; i < ns; i++) {
    int64_t in = x->shape.dims[2 + i];
    int64_t ek = (kernel[i] - 1) * dilation[i] + 1;
    int64_t pb = pads[i], pe = pads[ns + i], out;

    if (strcmp (auto_pad, "SAME_UPPER") == 0 || strcmp (auto_pad, "SAME_LOWER") == 0) {
      int64_t total;
      out = (in + stride[i] - 1) / stride[i];
      total = MAX (0, (out - 1) * stride[i] + ek - in);
      pb = auto_pad[5] == 'U' ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (strcmp (auto_pad, "VALID") == 0) {
      pb = pe = 0;
      out = in >= ek ? (in - ek) / stride[i] + 1 : 0;
    } else if (strcmp (auto_pad, "NOTSET") == 0 || auto_pad[0] == '\0') {
      int64_t span = in + pb + pe - ek;
      if (span < 0) {
        out = 0;
      } else if (ceil_mode) {
        out = (span + stride[i] - 1) / stride[i] + 1;
        /* the last window must start inside the input or the left padding */
        if ((out - 1) * stride[i] >= in + pb)
          out--;
      } else {
        out = span / stride[i] + 1;
      }
    } else {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown auto_pad '%s'", auto_pad);
      return FALSE;
    }
    if (out <= 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "window %" G_GINT64_FORMAT " does not fit input dim %d (%" G_GINT64_FORMAT
                          ")",
                          ek, 2 + i, in);
      return FALSE;
    }
    p->in[off + i] = in;
    p->out[off + i] = out;
    p->kernel[off + i] = kernel[i];
    p->stride[off + i] = stride[i];
    p->dilation[off + i] = dilation[i];
    p->pad_begin[off + i] = pb;
    p->pad_end[off + i] = pe;
    out_shape.dims[2 + i] = out;
  }
  set_output (graph, node, 0, x->dtype, &out_shape);
  return TRUE;
}

gboolean
nnp_op_max_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return pool_infer (graph, node, TRUE, error);
}

gboolean
nnp_op_average_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return pool_infer (graph, node, FALSE, error);
}

static gboolean
global_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpPoolParams *p;
  NnpShape out_shape;

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (x->shape.rank < 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 0 ('%s') has %d dims, expected at least 2", x->name, x->shape.rank);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpPoolParams);
  p->dtype = x->dtype;
  p->planes = x->shape.dims[0] * x->shape.dims[1];
  for (int i = 0; i < NNP_POOL_MAX_SPATIAL; i++)
    p->in[i] = p->out[i] = p->kernel[i] = p->stride[i] = p->dilation[i] = 1;
  p->in[2] = p->kernel[2] = dims_product (&x->shape, 2, x->shape.rank);
  out_shape = x->shape;
  for (int k = 2; k < out_shape.rank; k++)
    out_shape.dims[k] = 1;
  set_output (graph, node, 0, x->dtype, &out_shape);
  return TRUE;
}

gboolean
nnp_op_global_average_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return global_pool_infer (graph, node, error);
}

gboolean
nnp_op_global_max_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return global_pool_infer (graph, node, error);
}

/* ---------------------------------------------------------------- softmax */

static gboolean
softmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  gboolean coerce = graph->opset < 13;
  int64_t axis = nnp_node_attr_int (node, "axis", coerce ? 1 : -1);
  NnpSoftmaxParams *p;
  int a;

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (x->shape.rank == 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 0 ('%s') is a scalar", x->name);
    return FALSE;
  }
  if (!nnp_normalize_axis (axis, x->shape.rank, &a)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis,
                        x->shape.rank);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpSoftmaxParams);
  p->outer = dims_product (&x->shape, 0, a);
  if (coerce) {
    p->dim = dims_product (&x->shape, a, x->shape.rank);
    p->inner = 1;
  } else {
    p->dim = x->shape.dims[a];
    p->inner = dims_product (&x->shape, a + 1, x->shape.rank);
  }
  set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_upsample_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_resize_infer (graph, node, error);
}

gboolean
nnp_op_softmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return softmax_infer (graph, node, error);
}

gboolean
nnp_op_log_softmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return softmax_infer (graph, node, error);
}

/* ----------------------------------------------------------------- resize */

static gboolean
parse_enum (const NnpNode *node, const char *attr, const char *dflt, const char *const *names,
            int *out, GError **error)
{
  const char *s = nnp_node_attr_string (node, attr, dflt);

  for (int i = 0; names[i]; i++) {
    if (strcmp (s, names[i]) == 0) {
      *out = i;
      return TRUE;
    }
  }
  nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown %s '%s'", attr, s);
  return FALSE;
}

gboolean
nnp_op_resize_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (node->op == NNP_OP_UPSAMPLE && graph->opset >= 11) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "Upsample was removed from ONNX in opset 10 (use Resize)");
    return FALSE;
  }

  static const char *const modes[] = { "nearest", "linear", "cubic", NULL };
  /* same order as NnpResizeCoord */
  static const char *const coords[] = { "half_pixel",           "half_pixel_symmetric",
                                        "pytorch_half_pixel",   "align_corners",
                                        "asymmetric",           "tf_crop_and_resize",
                                        "tf_half_pixel_for_nn", NULL };
  static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil", NULL };
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  int scales_input = graph->opset < 11 ? 1 : 2;
  NnpValue *scales_v = optional_input (graph, node, scales_input);
  NnpValue *sizes_v = graph->opset < 11 ? NULL : optional_input (graph, node, 3);
  int axes[NNP_MAX_RANK], n_axes = rank;
  g_autofree double *scales = NULL, *roi = NULL;
  g_autofree int64_t *sizes = NULL;
  NnpResizeParams *p;
  NnpShape out_shape;
  int mode, coord = NNP_RESIZE_ASYMMETRIC, nearest = NNP_RESIZE_FLOOR, n;
  /* Upsample (opsets 7 to 9) is Resize 10; before 9 its scales are an attribute */
  gboolean legacy_scales = node->op == NNP_OP_UPSAMPLE && graph->opset < 9;

  if (!parse_enum (node, "mode", "nearest", modes, &mode, error))
    return FALSE;
  if (graph->opset >= 11) {
    if (!parse_enum (node, "coordinate_transformation_mode", "half_pixel", coords, &coord, error)
        || !parse_enum (node, "nearest_mode", "round_prefer_floor", nearests, &nearest, error))
      return FALSE;
  } else if (mode == NNP_RESIZE_CUBIC) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "mode 'cubic' needs opset 11");
    return FALSE;
  }
  if (nnp_node_attr_int (node, "antialias", 0) != 0) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "antialias is not supported");
    return FALSE;
  }
  if (strcmp (nnp_node_attr_string (node, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "keep_aspect_ratio_policy '%s' is not supported",
                        nnp_node_attr_string (node, "keep_aspect_ratio_policy", ""));
    return FALSE;
  }
  if (mode == NNP_RESIZE_NEAREST) {
    if (nnp_dtype_size (x->dtype) == 0 || nnp_dtype_size (x->dtype) > 8
        || (nnp_dtype_size (x->dtype) & (nnp_dtype_size (x->dtype) - 1)) != 0) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has unsupported dtype %s",
                          nnp_dtype_name (x->dtype));
      return FALSE;
    }
  } else if (!check_float (node, x, 0, error)) {
    return FALSE;
  }
  if (rank < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 0 ('%s') is a scalar", x->name);
    return FALSE;
  }
  /* axes (opset 18) */
  for (int i = 0; i < rank; i++)
    axes[i] = i;
  if (nnp_node_get_attr (node, "axes")) {
    const int64_t *a = nnp_node_attr_ints (node, "axes", &n_axes);
    gboolean mask[NNP_MAX_RANK];
    if (!axes_to_mask (node, a, n_axes, rank, mask, error))
      return FALSE;
    for (int i = 0; i < n_axes; i++)
      nnp_normalize_axis (a[i], rank, &axes[i]);
  }

  if (legacy_scales && nnp_node_get_attr (node, "scales") == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no 'scales' attribute");
    return FALSE;
  }
  if (!legacy_scales && (scales_v == NULL) == (sizes_v == NULL)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "exactly one of 'scales' and 'sizes' must be given");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpResizeParams);
  p->mode = mode;
  p->coord = coord;
  p->nearest = nearest;
  p->dtype = x->dtype;
  p->rank = rank;
  p->cubic_a = nnp_node_attr_float (node, "cubic_coeff_a", -0.75f);
  p->exclude_outside = nnp_node_attr_int (node, "exclude_outside", 0) != 0;
  p->extrapolation_value = nnp_node_attr_float (node, "extrapolation_value", 0.f);
  for (int i = 0; i < rank; i++) {
    p->in[i] = p->out[i] = x->shape.dims[i];
    p->scale[i] = 1.0;
    p->roi_start[i] = 0.0;
    p->roi_end[i] = 1.0;
  }
  if (coord == NNP_RESIZE_TF_CROP_AND_RESIZE) {
    if (!const_doubles (graph, node, 1, &roi, &n, error))
      return FALSE;
    if (n != 2 * n_axes) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "roi has %d values, expected %d", n,
                          2 * n_axes);
      return FALSE;
    }
    for (int i = 0; i < 2 * n_axes; i++) {
      /* roi feeds coordinates that become indices: finite and sane only */
      if (!(fabs (roi[i]) <= 1e6)) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "roi[%d] = %g is not a finite number in -1e6..1e6", i, roi[i]);
        return FALSE;
      }
    }
    for (int i = 0; i < n_axes; i++) {
      p->roi_start[axes[i]] = roi[i];
      p->roi_end[axes[i]] = roi[n_axes + i];
    }
  }
  if (legacy_scales) {
    /* Upsample 7: scales is an attribute */
    const float *f = nnp_node_attr_floats (node, "scales", &n);
    scales = g_new (double, MAX (n, 1));
    for (int i = 0; i < n; i++)
      scales[i] = f[i];
  }
  if (scales_v || legacy_scales) {
    if (!legacy_scales && !const_doubles (graph, node, scales_input, &scales, &n, error))
      return FALSE;
    if (n != n_axes) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "scales has %d values, expected %d", n,
                          n_axes);
      return FALSE;
    }
    for (int i = 0; i < n_axes; i++) {
      int a = axes[i];
      double extent = p->roi_end[a] - p->roi_start[a], out;
      if (!(scales[i] > 0.0) || !isfinite (scales[i])) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "scales[%d] = %g is not a finite positive number", i, scales[i]);
        return FALSE;
      }
      /* the output dim is checked as a double before it becomes an integer */
      out = floor ((double) p->in[a] * extent * scales[i]);
      if (!(out >= 0.0 && out <= (double) G_MAXINT32)) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "scales[%d] = %g makes dim %d of the output %g (%" G_GINT64_FORMAT
                            " x %g), outside 0..%d",
                            i, scales[i], a, out, p->in[a], scales[i] * extent, G_MAXINT32);
        return FALSE;
      }
      p->scale[a] = scales[i];
      p->out[a] = (int64_t) out;
    }
  } else {
    if (!nnp_node_const_ints (graph, node, 3, &sizes, &n, error))
      return FALSE;
    if (n != n_axes) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "sizes has %d values, expected %d", n,
                          n_axes);
      return FALSE;
    }
    for (int i = 0; i < n_axes; i++) {
      int a = axes[i];
      if (sizes[i] < 0 || sizes[i] > G_MAXINT32) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "sizes[%d] = %" G_GINT64_FORMAT " is outside 0..%d", i, sizes[i],
                            G_MAXINT32);
        return FALSE;
      }
      p->out[a] = sizes[i];
      p->scale[a] = p->in[a] > 0 ? (double) sizes[i] / (double) p->in[a] : 1.0;
    }
  }
  for (int i = 0; i < rank; i++) {
    if (p->in[i] == 0 && p->out[i] > 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cannot resize empty dim %d", i);
      return FALSE;
    }
  }
  nnp_shape_set (&out_shape, rank, p->out);
  set_output (graph, node, 0, x->dtype, &out_shape);
  return TRUE;
}

/* -------------------------------------------------------------------- pad */

/* Store `value` converted to dtype into bytes; FALSE for dtypes we cannot
 * and for values an integer dtype cannot hold (checked as a double first:
 * converting NaN or an out-of-range value to an integer is undefined). */
static gboolean
pad_value_bytes (NnpDType dtype, double value, guint8 *bytes)
{
  memset (bytes, 0, 8);
#define STORE(T) \
  do { \
    T v_ = (T) value; \
    memcpy (bytes, &v_, sizeof (T)); \
  } while (0)
#define STORE_INT(T, LO, HI) \
  do { \
    if (!(value >= (double) (LO) && value < (double) (HI) + 1.0)) \
      return FALSE; \
    STORE (T); \
  } while (0)
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: STORE (float); return TRUE;
    case NNP_DTYPE_FLOAT64: STORE (double); return TRUE;
    case NNP_DTYPE_UINT8: STORE_INT (guint8, 0, G_MAXUINT8); return TRUE;
    case NNP_DTYPE_INT8: STORE_INT (gint8, G_MININT8, G_MAXINT8); return TRUE;
    case NNP_DTYPE_UINT16: STORE_INT (guint16, 0, G_MAXUINT16); return TRUE;
    case NNP_DTYPE_INT16: STORE_INT (gint16, G_MININT16, G_MAXINT16); return TRUE;
    case NNP_DTYPE_INT32: STORE_INT (gint32, G_MININT32, G_MAXINT32); return TRUE;
    case NNP_DTYPE_INT64: STORE_INT (gint64, G_MININT64, G_MAXINT64); return TRUE;
    case NNP_DTYPE_UINT32: STORE_INT (guint32, 0, G_MAXUINT32); return TRUE;
    case NNP_DTYPE_UINT64: STORE_INT (guint64, 0, G_MAXUINT64); return TRUE;
    case NNP_DTYPE_BOOL: bytes[0] = value != 0.0; return TRUE;
    default: return value == 0.0;
  }
#undef STORE_INT
#undef STORE
}

gboolean
nnp_op_pad_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  static const char *const pad_modes[] = { "constant", "reflect", "edge", "wrap", NULL };
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  gsize esize = nnp_dtype_size (x->dtype);
  int64_t begin[NNP_MAX_RANK] = { 0 }, end[NNP_MAX_RANK] = { 0 };
  int axes[NNP_MAX_RANK], n_axes = rank;
  g_autofree int64_t *pads_in = NULL;
  const int64_t *pads;
  NnpPadParams *p;
  NnpShape out_shape;
  int mode, n;

  if (esize == 0 || esize > 8) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has unsupported dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (!parse_enum (node, "mode", "constant", pad_modes, &mode, error))
    return FALSE;
  for (int i = 0; i < rank; i++)
    axes[i] = i;
  p = NNP_NODE_NEW_PARAMS (node, NnpPadParams);
  p->mode = mode;
  p->esize = esize;
  p->rank = rank;
  if (graph->opset < 11) {
    pads = nnp_node_attr_ints (node, graph->opset < 2 ? "paddings" : "pads", &n);
    if (pads == NULL)
      pads = nnp_node_attr_ints (node, "pads", &n);
    if (!pad_value_bytes (x->dtype, nnp_node_attr_float (node, "value", 0.f), p->value)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "value %g is not supported for dtype %s",
                          nnp_node_attr_float (node, "value", 0.f), nnp_dtype_name (x->dtype));
      return FALSE;
    }
  } else {
    NnpValue *cv = optional_input (graph, node, 2);
    NnpValue *av = optional_input (graph, node, 3);
    if (!nnp_node_const_ints (graph, node, 1, &pads_in, &n, error))
      return FALSE;
    pads = pads_in;
    if (cv) {
      if (cv->constant == NULL) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 2 ('%s') must be a constant",
                            cv->name);
        return FALSE;
      }
      if (cv->dtype != x->dtype || nnp_tensor_numel (cv->constant) != 1) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 2 ('%s') must be one %s",
                            cv->name, nnp_dtype_name (x->dtype));
        return FALSE;
      }
      memcpy (p->value, cv->constant->data, esize);
    }
    if (av) {
      g_autofree int64_t *a = NULL;
      gboolean mask[NNP_MAX_RANK];
      if (!nnp_node_const_ints (graph, node, 3, &a, &n_axes, error)
          || !axes_to_mask (node, a, n_axes, rank, mask, error))
        return FALSE;
      for (int i = 0; i < n_axes; i++)
        nnp_normalize_axis (a[i], rank, &axes[i]);
    }
  }
  if (n != 2 * n_axes) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "pads has %d values, expected %d", n,
                        2 * n_axes);
    return FALSE;
  }
  for (int i = 0; i < n_axes; i++) {
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[n_axes + i];
  }
  out_shape = x->shape;
  for (int i = 0; i < rank; i++) {
    int64_t in = x->shape.dims[i], out;
    /* pads come from the model: their sum with the dim may overflow int64 */
    if (__builtin_add_overflow (in, begin[i], &out) || __builtin_add_overflow (out, end[i], &out)
        || out > G_MAXINT32) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "pads %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
                          " make dim %d larger than %d",
                          begin[i], end[i], i, G_MAXINT32);
      return FALSE;
    }
    if (out < 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "pads crop dim %d (%" G_GINT64_FORMAT ") below zero", i, in);
      return FALSE;
    }
    if (mode != NNP_PAD_CONSTANT && in == 0 && out > 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cannot %s-pad empty dim %d",
                          pad_modes[mode], i);
      return FALSE;
    }
    p->in[i] = in;
    p->out[i] = out;
    p->pad_begin[i] = begin[i];
    out_shape.dims[i] = out;
  }
  set_output (graph, node, 0, x->dtype, &out_shape);
  return TRUE;
}

/* ------------------------------------------------------------- reductions */

gboolean
nnp_op_reduce_infer (NnpGraph *graph, NnpNode *node, gboolean axes_from_input, gboolean float_only,
                     gboolean allow_f64, GError **error)
{
  static const NnpDType ok[] = { NNP_DTYPE_FLOAT32, NNP_DTYPE_INT32, NNP_DTYPE_INT64 };
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  gboolean keepdims = nnp_node_attr_int (node, "keepdims", 1) != 0;
  gboolean noop = nnp_node_attr_int (node, "noop_with_empty_axes", 0) != 0;
  gboolean mask[NNP_MAX_RANK];
  g_autofree int64_t *axes_in = NULL;
  const int64_t *axes = NULL;
  NnpReduceParams *p;
  NnpShape out_shape;
  int n = 0, r = 0;

  if (!(allow_f64 && x->dtype == NNP_DTYPE_FLOAT64)
      && !check_dtype (node, x, 0, ok, float_only ? 1 : G_N_ELEMENTS (ok), error))
    return FALSE;
  if (axes_from_input) {
    if (nnp_node_input (graph, node, 1) != NULL) {
      if (!nnp_node_const_ints (graph, node, 1, &axes_in, &n, error))
        return FALSE;
      axes = axes_in;
    }
  } else {
    axes = nnp_node_attr_ints (node, "axes", &n);
  }
  if (!axes_to_mask (node, axes, n, rank, mask, error))
    return FALSE;
  p = NNP_NODE_NEW_PARAMS (node, NnpReduceParams);
  p->dtype = x->dtype;
  p->count = 1;
  if (n == 0) {
    if (noop) {
      p->identity = TRUE;
      p->rank = 1;
      p->dims[0] = nnp_shape_numel (&x->shape);
      set_output (graph, node, 0, x->dtype, &x->shape);
      return TRUE;
    }
    for (int i = 0; i < rank; i++)
      mask[i] = TRUE;
  }
  out_shape.rank = 0;
  for (int i = 0; i < rank; i++) {
    int64_t d = x->shape.dims[i];
    if (mask[i]) {
      p->count *= d;
      if (keepdims)
        out_shape.dims[out_shape.rank++] = 1;
    } else {
      out_shape.dims[out_shape.rank++] = d;
    }
    if (d == 1)
      continue;
    if (r > 0 && p->reduced[r - 1] == mask[i]) {
      p->dims[r - 1] *= d;
    } else {
      p->dims[r] = d;
      p->reduced[r] = mask[i];
      r++;
    }
  }
  if (r == 0) {
    p->dims[0] = 1;
    p->reduced[0] = FALSE;
    r = 1;
  }
  p->rank = r;
  p->identity = TRUE;
  for (int i = 0; i < r; i++)
    if (p->reduced[i])
      p->identity = FALSE;
  if (p->identity) {
    p->rank = 1;
    p->dims[0] = nnp_shape_numel (&x->shape);
  }
  set_output (graph, node, 0, x->dtype, &out_shape);
  return TRUE;
}

gboolean
nnp_op_reduce_mean_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_reduce_infer (graph, node, graph->opset >= 18, TRUE, FALSE, error);
}

gboolean
nnp_op_reduce_sum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_reduce_infer (graph, node, graph->opset >= 13, FALSE, FALSE, error);
}

gboolean
nnp_op_reduce_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_reduce_infer (graph, node, graph->opset >= 18, FALSE, FALSE, error);
}

gboolean
nnp_op_reduce_min_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return nnp_op_reduce_infer (graph, node, graph->opset >= 18, FALSE, FALSE, error);
}

gboolean
nnp_op_arg_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  static const NnpDType ok[] = { NNP_DTYPE_FLOAT32, NNP_DTYPE_INT32, NNP_DTYPE_INT64 };
  NnpValue *x = nnp_node_input (graph, node, 0);
  int64_t axis = nnp_node_attr_int (node, "axis", 0);
  gboolean keepdims = nnp_node_attr_int (node, "keepdims", 1) != 0;
  NnpArgMaxParams *p;
  NnpShape out_shape;
  int a;

  if (!check_dtype (node, x, 0, ok, G_N_ELEMENTS (ok), error))
    return FALSE;
  if (!nnp_normalize_axis (axis, x->shape.rank, &a)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis,
                        x->shape.rank);
    return FALSE;
  }
  if (x->shape.dims[a] == 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis %d of input 0 ('%s') is empty", a,
                        x->name);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpArgMaxParams);
  p->dtype = x->dtype;
  p->outer = dims_product (&x->shape, 0, a);
  p->dim = x->shape.dims[a];
  p->inner = dims_product (&x->shape, a + 1, x->shape.rank);
  p->select_last_index = nnp_node_attr_int (node, "select_last_index", 0) != 0;
  out_shape.rank = 0;
  for (int i = 0; i < x->shape.rank; i++) {
    if (i != a)
      out_shape.dims[out_shape.rank++] = x->shape.dims[i];
    else if (keepdims)
      out_shape.dims[out_shape.rank++] = 1;
  }
  set_output (graph, node, 0, NNP_DTYPE_INT64, &out_shape);
  return TRUE;
}
