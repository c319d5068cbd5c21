/* GStreamer nnpipe plugin: the tensors of an other/tensors buffer as host
 * pointers or NnpTensors (gstnntensormap.c), for elements that hand them
 * to libnnpipe. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/stage.h>

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
  gboolean skip[GST_NN_TENSORS_MAX];      /* not mapped (device memory) */
  NnpTensor *tensors[GST_NN_TENSORS_MAX]; /* gst_nn_tensors_map_stage():
                                                 * owned, dropped by unmap */
  guint n_device;                         /* of them in device memory */
} GstNnTensorsMap;

/* skip: tensors not to map (device memory used in place), NULL for none;
 * only when the buffer has one memory per tensor.  FALSE + an error saying
 * what the buffer holds and what the caps want. */
gboolean gst_nn_tensors_map (GstNnTensorsMap *tm, GstBuffer *buffer,
    const GstNnTensorsInfo *info, const gboolean *skip, GstMapFlags flags,
    GError **error);
/* The same as tensors for one side of a stage (its inputs, or its outputs
 * when output), in place: a memory in device memory (gstnndevicememory.h) is used as a
 * device tensor (only one of the stage's device when same_device; any
 * otherwise, which the library copies), the rest are mapped and wrapped as
 * host tensors of the stage's dtypes and shapes (no copy).  tm->tensors
 * live until gst_nn_tensors_unmap(). */
gboolean gst_nn_tensors_map_stage (GstNnTensorsMap *tm, GstBuffer *buffer,
    const GstNnTensorsInfo *info, NnpStage *stage, gboolean output,
    gboolean same_device, GstMapFlags flags, GError **error);
/* Drop the tensors, then unmap. */
void gst_nn_tensors_unmap (GstNnTensorsMap *tm);

G_END_DECLS
