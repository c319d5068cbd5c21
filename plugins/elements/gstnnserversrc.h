/* GStreamer nnpipe plugin: nnserversrc / nnserversink, the server side of a
 * remote stage (docs/remote.md): nnserversrc listens and pushes the frames
 * of every client, nnserversink sends each result back to its client. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_SERVER_SRC (gst_nn_server_src_get_type ())
G_DECLARE_FINAL_TYPE (GstNnServerSrc, gst_nn_server_src, GST, NN_SERVER_SRC,
    GstPushSrc)

#define GST_TYPE_NN_SERVER_SINK (gst_nn_server_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstNnServerSink, gst_nn_server_sink, GST, NN_SERVER_SINK,
    GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE (nnserversrc);
GST_ELEMENT_REGISTER_DECLARE (nnserversink);

G_END_DECLS
