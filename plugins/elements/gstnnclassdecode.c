/* GStreamer nnpipe plugin: nnclassdecode
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnclassdecode
 * @title: nnclassdecode
 * @short_description: top-k labels of a classifier's output
 *
 * nnclassdecode reads a classifier's float32 scores (1xC, or any shape
 * whose last dimension is the class count), optionally applies a softmax,
 * and picks the #GstNnClassDecode:top-k best classes.  Labels come from
 * #GstNnClassDecode:labels: a comma-separated list ("0,180") or a file with
 * one label per line (a value without a comma names a file, which must
 * exist when the element starts); without labels the class numbers are
 * used.
 *
 * The element pushes the original frame (from the #GstNnFrameMeta of
 * nnconvert keep-frame=true) with a #GstVideoRegionOfInterestMeta of type
 * "class" covering the frame, whose "nnpipe/class" structure holds label,
 * class-id and score of the best class, and posts an element message
 * "nnpipe-class" per frame with pts and the top-k list.  Frames in ==
 * frames out.
 *
 * Fed one tensor per text region (nncrop's output: each tensor's
 * #GstNnFrameMeta names its frame and region), it classifies every region
 * instead: the best class goes into that region's own ROI as an
 * "nnpipe/class" structure (label, class-id, score), `location` gets one
 * "label<TAB>score" line per region, and the frame is pushed once all of
 * its regions arrived, with one "nnpipe-class" message whose "regions"
 * list holds id, label, class-id and score per region.  This is how
 * PaddleOCR's text direction classifier runs in the OCR chain: a later
 * nncrop turns the regions labelled "180" (#GstNnCrop:flip-label) before
 * recognition.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=1 pattern=white ! video/x-raw,width=320,height=48 ! \
 *     textoverlay text="Hello World 123" font-desc="Sans 28" color=0xff000000 valignment=center \
 *       draw-shadow=false draw-outline=false ! \
 *     videoflip video-direction=180 ! videoconvert ! video/x-raw,format=RGB ! \
 *     nnconvert mean=0.5 std=0.5 channel-order=bgr width=192 height=48 keep-frame=true ! \
 *     nnstage model=.cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx ! \
 *     nnclassdecode labels=0,180 location=- ! nnoverlay ! videoconvert ! \
 *     pngenc snapshot=true ! filesink location=classify.png
 * ]| runs PaddleOCR's text direction classifier on a text line turned upside
 * down and prints "180", a tab and the score (pipelines/classify.sh).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnclassdecode.h"
#include "gstnnframemeta.h"
#include "gstnnresults.h"
#include "gstnntensorcaps.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_class_decode_debug);
#define GST_CAT_DEFAULT gst_nn_class_decode_debug

#define DEFAULT_LABELS NULL
#define DEFAULT_TOP_K 1
#define DEFAULT_SOFTMAX FALSE
#define DEFAULT_LOCATION NULL

enum
{
  PROP_0,
  PROP_LABELS,
  PROP_TOP_K,
  PROP_SOFTMAX,
  PROP_LOCATION,
};

struct _GstNnClassDecode
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  gchar *labels_prop;
  guint top_k;
  gboolean softmax;
  gchar *location;

  /* streaming state */
  gchar **labels; /* n_classes entries */
  gint n_classes;
  FILE *out_file;
  GstNnFrameOut out;
  GstNnFrameCollect collect; /* region mode: the frame being assembled */
};

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_NN_FRAME_CAPS_TEMPLATE));

G_DEFINE_TYPE (GstNnClassDecode, gst_nn_class_decode, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (nnclassdecode, "nnclassdecode", GST_RANK_NONE,
    GST_TYPE_NN_CLASS_DECODE);

static gboolean
load_labels (GstNnClassDecode *self, gint n_classes)
{
  gchar *prop, **list = NULL;
  guint n;

  GST_OBJECT_LOCK (self);
  prop = g_strdup (self->labels_prop);
  GST_OBJECT_UNLOCK (self);

  if (prop && *prop && g_file_test (prop, G_FILE_TEST_IS_REGULAR)) {
    gchar *contents;
    GError *err = NULL;

    if (!g_file_get_contents (prop, &contents, NULL, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read the labels file \"%s\".", prop),
          ("%s", err->message));
      g_clear_error (&err);
      g_free (prop);
      return FALSE;
    }
    g_strchomp (contents);
    list = g_strsplit (contents, "\n", -1);
    g_free (contents);
  } else if (prop && *prop) {
    list = g_strsplit (prop, ",", -1);
  }
  n = list ? g_strv_length (list) : 0;
  if (list && (gint) n != n_classes) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The labels do not fit the model."),
        ("%u labels given, the model has %d classes", n, n_classes));
    g_strfreev (list);
    g_free (prop);
    return FALSE;
  }
  g_strfreev (self->labels);
  self->labels = g_new0 (gchar *, n_classes + 1);
  for (gint i = 0; i < n_classes; i++)
    self->labels[i] =
        list ? g_strdup (g_strstrip (list[i])) : g_strdup_printf ("%d", i);
  g_strfreev (list);
  g_free (prop);
  self->n_classes = n_classes;
  return TRUE;
}

static gboolean
gst_nn_class_decode_set_caps (GstElement *element, GstCaps *caps)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (element);
  GstNnTensorsInfo info;
  const NnpShape *shape;

  if (!gst_nn_results_parse_caps (element, caps, 1, NNP_MAX_RANK,
          "one float32 score vector of shape 1xC (dimensions=C:1 "
          "types=float32)",
          &info))
    return FALSE;
  shape = &info.tensors[0].shape;
  return load_labels (self, (gint) shape->dims[shape->rank - 1]);
}

/* Region mode: push the frame being assembled (if any) with one
 * "nnpipe-class" message listing its regions' classes. */
static GstFlowReturn
flush_regions (GstNnClassDecode *self)
{
  GstBuffer *frame;
  GValue list = G_VALUE_INIT;
  GstStructure *s;
  gpointer state = NULL;
  GstMeta *m;

  frame = gst_nn_frame_collect_take (&self->collect, GST_CAT_DEFAULT,
      GST_OBJECT (self));
  if (frame == NULL)
    return GST_FLOW_OK;

  gst_value_list_init (&list, 4);
  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_CLASS_PARAM_NAME);
    GValue v = G_VALUE_INIT;
    GstStructure *c;

    if (p == NULL)
      continue;
    c = gst_structure_copy (p);
    gst_structure_set_name (c, "region");
    gst_structure_set (c, "id", G_TYPE_INT, roi->id, NULL);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, c);
    gst_structure_free (c);
    gst_value_list_append_and_take_value (&list, &v);
  }
  s = gst_structure_new ("nnpipe-class", "pts", G_TYPE_UINT64,
      GST_BUFFER_PTS (frame), NULL);
  gst_structure_take_value (s, "regions", &list);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  return gst_nn_frame_out_push (&self->out, frame, &self->collect.info);
}

static gboolean
gst_nn_class_decode_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      flush_regions (self);
      break;
    case GST_EVENT_FLUSH_STOP:
      gst_nn_frame_collect_clear (&self->collect);
      break;
    default:
      break;
  }
  return gst_nn_results_sink_event (&self->out, pad, parent, event,
      gst_nn_class_decode_set_caps);
}

/* Region mode: the best class of region @fm into its ROI on the frame
 * being assembled; pushes the frame once all its regions arrived. */
static GstFlowReturn
class_region (GstNnClassDecode *self, GstNnFrameMeta *fm, gint best,
    gdouble score)
{
  GstFlowReturn ret = GST_FLOW_OK;
  GstVideoRegionOfInterestMeta *roi;

  if (gst_nn_frame_collect_is_new (&self->collect, fm)) {
    ret = flush_regions (self);
    gst_nn_frame_collect_start (&self->collect, fm);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (fm->n_rois == 0) /* placeholder of a frame without regions */
    return flush_regions (self);

  roi = gst_nn_find_roi (self->collect.frame, fm->roi_id);
  if (roi) {
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_CLASS_PARAM_NAME);

    if (p)
      gst_structure_set (p, "label", G_TYPE_STRING, self->labels[best],
          "class-id", G_TYPE_INT, best, "score", G_TYPE_DOUBLE, score, NULL);
    else
      gst_video_region_of_interest_meta_add_param (roi,
          gst_structure_new (GST_NN_CLASS_PARAM_NAME, "label", G_TYPE_STRING,
              self->labels[best], "class-id", G_TYPE_INT, best, "score",
              G_TYPE_DOUBLE, score, NULL));
  }
  if (self->out_file) {
    fprintf (self->out_file, "%s\t%.4f\n", self->labels[best], score);
    fflush (self->out_file);
  }
  GST_LOG_OBJECT (self, "region %d/%d: %s (%.3f)", fm->roi_index, fm->n_rois,
      self->labels[best], score);
  if (gst_nn_frame_collect_add (&self->collect))
    ret = flush_regions (self);
  return ret;
}

static GstFlowReturn
gst_nn_class_decode_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (parent);
  GstNnFrameMeta *fm;
  GstMapInfo map;
  gint C = self->n_classes, W, H;
  gdouble *p;
  gint *order;
  guint k;
  gboolean softmax;
  GstBuffer *frame;
  GstVideoInfo info;
  GstVideoRegionOfInterestMeta *roi;
  GValue list = G_VALUE_INIT;
  GstStructure *s;
  GstClockTime pts;

  if (self->labels == NULL)
    goto not_negotiated;
  fm = gst_buffer_get_nn_frame_meta (buf);
  if (fm == NULL || fm->frame == NULL)
    goto no_frame;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    goto map_failed;
  if (map.size < C * sizeof (gfloat)) {
    gst_buffer_unmap (buf, &map);
    goto too_small;
  }
  GST_OBJECT_LOCK (self);
  k = MIN (self->top_k, (guint) C);
  softmax = self->softmax;
  GST_OBJECT_UNLOCK (self);

  p = g_new (gdouble, C);
  order = g_new (gint, C);
  {
    const gfloat *v = (const gfloat *) map.data;
    gdouble mx = -G_MAXDOUBLE, sum = 0;

    for (gint i = 0; i < C; i++)
      mx = MAX (mx, v[i]);
    for (gint i = 0; i < C; i++) {
      p[i] = softmax ? exp (v[i] - mx) : v[i];
      sum += p[i];
    }
    if (softmax)
      for (gint i = 0; i < C; i++)
        p[i] /= sum;
  }
  gst_buffer_unmap (buf, &map);
  /* partial selection sort: the k best first */
  for (gint i = 0; i < C; i++)
    order[i] = i;
  for (guint i = 0; i < k; i++)
    for (gint j = (gint) i + 1; j < C; j++)
      if (p[order[j]] > p[order[i]]) {
        gint t = order[i];

        order[i] = order[j];
        order[j] = t;
      }

  if (fm->n_rois >= 0) {
    /* one tensor per region (nncrop): results go into the regions */
    GstFlowReturn ret = class_region (self, fm, order[0], p[order[0]]);

    gst_buffer_unref (buf);
    g_free (p);
    g_free (order);
    return ret;
  }

  info = fm->info;
  W = GST_VIDEO_INFO_WIDTH (&info);
  H = GST_VIDEO_INFO_HEIGHT (&info);
  pts = GST_BUFFER_PTS (buf);
  frame = gst_buffer_copy (fm->frame);
  GST_BUFFER_PTS (frame) = pts;
  GST_BUFFER_DTS (frame) = GST_BUFFER_DTS (buf);
  GST_BUFFER_DURATION (frame) = GST_BUFFER_DURATION (buf);
  gst_buffer_unref (buf);

  roi =
      gst_buffer_add_video_region_of_interest_meta (frame, "class", 0, 0, W, H);
  if (roi && k > 0)
    gst_video_region_of_interest_meta_add_param (roi,
        gst_structure_new (GST_NN_CLASS_PARAM_NAME, "label", G_TYPE_STRING,
            self->labels[order[0]], "class-id", G_TYPE_INT, order[0], "score",
            G_TYPE_DOUBLE, p[order[0]], NULL));

  gst_value_list_init (&list, k);
  for (guint i = 0; i < k; i++) {
    GValue v = G_VALUE_INIT;
    GstStructure *c = gst_structure_new ("class", "label", G_TYPE_STRING,
        self->labels[order[i]], "class-id", G_TYPE_INT, order[i], "score",
        G_TYPE_DOUBLE, p[order[i]], NULL);

    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, c);
    gst_structure_free (c);
    gst_value_list_append_and_take_value (&list, &v);
    if (self->out_file)
      fprintf (self->out_file, "%s\t%.4f\n", self->labels[order[i]],
          p[order[i]]);
  }
  if (self->out_file)
    fflush (self->out_file);
  s = gst_structure_new ("nnpipe-class", "pts", G_TYPE_UINT64, pts, NULL);
  gst_structure_take_value (s, "classes", &list);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  g_free (p);
  g_free (order);

  return gst_nn_frame_out_push (&self->out, frame, &info);

  /* ERRORS */
not_negotiated:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("buffer before caps"));
  return GST_FLOW_NOT_NEGOTIATED;
no_frame:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("The tensors carry no video frame."),
      ("no GstNnFrameMeta on the input: run nnconvert with keep-frame=true"));
  return GST_FLOW_ERROR;
map_failed:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL), ("could not map input"));
  return GST_FLOW_ERROR;
too_small:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
      ("input buffer smaller than %d float32 scores", C));
  return GST_FLOW_ERROR;
}

static GstStateChangeReturn
gst_nn_class_decode_change_state (GstElement *element,
    GstStateChange transition)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gchar *location, *labels;

    /* labels without a comma name a file: it must be there */
    GST_OBJECT_LOCK (self);
    labels = g_strdup (self->labels_prop);
    GST_OBJECT_UNLOCK (self);
    if (labels && *labels && strchr (labels, ',') == NULL
        && !g_file_test (labels, G_FILE_TEST_IS_REGULAR)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("invalid value \"%s\" for property 'labels': no such file (a "
           "list of labels has commas, e.g. \"0,180\")",
              labels),
          (NULL));
      g_free (labels);
      return GST_STATE_CHANGE_FAILURE;
    }
    g_free (labels);

    GST_OBJECT_LOCK (self);
    location = g_strdup (self->location);
    GST_OBJECT_UNLOCK (self);
    if (!gst_nn_results_open_file (element, location, &self->out_file)) {
      g_free (location);
      return GST_STATE_CHANGE_FAILURE;
    }
    g_free (location);
  }

  ret = GST_ELEMENT_CLASS (gst_nn_class_decode_parent_class)
            ->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    gst_nn_frame_collect_clear (&self->collect);
    gst_nn_frame_out_reset (&self->out);
    g_strfreev (self->labels);
    self->labels = NULL;
    self->n_classes = 0;
    gst_nn_results_close_file (&self->out_file);
  }
  return ret;
}

static void
gst_nn_class_decode_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LABELS:
      g_free (self->labels_prop);
      self->labels_prop = g_value_dup_string (value);
      break;
    case PROP_TOP_K:
      self->top_k = g_value_get_uint (value);
      break;
    case PROP_SOFTMAX:
      self->softmax = g_value_get_boolean (value);
      break;
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_class_decode_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LABELS:
      g_value_set_string (value, self->labels_prop);
      break;
    case PROP_TOP_K:
      g_value_set_uint (value, self->top_k);
      break;
    case PROP_SOFTMAX:
      g_value_set_boolean (value, self->softmax);
      break;
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_class_decode_finalize (GObject *object)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (object);

  g_free (self->labels_prop);
  g_free (self->location);
  g_strfreev (self->labels);
  gst_nn_frame_collect_clear (&self->collect);
  gst_nn_frame_out_reset (&self->out);
  G_OBJECT_CLASS (gst_nn_class_decode_parent_class)->finalize (object);
}

static void
gst_nn_class_decode_class_init (GstNnClassDecodeClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_class_decode_debug, "nnclassdecode", 0,
      "nnpipe classifier decoder");

  /* register the metas up front (tests look them up by name) */
  (void) GST_NN_FRAME_META_INFO;

  gobject_class->set_property = gst_nn_class_decode_set_property;
  gobject_class->get_property = gst_nn_class_decode_get_property;
  gobject_class->finalize = gst_nn_class_decode_finalize;

  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Class labels: comma-separated (\"0,180\") or a file with one "
          "label per line (no comma: a file); unset: class numbers",
          DEFAULT_LABELS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_TOP_K,
      g_param_spec_uint ("top-k", "Top k", "Number of best classes reported", 1,
          G_MAXINT, DEFAULT_TOP_K,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SOFTMAX,
      g_param_spec_boolean ("softmax", "Softmax",
          "Apply a softmax to the scores (for models that output logits)",
          DEFAULT_SOFTMAX,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Also write the top-k classes to this file ('-': standard output): "
          "label, tab, score",
          DEFAULT_LOCATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Classifier decoder",
      "Filter/Analyzer/Video/Tensor",
      "Picks the top-k labels of a classifier's scores and attaches them to "
      "the original frame",
      "nnpipe developers");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_nn_class_decode_change_state);
}

static void
gst_nn_class_decode_init (GstNnClassDecode *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_class_decode_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_class_decode_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->top_k = DEFAULT_TOP_K;
  self->softmax = DEFAULT_SOFTMAX;
  gst_nn_frame_out_init (&self->out, self->srcpad);
}
