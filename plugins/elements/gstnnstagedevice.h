/* GStreamer nnpipe plugin: nnstage, its device and memory
 * (gstnnstagedevice.c).  Internal to nnstage. */
#pragma once

#include "gstnnstage-private.h"

G_BEGIN_DECLS

/* Whether a device spec names an OpenCL device. */
gboolean gst_nn_stage_spec_is_opencl (const gchar * spec);

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

/* Device tensors (new refs) for the memories of buffer that are OpenCL
 * memory the stage can use in place; mask[i] set for those.  Returns how
 * many. */
guint gst_nn_stage_device_tensors (GstNnStage * self, GstBuffer * buffer,
    gboolean output, NnpTensor ** tensors, gboolean * mask);

G_END_DECLS
