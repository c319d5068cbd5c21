/* GStreamer nnpipe plugin: nnredact, hides regions of interest of chosen
 * labels in video frames (pixelate, blur, solid fill). */
#pragma once

#include <gst/gst.h>
#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_REDACT (gst_nn_redact_get_type ())
G_DECLARE_FINAL_TYPE (GstNnRedact, gst_nn_redact, GST, NN_REDACT,
    GstVideoFilter)

#define GST_TYPE_NN_REDACT_MODE (gst_nn_redact_mode_get_type ())
GType gst_nn_redact_mode_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (nnredact);

G_END_DECLS
