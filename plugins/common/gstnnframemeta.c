/* GStreamer nnpipe plugin: GstNnFrameMeta (see gstnnframemeta.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnframemeta.h"

GType
gst_nn_frame_meta_api_get_type (void)
{
  static GType type = 0;
  /* no tags: the frame stays valid whatever happens to the tensor memory */
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstNnFrameMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_nn_frame_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstNnFrameMeta *m = (GstNnFrameMeta *) meta;

  m->frame = NULL;
  gst_video_info_init (&m->info);
  m->n_rois = m->roi_index = m->roi_id = -1;
  return TRUE;
}

static void
gst_nn_frame_meta_free (GstMeta *meta, GstBuffer *buffer)
{
  GstNnFrameMeta *m = (GstNnFrameMeta *) meta;

  gst_clear_buffer (&m->frame);
}

static gboolean
gst_nn_frame_meta_transform (GstBuffer *dest, GstMeta *meta, GstBuffer *buffer,
    GQuark type, gpointer data)
{
  GstNnFrameMeta *src = (GstNnFrameMeta *) meta, *dst;

  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  dst = gst_buffer_add_nn_frame_meta (dest, src->frame, &src->info);
  if (dst == NULL)
    return FALSE;
  dst->n_rois = src->n_rois;
  dst->roi_index = src->roi_index;
  dst->roi_id = src->roi_id;
  return TRUE;
}

const GstMetaInfo *
gst_nn_frame_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) &info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NN_FRAME_META_API_TYPE,
        "GstNnFrameMeta", sizeof (GstNnFrameMeta), gst_nn_frame_meta_init,
        gst_nn_frame_meta_free, gst_nn_frame_meta_transform);
    g_once_init_leave ((GstMetaInfo **) &info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNnFrameMeta *
gst_buffer_add_nn_frame_meta (GstBuffer *buffer, GstBuffer *frame,
    const GstVideoInfo *info)
{
  GstNnFrameMeta *m;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (GST_IS_BUFFER (frame), NULL);
  g_return_val_if_fail (info != NULL, NULL);

  m = (GstNnFrameMeta *) gst_buffer_add_meta (buffer, GST_NN_FRAME_META_INFO,
      NULL);
  if (m == NULL)
    return NULL;
  m->frame = gst_buffer_ref (frame);
  m->info = *info;
  return m;
}

GstNnFrameMeta *
gst_buffer_get_nn_frame_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  return (GstNnFrameMeta *) gst_buffer_get_meta (buffer,
      GST_NN_FRAME_META_API_TYPE);
}
