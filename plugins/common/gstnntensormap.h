/* GStreamer nnpipe plugin: the tensors of an other/tensors buffer as host
 * pointers (gstnntensormap.c), for elements that hand them to libnnpipe. */
#pragma once

#include <gst/gst.h>

#include "gstnntensorcaps.h"

G_BEGIN_DECLS

/* Map the n tensors of a buffer: one memory each, or (from a plain source
 * such as filesrc) one block holding them all back to back. */
typedef struct
{
  GstBuffer *buffer;
  gboolean whole;
  guint n;
  GstMapInfo maps[GST_NN_TENSORS_MAX];
  guint8 *data[GST_NN_TENSORS_MAX];
  gboolean skip[GST_NN_TENSORS_MAX];    /* not mapped (device memory) */
} GstNnTensorsMap;

/* skip: tensors not to map (device memory used in place), NULL for none;
 * only when the buffer has one memory per tensor.  FALSE + an error saying
 * what the buffer holds and what the caps want. */
gboolean gst_nn_tensors_map (GstNnTensorsMap * tm, GstBuffer * buffer,
    const GstNnTensorsInfo * info, const gboolean * skip, GstMapFlags flags,
    GError ** error);
void gst_nn_tensors_unmap (GstNnTensorsMap * tm);

G_END_DECLS
