/* GStreamer nnpipe plugin: nnctcdecode
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnctcdecode
 * @title: nnctcdecode
 * @short_description: decode a CTC text recogniser's output into text
 *
 * nnctcdecode reads the output of a CTC text recogniser (PaddleOCR's
 * ch_PP-OCRv4_rec: float32 1xTxC class probabilities) for each region
 * cropped by nncrop, decodes it greedily (best class per step, repeats
 * merged, blank class 0 dropped) with the characters of the
 * #GstNnCtcDecode:keys file (class i + 1 is line i; a last class beyond the
 * file is a space, as in PaddleOCR) and scores each line with the mean
 * probability of its characters.  Spaces read at either end of a line (the
 * gap where nncrop left out an icon, a crop's margin) are removed.
 *
 * The text and score go into the region's "nnpipe/text" structure on the
 * original frame; once every region of a frame is read the frame is pushed
 * (lines scoring below #GstNnCtcDecode:min-score lose their region, the
 * regions of one line are joined: #GstNnCtcDecode:join-gap) and an
 * element message "nnpipe-text" lists its lines:
 *
 *   nnpipe-text, pts=(guint64)..., count=(uint)2,
 *       lines=(GstValueList){ line, text="Hello", score=0.99, x0=..., ... }
 *
 * With #GstNnDecoder:location set, the lines are also written to that
 * file ("-" for standard output), one per line: the text, a tab, the
 * score, a tab and the corners "x0,y0 x1,y1 x2,y2 x3,y3".
 *
 * ## Example launch lines
 * |[
 * ... ! nndbdecode ! nncrop channel-order=bgr ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_rec_infer.onnx ! \
 *     nnctcdecode keys=.cache/models/ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
 *     pngenc ! filesink location=ocr.png
 * ]| prints the text read in each frame and writes the annotated frame
 * (pipelines/ocr.sh).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnctcdecode.h"
#include "gstnnresults.h"
#include "gstnnsourcemeta.h"
#include "nnctc.h"
#include "nnlabels.h"
#include "nntextlines.h"
#include "nntextnorm.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_ctc_decode_debug);
#define GST_CAT_DEFAULT gst_nn_ctc_decode_debug

#define DEFAULT_KEYS NULL
#define DEFAULT_MIN_SCORE 0.5
#define DEFAULT_NORMALIZE_LATIN TRUE
#define DEFAULT_JOIN_GAP 0.5

enum
{
  PROP_0,
  PROP_KEYS,
  PROP_MIN_SCORE,
  PROP_NORMALIZE_LATIN,
  PROP_JOIN_GAP,
};

struct _GstNnCtcDecode
{
  GstNnDecoder parent;

  /* properties (object lock) */
  gchar *keys_path;
  gdouble min_score;
  gboolean normalize_latin;
  gdouble join_gap;

  /* streaming state */
  gchar **classes; /* blank, keys..., [space]; NULL-terminated */
  gint n_classes;  /* classes in the model's output */
  gint steps;
};

G_DEFINE_TYPE (GstNnCtcDecode, gst_nn_ctc_decode, GST_TYPE_NN_DECODER);
GST_ELEMENT_REGISTER_DEFINE (nnctcdecode, "nnctcdecode", GST_RANK_NONE,
    GST_TYPE_NN_CTC_DECODE);

/* blank + one class per line of the keys file (+ space when the model has
 * one class more) */
static gboolean
load_classes (GstNnCtcDecode *self, gint n_classes)
{
  gchar *path, **lines;
  GError *err = NULL;
  guint n;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->keys_path);
  GST_OBJECT_UNLOCK (self);

  g_strfreev (self->classes);
  self->classes = NULL;
  if (path == NULL) {
    /* no keys: class numbers as text, for debugging */
    self->classes = g_new0 (gchar *, n_classes + 1);
    self->classes[0] = g_strdup ("");
    for (gint i = 1; i < n_classes; i++)
      self->classes[i] = g_strdup_printf ("<%d>", i);
    return TRUE;
  }
  lines = nn_labels_read_file (path, NN_LABELS_RAW, &n, &err);
  if (lines == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not read the keys file \"%s\".", path), ("%s", err->message));
    g_clear_error (&err);
    g_free (path);
    return FALSE;
  }
  if ((gint) n + 1 != n_classes && (gint) n + 2 != n_classes) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The keys file does not fit the model."),
        ("keys file \"%s\" has %u lines, the model has %d classes: expected %d or %d lines (blank + keys [+ space])",
            path, n, n_classes, n_classes - 1, n_classes - 2));
    g_strfreev (lines);
    g_free (path);
    return FALSE;
  }
  self->classes = g_new0 (gchar *, n_classes + 1);
  self->classes[0] = g_strdup ("");
  for (guint i = 0; i < n; i++)
    self->classes[i + 1] = g_strdup (lines[i]);
  if ((gint) n + 2 == n_classes)
    self->classes[n + 1] = g_strdup (" ");
  GST_DEBUG_OBJECT (self, "%u keys from %s, %d classes", n, path, n_classes);
  g_strfreev (lines);
  g_free (path);
  return TRUE;
}

static gboolean
gst_nn_ctc_decode_set_info (GstNnDecoder *decoder, const GstNnTensorsInfo *info)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (decoder);
  const NnpShape *shape = &info->tensors[0].shape;
  gint n_classes, steps;

  if (!gst_nn_decoder_expect_one_float32 (decoder, info, 2, 3,
          "one float32 tensor of shape 1xTxC (dimensions=C:T:1 types=float32)"))
    return FALSE;
  n_classes = (gint) shape->dims[shape->rank - 1];
  steps = (gint) shape->dims[shape->rank - 2];
  if (n_classes != self->n_classes || self->classes == NULL) {
    if (!load_classes (self, n_classes))
      return FALSE;
    self->n_classes = n_classes;
  }
  self->steps = steps;
  return TRUE;
}

static void
append_line (GValue *list, GString *lines, GstVideoRegionOfInterestMeta *roi,
    const gchar *text, gdouble score)
{
  NnQuad q;
  GValue v = G_VALUE_INIT;
  GstStructure *s;

  gst_nn_roi_get_quad (roi, &q);
  s = gst_structure_new ("line", "text", G_TYPE_STRING, text, "score",
      G_TYPE_DOUBLE, score, "id", G_TYPE_INT, roi->id, "x0", G_TYPE_DOUBLE,
      q.p[0].x, "y0", G_TYPE_DOUBLE, q.p[0].y, "x1", G_TYPE_DOUBLE, q.p[1].x,
      "y1", G_TYPE_DOUBLE, q.p[1].y, "x2", G_TYPE_DOUBLE, q.p[2].x, "y2",
      G_TYPE_DOUBLE, q.p[2].y, "x3", G_TYPE_DOUBLE, q.p[3].x, "y3",
      G_TYPE_DOUBLE, q.p[3].y, NULL);
  g_value_init (&v, GST_TYPE_STRUCTURE);
  gst_value_set_structure (&v, s);
  gst_structure_free (s);
  gst_value_list_append_and_take_value (list, &v);
  g_string_append_printf (lines,
      "%s\t%.4f\t%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\n", text, score,
      q.p[0].x, q.p[0].y, q.p[1].x, q.p[1].y, q.p[2].x, q.p[2].y, q.p[3].x,
      q.p[3].y);
}

/* Join the regions in @kept (ROI metas with text, in frame order) that
 * are pieces of one line (nntextlines.h): the line's first region takes
 * the joined text, the mean score of its characters and the corners
 * spanning the pieces; the others are removed from @frame and @kept. */
static void
join_lines (GstNnCtcDecode *self, GstBuffer *frame, GPtrArray *kept,
    gdouble max_gap)
{
  guint n = kept->len;
  NnTextPiece *pieces = g_new (NnTextPiece, n);
  gint *next = g_new (gint, n);
  gboolean *follower = g_new0 (gboolean, n);

  for (guint i = 0; i < n; i++) {
    GstVideoRegionOfInterestMeta *roi = g_ptr_array_index (kept, i);
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_TEXT_PARAM_NAME);

    gst_nn_roi_get_quad (roi, &pieces[i].quad);
    pieces[i].text = gst_structure_get_string (p, "text");
  }
  if (nn_text_lines_join (pieces, n, max_gap, next) == 0)
    goto done;

  for (guint i = 0; i < n; i++)
    if (next[i] >= 0)
      follower[next[i]] = TRUE;
  for (guint i = 0; i < n; i++) {
    GstVideoRegionOfInterestMeta *head = g_ptr_array_index (kept, i);
    GString *text;
    NnQuad quad = pieces[i].quad;
    guint x0 = head->x, y0 = head->y, x1 = head->x + head->w,
          y1 = head->y + head->h;
    gdouble score_sum = 0;
    glong chars = 0;
    gint last = (gint) i;

    if (follower[i] || next[i] < 0)
      continue;
    text = g_string_new (NULL);
    for (gint k = (gint) i; k >= 0; k = next[k]) {
      GstVideoRegionOfInterestMeta *roi = g_ptr_array_index (kept, k);
      GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
          GST_NN_TEXT_PARAM_NAME);
      gchar *word = g_strstrip (g_strdup (pieces[k].text));
      glong len = g_utf8_strlen (word, -1);
      gdouble score = 0;

      gst_structure_get_double (p, "score", &score);
      score_sum += score * len;
      chars += len;
      if (text->len > 0)
        g_string_append_c (text, ' ');
      g_string_append (text, word);
      g_free (word);
      x0 = MIN (x0, roi->x);
      y0 = MIN (y0, roi->y);
      x1 = MAX (x1, roi->x + roi->w);
      y1 = MAX (y1, roi->y + roi->h);
      last = k;
    }
    quad.p[1] = pieces[last].quad.p[1];
    quad.p[2] = pieces[last].quad.p[2];
    GST_LOG_OBJECT (self, "joined the pieces of one line: '%s'", text->str);
    gst_structure_set (gst_video_region_of_interest_meta_get_param (head,
                           GST_NN_TEXT_PARAM_NAME),
        "text", G_TYPE_STRING, text->str, "score", G_TYPE_DOUBLE,
        chars > 0 ? score_sum / chars : 0.0, NULL);
    gst_nn_roi_set_quad (head, &quad, x0, y0, x1 - x0, y1 - y0);
    g_string_free (text, TRUE);
  }
  for (guint i = n; i-- > 0;)
    if (follower[i]) {
      gst_buffer_remove_meta (frame, g_ptr_array_index (kept, i));
      g_ptr_array_remove_index (kept, i);
    }

done:
  g_free (follower);
  g_free (next);
  g_free (pieces);
}

/* The frame is complete: drop the lines below min-score, join the pieces
 * of each line, post the message, write the lines. */
static void
gst_nn_ctc_decode_finish (GstNnDecoder *decoder, GstBuffer *frame,
    gboolean whole)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (decoder);
  GValue list = G_VALUE_INIT;
  GString *lines = g_string_new (NULL);
  GstStructure *s;
  GPtrArray *drop = g_ptr_array_new (), *kept = g_ptr_array_new ();
  gpointer state = NULL;
  GstMeta *m;
  gdouble min_score, join_gap;
  guint count = 0;

  GST_OBJECT_LOCK (self);
  min_score = self->min_score;
  join_gap = self->join_gap;
  GST_OBJECT_UNLOCK (self);

  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_TEXT_PARAM_NAME);
    gdouble score = 0;

    if (p == NULL || !gst_structure_has_field (p, "text"))
      continue;
    gst_structure_get_double (p, "score", &score);
    g_ptr_array_add (score < min_score ? drop : kept, m);
  }
  for (guint i = 0; i < drop->len; i++)
    gst_buffer_remove_meta (frame, g_ptr_array_index (drop, i));
  g_ptr_array_unref (drop);
  if (join_gap >= 0 && kept->len > 1)
    join_lines (self, frame, kept, join_gap);

  gst_value_list_init (&list, 4);
  for (guint i = 0; i < kept->len; i++) {
    GstVideoRegionOfInterestMeta *roi = g_ptr_array_index (kept, i);
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_TEXT_PARAM_NAME);
    gdouble score = 0;

    gst_structure_get_double (p, "score", &score);
    append_line (&list, lines, roi, gst_structure_get_string (p, "text"),
        score);
    count++;
  }
  g_ptr_array_unref (kept);

  s = gst_structure_new ("nnpipe-text", "pts", G_TYPE_UINT64,
      GST_BUFFER_PTS (frame), "count", G_TYPE_UINT, count, NULL);
  gst_structure_take_value (s, "lines", &list);
  gst_nn_source_structure_set (s, frame); /* where and when */
  gst_nn_decoder_post (decoder, s);
  gst_nn_decoder_write_results (decoder, lines->str);
  g_string_free (lines, TRUE);
}

static GstFlowReturn
gst_nn_ctc_decode_decode (GstNnDecoder *decoder, GstNnDecoderFrame *f)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (decoder);
  GstVideoRegionOfInterestMeta *roi = f->roi;
  gint fw = GST_VIDEO_INFO_WIDTH (&f->info);
  gint fh = GST_VIDEO_INFO_HEIGHT (&f->info);
  gdouble score, best;
  gchar *text;
  gboolean normalize;

  GST_OBJECT_LOCK (self);
  normalize = self->normalize_latin;
  GST_OBJECT_UNLOCK (self);
  text = nn_ctc_greedy_decode ((const gfloat *) f->data[0], self->steps,
      self->n_classes, 0, (const gchar *const *) self->classes, &score);
  if (normalize) {
    gchar *plain = nn_text_normalize_latin (text);

    g_free (text);
    text = plain;
  }
  /* a blank read at either end (the gap left by a cut icon, a crop's
   * margin) is not part of the line */
  g_strstrip (text);
  if (roi == NULL) {
    /* whole-frame input: a region covering the frame */
    NnQuad q = { { { 0, 0 }, { fw, 0 }, { fw, fh }, { 0, fh } } };

    roi = gst_nn_add_text_roi (f->frame, MAX (f->roi_id, 0), &q, 1.0, fw, fh);
  }
  if (roi) {
    GstStructure *p = gst_video_region_of_interest_meta_get_param (roi,
        GST_NN_TEXT_PARAM_NAME);

    /* a region read twice (nncrop read-both: both orientations): the
     * better-scored reading wins */
    if (p
        && (!gst_structure_has_field (p, "text")
            || !gst_structure_get_double (p, "score", &best) || score > best))
      gst_structure_set (p, "text", G_TYPE_STRING, text, "score", G_TYPE_DOUBLE,
          score, NULL);
  }
  GST_LOG_OBJECT (self, "region %d/%d: '%s' (%.3f)", f->roi_index, f->n_rois,
      text, score);
  g_free (text);
  return GST_FLOW_OK;
}

static void
gst_nn_ctc_decode_stop (GstNnDecoder *decoder)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (decoder);

  g_strfreev (self->classes);
  self->classes = NULL;
  self->n_classes = self->steps = 0;
}

static void
gst_nn_ctc_decode_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_KEYS:
      g_free (self->keys_path);
      self->keys_path = g_value_dup_string (value);
      break;
    case PROP_MIN_SCORE:
      self->min_score = g_value_get_double (value);
      break;
    case PROP_NORMALIZE_LATIN:
      self->normalize_latin = g_value_get_boolean (value);
      break;
    case PROP_JOIN_GAP:
      self->join_gap = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_ctc_decode_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_KEYS:
      g_value_set_string (value, self->keys_path);
      break;
    case PROP_MIN_SCORE:
      g_value_set_double (value, self->min_score);
      break;
    case PROP_NORMALIZE_LATIN:
      g_value_set_boolean (value, self->normalize_latin);
      break;
    case PROP_JOIN_GAP:
      g_value_set_double (value, self->join_gap);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_ctc_decode_finalize (GObject *object)
{
  GstNnCtcDecode *self = GST_NN_CTC_DECODE (object);

  g_free (self->keys_path);
  g_strfreev (self->classes);
  G_OBJECT_CLASS (gst_nn_ctc_decode_parent_class)->finalize (object);
}

static void
gst_nn_ctc_decode_class_init (GstNnCtcDecodeClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNnDecoderClass *decoder_class = GST_NN_DECODER_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_ctc_decode_debug, "nnctcdecode", 0,
      "nnpipe CTC text decoder");

  gobject_class->set_property = gst_nn_ctc_decode_set_property;
  gobject_class->get_property = gst_nn_ctc_decode_get_property;
  gobject_class->finalize = gst_nn_ctc_decode_finalize;

  g_object_class_install_property (gobject_class, PROP_KEYS,
      g_param_spec_string ("keys", "Keys file",
          "Character list, one per line: line i is class i + 1 (class 0 is the CTC blank; a last class beyond the file is a space). Unset: "
          "classes decode as <number>",
          DEFAULT_KEYS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MIN_SCORE,
      g_param_spec_double ("min-score", "Minimum score",
          "Lines scoring lower are dropped (their region is removed)", 0.0, 1.0,
          DEFAULT_MIN_SCORE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstNnCtcDecode:normalize-latin:
   *
   * PaddleOCR's Chinese recogniser has the full-width forms of the ASCII
   * characters and the CJK punctuation in its keys and picks them now and
   * then on Latin text.  On a line with Latin letters or digits and no
   * Han, kana or Hangul character, map them to their plain forms
   * ("Ｈｅｌｌｏ：" -> "Hello:", "、" -> ",", "。" -> "."); other lines are
   * left as read.
   */
  g_object_class_install_property (gobject_class, PROP_NORMALIZE_LATIN,
      g_param_spec_boolean ("normalize-latin", "Normalize Latin",
          "On Latin lines (no Han, kana or Hangul), map full-width forms and CJK punctuation to their plain forms",
          DEFAULT_NORMALIZE_LATIN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnCtcDecode:join-gap:
   *
   * The detector splits a line into several boxes where its words stand
   * far apart (large sign lettering: "Stationery" and "Box"); the regions
   * of one line (about the same angle and height, side by side, the gap
   * between them at most this many times their height) become one region
   * whose text joins theirs with a space.  A region read as one character
   * is never joined (beside a word it is usually an icon or a check box).
   * -1: never join.
   */
  g_object_class_install_property (gobject_class, PROP_JOIN_GAP,
      g_param_spec_double ("join-gap", "Join gap",
          "Join the regions of one line whose gap is at most this many times their height into one (-1: never)",
          -1.0, 100.0, DEFAULT_JOIN_GAP,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_set_static_metadata (element_class, "CTC text decoder",
      "Filter/Analyzer/Video/Tensor",
      "Decodes a CTC text recogniser's output into text on the frame's regions of interest and posts the lines read",
      "nnpipe developers");

  decoder_class->set_info = GST_DEBUG_FUNCPTR (gst_nn_ctc_decode_set_info);
  decoder_class->decode = GST_DEBUG_FUNCPTR (gst_nn_ctc_decode_decode);
  decoder_class->finish = GST_DEBUG_FUNCPTR (gst_nn_ctc_decode_finish);
  decoder_class->stop = GST_DEBUG_FUNCPTR (gst_nn_ctc_decode_stop);
}

static void
gst_nn_ctc_decode_init (GstNnCtcDecode *self)
{
  self->keys_path = g_strdup (DEFAULT_KEYS);
  self->min_score = DEFAULT_MIN_SCORE;
  self->normalize_latin = DEFAULT_NORMALIZE_LATIN;
  self->join_gap = DEFAULT_JOIN_GAP;
}
