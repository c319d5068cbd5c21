/* GStreamer nnpipe plugin: nnmetapublish
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnmetapublish
 * @title: nnmetapublish
 * @short_description: write the results on frames as JSON Lines or text
 *
 * nnmetapublish passes video frames through unchanged and writes the
 * results attached to each of them (the #GstVideoRegionOfInterestMeta of
 * nndbdecode, nnctcdecode and nnclassdecode, see gstnnresults.h) to
 * #GstNnMetaPublish:location ("-": standard output), in the spirit of DL
 * Streamer's `gvametaconvert ! gvametapublish file-format=json-lines`.
 *
 * With #GstNnMetaPublish:file-format "json-lines" (the default) every
 * frame gives one line holding one JSON object, also frames without
 * results:
 *
 * |[
 * {"frame":0,"pts":0,"width":640,"height":480,"lines":[{"id":0,
 *  "text":"Hello","score":0.99,"box_score":0.93,
 *  "box":[[132.7,213.7],[506.3,213.7],[506.3,266.3],[132.7,266.3]],
 *  "angle":0}],"classes":[]}
 * ]|
 *
 * frame is the frame's number at its source (nnconvert's count, from the
 * frame's GstNnSourceMeta: a frame dropped on the way, by the drop policy
 * of live input, is a gap), or else counts the frames from 0 since this
 * element started; source_id (nnconvert source-id, when set), time
 * (ISO-8601 UTC) and unix_ms say where and when the frame was taken
 * (gstnnsourcemeta.h); pts is the buffer's presentation time in
 * nanoseconds (null when it has none).
 * "lines" holds the "text" regions in meta order (reading order): box is
 * the rotated box's corners in frame pixels (top-left, top-right,
 * bottom-right, bottom-left of the text); text and score are there once
 * nnctcdecode read the line; angle (degrees) when a direction classifier
 * turned the crop (an "angle" field of the "nnpipe/text" structure, or a
 * numeric label of an "nnpipe/class" structure on the same region).
 * "classes" holds the whole-frame classifier results (label, class_id,
 * score).
 *
 * With #GstNnMetaPublish:results "objects" a line holds the detections
 * of nndetectdecode (and nntrack) instead, with the box in frame pixels:
 *
 * |[
 * {"frame":0,"pts":0,"width":512,"height":512,"objects":[{"label":"face",
 *  "score":0.8775,"box":[172.3,74.1,276.9,178.6],"track":1}]}
 * ]|
 *
 * ("track" once nntrack followed the object); "all" writes "lines",
 * "classes" and "objects".
 *
 * With "text" every line read gives one tab-separated line: the frame
 * number, the PTS in seconds, the text, the score and the corners
 * "x0,y0 x1,y1 x2,y2 x3,y3".
 *
 * With #GstNnMetaPublish:method "mqtt" each frame's JSON object is one
 * message published to #GstNnMetaPublish:topic on the broker at
 * #GstNnMetaPublish:address (HOST:PORT), with #GstNnMetaPublish:qos,
 * #GstNnMetaPublish:mqtt-client-id, TLS (#GstNnMetaPublish:tls-ca-file)
 * and credentials read from a file (#GstNnMetaPublish:mqtt-credentials),
 * DL Streamer's gvametapublish names.  The frame is never held up by the
 * broker: messages wait in a bounded queue (#GstNnMetaPublish:max-queue,
 * the oldest dropped and counted when it is full) sent by a thread of
 * their own that reconnects with back-off (gstnnmqtt.h).  A broker that
 * cannot be reached at the start fails the start; one lost later is a
 * warning, and an "nnmetapublish-mqtt" element message at every change.
 *
 * ## Example launch lines
 * |[
 * ... ! nnctcdecode keys=ppocr_keys_v1.txt ! \
 *     nnmetapublish location=results.jsonl ! fakesink
 * ]| writes one JSON object per frame (pipelines/ocr-file.sh --json).
 * |[
 * ... ! nnmetapublish method=mqtt address=127.0.0.1:1883 topic=cameras/ocr \
 *     qos=1 ! fakesink
 * ]| publishes them to an MQTT broker (docs/results.md).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmetapublish.h"
#include "gstnnmetapublish-mqtt.h"
#include "gstnnresults.h"
#include "gstnnsourcemeta.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_meta_publish_debug);
#define GST_CAT_DEFAULT gst_nn_meta_publish_debug

#define DEFAULT_LOCATION "-"
#define DEFAULT_FILE_FORMAT GST_NN_META_PUBLISH_FORMAT_JSON_LINES

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_FILE_FORMAT,
  PROP_FRAMES,
  PROP_RESULTS,
  PROP_MQTT, /* .. + GST_NN_MQTT_N_PROPS - 1: gstnnmetapublish-mqtt.h's */
};

/* What a JSON line holds (#GstNnMetaPublish:results). */
typedef enum
{
  RESULTS_TEXT,    /* "lines" and "classes" (OCR) */
  RESULTS_OBJECTS, /* "objects" (detections) */
  RESULTS_ALL,
} Results;

static GType
results_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { RESULTS_TEXT, "\"lines\" (text) and \"classes\"", "text" },
    { RESULTS_OBJECTS, "\"objects\" (detections)", "objects" },
    { RESULTS_ALL, "\"lines\", \"classes\" and \"objects\"", "all" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnMetaPublishResults", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

struct _GstNnMetaPublish
{
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *location;
  GstNnMetaPublishFormat format;
  Results results;

  /* streaming state */
  FILE *file; /* owned unless stdout */
  GstVideoInfo info;
  gboolean have_info;
  guint64 frames;            /* frames written (object lock) */
  GstNnMetaPublishMqtt mqtt; /* method=mqtt (its own lock) */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

G_DEFINE_TYPE (GstNnMetaPublish, gst_nn_meta_publish, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nnmetapublish, "nnmetapublish", GST_RANK_NONE,
    GST_TYPE_NN_META_PUBLISH);

GType
gst_nn_meta_publish_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = { { GST_NN_META_PUBLISH_FORMAT_JSON_LINES,
                                           "One JSON object per frame and line",
                                           "json-lines" },
    { GST_NN_META_PUBLISH_FORMAT_TEXT,
        "One tab-separated line per text line: frame, PTS (s), text, score, corners",
        "text" },
    { 0, NULL, NULL } };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnMetaPublishFormat", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The direction of a text region in degrees: an "angle" field of its text
 * structure, else a numeric label of a class structure on the region. */
static gboolean
roi_angle (GstVideoRegionOfInterestMeta *roi, const GstStructure *text,
    gdouble *angle)
{
  const GstStructure *cls;
  const gchar *label;
  gchar *end;
  gint i;

  if (text && gst_structure_get_double (text, "angle", angle))
    return TRUE;
  if (text && gst_structure_get_int (text, "angle", &i)) {
    *angle = i;
    return TRUE;
  }
  cls = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_CLASS_PARAM_NAME);
  label = cls ? gst_structure_get_string (cls, "label") : NULL;
  if (label == NULL || *label == '\0')
    return FALSE;
  *angle = g_ascii_strtod (label, &end);
  return *end == '\0';
}

/* Rounded to 1/scale: 118.87 rather than 118.86811352253756 (the digits
 * beyond are noise of the box fit, and cJSON prints 17 of them). */
static double
rounded (double v, double scale)
{
  return round (v * scale) / scale;
}

static cJSON *
line_to_json (GstVideoRegionOfInterestMeta *roi, const GstStructure *s)
{
  cJSON *o = cJSON_CreateObject (), *box = cJSON_CreateArray ();
  const gchar *text = gst_structure_get_string (s, "text");
  gdouble v, angle;
  NnQuad q;

  cJSON_AddNumberToObject (o, "id", roi->id);
  if (text) {
    cJSON_AddStringToObject (o, "text", text);
    if (gst_structure_get_double (s, "score", &v))
      cJSON_AddNumberToObject (o, "score", rounded (v, 1e6));
  }
  if (gst_structure_get_double (s, "box-score", &v))
    cJSON_AddNumberToObject (o, "box_score", rounded (v, 1e6));
  gst_nn_roi_get_quad (roi, &q);
  for (gint i = 0; i < 4; i++) {
    const double xy[2] = { rounded (q.p[i].x, 100), rounded (q.p[i].y, 100) };

    cJSON_AddItemToArray (box, cJSON_CreateDoubleArray (xy, 2));
  }
  cJSON_AddItemToObject (o, "box", box);
  if (roi_angle (roi, s, &angle))
    cJSON_AddNumberToObject (o, "angle", angle);
  return o;
}

static cJSON *
class_to_json (const GstStructure *s)
{
  cJSON *o = cJSON_CreateObject ();
  const gchar *label = gst_structure_get_string (s, "label");
  gdouble score;
  gint id;

  if (label)
    cJSON_AddStringToObject (o, "label", label);
  if (gst_structure_get_int (s, "class-id", &id))
    cJSON_AddNumberToObject (o, "class_id", id);
  if (gst_structure_get_double (s, "score", &score))
    cJSON_AddNumberToObject (o, "score", rounded (score, 1e6));
  return o;
}

static gchar *frame_to_json (GstBuffer *frame, guint64 frame_number,
    const GstVideoInfo *info, Results results);

gchar *
gst_nn_meta_publish_frame_to_json (GstBuffer *frame, guint64 frame_number,
    const GstVideoInfo *info)
{
  return frame_to_json (frame, frame_number, info, RESULTS_TEXT);
}

static gchar *
frame_to_json (GstBuffer *frame, guint64 frame_number, const GstVideoInfo *info,
    Results results)
{
  cJSON *root, *lines = NULL, *classes = NULL, *objects = NULL;
  GstNnSource src;
  gboolean have_src;
  gpointer state = NULL;
  GstMeta *m;
  char *printed;
  gchar *json;

  g_return_val_if_fail (GST_IS_BUFFER (frame), NULL);

  root = cJSON_CreateObject ();
  /* where and when (nnconvert's GstNnSourceMeta): the source's frame
   * number (a frame dropped on the way is a gap), its id, wall-clock time */
  have_src = gst_nn_source_meta_get (frame, &src);
  cJSON_AddNumberToObject (root, "frame",
      (double) (have_src ? src.frame : frame_number));
  if (have_src && src.source_id)
    cJSON_AddStringToObject (root, "source_id", src.source_id);
  if (GST_BUFFER_PTS_IS_VALID (frame))
    cJSON_AddNumberToObject (root, "pts", (double) GST_BUFFER_PTS (frame));
  else
    cJSON_AddNullToObject (root, "pts");
  if (have_src && src.unix_us >= 0) {
    gchar *iso = gst_nn_source_iso8601 (src.unix_us);

    cJSON_AddStringToObject (root, "time", iso);
    cJSON_AddNumberToObject (root, "unix_ms", (double) (src.unix_us / 1000));
    g_free (iso);
  }
  if (info && GST_VIDEO_INFO_WIDTH (info) > 0) {
    cJSON_AddNumberToObject (root, "width", GST_VIDEO_INFO_WIDTH (info));
    cJSON_AddNumberToObject (root, "height", GST_VIDEO_INFO_HEIGHT (info));
  }
  if (results != RESULTS_OBJECTS) {
    lines = cJSON_AddArrayToObject (root, "lines");
    classes = cJSON_AddArrayToObject (root, "classes");
  }
  if (results != RESULTS_TEXT)
    objects = cJSON_AddArrayToObject (root, "objects");
  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    GstStructure *s;

    if (lines
        && (s = gst_video_region_of_interest_meta_get_param (roi,
                GST_NN_TEXT_PARAM_NAME)))
      cJSON_AddItemToArray (lines, line_to_json (roi, s));
    else if (classes
        && (s = gst_video_region_of_interest_meta_get_param (roi,
                GST_NN_CLASS_PARAM_NAME)))
      cJSON_AddItemToArray (classes, class_to_json (s));
    else if (objects && info
        && (s = gst_nn_roi_get_detection (roi, 0, 0, NULL)))
      cJSON_AddItemToArray (objects,
          gst_nn_detection_to_json (roi, s, GST_VIDEO_INFO_WIDTH (info),
              GST_VIDEO_INFO_HEIGHT (info)));
  }
  printed = cJSON_PrintUnformatted (root);
  cJSON_Delete (root);
  json = g_strdup (printed);
  cJSON_free (printed);
  return json;
}

/* The text form: one line per region with text. */
static gchar *
frame_to_text (GstBuffer *frame, guint64 frame_number)
{
  GString *out = g_string_new (NULL);
  gpointer state = NULL;
  GstMeta *m;
  gdouble pts = GST_BUFFER_PTS_IS_VALID (frame)
      ? (gdouble) GST_BUFFER_PTS (frame) / GST_SECOND
      : -1.0;

  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    GstStructure *s = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_TEXT_PARAM_NAME);
    const gchar *text = s ? gst_structure_get_string (s, "text") : NULL;
    gdouble score = 0;
    NnQuad q;

    if (text == NULL)
      continue;
    gst_structure_get_double (s, "score", &score);
    gst_nn_roi_get_quad (roi, &q);
    g_string_append_printf (out,
        "%" G_GUINT64_FORMAT
        "\t%.3f\t%s\t%.4f\t%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\n",
        frame_number, pts, text, score, q.p[0].x, q.p[0].y, q.p[1].x, q.p[1].y,
        q.p[2].x, q.p[2].y, q.p[3].x, q.p[3].y);
  }
  return g_string_free (out, FALSE);
}

static gboolean
gst_nn_meta_publish_set_caps (GstBaseTransform *trans, GstCaps *incaps,
    GstCaps *outcaps)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (trans);

  /* not video: frames are still published, without width and height */
  self->have_info = gst_video_info_from_caps (&self->info, incaps);
  return TRUE;
}

static GstFlowReturn
gst_nn_meta_publish_transform_ip (GstBaseTransform *trans, GstBuffer *buf)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (trans);
  GstNnMetaPublishFormat format;
  Results results;
  guint64 n;
  gchar *out;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  format = self->format;
  results = self->results;
  n = self->frames++;
  GST_OBJECT_UNLOCK (self);

  if (gst_nn_meta_publish_mqtt_enabled (&self->mqtt)) {
    gchar *json =
        frame_to_json (buf, n, self->have_info ? &self->info : NULL, results);

    /* queued: the broker never holds the frame up */
    gst_nn_meta_publish_mqtt_publish (&self->mqtt, json);
    g_free (json);
    return GST_FLOW_OK;
  }
  if (self->file == NULL)
    return GST_FLOW_OK;
  if (format == GST_NN_META_PUBLISH_FORMAT_TEXT) {
    out = frame_to_text (buf, n);
  } else {
    gchar *json =
        frame_to_json (buf, n, self->have_info ? &self->info : NULL, results);

    out = g_strconcat (json, "\n", NULL);
    g_free (json);
  }
  if (*out)
    ok = fputs (out, self->file) >= 0 && fflush (self->file) == 0;
  g_free (out);
  if (!ok)
    goto write_failed;
  return GST_FLOW_OK;

  /* ERRORS */
write_failed : {
  GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write the results."),
      ("%s", g_strerror (errno)));
  return GST_FLOW_ERROR;
}
}

static gboolean
gst_nn_meta_publish_start (GstBaseTransform *trans)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (trans);
  GstNnMetaPublishFormat format;
  gchar *location;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  self->frames = 0;
  format = self->format;
  GST_OBJECT_UNLOCK (self);
  self->have_info = FALSE;
  if (gst_nn_meta_publish_mqtt_enabled (&self->mqtt)) {
    g_free (location);
    if (format != GST_NN_META_PUBLISH_FORMAT_JSON_LINES)
      goto text_to_mqtt;
    return gst_nn_meta_publish_mqtt_start (&self->mqtt);
  }
  ok = gst_nn_results_open_file (GST_ELEMENT (self), location, &self->file);
  g_free (location);
  return ok;

  /* ERRORS */
text_to_mqtt : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("method=mqtt publishes JSON: file-format=text is for files"),
      ("property 'file-format'"));
  return FALSE;
}
}

static gboolean
gst_nn_meta_publish_stop (GstBaseTransform *trans)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (trans);

  gst_nn_results_close_file (&self->file);
  gst_nn_meta_publish_mqtt_stop (&self->mqtt);
  return TRUE;
}

/* EOS: what waits for the broker gets flush-timeout to go out. */
static gboolean
gst_nn_meta_publish_sink_event (GstBaseTransform *trans, GstEvent *event)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS)
    gst_nn_meta_publish_mqtt_flush (&self->mqtt);
  return GST_BASE_TRANSFORM_CLASS (gst_nn_meta_publish_parent_class)
      ->sink_event (trans, event);
}

static void
gst_nn_meta_publish_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (object);

  if (gst_nn_meta_publish_mqtt_set_property (&self->mqtt, PROP_MQTT, prop_id,
          value))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_FILE_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_RESULTS:
      self->results = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_meta_publish_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (object);

  if (gst_nn_meta_publish_mqtt_get_property (&self->mqtt, PROP_MQTT, prop_id,
          value))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_FILE_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_FRAMES:
      g_value_set_uint64 (value, self->frames);
      break;
    case PROP_RESULTS:
      g_value_set_enum (value, self->results);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_meta_publish_finalize (GObject *object)
{
  GstNnMetaPublish *self = GST_NN_META_PUBLISH (object);

  g_free (self->location);
  gst_nn_results_close_file (&self->file);
  gst_nn_meta_publish_mqtt_clear (&self->mqtt);
  G_OBJECT_CLASS (gst_nn_meta_publish_parent_class)->finalize (object);
}

static void
gst_nn_meta_publish_class_init (GstNnMetaPublishClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_meta_publish_debug, "nnmetapublish", 0,
      "nnpipe result publisher");

  gobject_class->set_property = gst_nn_meta_publish_set_property;
  gobject_class->get_property = gst_nn_meta_publish_get_property;
  gobject_class->finalize = gst_nn_meta_publish_finalize;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "File to write the results to ('-': standard output; empty: none)",
          DEFAULT_LOCATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_FILE_FORMAT,
      g_param_spec_enum ("file-format", "File format",
          "json-lines: one JSON object per frame; text: one tab-separated line per text line",
          GST_TYPE_NN_META_PUBLISH_FORMAT, DEFAULT_FILE_FORMAT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames",
          "Frames passed since the element started", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_RESULTS,
      g_param_spec_enum ("results", "Results",
          "What a JSON line holds: text (\"lines\", \"classes\"), objects (detections) or all",
          results_get_type (), RESULTS_TEXT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  gst_type_mark_as_plugin_api (results_get_type (), 0);

  /* method, address, topic, mqtt-client-id, qos, mqtt-credentials, TLS
   * files, max-queue, reconnect-max, flush-timeout, messages-published,
   * messages-dropped */
  gst_nn_meta_publish_mqtt_install (gobject_class, PROP_MQTT);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Result publisher",
      "Filter/Analyzer/Video",
      "Writes the results on each frame (regions, text, scores) as JSON Lines or text and passes the frames through",
      "nnpipe developers");

  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_meta_publish_set_caps);
  trans_class->transform_ip =
      GST_DEBUG_FUNCPTR (gst_nn_meta_publish_transform_ip);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_nn_meta_publish_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_meta_publish_stop);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_nn_meta_publish_sink_event);
  trans_class->passthrough_on_same_caps = TRUE;

  gst_type_mark_as_plugin_api (GST_TYPE_NN_META_PUBLISH_FORMAT, 0);
}

static void
gst_nn_meta_publish_init (GstNnMetaPublish *self)
{
  self->location = g_strdup (DEFAULT_LOCATION);
  self->format = DEFAULT_FILE_FORMAT;
  gst_nn_meta_publish_mqtt_init (&self->mqtt, GST_ELEMENT (self));
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
}
