/* GStreamer nnpipe plugin: nndetectdecode, a detector's output tensors ->
 * boxes (region-of-interest metas) on the original frame. */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_DETECT_DECODE (gst_nn_detect_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstNnDetectDecode, gst_nn_detect_decode, GST,
    NN_DETECT_DECODE, GstNnDecoder)

GST_ELEMENT_REGISTER_DECLARE (nndetectdecode);

G_END_DECLS
