/* GStreamer nnpipe plugin: nnstage, its device and memory
 * (gstnnstagedevice.c).  Internal to nnstage. */
#pragma once

#include "gstnnstage-private.h"

G_BEGIN_DECLS

/* The device spec of the properties (#GstNnStage:device in the syntax of
 * nnp_device_spec_parse(), refined by device-index / device-name): "cpu",
 * "opencl", "opencl:N", "opencl:NAME" (new string); threads_out (may be
 * NULL) gets the spec's thread count ("cpu:2") or 0.  NULL with an error
 * naming the property and its value when they are invalid.  Call with the
 * object lock held. */
gchar *gst_nn_stage_device_spec_locked (GstNnStage * self, gint * threads_out,
    GError ** error);

/* The device of the stage (the plan stage's, else the properties'): sets
 * dev_spec, use_cl and cl_device.  FALSE after posting an error. */
gboolean gst_nn_stage_open_device (GstNnStage * self, gint stage_index);

/* The memory features the stage offers on either pad (takes caps, returns
 * new caps). */
GstCaps *gst_nn_stage_offer_features (GstNnStage * self, GstCaps * caps);

/* The stage on opts->device, or with fallback on the CPU (with a warning)
 * when the OpenCL device cannot run it.  plan NULL: the whole graph. */
NnpStage *gst_nn_stage_make_stage (GstNnStage * self, const NnpPlan * plan,
    gint k, NnpGraph * graph, NnpStageOptions * opts, GError ** error);

/* Device tensors (new refs) for the memories of buffer that are OpenCL
 * memory the stage can use in place; mask[i] set for those.  Returns how
 * many. */
guint gst_nn_stage_device_tensors (GstNnStage * self, GstBuffer * buffer,
    gboolean output, NnpTensor ** tensors, gboolean * mask);

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

gboolean gst_nn_tensors_map (GstNnTensorsMap * tm, GstBuffer * buffer,
    const GstNnTensorsInfo * info, const gboolean * skip, GstMapFlags flags,
    GError ** error);
void gst_nn_tensors_unmap (GstNnTensorsMap * tm);

G_END_DECLS
