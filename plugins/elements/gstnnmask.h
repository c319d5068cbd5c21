/* GStreamer nnpipe plugin: nnmask, a segmentation model's mask applied to
 * the original frame (background blurred, a colour, or alpha). */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_MASK (gst_nn_mask_get_type ())
G_DECLARE_FINAL_TYPE (GstNnMask, gst_nn_mask, GST, NN_MASK, GstNnDecoder)

#define GST_TYPE_NN_MASK_MODE (gst_nn_mask_mode_get_type ())
GType gst_nn_mask_mode_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (nnmask);

G_END_DECLS
