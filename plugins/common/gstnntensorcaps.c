/* GStreamer nnpipe plugin: other/tensors caps <-> tensor infos.
 * See gstnntensorcaps.h and docs/tensor-caps.md for the conventions. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnntensorcaps.h"

#include <nnpipe/error.h>

#include <stdlib.h>
#include <string.h>

void
gst_nn_tensors_info_init (GstNnTensorsInfo *info)
{
  g_return_if_fail (info != NULL);

  memset (info, 0, sizeof (*info));
  info->fps_n = 0;
  info->fps_d = 1;
}

gchar *
gst_nn_dims_to_string (const NnpShape *shape)
{
  GString *str;

  g_return_val_if_fail (shape != NULL, NULL);

  if (shape->rank < 0)
    return g_strdup ("?");
  if (shape->rank == 0)
    return g_strdup ("1");

  str = g_string_new (NULL);
  for (gint i = shape->rank - 1; i >= 0; i--) {
    if (shape->dims[i] < 0)
      g_string_append_c (str, '?');
    else
      g_string_append_printf (str, "%" G_GINT64_FORMAT,
          (gint64) shape->dims[i]);
    if (i > 0)
      g_string_append_c (str, ':');
  }
  return g_string_free (str, FALSE);
}

gboolean
gst_nn_dims_from_string (const gchar *str, NnpShape *shape)
{
  gchar **parts;
  gint n;
  gboolean ok = TRUE;

  g_return_val_if_fail (str != NULL, FALSE);
  g_return_val_if_fail (shape != NULL, FALSE);

  parts = g_strsplit (str, ":", -1);
  n = g_strv_length (parts);
  if (n < 1 || n > NNP_MAX_RANK) {
    g_strfreev (parts);
    return FALSE;
  }

  memset (shape, 0, sizeof (*shape));
  shape->rank = n;
  for (gint i = 0; i < n; i++) {
    const gchar *p = g_strstrip (parts[i]);
    gchar *end = NULL;
    gint64 v;

    if (*p == '\0') {
      ok = FALSE;
      break;
    }
    v = g_ascii_strtoll (p, &end, 10);
    if (end == NULL || *end != '\0' || v <= 0 || v > G_MAXINT32) {
      ok = FALSE;
      break;
    }
    /* innermost first in caps, outermost first in NnpShape */
    shape->dims[n - 1 - i] = v;
  }
  g_strfreev (parts);
  return ok;
}

gboolean
gst_nn_shape_fit_rank (const NnpShape *shape, gint rank, NnpShape *out)
{
  NnpShape tmp;

  g_return_val_if_fail (shape != NULL && out != NULL, FALSE);

  if (shape->rank < 0 || rank < 0 || rank > NNP_MAX_RANK)
    return FALSE;

  memset (&tmp, 0, sizeof (tmp));
  tmp.rank = rank;
  if (shape->rank <= rank) {
    gint pad = rank - shape->rank;

    for (gint i = 0; i < pad; i++)
      tmp.dims[i] = 1;
    for (gint i = 0; i < shape->rank; i++)
      tmp.dims[pad + i] = shape->dims[i];
  } else {
    gint extra = shape->rank - rank;

    for (gint i = 0; i < extra; i++)
      if (shape->dims[i] != 1)
        return FALSE;
    for (gint i = 0; i < rank; i++)
      tmp.dims[i] = shape->dims[extra + i];
  }
  *out = tmp;
  return TRUE;
}

gboolean
gst_nn_shape_is_compatible (const NnpShape *a, const NnpShape *b)
{
  gint ia = 0, ib = 0;

  g_return_val_if_fail (a != NULL && b != NULL, FALSE);

  if (a->rank < 0 || b->rank < 0)
    return FALSE;
  while (ia < a->rank && a->dims[ia] == 1)
    ia++;
  while (ib < b->rank && b->dims[ib] == 1)
    ib++;
  if (a->rank - ia != b->rank - ib)
    return FALSE;
  for (; ia < a->rank; ia++, ib++)
    if (a->dims[ia] != b->dims[ib])
      return FALSE;
  return TRUE;
}

gsize
gst_nn_tensor_info_get_size (const GstNnTensorInfo *info)
{
  gint64 numel;
  gsize esize;

  g_return_val_if_fail (info != NULL, 0);

  numel = nnp_shape_numel (&info->shape);
  esize = nnp_dtype_size (info->dtype);
  if (numel < 0 || esize == 0 || (guint64) numel > G_MAXSIZE / esize)
    return 0;
  return (gsize) numel * esize;
}

gsize
gst_nn_tensors_info_get_size (const GstNnTensorsInfo *info)
{
  gsize total = 0;

  g_return_val_if_fail (info != NULL, 0);

  for (guint i = 0; i < info->n_tensors; i++)
    total += gst_nn_tensor_info_get_size (&info->tensors[i]);
  return total;
}

gboolean
gst_nn_tensors_info_is_equal (const GstNnTensorsInfo *a,
    const GstNnTensorsInfo *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);

  if (a->n_tensors != b->n_tensors)
    return FALSE;
  for (guint i = 0; i < a->n_tensors; i++) {
    if (a->tensors[i].dtype != b->tensors[i].dtype)
      return FALSE;
    if (!gst_nn_shape_is_compatible (&a->tensors[i].shape,
            &b->tensors[i].shape))
      return FALSE;
  }
  return TRUE;
}

/* Split "a,b,c" into exactly n stripped, non-empty parts. */
static gchar **
split_list (const gchar *str, guint n, const gchar *field, GError **error)
{
  gchar **parts = g_strsplit (str, ",", -1);
  guint len = g_strv_length (parts);

  if (len != n) {
    /* escaped: a caps string may hold a newline, messages are one line */
    gchar *esc = g_strescape (str, NULL);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "%s \"%s\" lists %u tensors, num_tensors is %u", field, esc, len, n);
    g_free (esc);
    g_strfreev (parts);
    return NULL;
  }
  for (guint i = 0; i < len; i++)
    g_strstrip (parts[i]);
  return parts;
}

static gboolean
get_fixed_string (const GstStructure *s, const gchar *field, const gchar **out,
    GError **error)
{
  const GValue *v = gst_structure_get_value (s, field);

  if (v == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "%s caps have no '%s' field", gst_structure_get_name (s), field);
    return FALSE;
  }
  if (!G_VALUE_HOLDS_STRING (v)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "%s caps field '%s' is not a fixed string", gst_structure_get_name (s),
        field);
    return FALSE;
  }
  *out = g_value_get_string (v);
  return TRUE;
}

gboolean
gst_nn_tensors_info_from_structure (GstNnTensorsInfo *info,
    const GstStructure *s, GError **error)
{
  const gchar *types = NULL, *dims = NULL, *format;
  gchar **type_parts = NULL, **dim_parts = NULL;
  gboolean singular;
  gint n = 1, fps_n, fps_d;
  gboolean ok = FALSE;

  g_return_val_if_fail (info != NULL, FALSE);
  g_return_val_if_fail (s != NULL, FALSE);

  gst_nn_tensors_info_init (info);

  if (gst_structure_has_name (s, GST_NN_TENSORS_MEDIA_TYPE)) {
    singular = FALSE;
  } else if (gst_structure_has_name (s, GST_NN_TENSOR_MEDIA_TYPE)) {
    singular = TRUE;
  } else {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "caps are %s, not other/tensors", gst_structure_get_name (s));
    return FALSE;
  }

  if (!singular) {
    format = gst_structure_get_string (s, "format");
    if (gst_structure_has_field (s, "format")
        && (format == NULL || strcmp (format, "static") != 0)) {
      gchar *esc =
          format ? g_strescape (format, NULL) : g_strdup ("(not fixed)");
      g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
          "other/tensors format %s is not supported (only static)", esc);
      g_free (esc);
      return FALSE;
    }
    if (!gst_structure_get_int (s, "num_tensors", &n)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "other/tensors caps have no fixed num_tensors");
      return FALSE;
    }
    if (n < 1 || n > GST_NN_TENSORS_MAX) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "num_tensors %d is out of range 1..%d", n, GST_NN_TENSORS_MAX);
      return FALSE;
    }
    if (!get_fixed_string (s, "types", &types, error)
        || !get_fixed_string (s, "dimensions", &dims, error))
      return FALSE;
  } else {
    if (!get_fixed_string (s, "type", &types, error)
        || !get_fixed_string (s, "dimension", &dims, error))
      return FALSE;
  }

  type_parts = split_list (types, n, "types", error);
  if (type_parts == NULL)
    goto done;
  dim_parts = split_list (dims, n, "dimensions", error);
  if (dim_parts == NULL)
    goto done;

  info->n_tensors = n;
  for (gint i = 0; i < n; i++) {
    GstNnTensorInfo *t = &info->tensors[i];

    t->dtype = nnp_dtype_from_name (type_parts[i]);
    if (t->dtype == NNP_DTYPE_UNDEFINED || nnp_dtype_size (t->dtype) == 0) {
      gchar *esc = g_strescape (type_parts[i], NULL);
      g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
          "tensor %d: unknown type \"%s\"", i, esc);
      g_free (esc);
      goto done;
    }
    if (!gst_nn_dims_from_string (dim_parts[i], &t->shape)) {
      gchar *esc = g_strescape (dim_parts[i], NULL);
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "tensor %d: bad dimension \"%s\" (want positive integers separated by ':', innermost first, at most %d)",
          i, esc, NNP_MAX_RANK);
      g_free (esc);
      goto done;
    }
  }

  if (gst_structure_get_fraction (s, "framerate", &fps_n, &fps_d)) {
    info->fps_n = fps_n;
    info->fps_d = fps_d;
  }
  ok = TRUE;

done:
  g_strfreev (type_parts);
  g_strfreev (dim_parts);
  if (!ok)
    info->n_tensors = 0;
  return ok;
}

gboolean
gst_nn_tensors_info_from_caps (GstNnTensorsInfo *info, const GstCaps *caps,
    GError **error)
{
  g_return_val_if_fail (info != NULL, FALSE);
  g_return_val_if_fail (GST_IS_CAPS (caps), FALSE);

  if (gst_caps_is_empty (caps) || gst_caps_is_any (caps)) {
    gst_nn_tensors_info_init (info);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "caps are %s, not other/tensors",
        gst_caps_is_any (caps) ? "ANY" : "EMPTY");
    return FALSE;
  }
  return gst_nn_tensors_info_from_structure (info,
      gst_caps_get_structure (caps, 0), error);
}

static void
info_strings (const GstNnTensorsInfo *info, gchar **types, gchar **dims)
{
  GString *t = g_string_new (NULL), *d = g_string_new (NULL);

  for (guint i = 0; i < info->n_tensors; i++) {
    gchar *ds = gst_nn_dims_to_string (&info->tensors[i].shape);

    if (i > 0) {
      g_string_append_c (t, ',');
      g_string_append_c (d, ',');
    }
    g_string_append (t, nnp_dtype_name (info->tensors[i].dtype));
    g_string_append (d, ds);
    g_free (ds);
  }
  *types = g_string_free (t, FALSE);
  *dims = g_string_free (d, FALSE);
}

GstStructure *
gst_nn_tensors_info_to_structure (const GstNnTensorsInfo *info)
{
  GstStructure *s;
  gchar *types, *dims;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->n_tensors >= 1
          && info->n_tensors <= GST_NN_TENSORS_MAX,
      NULL);

  info_strings (info, &types, &dims);
  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE, "format", G_TYPE_STRING,
      "static", "num_tensors", G_TYPE_INT, (gint) info->n_tensors, "types",
      G_TYPE_STRING, types, "dimensions", G_TYPE_STRING, dims, "framerate",
      GST_TYPE_FRACTION, info->fps_n, info->fps_d > 0 ? info->fps_d : 1, NULL);
  g_free (types);
  g_free (dims);
  return s;
}

GstCaps *
gst_nn_tensors_info_to_caps (const GstNnTensorsInfo *info)
{
  GstStructure *s = gst_nn_tensors_info_to_structure (info);

  g_return_val_if_fail (s != NULL, NULL);
  return gst_caps_new_full (s, NULL);
}

gchar *
gst_nn_tensors_info_to_string (const GstNnTensorsInfo *info)
{
  gchar *types, *dims, *ret;

  g_return_val_if_fail (info != NULL, NULL);

  if (info->n_tensors == 0)
    return g_strdup ("no tensors");
  info_strings (info, &types, &dims);
  ret = g_strdup_printf ("%s (%s)", dims, types);
  g_free (types);
  g_free (dims);
  return ret;
}

GstCaps *
gst_nn_tensors_caps_fixate (GstCaps *caps)
{
  GstStructure *s;

  g_return_val_if_fail (GST_IS_CAPS (caps), NULL);

  if (gst_caps_is_empty (caps) || gst_caps_is_any (caps))
    return caps;

  caps = gst_caps_truncate (caps);
  caps = gst_caps_make_writable (caps);
  s = gst_caps_get_structure (caps, 0);

  if (gst_structure_has_name (s, GST_NN_TENSORS_MEDIA_TYPE)) {
    const GValue *format = gst_structure_get_value (s, "format");

    if (format == NULL || !gst_value_is_fixed (format))
      gst_structure_set (s, "format", G_TYPE_STRING, "static", NULL);
  }
  if (gst_structure_has_field (s, "framerate"))
    gst_structure_fixate_field_nearest_fraction (s, "framerate", 0, 1);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, 0, 1, NULL);

  return gst_caps_fixate (caps);
}
