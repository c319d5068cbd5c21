/* GStreamer nnpipe plugin: nnremote, the client side of a remote stage
 * (docs/remote.md): tensors in, the remote stage's tensors out, in order. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_REMOTE (gst_nn_remote_get_type ())
G_DECLARE_FINAL_TYPE (GstNnRemote, gst_nn_remote, GST, NN_REMOTE, GstElement)

GST_ELEMENT_REGISTER_DECLARE (nnremote);

G_END_DECLS
