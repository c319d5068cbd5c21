/* Helpers of the post-processing element tests (test-post.c,
 * test-post-output.c, test-ocr-steps.c): frames, text regions, metas
 * (test-post-common.h). */
#include "test-post-common.h"

#include <gst/check/gstcheck.h>

GstBuffer *
make_rgb_frame (GstVideoInfo *info, gint w, gint h, guint8 value)
{
  GstBuffer *buf;

  gst_video_info_set_format (info, GST_VIDEO_FORMAT_RGB, w, h);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (info), NULL);
  gst_buffer_memset (buf, 0, value, GST_VIDEO_INFO_SIZE (info));
  return buf;
}

GstVideoRegionOfInterestMeta *
roi_by_id (GstBuffer *buf, gint id)
{
  gpointer state = NULL;
  GstMeta *m;

  while ((m = gst_buffer_iterate_meta_filtered (buf, &state,
                                                GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)))
    if (((GstVideoRegionOfInterestMeta *) m)->id == id)
      return (GstVideoRegionOfInterestMeta *) m;
  return NULL;
}

void
add_text_roi (GstBuffer *frame, gint id, gint x, gint y, gint w, gint h)
{
  GstVideoRegionOfInterestMeta *roi;
  GValue points = G_VALUE_INIT, v = G_VALUE_INIT;
  gdouble p[8] = { x, y, x + w, y, x + w, y + h, x, y + h };
  GstStructure *s;

  roi = gst_buffer_add_video_region_of_interest_meta (frame, "text", x, y, w, h);
  roi->id = id;
  gst_value_array_init (&points, 8);
  g_value_init (&v, G_TYPE_DOUBLE);
  for (gint i = 0; i < 8; i++) {
    g_value_set_double (&v, p[i]);
    gst_value_array_append_value (&points, &v);
  }
  g_value_unset (&v);
  s = gst_structure_new ("nnpipe/text", "box-score", G_TYPE_DOUBLE, 0.9, NULL);
  gst_structure_take_value (s, "points", &points);
  gst_video_region_of_interest_meta_add_param (roi, s);
}

GstMeta *
add_meta (GstBuffer *buf, const gchar *impl)
{
  const GstMetaInfo *info = gst_meta_get_info (impl);

  fail_unless (info != NULL, "%s not registered", impl);
  return gst_buffer_add_meta (buf, info, NULL);
}

GstNnFrameMeta *
add_frame_meta (GstBuffer *buf, GstBuffer *frame, const GstVideoInfo *info, gint n_rois,
                gint roi_index, gint roi_id)
{
  GstNnFrameMeta *m = (GstNnFrameMeta *) add_meta (buf, "GstNnFrameMeta");

  m->frame = gst_buffer_ref (frame);
  m->info = *info;
  m->n_rois = n_rois;
  m->roi_index = roi_index;
  m->roi_id = roi_id;
  return m;
}

GstNnFrameMeta *
get_frame_meta (GstBuffer *buf)
{
  GType api = g_type_from_name ("GstNnFrameMetaAPI");

  fail_unless (api != 0);
  return (GstNnFrameMeta *) gst_buffer_get_meta (buf, api);
}


GstBuffer *
float_buffer (const gfloat *data, gsize n)
{
  return gst_buffer_new_memdup (data, n * sizeof (gfloat));
}

guint
count_rois (GstBuffer *buf)
{
  gpointer state = NULL;
  guint n = 0;

  while (gst_buffer_iterate_meta_filtered (buf, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    n++;
  return n;
}
