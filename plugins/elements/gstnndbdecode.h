/* GStreamer nnpipe plugin: nndbdecode, DB text-detector map -> text boxes
 * on the original frame. */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_DB_DECODE (gst_nn_db_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstNnDbDecode, gst_nn_db_decode, GST, NN_DB_DECODE,
    GstNnDecoder)

GST_ELEMENT_REGISTER_DECLARE (nndbdecode);

G_END_DECLS
