/* GStreamer nnpipe plugin: nnctcdecode, CTC text recogniser output -> text
 * on the original frame. */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_CTC_DECODE (gst_nn_ctc_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstNnCtcDecode, gst_nn_ctc_decode, GST, NN_CTC_DECODE,
    GstNnDecoder)

GST_ELEMENT_REGISTER_DECLARE (nnctcdecode);

G_END_DECLS
