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

/* The part the properties name (nnp_part_open()), on device when not NULL
 * (the one start() chose, for set_caps() after a property write); why (may
 * be NULL) gets the library's fallback reason. */
NnpPart *gst_nn_stage_open_part (GstNnStage * self, const gchar * device,
    GError ** why, GError ** error);

/* The memory features the stage offers on either pad (takes caps, returns
 * new caps). */
GstCaps *gst_nn_stage_offer_features (GstNnStage * self, GstCaps * caps);

G_END_DECLS
