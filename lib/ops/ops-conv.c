/* libnnpipe: shape inference for Conv, ConvTranspose, MatMul and Gemm.
 *
 * Float32 only.  Attributes are parsed once into the structs of
 * conv-params.h; the kernels read nothing else. */
#include "ops/ops.h"
#include "ops/conv-params.h"

#include <string.h>

/* ---------------------------------------------------------------- helpers */

static gboolean
check_float (const NnpNode *node, const NnpValue *v, int k, const char *what, GError **error)
{
  if (v->dtype != NNP_DTYPE_FLOAT32) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d (%s) has dtype %s, only float32 is supported", k, what,
                        nnp_dtype_name (v->dtype));
    return FALSE;
  }
  return TRUE;
}

static void
set_output (NnpGraph *graph, NnpNode *node, const NnpShape *shape)
{
  NnpValue *v = nnp_node_output (graph, node, 0);

  if (v == NULL)
    return;
  v->dtype = NNP_DTYPE_FLOAT32;
  v->shape = *shape;
}

/* An optional INTS attribute of exactly n entries into out[] (dflt when absent). */
static gboolean
get_ints_attr (const NnpNode *node, const char *name, int n, int64_t dflt, int64_t *out,
               GError **error)
{
  int count = 0;
  const int64_t *v = nnp_node_attr_ints (node, name, &count);

  if (nnp_node_get_attr (node, name) == NULL) {
    for (int i = 0; i < n; i++)
      out[i] = dflt;
    return TRUE;
  }
  if (count != n) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "attribute '%s' has %d values, expected %d",
                        name, count, n);
    return FALSE;
  }
  memcpy (out, v, n * sizeof (int64_t));
  return TRUE;
}

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } AutoPad;

static gboolean
get_auto_pad (const NnpNode *node, AutoPad *pad, GError **error)
{
  const char *s = nnp_node_attr_string (node, "auto_pad", "NOTSET");

  if (strcmp (s, "NOTSET") == 0 || s[0] == '\0')
    *pad = PAD_NOTSET;
  else if (strcmp (s, "SAME_UPPER") == 0)
    *pad = PAD_SAME_UPPER;
  else if (strcmp (s, "SAME_LOWER") == 0)
    *pad = PAD_SAME_LOWER;
  else if (strcmp (s, "VALID") == 0)
    *pad = PAD_VALID;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown auto_pad '%s'", s);
    return FALSE;
  }
  return TRUE;
}

/* Common part of Conv / ConvTranspose: X, W, B checks and the spatial
 * attributes (in model order, n = n_spatial entries).  `wch` is the weight
 * dim that must equal C / group (1 for Conv, 0 for ConvTranspose). */
typedef struct {
  int n;
  int64_t kernel[NNP_CONV_SPATIAL], strides[NNP_CONV_SPATIAL], dil[NNP_CONV_SPATIAL];
  int64_t pads[2 * NNP_CONV_SPATIAL];
  AutoPad auto_pad;
  int64_t group;
} ConvAttrs;

static gboolean
conv_common (const NnpNode *node, const NnpValue *x, const NnpValue *w, const NnpValue *b,
             gboolean transpose, ConvAttrs *a, NnpConvParams *p, GError **error)
{
  int rank, n;
  int64_t c, m;
  int count = 0;

  rank = x->shape.rank;
  if (rank < 3) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 0 (X) has %d dims, expected at least 3", rank);
    return FALSE;
  }
  if (rank > 2 + NNP_CONV_SPATIAL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input 0 (X) has %d dims, at most %d are supported", rank,
                        2 + NNP_CONV_SPATIAL);
    return FALSE;
  }
  if (w->shape.rank != rank) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 1 (weight) has %d dims, expected %d",
                        w->shape.rank, rank);
    return FALSE;
  }
  n = a->n = rank - 2;
  a->group = nnp_node_attr_int (node, "group", 1);
  c = x->shape.dims[1];
  if (a->group < 1 || c % a->group != 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "group %" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                        " input channels",
                        a->group, c);
    return FALSE;
  }
  if (w->shape.dims[transpose ? 0 : 1] * (transpose ? 1 : a->group) != c) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 1 (weight) has %" G_GINT64_FORMAT
                        " input channels per group, expected %" G_GINT64_FORMAT,
                        w->shape.dims[transpose ? 0 : 1] / (transpose ? a->group : 1),
                        c / a->group);
    return FALSE;
  }
  if (transpose) {
    m = w->shape.dims[1] * a->group;
  } else {
    m = w->shape.dims[0];
    if (m % a->group != 0) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "group %" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                          " output channels",
                          a->group, m);
      return FALSE;
    }
  }
  if (b && (b->shape.rank != 1 || b->shape.dims[0] != m)) {
    char *s = nnp_shape_to_string (&b->shape);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input 2 (bias) has shape %s, expected %" G_GINT64_FORMAT, s, m);
    g_free (s);
    return FALSE;
  }
  if (nnp_node_get_attr (node, "kernel_shape")) {
    const int64_t *ks = nnp_node_attr_ints (node, "kernel_shape", &count);
    if (count != n) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "attribute 'kernel_shape' has %d values, expected %d", count, n);
      return FALSE;
    }
    for (int i = 0; i < n; i++) {
      if (ks[i] != w->shape.dims[2 + i]) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "kernel_shape[%d] = %" G_GINT64_FORMAT
                            " but the weight has %" G_GINT64_FORMAT,
                            i, ks[i], w->shape.dims[2 + i]);
        return FALSE;
      }
    }
  }
  for (int i = 0; i < n; i++)
    a->kernel[i] = w->shape.dims[2 + i];
  if (!get_ints_attr (node, "strides", n, 1, a->strides, error)
      || !get_ints_attr (node, "dilations", n, 1, a->dil, error)
      || !get_ints_attr (node, "pads", 2 * n, 0, a->pads, error)
      || !get_auto_pad (node, &a->auto_pad, error))
    return FALSE;
  for (int i = 0; i < n; i++) {
    /* bounded so that the shape arithmetic below cannot overflow int64 */
    if (a->strides[i] > G_MAXINT32 || a->dil[i] > G_MAXINT32 || a->kernel[i] > G_MAXINT32
        || a->pads[i] > G_MAXINT32 || a->pads[i] < -G_MAXINT32 || a->pads[n + i] > G_MAXINT32
        || a->pads[n + i] < -G_MAXINT32 || x->shape.dims[2 + i] > G_MAXINT32) {
      nnp_node_set_error (
          error, NNP_ERROR_INVALID, node,
          "axis %d: input dim, kernel, stride, dilation and pads must be at most %d", i,
          G_MAXINT32);
      return FALSE;
    }
    if (a->strides[i] < 1 || a->dil[i] < 1 || a->kernel[i] < 1) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %d: kernel %" G_GINT64_FORMAT ", stride %" G_GINT64_FORMAT
                          " and dilation %" G_GINT64_FORMAT " must be positive",
                          i, a->kernel[i], a->strides[i], a->dil[i]);
      return FALSE;
    }
    if (!transpose && (a->pads[i] < 0 || a->pads[n + i] < 0)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "negative pads");
      return FALSE;
    }
  }
  for (int i = 0; i < rank; i++) {
    if (x->shape.dims[i] == 0 || w->shape.dims[i] == 0) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "empty input or weight");
      return FALSE;
    }
  }

  memset (p, 0, sizeof (*p));
  p->n_spatial = n;
  p->has_bias = b != NULL;
  p->batch = x->shape.dims[0];
  p->in_channels = c;
  p->out_channels = m;
  p->group = a->group;
  for (int i = 0; i < NNP_CONV_SPATIAL; i++) {
    p->in_dims[i] = p->out_dims[i] = p->kernel[i] = p->strides[i] = p->dilations[i] = 1;
  }
  for (int i = 0; i < n; i++) {
    int d = NNP_CONV_SPATIAL - n + i;
    p->in_dims[d] = x->shape.dims[2 + i];
    p->kernel[d] = a->kernel[i];
    p->strides[d] = a->strides[i];
    p->dilations[d] = a->dil[i];
  }
  return TRUE;
}

gboolean
nnp_op_conv_output_shape (const NnpNode *node, const NnpConvParams *p, NnpShape *out,
                          GError **error)
{
  out->rank = 2 + p->n_spatial;
  out->dims[0] = p->batch;
  out->dims[1] = p->out_channels;
  for (int i = 0; i < p->n_spatial; i++) {
    int64_t d = p->out_dims[NNP_CONV_SPATIAL - p->n_spatial + i];
    if (d < 1) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "output spatial dim %d would be %" G_GINT64_FORMAT, i, d);
      return FALSE;
    }
    out->dims[2 + i] = d;
  }
  if (nnp_shape_numel (out) < 0 || nnp_shape_numel (out) > G_MAXINT64 / 64) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output is too large");
    return FALSE;
  }
  return TRUE;
}

static gboolean
finish_conv (NnpGraph *graph, NnpNode *node, NnpConvParams *p, GError **error)
{
  NnpShape out;
  NnpConvParams *dst;

  if (!nnp_op_conv_output_shape (node, p, &out, error))
    return FALSE;
  dst = NNP_NODE_NEW_PARAMS (node, NnpConvParams);
  *dst = *p;
  set_output (graph, node, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- Conv */

/* Float inputs of Conv / ConvTranspose. */
static gboolean
check_conv_float (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *b = nnp_node_input (graph, node, 2);

  return check_float (node, nnp_node_input (graph, node, 0), 0, "X", error)
         && check_float (node, nnp_node_input (graph, node, 1), 1, "weight", error)
         && (b == NULL || check_float (node, b, 2, "bias", error));
}

gboolean
nnp_op_conv_geometry (const NnpNode *node, const NnpValue *x, const NnpValue *w, const NnpValue *b,
                      NnpConvParams *pp, GError **error)
{
  ConvAttrs a;
  NnpConvParams p;
  int n;

  if (!conv_common (node, x, w, b, FALSE, &a, &p, error))
    return FALSE;
  n = a.n;
  for (int i = 0; i < n; i++) {
    int d = NNP_CONV_SPATIAL - n + i;
    int64_t in = p.in_dims[d], s = a.strides[i];
    int64_t dk = (a.kernel[i] - 1) * a.dil[i] + 1;
    int64_t pb = 0, pe = 0, out;

    switch (a.auto_pad) {
      case PAD_NOTSET:
        pb = a.pads[i];
        pe = a.pads[n + i];
        out = (in + pb + pe - dk) >= 0 ? (in + pb + pe - dk) / s + 1 : 0;
        break;
      case PAD_VALID: out = in >= dk ? (in - dk) / s + 1 : 0; break;
      default: {
        int64_t total;
        out = (in + s - 1) / s;
        total = MAX (0, (out - 1) * s + dk - in);
        pb = a.auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
        pe = total - pb;
        break;
      }
    }
    p.pads_begin[d] = pb;
    p.pads_end[d] = pe;
    p.out_dims[d] = out;
  }
  *pp = p;
  return TRUE;
}

gboolean
nnp_op_conv_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpConvParams p;

  if (!check_conv_float (graph, node, error)
      || !nnp_op_conv_geometry (node, nnp_node_input (graph, node, 0),
                                nnp_node_input (graph, node, 1), nnp_node_input (graph, node, 2),
                                &p, error))
    return FALSE;
  if (p.in_channels / p.group == 1 && p.n_spatial <= 2)
    p.algo = NNP_CONV_ALGO_DEPTHWISE;
  else if (p.kernel[0] * p.kernel[1] * p.kernel[2] == 1
           && p.strides[0] * p.strides[1] * p.strides[2] == 1 && p.pads_begin[0] == 0
           && p.pads_begin[1] == 0 && p.pads_begin[2] == 0 && p.pads_end[0] == 0
           && p.pads_end[1] == 0 && p.pads_end[2] == 0)
    p.algo = NNP_CONV_ALGO_GEMM;
  else if (p.n_spatial <= 2 && /* in double: the product of huge attributes overflows int64 */
           (double) (p.in_channels / p.group)
                   * ((double) p.strides[1] * (double) p.out_dims[1]
                      + (double) (p.kernel[1] - 1) * (double) p.dilations[1]
                      + (double) p.strides[1])
                   * ((double) p.strides[2] * (double) p.out_dims[2]
                      + (double) (p.kernel[2] - 1) * (double) p.dilations[2]
                      + 16.0 * (double) p.strides[2])
               < G_MAXINT32 / 2)
    p.algo = NNP_CONV_ALGO_DIRECT; /* any stride: stride phases, see cpu-conv.c */
  else
    p.algo = NNP_CONV_ALGO_IM2COL;
  return finish_conv (graph, node, &p, error);
}

/* ---------------------------------------------------------------- ConvTranspose */

gboolean
nnp_op_conv_transpose_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  ConvAttrs a;
  NnpConvParams p;
  int n, n_os = 0;
  int64_t opad[NNP_CONV_SPATIAL];
  const int64_t *os = NULL;

  if (!check_conv_float (graph, node, error)
      || !conv_common (node, nnp_node_input (graph, node, 0), nnp_node_input (graph, node, 1),
                       nnp_node_input (graph, node, 2), TRUE, &a, &p, error))
    return FALSE;
  n = a.n;
  if (!get_ints_attr (node, "output_padding", n, 0, opad, error))
    return FALSE;
  if (nnp_node_get_attr (node, "output_shape")) {
    os = nnp_node_attr_ints (node, "output_shape", &n_os);
    if (n_os == n + 2) {
      os += 2;
      n_os = n;
    }
    if (n_os != n) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "attribute 'output_shape' has %d values, expected %d", n_os, n);
      return FALSE;
    }
  }
  for (int i = 0; i < n; i++) {
    int d = NNP_CONV_SPATIAL - n + i;
    int64_t in = p.in_dims[d], s = a.strides[i];
    int64_t dk = (a.kernel[i] - 1) * a.dil[i] + 1;
    int64_t full = s * (in - 1) + opad[i] + dk;
    int64_t pb, pe, out;

    if (opad[i] < 0 || (opad[i] >= s && opad[i] >= a.dil[i])) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "output_padding[%d] = %" G_GINT64_FORMAT
                          " must be smaller than the stride or the dilation",
                          i, opad[i]);
      return FALSE;
    }
    if (os || a.auto_pad == PAD_SAME_UPPER || a.auto_pad == PAD_SAME_LOWER) {
      int64_t total;
      out = os ? os[i] : in * s;
      total = full - out;
      if (a.auto_pad == PAD_SAME_UPPER) {
        pb = total / 2;
        pe = total - total / 2;
      } else {
        pb = total - total / 2;
        pe = total / 2;
      }
      if (total < 0) {
        /* a larger output than the natural one: the extra lands at the end */
        pb = 0;
        pe = total;
      }
    } else if (a.auto_pad == PAD_VALID) {
      pb = pe = 0;
      out = full;
    } else {
      pb = a.pads[i];
      pe = a.pads[n + i];
      out = full - pb - pe;
    }
    p.pads_begin[d] = pb;
    p.pads_end[d] = pe;
    p.output_padding[d] = opad[i];
    p.out_dims[d] = out;
  }
  p.algo = NNP_CONV_ALGO_IM2COL;
  return finish_conv (graph, node, &p, error);
}

/* ---------------------------------------------------------------- MatMul */

gboolean
nnp_op_mat_mul_geometry (const NnpNode *node, const NnpValue *va, const NnpValue *vb,
                         NnpMatMulParams *pp, NnpShape *outp, GError **error)
{
  const NnpShape *sa = &va->shape, *sb = &vb->shape;
  NnpShape ba, bb, batch, out;
  const NnpShape *both[2] = { &ba, &bb };
  NnpMatMulParams tmp;
  int64_t ka, kb;
  int64_t sta = 1, stb = 1;
  gboolean a_full = TRUE;

  if (sa->rank < 1 || sb->rank < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input %d is a scalar, MatMul needs at least 1 dim", sa->rank < 1 ? 0 : 1);
    return FALSE;
  }
  memset (&tmp, 0, sizeof (tmp));
  tmp.m = sa->rank >= 2 ? sa->dims[sa->rank - 2] : 1;
  ka = sa->dims[sa->rank - 1];
  kb = sb->rank >= 2 ? sb->dims[sb->rank - 2] : sb->dims[0];
  tmp.n = sb->rank >= 2 ? sb->dims[sb->rank - 1] : 1;
  if (ka != kb) {
    char *s1 = nnp_shape_to_string (sa), *s2 = nnp_shape_to_string (sb);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "inner dims differ: A is %s, B is %s", s1,
                        s2);
    g_free (s1);
    g_free (s2);
    return FALSE;
  }
  tmp.k = ka;
  ba.rank = MAX (sa->rank - 2, 0);
  memcpy (ba.dims, sa->dims, ba.rank * sizeof (int64_t));
  bb.rank = MAX (sb->rank - 2, 0);
  memcpy (bb.dims, sb->dims, bb.rank * sizeof (int64_t));
  if (!nnp_broadcast_shapes (both, 2, &batch)) {
    char *s1 = nnp_shape_to_string (sa), *s2 = nnp_shape_to_string (sb);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "batch dims of %s and %s do not broadcast",
                        s1, s2);
    g_free (s1);
    g_free (s2);
    return FALSE;
  }
  if (batch.rank + 2 > NNP_MAX_RANK) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "too many dims");
    return FALSE;
  }
  tmp.batch_rank = batch.rank;
  tmp.n_batch = 1;
  for (int d = batch.rank - 1; d >= 0; d--) {
    int oa = d - (batch.rank - ba.rank), ob = d - (batch.rank - bb.rank);
    int64_t da = oa >= 0 ? ba.dims[oa] : 1, db = ob >= 0 ? bb.dims[ob] : 1;
    tmp.batch_dims[d] = batch.dims[d];
    tmp.a_batch_strides[d] = da == 1 ? 0 : sta * tmp.m * tmp.k;
    tmp.b_batch_strides[d] = db == 1 ? 0 : stb * tmp.k * tmp.n;
    if (da != batch.dims[d])
      a_full = FALSE;
    sta *= da;
    stb *= db;
    tmp.n_batch *= batch.dims[d];
  }
  tmp.fold_batch = a_full && stb == 1 && tmp.n_batch > 1;

  out = batch;
  if (sa->rank >= 2)
    out.dims[out.rank++] = tmp.m;
  if (sb->rank >= 2)
    out.dims[out.rank++] = tmp.n;
  *pp = tmp;
  *outp = out;
  return TRUE;
}

gboolean
nnp_op_mat_mul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *va = nnp_node_input (graph, node, 0);
  NnpValue *vb = nnp_node_input (graph, node, 1);
  NnpMatMulParams tmp;
  NnpShape out;

  if (!check_float (node, va, 0, "A", error) || !check_float (node, vb, 1, "B", error)
      || !nnp_op_mat_mul_geometry (node, va, vb, &tmp, &out, error))
    return FALSE;
  *NNP_NODE_NEW_PARAMS (node, NnpMatMulParams) = tmp;
  set_output (graph, node, &out);
  return TRUE;
}

/* ---------------------------------------------------------------- Gemm */

gboolean
nnp_op_gemm_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *va = nnp_node_input (graph, node, 0);
  NnpValue *vb = nnp_node_input (graph, node, 1);
  NnpValue *vc = nnp_node_input (graph, node, 2);
  NnpGemmParams tmp, *p;
  NnpShape out;
  int64_t kb;

  if (!check_float (node, va, 0, "A", error) || !check_float (node, vb, 1, "B", error))
    return FALSE;
  if (vc && !check_float (node, vc, 2, "C", error))
    return FALSE;
  if (va->shape.rank != 2 || vb->shape.rank != 2) {
    int k = va->shape.rank != 2 ? 0 : 1;
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d (%s) has %d dims, expected 2", k,
                        k ? "B" : "A", k ? vb->shape.rank : va->shape.rank);
    return FALSE;
  }
  memset (&tmp, 0, sizeof (tmp));
  tmp.trans_a = nnp_node_attr_int (node, "transA", 0) != 0;
  tmp.trans_b = nnp_node_attr_int (node, "transB", 0) != 0;
  tmp.alpha = nnp_node_attr_float (node, "alpha", 1.f);
  tmp.beta = nnp_node_attr_float (node, "beta", 1.f);
  tmp.m = va->shape.dims[tmp.trans_a ? 1 : 0];
  tmp.k = va->shape.dims[tmp.trans_a ? 0 : 1];
  kb = vb->shape.dims[tmp.trans_b ? 1 : 0];
  tmp.n = vb->shape.dims[tmp.trans_b ? 0 : 1];
  if (kb != tmp.k) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "inner dims differ: A' is %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                        ", B' is %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                        tmp.m, tmp.k, kb, tmp.n);
    return FALSE;
  }
  if (vc) {
    const NnpShape *sc = &vc->shape;
    int64_t cm = 1, cn = 1;
    if (sc->rank > 2) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input 2 (C) has %d dims, expected at most 2", sc->rank);
      return FALSE;
    }
    if (sc->rank == 2) {
      cm = sc->dims[0];
      cn = sc->dims[1];
    } else if (sc->rank == 1) {
      cn = sc->dims[0];
    }
    if ((cm != 1 && cm != tmp.m) || (cn != 1 && cn != tmp.n)) {
      char *s = nnp_shape_to_string (sc);
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input 2 (C) of shape %s does not broadcast to %" G_GINT64_FORMAT
                          "x%" G_GINT64_FORMAT,
                          s, tmp.m, tmp.n);
      g_free (s);
      return FALSE;
    }
    tmp.has_c = TRUE;
    tmp.c_rs = cm == 1 ? 0 : cn;
    tmp.c_cs = cn == 1 ? 0 : 1;
  }
  out.rank = 2;
  out.dims[0] = tmp.m;
  out.dims[1] = tmp.n;
  p = NNP_NODE_NEW_PARAMS (node, NnpGemmParams);
  *p = tmp;
  set_output (graph, node, &out);
  return TRUE;
}
