/* GStreamer nnpipe plugin: inference on some frames only
 * (inference-interval=N of nnstage and nnpipeline).
 *
 * A stage that does not run its model on a frame passes a buffer with no
 * tensor data, flagged GAP, with the input's metas (the frame meta, the
 * transform meta) and a GstNnSkippedMeta.  Stages further down pass such a
 * buffer on as it is; decoders push its frame with the meta and without new
 * results; nntrack predicts its tracks' boxes on it.  The meta has no tags
 * (transforms copy it). */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_NN_SKIPPED_META_NAME "GstNnSkippedMeta"

/* The meta's info (registers it; elements call it at class_init so that
 * applications find it by name). */
const GstMetaInfo *gst_nn_skipped_meta_get_info (void);
GstMeta *gst_buffer_add_nn_skipped_meta (GstBuffer *buffer);
gboolean gst_buffer_has_nn_skipped_meta (GstBuffer *buffer);

/* The prepare_output_buffer of a tensor stage with inference-interval
 * @interval: @inbuf skipped upstream, or not the first of each @interval
 * buffers (@count counts them; reset it on start), gives a skipped buffer
 * in *@outbuf (and TRUE: the caller's transform must return at once, see
 * gst_nn_skip_is_skipped()); otherwise FALSE and the caller chains up. */
gboolean gst_nn_skip_prepare_output (GstBaseTransform *trans, guint interval,
    guint64 *count, GstBuffer *inbuf, GstBuffer **outbuf);
/* TRUE for an output buffer made by gst_nn_skip_prepare_output(). */
#define gst_nn_skip_is_skipped(buf) gst_buffer_has_nn_skipped_meta (buf)

G_END_DECLS
