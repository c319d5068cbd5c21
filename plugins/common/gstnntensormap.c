/* GStreamer nnpipe plugin: the tensors of an other/tensors buffer as host
 * pointers (gstnntensormap.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnntensormap.h"
#include "gstnndevicememory.h"

#include <nnpipe/error.h>

#include <string.h>

gboolean
gst_nn_tensors_map (GstNnTensorsMap *tm, GstBuffer *buffer,
    const GstNnTensorsInfo *info, const gboolean *skip, GstMapFlags flags,
    GError **error)
{
  guint n = info->n_tensors;
  gsize total = gst_nn_tensors_info_get_size (info);

  memset (tm, 0, sizeof (*tm));
  tm->buffer = buffer;

  if (gst_buffer_n_memory (buffer) == n) {
    for (guint i = 0; i < n; i++) {
      gsize want = gst_nn_tensor_info_get_size (&info->tensors[i]);
      GstMemory *mem = gst_buffer_peek_memory (buffer, i);

      if (gst_memory_get_sizes (mem, NULL, NULL) != want)
        break;
      tm->n = i + 1;
      if (skip && skip[i])
        continue;
      if (!gst_memory_map (mem, &tm->maps[i], flags)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
            "could not map tensor %u", i);
        for (guint j = 0; j < i; j++)
          if (!(skip && skip[j]))
            gst_memory_unmap (gst_buffer_peek_memory (buffer, j), &tm->maps[j]);
        tm->n = 0;
        return FALSE;
      }
      tm->data[i] = tm->maps[i].data;
    }
    if (tm->n == n) {
      if (skip)
        memcpy (tm->skip, skip, n * sizeof (gboolean));
      return TRUE;
    }
    /* sizes differ: try as one block */
    for (guint i = 0; i < tm->n; i++)
      if (!(skip && skip[i]))
        gst_memory_unmap (gst_buffer_peek_memory (buffer, i), &tm->maps[i]);
    tm->n = 0;
  }

  if (gst_buffer_get_size (buffer) != total) {
    GString *sizes = g_string_new (NULL);

    for (guint i = 0; i < gst_buffer_n_memory (buffer); i++)
      g_string_append_printf (sizes, "%s%" G_GSIZE_FORMAT, i ? "+" : "",
          gst_memory_get_sizes (gst_buffer_peek_memory (buffer, i), NULL,
              NULL));
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "buffer has %u memories of %s bytes, the caps want %u tensors of %" G_GSIZE_FORMAT
        " bytes in all",
        gst_buffer_n_memory (buffer), sizes->str, n, total);
    g_string_free (sizes, TRUE);
    return FALSE;
  }
  if (!gst_buffer_map (buffer, &tm->maps[0], flags)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "could not map buffer");
    return FALSE;
  }
  tm->whole = TRUE;
  {
    gsize off = 0;

    for (guint i = 0; i < n; i++) {
      tm->data[i] = tm->maps[0].data + off;
      off += gst_nn_tensor_info_get_size (&info->tensors[i]);
    }
  }
  return TRUE;
}

gboolean
gst_nn_tensors_map_stage (GstNnTensorsMap *tm, GstBuffer *buffer,
    const GstNnTensorsInfo *info, NnpStage *stage, gboolean output,
    gboolean same_device, GstMapFlags flags, GError **error)
{
  NnpTensor *dev[GST_NN_TENSORS_MAX] = { NULL };
  gboolean skip[GST_NN_TENSORS_MAX] = { FALSE };
  guint n = info->n_tensors, n_device = 0;

  /* device memory first: used in place, not mapped */
  for (guint i = 0; gst_buffer_n_memory (buffer) == n && i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);
    const NnpValue *v = output ? nnp_stage_get_output (stage, (int) i)
                               : nnp_stage_get_input (stage, (int) i);

    if (!gst_is_nn_device_memory (mem)
        || (same_device
            && gst_nn_device_memory_get_device (mem)
                != nnp_stage_get_device (stage)))
      continue;
    dev[i] = gst_nn_device_memory_get_tensor (mem, v->dtype, &v->shape, output);
    skip[i] = dev[i] != NULL;
    n_device += skip[i];
  }
  if (!gst_nn_tensors_map (tm, buffer, info, skip, flags, error)) {
    for (guint i = 0; i < n; i++)
      g_clear_pointer (&dev[i], nnp_tensor_unref);
    return FALSE;
  }
  /* wrap, no copy: the map outlives the tensors */
  for (guint i = 0; i < n; i++) {
    const NnpValue *v = output ? nnp_stage_get_output (stage, (int) i)
                               : nnp_stage_get_input (stage, (int) i);

    tm->tensors[i] = dev[i]
        ? dev[i]
        : nnp_tensor_new_wrapped (v->dtype, &v->shape, tm->data[i], NULL, NULL);
  }
  tm->n_device = n_device;
  return TRUE;
}

void
gst_nn_tensors_unmap (GstNnTensorsMap *tm)
{
  for (guint i = 0; i < GST_NN_TENSORS_MAX; i++)
    g_clear_pointer (&tm->tensors[i], nnp_tensor_unref);
  if (tm->whole) {
    gst_buffer_unmap (tm->buffer, &tm->maps[0]);
  } else {
    for (guint i = 0; i < tm->n; i++)
      if (!tm->skip[i])
        gst_memory_unmap (gst_buffer_peek_memory (tm->buffer, i), &tm->maps[i]);
  }
  tm->n = 0;
  tm->whole = FALSE;
}
