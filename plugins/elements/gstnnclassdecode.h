/* GStreamer nnpipe plugin: nnclassdecode, classifier scores -> top-k labels
 * on the original frame. */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_CLASS_DECODE (gst_nn_class_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstNnClassDecode, gst_nn_class_decode, GST,
    NN_CLASS_DECODE, GstNnDecoder)

GST_ELEMENT_REGISTER_DECLARE (nnclassdecode);

G_END_DECLS
