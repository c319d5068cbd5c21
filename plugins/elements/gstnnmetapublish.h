/* GStreamer nnpipe plugin: nnmetapublish, writes the results on each frame
 * (the ROI metas of nndbdecode, nnctcdecode, nnclassdecode) to a file as
 * JSON Lines or tab-separated text, passing the frames through. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

typedef enum
{
  GST_NN_META_PUBLISH_FORMAT_JSON_LINES,
  GST_NN_META_PUBLISH_FORMAT_TEXT,
} GstNnMetaPublishFormat;

#define GST_TYPE_NN_META_PUBLISH_FORMAT (gst_nn_meta_publish_format_get_type ())
GType gst_nn_meta_publish_format_get_type (void);

#define GST_TYPE_NN_META_PUBLISH (gst_nn_meta_publish_get_type ())
G_DECLARE_FINAL_TYPE (GstNnMetaPublish, gst_nn_meta_publish, GST,
    NN_META_PUBLISH, GstBaseTransform)

/* One frame's results as a JSON object (new string, g_free): the same
 * text nnmetapublish writes for frame number @frame_number (without the
 * newline).  @info may be NULL (no width/height). */
gchar *gst_nn_meta_publish_frame_to_json (GstBuffer *frame,
    guint64 frame_number, const GstVideoInfo *info);

GST_ELEMENT_REGISTER_DECLARE (nnmetapublish);

G_END_DECLS
