/* GStreamer nnpipe plugin: frames of several streams as one batch.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Dim 0 is the outermost dim of an ONNX shape (the last one in caps
 * dimensions, "640:640:3:4" = 4x3x640x640): the n frames of a batch are
 * contiguous blocks of each tensor, frame r's at r * the frame's size.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnbatch.h"

#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <string.h>

gboolean
gst_nn_batch_check_model (NnpModel *model, guint batch_size, GError **error)
{
  NnpGraph *g;

  if (batch_size <= 1)
    return TRUE;
  g = nnp_model_get_graph (model); /* borrowed */
  for (guint i = 0; i < g->inputs->len; i++) {
    const NnpValue *v = nnp_graph_value (g, g_array_index (g->inputs, int, i));
    gchar *shape;

    if (v->constant)
      continue;
    if (v->shape.rank >= 1 && v->shape.dims[0] < 0)
      continue;
    shape = nnp_shape_to_string (&v->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "batch-size=%u needs a dynamic batch dimension, but the first dim of the model's input '%s' is fixed (%s): use batch-size=1 (frames "
        "interleave) or a model exported with a dynamic batch dim",
        batch_size, v->name, shape);
    g_free (shape);
    return FALSE;
  }
  return TRUE;
}

guint
gst_nn_batch_model_ranks (NnpModel *model, gint *ranks)
{
  NnpGraph *g = nnp_model_get_graph (model); /* borrowed */
  guint n = 0;

  for (guint i = 0; i < g->inputs->len && n < GST_NN_TENSORS_MAX; i++) {
    const NnpValue *v = nnp_graph_value (g, g_array_index (g->inputs, int, i));

    if (v->constant == NULL)
      ranks[n++] = v->shape.rank;
  }
  return n;
}

/* info with each tensor's first dim times mul, divided by div (tensor t
 * first fitted to rank ranks[t], t < n_ranks). */
static GstCaps *
scale_dim0 (GstCaps *caps, guint mul, guint div, const gint *ranks,
    guint n_ranks, GError **error)
{
  GstNnTensorsInfo info;

  if (!gst_nn_tensors_info_from_caps (&info, caps, error))
    return NULL;
  for (guint t = 0; t < info.n_tensors; t++) {
    NnpShape *s = &info.tensors[t].shape;

    if (t < n_ranks && ranks[t] > 0
        && !gst_nn_shape_fit_rank (s, ranks[t], s)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "tensor %u does not fit the model input's rank %d", t, ranks[t]);
      return NULL;
    }

    if (s->rank < 1 || (s->dims[0] * mul) % div != 0) {
      gchar *str = gst_nn_dims_to_string (s);

      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "tensor %u (dimensions=%s) has no first dim that a batch of %u frames divides: the model's outputs must keep the batch dimension first",
          t, str, div);
      g_free (str);
      return NULL;
    }
    s->dims[0] = s->dims[0] * mul / div;
  }
  return gst_nn_tensors_info_to_caps (&info);
}

GstCaps *
gst_nn_batch_caps (GstCaps *frame_caps, guint n, const gint *ranks,
    guint n_ranks, GError **error)
{
  return scale_dim0 (frame_caps, n, 1, ranks, n_ranks, error);
}

GstCaps *
gst_nn_batch_frame_caps (GstCaps *batch_caps, guint n, GError **error)
{
  return scale_dim0 (batch_caps, 1, n, NULL, 0, error);
}

GstBuffer *
gst_nn_batch_concat (GstBuffer **frames, guint n, const GstNnTensorsInfo *info)
{
  GstBuffer *batch = gst_buffer_new ();
  gsize off = 0;

  for (guint t = 0; t < info->n_tensors; t++) {
    gsize size = gst_nn_tensor_info_get_size (&info->tensors[t]);
    GstMemory *mem = gst_allocator_alloc (NULL, size * n, NULL);
    GstMapInfo map;

    gst_memory_map (mem, &map, GST_MAP_WRITE);
    /* the frames were checked to be of their caps' size */
    for (guint r = 0; r < n; r++)
      gst_buffer_extract (frames[r], off, map.data + r * size, size);
    gst_memory_unmap (mem, &map);
    gst_buffer_append_memory (batch, mem);
    off += size;
  }
  return batch;
}

GstBuffer *
gst_nn_batch_slice (GstBuffer *batch, const GstNnTensorsInfo *batch_info,
    guint n, guint r)
{
  GstBuffer *frame;
  gsize off = 0;

  if (gst_buffer_get_size (batch) < gst_nn_tensors_info_get_size (batch_info))
    return NULL;
  frame = gst_buffer_new ();
  for (guint t = 0; t < batch_info->n_tensors; t++) {
    gsize size = gst_nn_tensor_info_get_size (&batch_info->tensors[t]);
    gsize part = size / n;
    GstBuffer *sub = gst_buffer_copy_region (batch, GST_BUFFER_COPY_MEMORY,
        off + r * part, part);

    /* one memory per tensor: merged when the region spans several */
    gst_buffer_append_memory (frame, gst_buffer_get_all_memory (sub));
    gst_buffer_unref (sub);
    off += size;
  }
  return frame;
}
