/* GStreamer nnpipe plugin: GstNnTransformMeta (see gstnnmeta.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmeta.h"

GType
gst_nn_transform_meta_api_get_type (void)
{
  static GType type = 0;
  /* no tags: the meta describes the stream geometry, not the memory, and
   * must survive every transform that keeps the buffer's meaning */
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstNnTransformMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_nn_transform_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstNnTransformMeta *m = (GstNnTransformMeta *) meta;

  m->source_width = m->source_height = 0;
  m->tensor_width = m->tensor_height = 0;
  m->content_width = m->content_height = 0;
  m->scale_x = m->scale_y = 1.0;
  m->offset_x = m->offset_y = 0.0;
  return TRUE;
}

static gboolean
gst_nn_transform_meta_transform (GstBuffer *dest, GstMeta *meta,
    GstBuffer *buffer, GQuark type, gpointer data)
{
  GstNnTransformMeta *src = (GstNnTransformMeta *) meta, *dst;

  /* only plain copies keep the geometry meaningful */
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;

  dst = gst_buffer_add_nn_transform_meta (dest, src->source_width,
      src->source_height);
  if (dst == NULL)
    return FALSE;
  dst->tensor_width = src->tensor_width;
  dst->tensor_height = src->tensor_height;
  dst->content_width = src->content_width;
  dst->content_height = src->content_height;
  dst->scale_x = src->scale_x;
  dst->scale_y = src->scale_y;
  dst->offset_x = src->offset_x;
  dst->offset_y = src->offset_y;
  return TRUE;
}

const GstMetaInfo *
gst_nn_transform_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) &info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NN_TRANSFORM_META_API_TYPE,
        "GstNnTransformMeta", sizeof (GstNnTransformMeta),
        gst_nn_transform_meta_init, NULL, gst_nn_transform_meta_transform);
    g_once_init_leave ((GstMetaInfo **) &info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNnTransformMeta *
gst_buffer_add_nn_transform_meta (GstBuffer *buffer, gint source_width,
    gint source_height)
{
  GstNnTransformMeta *m;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  m = (GstNnTransformMeta *) gst_buffer_add_meta (buffer,
      GST_NN_TRANSFORM_META_INFO, NULL);
  if (m == NULL)
    return NULL;
  m->source_width = m->tensor_width = m->content_width = source_width;
  m->source_height = m->tensor_height = m->content_height = source_height;
  return m;
}

GstNnTransformMeta *
gst_buffer_get_nn_transform_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  return (GstNnTransformMeta *) gst_buffer_get_meta (buffer,
      GST_NN_TRANSFORM_META_API_TYPE);
}

void
gst_nn_transform_meta_to_source (const GstNnTransformMeta *meta,
    gdouble tensor_x, gdouble tensor_y, gdouble *source_x, gdouble *source_y)
{
  g_return_if_fail (meta != NULL);

  if (source_x)
    *source_x = meta->scale_x != 0.0
        ? (tensor_x - meta->offset_x) / meta->scale_x
        : 0.0;
  if (source_y)
    *source_y = meta->scale_y != 0.0
        ? (tensor_y - meta->offset_y) / meta->scale_y
        : 0.0;
}

void
gst_nn_transform_meta_to_tensor (const GstNnTransformMeta *meta,
    gdouble source_x, gdouble source_y, gdouble *tensor_x, gdouble *tensor_y)
{
  g_return_if_fail (meta != NULL);

  if (tensor_x)
    *tensor_x = source_x * meta->scale_x + meta->offset_x;
  if (tensor_y)
    *tensor_y = source_y * meta->scale_y + meta->offset_y;
}
