/* GStreamer nnpipe plugin: results on frames (see gstnnresults.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnresults.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <string.h>

/* The corners as the structure's "points" (x0, y0, ... x3, y3). */
static void
set_points (GstStructure *s, const NnQuad *quad)
{
  GValue points = G_VALUE_INIT, v = G_VALUE_INIT;

  gst_value_array_init (&points, 8);
  g_value_init (&v, G_TYPE_DOUBLE);
  for (gint i = 0; i < 4; i++) {
    g_value_set_double (&v, quad->p[i].x);
    gst_value_array_append_value (&points, &v);
    g_value_set_double (&v, quad->p[i].y);
    gst_value_array_append_value (&points, &v);
  }
  g_value_unset (&v);
  gst_structure_take_value (s, "points", &points);
}

GstVideoRegionOfInterestMeta *
gst_nn_add_text_roi (GstBuffer *frame, gint id, const NnQuad *quad,
    gdouble box_score, gint frame_width, gint frame_height)
{
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  gdouble x0, y0, x1, y1;
  guint ix0, iy0, ix1, iy1;

  g_return_val_if_fail (GST_IS_BUFFER (frame), NULL);
  g_return_val_if_fail (quad != NULL, NULL);

  nn_quad_bounds (quad, &x0, &y0, &x1, &y1);
  ix0 = (guint) CLAMP (floor (x0), 0, frame_width);
  iy0 = (guint) CLAMP (floor (y0), 0, frame_height);
  ix1 = (guint) CLAMP (ceil (x1), 0, frame_width);
  iy1 = (guint) CLAMP (ceil (y1), 0, frame_height);
  roi = gst_buffer_add_video_region_of_interest_meta (frame, "text", ix0, iy0,
      ix1 - ix0, iy1 - iy0);
  if (roi == NULL)
    return NULL;
  roi->id = id;

  s = gst_structure_new (GST_NN_TEXT_PARAM_NAME, "box-score", G_TYPE_DOUBLE,
      box_score, NULL);
  set_points (s, quad);
  gst_video_region_of_interest_meta_add_param (roi, s);
  return roi;
}

void
gst_nn_roi_set_quad (GstVideoRegionOfInterestMeta *roi, const NnQuad *quad,
    guint x, guint y, guint w, guint h)
{
  GstStructure *s;

  g_return_if_fail (roi != NULL && quad != NULL);

  roi->x = x;
  roi->y = y;
  roi->w = w;
  roi->h = h;
  s = gst_video_region_of_interest_meta_get_param (roi, GST_NN_TEXT_PARAM_NAME);
  if (s)
    set_points (s, quad);
}

GstVideoRegionOfInterestMeta *
gst_nn_find_roi (GstBuffer *frame, gint id)
{
  gpointer state = NULL;
  GstMeta *m;

  g_return_val_if_fail (GST_IS_BUFFER (frame), NULL);

  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;

    if (roi->id == id)
      return roi;
  }
  return NULL;
}

void
gst_nn_roi_get_quad (GstVideoRegionOfInterestMeta *roi, NnQuad *quad)
{
  GstStructure *s;
  const GValue *points;

  g_return_if_fail (roi != NULL && quad != NULL);

  s = gst_video_region_of_interest_meta_get_param (roi, GST_NN_TEXT_PARAM_NAME);
  points = s ? gst_structure_get_value (s, "points") : NULL;
  if (points && GST_VALUE_HOLDS_ARRAY (points)
      && gst_value_array_get_size (points) == 8) {
    for (guint i = 0; i < 4; i++) {
      const GValue *x = gst_value_array_get_value (points, 2 * i);
      const GValue *y = gst_value_array_get_value (points, 2 * i + 1);

      quad->p[i].x = G_VALUE_HOLDS_DOUBLE (x) ? g_value_get_double (x) : 0;
      quad->p[i].y = G_VALUE_HOLDS_DOUBLE (y) ? g_value_get_double (y) : 0;
    }
    return;
  }
  quad->p[0].x = quad->p[3].x = roi->x;
  quad->p[1].x = quad->p[2].x = roi->x + roi->w;
  quad->p[0].y = quad->p[1].y = roi->y;
  quad->p[2].y = quad->p[3].y = roi->y + roi->h;
}

void
gst_nn_frame_out_init (GstNnFrameOut *out, GstPad *srcpad)
{
  out->srcpad = srcpad;
  gst_video_info_init (&out->info);
  out->have_caps = FALSE;
  out->segment = NULL;
}

void
gst_nn_frame_out_reset (GstNnFrameOut *out)
{
  gst_video_info_init (&out->info);
  out->have_caps = FALSE;
  gst_clear_event (&out->segment);
}

gboolean
gst_nn_frame_out_sink_event (GstNnFrameOut *out, GstEvent *event, gboolean *ret)
{
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      /* tensor caps stop here: the source pad carries video */
      gst_event_unref (event);
      *ret = TRUE;
      return TRUE;
    case GST_EVENT_SEGMENT:
      if (!out->have_caps) {
        gst_event_replace (&out->segment, event);
        gst_event_unref (event);
        *ret = TRUE;
        return TRUE;
      }
      return FALSE;
    case GST_EVENT_EOS:
      /* nothing was ever pushed: let the segment out before EOS */
      if (out->segment) {
        GstEvent *seg = out->segment;

        out->segment = NULL;
        gst_pad_push_event (out->srcpad, seg);
      }
      return FALSE;
    default:
      return FALSE;
  }
}

GstFlowReturn
gst_nn_frame_out_push (GstNnFrameOut *out, GstBuffer *frame,
    const GstVideoInfo *info)
{
  if (!out->have_caps || !gst_video_info_is_equal (&out->info, info)) {
    GstCaps *caps = gst_video_info_to_caps (info);
    gboolean ok;

    if (caps == NULL) {
      gst_buffer_unref (frame);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    ok = gst_pad_push_event (out->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    if (!ok) {
      gst_buffer_unref (frame);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    out->info = *info;
    out->have_caps = TRUE;
  }
  if (out->segment) {
    GstEvent *seg = out->segment;

    out->segment = NULL;
    gst_pad_push_event (out->srcpad, seg);
  }
  return gst_pad_push (out->srcpad, frame);
}

gboolean
gst_nn_results_sink_event (GstNnFrameOut *out, GstPad *pad, GstObject *parent,
    GstEvent *event, GstNnResultsSetCaps set_caps)
{
  gboolean ret = TRUE;

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;

    gst_event_parse_caps (event, &caps);
    if (!set_caps (GST_ELEMENT (parent), caps)) {
      gst_event_unref (event);
      return FALSE;
    }
  }
  if (gst_nn_frame_out_sink_event (out, event, &ret))
    return ret;
  return gst_pad_event_default (pad, parent, event);
}

gboolean
gst_nn_results_open_file (GstElement *element, const gchar *location,
    FILE **file)
{
  *file = NULL;
  if (location == NULL || *location == '\0')
    return TRUE;
  *file = g_str_equal (location, "-") ? stdout : fopen (location, "w");
  if (*file == NULL) {
    GST_ELEMENT_ERROR (element, RESOURCE, OPEN_WRITE,
        ("Could not open \"%s\" for writing.", location),
        ("%s", g_strerror (errno)));
    return FALSE;
  }
  return TRUE;
}

void
gst_nn_results_close_file (FILE **file)
{
  if (*file && *file != stdout)
    fclose (*file);
  *file = NULL;
}

gboolean
gst_nn_frame_collect_is_new (const GstNnFrameCollect *c,
    const GstNnFrameMeta *fm)
{
  return c->src != fm->frame;
}

void
gst_nn_frame_collect_start (GstNnFrameCollect *c, const GstNnFrameMeta *fm)
{
  gst_nn_frame_collect_clear (c);
  c->src = gst_buffer_ref (fm->frame);
  c->frame = gst_buffer_copy (fm->frame);
  c->info = fm->info;
  c->expected = fm->n_rois < 0 ? 1 : fm->n_rois;
  c->received = 0;
}

gboolean
gst_nn_frame_collect_add (GstNnFrameCollect *c)
{
  return ++c->received >= c->expected;
}

GstBuffer *
gst_nn_frame_collect_take (GstNnFrameCollect *c, GstDebugCategory *cat,
    GstObject *element)
{
  GstBuffer *frame = c->frame;

  if (frame != NULL && c->received < c->expected)
    GST_CAT_WARNING_OBJECT (cat, element,
        "frame %" GST_TIME_FORMAT " pushed with %d of %d regions read",
        GST_TIME_ARGS (GST_BUFFER_PTS (frame)), c->received, c->expected);
  c->frame = NULL;
  gst_clear_buffer (&c->src);
  return frame;
}

void
gst_nn_frame_collect_clear (GstNnFrameCollect *c)
{
  gst_clear_buffer (&c->frame);
  gst_clear_buffer (&c->src);
}

GstVideoRegionOfInterestMeta *
gst_nn_add_detection_roi (GstBuffer *frame, gint id, const gchar *label,
    gint label_id, gdouble confidence, gdouble x0, gdouble y0, gdouble x1,
    gdouble y1, const gfloat *keypoints, gint n_keypoints, gint frame_width,
    gint frame_height)
{
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  guint ix0, iy0, ix1, iy1;
  gdouble fw = MAX (frame_width, 1), fh = MAX (frame_height, 1);

  g_return_val_if_fail (GST_IS_BUFFER (frame), NULL);

  x0 = CLAMP (x0, 0, frame_width);
  x1 = CLAMP (x1, 0, frame_width);
  y0 = CLAMP (y0, 0, frame_height);
  y1 = CLAMP (y1, 0, frame_height);
  ix0 = (guint) floor (x0);
  iy0 = (guint) floor (y0);
  ix1 = (guint) ceil (x1);
  iy1 = (guint) ceil (y1);
  roi = gst_buffer_add_video_region_of_interest_meta (frame,
      label ? label : "object", ix0, iy0, ix1 - ix0, iy1 - iy0);
  if (roi == NULL)
    return NULL;
  roi->id = id;
  s = gst_structure_new (GST_NN_DETECTION_PARAM_NAME, "label", G_TYPE_STRING,
      label ? label : "object", "label_id", G_TYPE_INT, label_id, "confidence",
      G_TYPE_DOUBLE, confidence, "x_min", G_TYPE_DOUBLE, x0 / fw, "y_min",
      G_TYPE_DOUBLE, y0 / fh, "x_max", G_TYPE_DOUBLE, x1 / fw, "y_max",
      G_TYPE_DOUBLE, y1 / fh, NULL);
  if (keypoints && n_keypoints > 0) {
    GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;

    gst_value_array_init (&arr, 2 * n_keypoints);
    g_value_init (&v, G_TYPE_DOUBLE);
    for (gint k = 0; k < 2 * n_keypoints; k++) {
      g_value_set_double (&v, keypoints[k] / (k % 2 ? fh : fw));
      gst_value_array_append_value (&arr, &v);
    }
    g_value_unset (&v);
    gst_structure_take_value (s, "keypoints", &arr);
  }
  gst_video_region_of_interest_meta_add_param (roi, s);
  return roi;
}

GstStructure *
gst_nn_roi_get_detection (GstVideoRegionOfInterestMeta *roi, gint width,
    gint height, gdouble box[4])
{
  GstStructure *s;
  gdouble v[4];

  g_return_val_if_fail (roi != NULL, NULL);

  s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_DETECTION_PARAM_NAME);
  if (s == NULL)
    return NULL;
  if (box == NULL)
    return s;
  if (gst_structure_get_double (s, "x_min", &v[0])
      && gst_structure_get_double (s, "y_min", &v[1])
      && gst_structure_get_double (s, "x_max", &v[2])
      && gst_structure_get_double (s, "y_max", &v[3])) {
    box[0] = v[0] * width;
    box[1] = v[1] * height;
    box[2] = v[2] * width;
    box[3] = v[3] * height;
  } else {
    box[0] = roi->x;
    box[1] = roi->y;
    box[2] = roi->x + roi->w;
    box[3] = roi->y + roi->h;
  }
  return s;
}

void
gst_nn_roi_set_object_id (GstVideoRegionOfInterestMeta *roi, gint id)
{
  GstStructure *s;

  g_return_if_fail (roi != NULL);

  roi->id = id;
  s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_DETECTION_PARAM_NAME);
  if (s)
    gst_structure_set (s, "object_id", G_TYPE_INT, id, NULL);
}

static double
round_to (double v, double scale)
{
  return round (v * scale) / scale;
}

struct cJSON *
gst_nn_detection_to_json (GstVideoRegionOfInterestMeta *roi,
    const GstStructure *s, gint width, gint height)
{
  cJSON *o = cJSON_CreateObject ();
  const gchar *label = gst_structure_get_string (s, "label");
  gdouble score = 0, box[4];
  gint id;

  gst_nn_roi_get_detection (roi, width, height, box);
  for (gint i = 0; i < 4; i++)
    box[i] = round_to (box[i], 100);
  gst_structure_get_double (s, "confidence", &score);
  cJSON_AddStringToObject (o, "label",
      label ? label : g_quark_to_string (roi->roi_type));
  cJSON_AddNumberToObject (o, "score", round_to (score, 1e4));
  cJSON_AddItemToObject (o, "box", cJSON_CreateDoubleArray (box, 4));
  if (gst_structure_get_int (s, "object_id", &id))
    cJSON_AddNumberToObject (o, "track", id);
  return o;
}
