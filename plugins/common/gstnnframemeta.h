/* GStreamer nnpipe plugin: GstNnFrameMeta.
 *
 * Keeps the original video frame with the tensors computed from it, so the
 * post-processing elements further down can put their results back onto
 * the frame (and crop from it) without pairing two streams by timestamp:
 *
 *   video -> nnconvert keep-frame=true -> tensors + GstNnFrameMeta(frame)
 *         -> nnstage (copies the meta) -> nndbdecode -> the frame again
 *
 * nncrop uses the same meta on each crop it cuts out of a frame, with the
 * crop's index and the number of crops of that frame, so nnctcdecode knows
 * when all results of a frame have arrived.
 *
 * The meta holds a reference to the frame buffer (released with the meta).
 * It has no tags, so GstBaseTransform-based elements copy it. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_NN_FRAME_META_API_TYPE (gst_nn_frame_meta_api_get_type ())
#define GST_NN_FRAME_META_INFO (gst_nn_frame_meta_get_info ())

typedef struct _GstNnFrameMeta GstNnFrameMeta;

/**
 * GstNnFrameMeta:
 * @frame: the original video frame (a reference owned by the meta)
 * @info: the frame's video info (format and size at the time)
 * @n_rois: -1 when the buffer stands for the whole frame; otherwise the
 *   buffer is one of @n_rois crops of the frame (0: the frame had no region,
 *   the buffer is a placeholder that keeps the frame flowing)
 * @roi_index: index of this crop among the frame's crops, -1 for none
 * @roi_id: id of the frame's #GstVideoRegionOfInterestMeta the crop was cut
 *   from, -1 for none
 */
struct _GstNnFrameMeta
{
  GstMeta meta;

  GstBuffer *frame;
  GstVideoInfo info;
  gint n_rois;
  gint roi_index;
  gint roi_id;
};

GType gst_nn_frame_meta_api_get_type (void);
const GstMetaInfo *gst_nn_frame_meta_get_info (void);

/* Attach a meta that refs @frame (whole-frame form: n_rois = roi_index =
 * roi_id = -1).  Returns the meta, owned by @buffer. */
GstNnFrameMeta *gst_buffer_add_nn_frame_meta (GstBuffer *buffer,
    GstBuffer *frame, const GstVideoInfo *info);
/* The buffer's meta or NULL (owned by the buffer). */
GstNnFrameMeta *gst_buffer_get_nn_frame_meta (GstBuffer *buffer);

G_END_DECLS
