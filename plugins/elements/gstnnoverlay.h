/* GStreamer nnpipe plugin: nnoverlay, draws regions of interest and their
 * text or labels onto video frames. */
#pragma once

#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_OVERLAY (gst_nn_overlay_get_type ())
G_DECLARE_FINAL_TYPE (GstNnOverlay, gst_nn_overlay, GST, NN_OVERLAY,
    GstVideoFilter)

GST_ELEMENT_REGISTER_DECLARE (nnoverlay);

G_END_DECLS
