/* GStreamer nnpipe plugin: nncrop, cuts the text regions of a frame out
 * as recogniser input tensors. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_CROP (gst_nn_crop_get_type ())
G_DECLARE_FINAL_TYPE (GstNnCrop, gst_nn_crop, GST, NN_CROP, GstElement)

GST_ELEMENT_REGISTER_DECLARE (nncrop);

G_END_DECLS
