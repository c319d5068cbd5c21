/* GStreamer nnpipe plugin: inference on some frames only (see
 * gstnnskip.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnskip.h"

const GstMetaInfo *
gst_nn_skipped_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter (&info)) {
    static const gchar *tags[] = { NULL };
    /* no transform function: copied on copies (GStreamer's default) */
    const GstMetaInfo *i = gst_meta_register_custom (GST_NN_SKIPPED_META_NAME,
        tags, NULL, NULL, NULL);

    g_once_init_leave (&info, i);
  }
  return info;
}

GstMeta *
gst_buffer_add_nn_skipped_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  if (gst_buffer_has_nn_skipped_meta (buffer))
    return (GstMeta *) gst_buffer_get_custom_meta (buffer,
        GST_NN_SKIPPED_META_NAME);
  return (
      GstMeta *) gst_buffer_add_custom_meta (buffer, GST_NN_SKIPPED_META_NAME);
}

gboolean
gst_buffer_has_nn_skipped_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), FALSE);

  (void) gst_nn_skipped_meta_get_info ();
  return gst_buffer_get_custom_meta (buffer, GST_NN_SKIPPED_META_NAME) != NULL;
}

gboolean
gst_nn_skip_prepare_output (GstBaseTransform *trans, guint interval,
    guint64 *count, GstBuffer *inbuf, GstBuffer **outbuf)
{
  GstBaseTransformClass *klass = GST_BASE_TRANSFORM_GET_CLASS (trans);
  gboolean skipped_before = gst_buffer_has_nn_skipped_meta (inbuf);

  if (!skipped_before) {
    guint64 n = (*count)++;

    if (interval <= 1 || n % interval == 0)
      return FALSE;
  }
  *outbuf = gst_buffer_new ();
  /* timestamps, flags and the metas (frame, transform, skipped) */
  if (klass->copy_metadata)
    klass->copy_metadata (trans, inbuf, *outbuf);
  GST_BUFFER_FLAG_SET (*outbuf, GST_BUFFER_FLAG_GAP);
  gst_buffer_add_nn_skipped_meta (*outbuf);
  GST_LOG_OBJECT (trans, "%s %" GST_TIME_FORMAT,
      skipped_before ? "passing the skipped frame" : "skipping the model on",
      GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)));
  return TRUE;
}
