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
#include "gstnnresults.h"
#include "gstnnsourcemeta.h"
#include "nnlabels.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_class_decode_debug);
#define GST_CAT_DEFAULT gst_nn_class_decode_debug

#define DEFAULT_LABELS NULL
#define DEFAULT_TOP_K 1
#define DEFAULT_SOFTMAX FALSE

enum
{
  PROP_0,
  PROP_LABELS,
  PROP_TOP_K,
  PROP_SOFTMAX,
};

struct _GstNnClassDecode
{
  GstNnDecoder parent;

  /* properties (object lock) */
  gchar *labels_prop;
  guint top_k;
  gboolean softmax;

  /* streaming state */
  gchar **labels; /* n_classes entries */
  gint n_classes;
};

G_DEFINE_TYPE (GstNnClassDecode, gst_nn_class_decode, GST_TYPE_NN_DECODER);
GST_ELEMENT_REGISTER_DEFINE (nnclassdecode, "nnclassdecode", GST_RANK_NONE,
    GST_TYPE_NN_CLASS_DECODE);

static gboolean
load_labels (GstNnClassDecode *self, gint n_classes)
{
  gchar *prop, **list = NULL;
  guint n = 0;

  GST_OBJECT_LOCK (self);
  prop = g_strdup (self->labels_prop);
  GST_OBJECT_UNLOCK (self);

  if (prop && *prop) {
    GError *err = NULL;

    list = nn_labels_parse (prop, &n, &err);
    if (list == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read the labels file \"%s\".", prop),
          ("%s", err->message));
      g_clear_error (&err);
      g_free (prop);
      return FALSE;
    }
  }
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
    self->labels[i] = list ? g_strdup (list[i]) : g_strdup_printf ("%d", i);
  g_strfreev (list);
  g_free (prop);
  self->n_classes = n_classes;
  return TRUE;
}

static gboolean
gst_nn_class_decode_set_info (GstNnDecoder *decoder,
    const GstNnTensorsInfo *info)
{
  const NnpShape *shape = &info->tensors[0].shape;

  if (!gst_nn_decoder_expect_one_float32 (decoder, info, 1, NNP_MAX_RANK,
          "one float32 score vector of shape 1xC (dimensions=C:1 types=float32)"))
    return FALSE;
  return load_labels (GST_NN_CLASS_DECODE (decoder),
      (gint) shape->dims[shape->rank - 1]);
}

/* Region mode: the frame is complete: one "nnpipe-class" message listing
 * its regions' classes. */
static void
gst_nn_class_decode_finish (GstNnDecoder *decoder, GstBuffer *frame,
    gboolean whole)
{
  GValue list = G_VALUE_INIT;
  GstStructure *s;
  gpointer state = NULL;
  GstMeta *m;

  if (whole)
    return; /* decode() posted the top-k */
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
  gst_nn_source_structure_set (s, frame); /* where and when */
  gst_nn_decoder_post (decoder, s);
}

/* Region mode: the best class into the region's ROI. */
static void
class_region (GstNnClassDecode *self, GstNnDecoderFrame *f, gint best,
    gdouble score)
{
  gchar *line;

  if (f->roi) {
    GstStructure *p = gst_video_region_of_interest_meta_get_param (f->roi,
        GST_NN_CLASS_PARAM_NAME);

    if (p)
      gst_structure_set (p, "label", G_TYPE_STRING, self->labels[best],
          "class-id", G_TYPE_INT, best, "score", G_TYPE_DOUBLE, score, NULL);
    else
      gst_video_region_of_interest_meta_add_param (f->roi,
          gst_structure_new (GST_NN_CLASS_PARAM_NAME, "label", G_TYPE_STRING,
              self->labels[best], "class-id", G_TYPE_INT, best, "score",
              G_TYPE_DOUBLE, score, NULL));
  }
  line = g_strdup_printf ("%s\t%.4f\n", self->labels[best], score);
  gst_nn_decoder_write_results (GST_NN_DECODER (self), line);
  g_free (line);
  GST_LOG_OBJECT (self, "region %d/%d: %s (%.3f)", f->roi_index, f->n_rois,
      self->labels[best], score);
}

/* Whole-frame mode: a "class" ROI covering the frame with the best class,
 * a "nnpipe-class" message with the top k. */
static void
class_frame (GstNnClassDecode *self, GstNnDecoderFrame *f, const gdouble *p,
    const gint *order, guint k)
{
  gint W = GST_VIDEO_INFO_WIDTH (&f->info),
       H = GST_VIDEO_INFO_HEIGHT (&f->info);
  GstVideoRegionOfInterestMeta *roi;
  GValue list = G_VALUE_INIT;
  GString *lines = g_string_new (NULL);
  GstStructure *s;

  roi = gst_buffer_add_video_region_of_interest_meta (f->frame, "class", 0, 0,
      W, H);
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
    g_string_append_printf (lines, "%s\t%.4f\n", self->labels[order[i]],
        p[order[i]]);
  }
  gst_nn_decoder_write_results (GST_NN_DECODER (self), lines->str);
  g_string_free (lines, TRUE);
  s = gst_structure_new ("nnpipe-class", "pts", G_TYPE_UINT64,
      GST_BUFFER_PTS (f->frame), NULL);
  gst_structure_take_value (s, "classes", &list);
  gst_nn_source_structure_set (s, f->frame); /* where and when */
  gst_nn_decoder_post (GST_NN_DECODER (self), s);
}

static GstFlowReturn
gst_nn_class_decode_decode (GstNnDecoder *decoder, GstNnDecoderFrame *f)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (decoder);
  const gfloat *v = (const gfloat *) f->data[0];
  gint C = self->n_classes;
  gdouble *p, mx = -G_MAXDOUBLE, sum = 0;
  gint *order;
  guint k;
  gboolean softmax;

  GST_OBJECT_LOCK (self);
  k = MIN (self->top_k, (guint) C);
  softmax = self->softmax;
  GST_OBJECT_UNLOCK (self);

  p = g_new (gdouble, C);
  order = g_new (gint, C);
  for (gint i = 0; i < C; i++)
    mx = MAX (mx, v[i]);
  for (gint i = 0; i < C; i++) {
    p[i] = softmax ? exp (v[i] - mx) : v[i];
    sum += p[i];
  }
  if (softmax)
    for (gint i = 0; i < C; i++)
      p[i] /= sum;
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

  if (f->whole)
    class_frame (self, f, p, order, k);
  else
    class_region (self, f, order[0], p[order[0]]);
  g_free (p);
  g_free (order);
  return GST_FLOW_OK;
}

/* labels without a comma name a file: it must be there */
static gboolean
gst_nn_class_decode_start (GstNnDecoder *decoder)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (decoder);
  gchar *labels;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  labels = g_strdup (self->labels_prop);
  GST_OBJECT_UNLOCK (self);
  if (labels && *labels && strchr (labels, ',') == NULL
      && !g_file_test (labels, G_FILE_TEST_IS_REGULAR)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("invalid value \"%s\" for property 'labels': no such file (a list of labels has commas, e.g. \"0,180\")",
            labels),
        (NULL));
    ok = FALSE;
  }
  g_free (labels);
  return ok;
}

static void
gst_nn_class_decode_stop (GstNnDecoder *decoder)
{
  GstNnClassDecode *self = GST_NN_CLASS_DECODE (decoder);

  g_strfreev (self->labels);
  self->labels = NULL;
  self->n_classes = 0;
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
  g_strfreev (self->labels);
  G_OBJECT_CLASS (gst_nn_class_decode_parent_class)->finalize (object);
}

static void
gst_nn_class_decode_class_init (GstNnClassDecodeClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNnDecoderClass *decoder_class = GST_NN_DECODER_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_class_decode_debug, "nnclassdecode", 0,
      "nnpipe classifier decoder");

  gobject_class->set_property = gst_nn_class_decode_set_property;
  gobject_class->get_property = gst_nn_class_decode_get_property;
  gobject_class->finalize = gst_nn_class_decode_finalize;

  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Class labels: comma-separated (\"0,180\") or a file with one label per line (no comma: a file); unset: class numbers",
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

  gst_element_class_set_static_metadata (element_class, "Classifier decoder",
      "Filter/Analyzer/Video/Tensor",
      "Picks the top-k labels of a classifier's scores and attaches them to the original frame",
      "nnpipe developers");

  decoder_class->set_info = GST_DEBUG_FUNCPTR (gst_nn_class_decode_set_info);
  decoder_class->decode = GST_DEBUG_FUNCPTR (gst_nn_class_decode_decode);
  decoder_class->finish = GST_DEBUG_FUNCPTR (gst_nn_class_decode_finish);
  decoder_class->start = GST_DEBUG_FUNCPTR (gst_nn_class_decode_start);
  decoder_class->stop = GST_DEBUG_FUNCPTR (gst_nn_class_decode_stop);
}

static void
gst_nn_class_decode_init (GstNnClassDecode *self)
{
  self->top_k = DEFAULT_TOP_K;
  self->softmax = DEFAULT_SOFTMAX;
}
