/* GStreamer nnpipe plugin: caps <-> a model's inputs and outputs
 * (gstnnmodelcaps.h), shared by nnstage and nnpipeline.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmodelcaps.h"

#include <nnpipe/part.h>

#include <string.h>

GST_DEBUG_CATEGORY_EXTERN (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

/* "float32 1x3x?x? (dimensions=?:?:3:1)" for a graph value. */
static gchar *
describe_value (const NnpValue *v)
{
  gchar *onnx = nnp_shape_to_string (&v->shape);
  gchar *caps = gst_nn_dims_to_string (&v->shape);
  gchar *ret;

  if (v->shape.rank < 0)
    ret = g_strdup_printf ("%s of any shape", nnp_dtype_name (v->dtype));
  else
    ret = g_strdup_printf ("%d dims %s %s (dimensions=%s)", v->shape.rank,
        nnp_dtype_name (v->dtype), onnx, caps);
  g_free (onnx);
  g_free (caps);
  return ret;
}

gboolean
gst_nn_model_match_inputs (NnpModel *model, const gchar *model_name,
    const GstNnTensorsInfo *info, NnpInputShape *shapes, GError **error)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  guint n = (guint) nnp_model_real_inputs (model, inputs, GST_NN_TENSORS_MAX);

  if (n != info->n_tensors) {
    GString *names = g_string_new (NULL);

    for (guint i = 0; i < MIN (n, GST_NN_TENSORS_MAX); i++)
      g_string_append_printf (names, "%s'%s'", i ? ", " : "", inputs[i]->name);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: expects %u input tensors (%s), got num_tensors=%u",
        model_name, n, names->str, info->n_tensors);
    g_string_free (names, TRUE);
    return FALSE;
  }

  for (guint i = 0; i < n; i++) {
    const NnpValue *v = inputs[i];
    const GstNnTensorInfo *t = &info->tensors[i];
    NnpShape shape;
    gboolean ok = TRUE;

    if (v->dtype != NNP_DTYPE_UNDEFINED && v->dtype != t->dtype)
      ok = FALSE;
    if (ok && v->shape.rank >= 0) {
      if (!gst_nn_shape_fit_rank (&t->shape, v->shape.rank, &shape)) {
        ok = FALSE;
      } else {
        for (gint d = 0; d < v->shape.rank; d++)
          if (v->shape.dims[d] >= 0 && v->shape.dims[d] != shape.dims[d])
            ok = FALSE;
      }
    } else {
      shape = t->shape;
    }

    if (!ok) {
      gchar *want = describe_value (v);
      gchar *got = gst_nn_dims_to_string (&t->shape);

      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "model %s: input '%s' expects %s, got dimensions=%s types=%s",
          model_name, v->name, want, got, nnp_dtype_name (t->dtype));
      g_free (want);
      g_free (got);
      return FALSE;
    }
    shapes[i].name = v->name;
    shapes[i].shape = shape;
  }
  return TRUE;
}

gboolean
gst_nn_values_to_info (const gchar *what, const NnpValue *const *values,
    guint n, GstNnTensorsInfo *out, GError **error)
{
  gst_nn_tensors_info_init (out);
  if (n < 1 || n > GST_NN_TENSORS_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "%s: has %u outputs, other/tensors carries 1 to %d", what, n,
        GST_NN_TENSORS_MAX);
    return FALSE;
  }
  out->n_tensors = n;
  for (guint i = 0; i < n; i++) {
    const NnpValue *v = values[i];

    if (!nnp_shape_is_static (&v->shape) || nnp_dtype_size (v->dtype) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "%s: output '%s' has no static shape and type after shape inference",
          what, v->name);
      return FALSE;
    }
    for (gint d = 0; d < v->shape.rank; d++) {
      if (v->shape.dims[d] <= 0) {
        gchar *s = nnp_shape_to_string (&v->shape);

        g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
            "%s: output '%s' has an empty shape %s", what, v->name, s);
        g_free (s);
        return FALSE;
      }
    }
    out->tensors[i].dtype = v->dtype;
    out->tensors[i].shape = v->shape;
  }
  return TRUE;
}

GstCaps *
gst_nn_model_input_caps (NnpModel *model, const GValue *framerate)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  GstCaps *caps = gst_caps_new_empty ();
  GString *types, *dims;
  gboolean known_types = TRUE, known_dims = TRUE;
  GstStructure *s;
  guint n;

  n = (guint) nnp_model_real_inputs (model, inputs, GST_NN_TENSORS_MAX);
  if (n < 1 || n > GST_NN_TENSORS_MAX)
    return caps;

  types = g_string_new (NULL);
  dims = g_string_new (NULL);
  for (guint i = 0; i < n; i++) {
    gchar *d = gst_nn_dims_to_string (&inputs[i]->shape);

    if (inputs[i]->dtype == NNP_DTYPE_UNDEFINED)
      known_types = FALSE;
    if (!nnp_shape_is_static (&inputs[i]->shape))
      known_dims = FALSE;
    g_string_append_printf (types, "%s%s", i ? "," : "",
        nnp_dtype_name (inputs[i]->dtype));
    g_string_append_printf (dims, "%s%s", i ? "," : "", d);
    g_free (d);
  }

  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE, "format", G_TYPE_STRING,
      "static", "num_tensors", G_TYPE_INT, (gint) n, NULL);
  if (known_types)
    gst_structure_set (s, "types", G_TYPE_STRING, types->str, NULL);
  if (known_types && known_dims)
    gst_structure_set (s, "dimensions", G_TYPE_STRING, dims->str, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1, G_MAXINT,
        1, NULL);
  gst_caps_append_structure (caps, s);

  /* NNStreamer's single-tensor form */
  if (n == 1) {
    s = gst_structure_new_empty (GST_NN_TENSOR_MEDIA_TYPE);
    if (known_types)
      gst_structure_set (s, "type", G_TYPE_STRING, types->str, NULL);
    if (known_types && known_dims)
      gst_structure_set (s, "dimension", G_TYPE_STRING, dims->str, NULL);
    if (framerate)
      gst_structure_set_value (s, "framerate", framerate);
    else
      gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
          G_MAXINT, 1, NULL);
    gst_caps_append_structure (caps, s);
  }
  g_string_free (types, TRUE);
  g_string_free (dims, TRUE);
  return caps;
}

GstCaps *
gst_nn_stage_model_sink_caps (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return gst_nn_model_input_caps (model, NULL);
}

gboolean
gst_nn_stage_match_model_inputs (NnpModel *model, const GstNnTensorsInfo *info,
    NnpInputShape *shapes, guint *n_shapes, GError **error)
{
  gchar *name;
  gboolean ok;

  g_return_val_if_fail (model != NULL, FALSE);
  name = g_path_get_basename (nnp_model_get_name (model));
  ok = gst_nn_model_match_inputs (model, name, info, shapes, error);
  g_free (name);
  if (ok)
    *n_shapes = info->n_tensors;
  return ok;
}

GstCaps *
gst_nn_model_filter_inputs (GstObject *obj, NnpModel *model,
    const gchar *model_name, GstCaps *caps)
{
  GstCaps *ret = gst_caps_new_empty ();

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    NnpInputShape shapes[GST_NN_TENSORS_MAX];
    GstNnTensorsInfo info;
    GError *err = NULL;

    if (model && gst_nn_tensors_info_from_structure (&info, s, NULL)
        && !gst_nn_model_match_inputs (model, model_name, &info, shapes,
            &err)) {
      GST_DEBUG_OBJECT (obj, "dropping %" GST_PTR_FORMAT ": %s", s,
          err->message);
      g_clear_error (&err);
      continue;
    }
    gst_caps_append_structure_full (ret, gst_structure_copy (s),
        gst_caps_features_copy (gst_caps_get_features (caps, i)));
  }
  return ret;
}

GstCaps *
gst_nn_model_answer_offer (GstObject *obj, NnpModel *model,
    const gchar *model_name, GstCaps *filter, GstCaps *caps, GstCaps *fallback)
{
  GstCaps *f = gst_nn_model_filter_inputs (obj, model, model_name, filter);
  GstCaps *ret = gst_caps_intersect_full (f, caps, GST_CAPS_INTERSECT_FIRST);

  gst_caps_unref (f);
  if (gst_caps_is_empty (ret) && !gst_caps_is_empty (filter)) {
    gst_caps_unref (ret);
    ret = gst_caps_intersect_full (filter, fallback, GST_CAPS_INTERSECT_FIRST);
    GST_DEBUG_OBJECT (obj,
        "no offer fits the model, answering %" GST_PTR_FORMAT
        " (the CAPS event says why)",
        ret);
  }
  return ret;
}

GstCaps *
gst_nn_stage_model_sink_caps_filtered (NnpModel *model, GstCaps *filter)
{
  GstCaps *caps, *any, *ret;
  gchar *name;

  g_return_val_if_fail (model != NULL, NULL);
  caps = gst_nn_stage_model_sink_caps (model);
  if (filter == NULL)
    return caps;
  /* nothing offered fits: the tensor caps of the offer (as nnstage) */
  any = gst_caps_from_string (GST_NN_TENSORS_CAPS_TEMPLATE_ANY);
  name = g_path_get_basename (nnp_model_get_name (model));
  ret = gst_nn_model_answer_offer (NULL, model, name, filter, caps, any);
  g_free (name);
  gst_caps_unref (any);
  gst_caps_unref (caps);
  return ret;
}

/* ------------------------------------------------------------------------ */
/* caps -> shapes -> part (see gstnnmodelcaps.h) */

#define GST_NN_SHAPES_QUERY_NAME "nnp-model-input-shapes"

/* Whether a part's inputs are the caps tensors (NnpPartInputsFunc). */
static gboolean
inputs_fit (const NnpValue *const *values, gint n, gpointer data)
{
  const GstNnTensorsInfo *info = data;

  if ((guint) n != info->n_tensors)
    return FALSE;
  for (gint i = 0; i < n; i++) {
    const GstNnTensorInfo *t = &info->tensors[i];
    NnpShape shape;

    if (t->dtype != values[i]->dtype
        || !gst_nn_shape_fit_rank (&t->shape, values[i]->shape.rank, &shape)
        || !nnp_shape_equal (&shape, &values[i]->shape))
      return FALSE;
  }
  return TRUE;
}

/* Ask upstream for the model input shapes keys it used (newest first). */
gchar **
gst_nn_shapes_query_upstream (GstPad *sinkpad, const gchar *digest)
{
  GstStructure *s = gst_structure_new (GST_NN_SHAPES_QUERY_NAME, "digest",
      G_TYPE_STRING, digest, NULL);
  GstQuery *q = gst_query_new_custom (GST_QUERY_CUSTOM, s);
  gchar **ret = NULL;

  if (gst_pad_peer_query (sinkpad, q)) {
    const gchar *keys =
        gst_structure_get_string (gst_query_get_structure (q), "shapes");

    if (keys && *keys)
      ret = g_strsplit (keys, "|", -1);
  }
  gst_query_unref (q);
  return ret;
}

gboolean
gst_nn_shapes_query_is (GstQuery *query)
{
  const GstStructure *s = gst_query_get_structure (query);

  return GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM && s
      && gst_structure_has_name (s, GST_NN_SHAPES_QUERY_NAME);
}

gboolean
gst_nn_shapes_query_answer_keys (GstQuery *query, const gchar *joined_keys)
{
  if (!gst_nn_shapes_query_is (query) || joined_keys == NULL
      || *joined_keys == '\0')
    return FALSE;
  gst_structure_set (gst_query_writable_structure (query), "shapes",
      G_TYPE_STRING, joined_keys, NULL);
  return TRUE;
}

gboolean
gst_nn_shapes_query_answer (GstQuery *query, NnpPart *part)
{
  gchar **keys = NULL, *joined;
  gboolean ret;

  if (!gst_nn_shapes_query_is (query))
    return FALSE;
  if (g_strcmp0 (gst_structure_get_string (gst_query_get_structure (query),
                     "digest"),
          nnp_model_get_digest (nnp_part_get_model (part)))
      == 0)
    keys = nnp_part_get_keys (part);
  joined = keys ? g_strjoinv ("|", keys) : NULL;
  ret = gst_nn_shapes_query_answer_keys (query, joined);
  g_free (joined);
  g_strfreev (keys);
  return ret;
}

/* The whole model at the shapes the caps give. */
static NnpPartSpec *
whole_spec (NnpPart *part, const gchar *model_name, const GstNnTensorsInfo *in,
    GError **error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpPartSpec *spec;
  GError *err = NULL;
  gchar *key, *prefix, *got;

  if (!gst_nn_model_match_inputs (nnp_part_get_model (part), model_name, in,
          shapes, error))
    return NULL;
  spec = nnp_part_reshape (part, shapes, (gint) in->n_tensors, &err);
  if (spec)
    return spec;
  /* say it in caps words: "for dimensions=..." */
  key = nnp_shapes_key (shapes, (gint) in->n_tensors, NNP_SPECIALIZE_DEFAULT);
  prefix =
      g_strdup_printf ("model %s: shape inference failed for input shapes %s: ",
          model_name, key);
  got = gst_nn_tensors_info_to_string (in);
  g_set_error (error, NNP_ERROR, err->code,
      "model %s: shape inference failed for dimensions=%s: %s", model_name, got,
      g_str_has_prefix (err->message, prefix) ? err->message + strlen (prefix)
                                              : err->message);
  g_free (got);
  g_free (prefix);
  g_free (key);
  g_clear_error (&err);
  return NULL;
}

/* A part: find the model input shapes (see gstnnmodelcaps.h). */
static NnpPartSpec *
part_spec (NnpPart *part, const gchar *model_name, const GstNnTensorsInfo *in,
    gchar **upstream, GError **error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  GPtrArray *cands = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *srcs = g_ptr_array_new ();
  NnpPartSpec *spec;
  gchar *got;

  if (gst_nn_model_match_inputs (nnp_part_get_model (part), model_name, in,
          shapes, NULL)) {
    g_ptr_array_add (cands,
        nnp_shapes_key (shapes, (gint) in->n_tensors, NNP_SPECIALIZE_DEFAULT));
    g_ptr_array_add (srcs, (gpointer) "the caps");
  }
  for (guint i = 0; upstream && upstream[i]; i++) {
    g_ptr_array_add (cands, g_strdup (upstream[i]));
    g_ptr_array_add (srcs, (gpointer) "upstream");
  }
  g_ptr_array_add (cands, NULL);
  g_ptr_array_add (srcs, NULL);
  got = gst_nn_tensors_info_to_string (in);
  spec = nnp_part_find (part, (const gchar *const *) cands->pdata,
      (const gchar *const *) srcs->pdata, inputs_fit, (gpointer) in, got,
      error);
  g_free (got);
  g_ptr_array_unref (cands);
  g_ptr_array_unref (srcs);
  return spec;
}

NnpPartSpec *
gst_nn_part_spec_for_info (NnpPart *part, const GstNnTensorsInfo *in,
    gchar **upstream, GError **error)
{
  gchar *name =
      g_path_get_basename (nnp_model_get_name (nnp_part_get_model (part)));
  NnpPartSpec *spec = nnp_part_is_whole (part)
      ? whole_spec (part, name, in, error)
      : part_spec (part, name, in, upstream, error);

  g_free (name);
  return spec;
}

gboolean
gst_nn_part_spec_outputs_info (NnpPart *part, NnpPartSpec *spec,
    GstNnTensorsInfo *out, GError **error)
{
  const NnpValue *outs[GST_NN_TENSORS_MAX];
  guint n = (guint) nnp_part_spec_get_n_outputs (spec);
  gchar *name =
      g_path_get_basename (nnp_model_get_name (nnp_part_get_model (part)));
  gchar *what = nnp_part_is_whole (part)
      ? g_strdup_printf ("model %s", name)
      : g_strdup_printf ("model %s, %s", name, nnp_part_get_name (part));
  gboolean ok;

  for (guint i = 0; i < MIN (n, GST_NN_TENSORS_MAX); i++)
    outs[i] = nnp_part_spec_get_output (spec, (gint) i);
  ok = gst_nn_values_to_info (what, outs, n, out, error);
  g_free (what);
  g_free (name);
  return ok;
}
