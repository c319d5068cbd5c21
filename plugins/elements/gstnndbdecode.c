/* GStreamer nnpipe plugin: nndbdecode
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nndbdecode
 * @title: nndbdecode
 * @short_description: decode text boxes from a DB text detector's map
 *
 * nndbdecode takes the output of a DB (Differentiable Binarization) text
 * detector such as PaddleOCR's ch_PP-OCRv4_det, a float32 probability map
 * of shape 1x1xHxW, and finds the text boxes in it the way PaddleOCR does:
 * the map is binarised at #GstNnDbDecode:threshold, each connected region
 * gets its minimum-area (rotated) rectangle, regions whose mean probability
 * is below #GstNnDbDecode:box-threshold (unless its own pixels' mean
 * reaches #GstNnDbDecode:region-threshold) or whose short side is below
 * #GstNnDbDecode:min-size are dropped, and the rest are grown ("unclipped")
 * by area * #GstNnDbDecode:unclip-ratio / perimeter on each side.
 *
 * The boxes are mapped back onto the original frame with the
 * #GstNnTransformMeta of nnconvert, and the element pushes that frame
 * (carried by a #GstNnFrameMeta: run nnconvert with keep-frame=true) with
 * one #GstVideoRegionOfInterestMeta per box, in reading order: roi_type
 * "text", id = box index, and an "nnpipe/text" structure with the box score
 * and the four rotated corners.  Every input buffer gives one frame, with
 * or without boxes.  An element message "nnpipe-text-boxes" lists the boxes
 * of each frame.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=1 pattern=white ! \
 *     video/x-raw,width=640,height=480 ! \
 *     textoverlay text="Hello World 123" font-desc="Sans 36" color=0xff000000 \
 *       draw-shadow=false draw-outline=false valignment=center halignment=center ! \
 *     videoconvert ! video/x-raw,format=RGB ! \
 *     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
 *       keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_det_infer.onnx ! nndbdecode ! nncrop channel-order=bgr ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_rec_infer.onnx ! \
 *     nnctcdecode keys=.cache/models/ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
 *     pngenc ! filesink location=ocr.png
 * ]| finds the text boxes of a rendered frame, reads them and writes the
 * annotated frame (pipelines/ocr.sh).  Ending the line with
 * `nndbdecode ! nnoverlay ! videoconvert ! pngenc ! filesink location=boxes.png`
 * draws the boxes only.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndbdecode.h"
#include "gstnnresults.h"
#include "gstnnsourcemeta.h"
#include "nndb.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_db_decode_debug);
#define GST_CAT_DEFAULT gst_nn_db_decode_debug

#define DEFAULT_THRESHOLD 0.3
#define DEFAULT_BOX_THRESHOLD 0.6
#define DEFAULT_REGION_THRESHOLD 0.9
#define DEFAULT_UNCLIP_RATIO 1.5
#define DEFAULT_MIN_SIZE 3.0
#define DEFAULT_MAX_CANDIDATES 1000
#define DEFAULT_TIDY TRUE
#define DEFAULT_WHOLE_FRAME_SIZE 160

enum
{
  PROP_0,
  PROP_THRESHOLD,
  PROP_BOX_THRESHOLD,
  PROP_UNCLIP_RATIO,
  PROP_MIN_SIZE,
  PROP_MAX_CANDIDATES,
  PROP_TIDY,
  PROP_WHOLE_FRAME_SIZE,
  PROP_REGION_THRESHOLD,
};

struct _GstNnDbDecode
{
  GstNnDecoder parent;

  /* properties (object lock) */
  NnDbParams params;
  gboolean tidy;
  guint whole_frame_size;

  /* streaming state */
  gint map_width, map_height;
};

G_DEFINE_TYPE (GstNnDbDecode, gst_nn_db_decode, GST_TYPE_NN_DECODER);
GST_ELEMENT_REGISTER_DEFINE (nndbdecode, "nndbdecode", GST_RANK_NONE,
    GST_TYPE_NN_DB_DECODE);

static gboolean
gst_nn_db_decode_set_info (GstNnDecoder *decoder, const GstNnTensorsInfo *info)
{
  GstNnDbDecode *self = GST_NN_DB_DECODE (decoder);
  const NnpShape *shape = &info->tensors[0].shape;

  if (!gst_nn_decoder_expect_one_float32 (decoder, info, 2, NNP_MAX_RANK,
          "one float32 probability map of shape 1x1xHxW (dimensions=W:H:1:1 types=float32)"))
    return FALSE;
  self->map_height = (gint) shape->dims[shape->rank - 2];
  self->map_width = (gint) shape->dims[shape->rank - 1];
  GST_DEBUG_OBJECT (self, "probability map %dx%d", self->map_width,
      self->map_height);
  return TRUE;
}

static void
post_boxes_message (GstNnDbDecode *self, GstBuffer *frame,
    const NnTextBox *boxes, guint n)
{
  GValue list = G_VALUE_INIT;
  GString *lines = g_string_new (NULL);
  GstStructure *s;

  gst_value_list_init (&list, n);
  for (guint i = 0; i < n; i++) {
    const NnQuad *q = &boxes[i].quad;
    GValue v = G_VALUE_INIT;
    GstStructure *b =
        gst_structure_new ("box", "score", G_TYPE_DOUBLE, boxes[i].score, "x0",
            G_TYPE_DOUBLE, q->p[0].x, "y0", G_TYPE_DOUBLE, q->p[0].y, "x1",
            G_TYPE_DOUBLE, q->p[1].x, "y1", G_TYPE_DOUBLE, q->p[1].y, "x2",
            G_TYPE_DOUBLE, q->p[2].x, "y2", G_TYPE_DOUBLE, q->p[2].y, "x3",
            G_TYPE_DOUBLE, q->p[3].x, "y3", G_TYPE_DOUBLE, q->p[3].y, NULL);

    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, b);
    gst_structure_free (b);
    gst_value_list_append_and_take_value (&list, &v);
    g_string_append_printf (lines,
        "%.4f\t%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\n", boxes[i].score,
        q->p[0].x, q->p[0].y, q->p[1].x, q->p[1].y, q->p[2].x, q->p[2].y,
        q->p[3].x, q->p[3].y);
  }
  s = gst_structure_new ("nnpipe-text-boxes", "pts", G_TYPE_UINT64,
      GST_BUFFER_PTS (frame), "count", G_TYPE_UINT, n, NULL);
  gst_structure_take_value (s, "boxes", &list);
  gst_nn_source_structure_set (s, frame); /* where and when */
  gst_nn_decoder_post (GST_NN_DECODER (self), s);
  gst_nn_decoder_write_results (GST_NN_DECODER (self), lines->str);
  g_string_free (lines, TRUE);
}

static GstFlowReturn
gst_nn_db_decode_decode (GstNnDecoder *decoder, GstNnDecoderFrame *f)
{
  GstNnDbDecode *self = GST_NN_DB_DECODE (decoder);
  gint W = self->map_width, H = self->map_height;
  GstNnFrameMapping m;
  NnDbParams params;
  GArray *boxes;
  gboolean tidy;
  guint whole;

  gst_nn_frame_mapping_init (&m, f, W, H);
  GST_OBJECT_LOCK (self);
  params = self->params;
  tidy = self->tidy;
  whole = self->whole_frame_size;
  GST_OBJECT_UNLOCK (self);
  boxes = g_array_new (FALSE, FALSE, sizeof (NnTextBox));
  nn_db_decode ((const gfloat *) f->data[0], W, H, W, m.content_width,
      m.content_height, &params, boxes);
  if (tidy)
    nn_text_boxes_tidy (boxes);

  for (guint i = 0; i < boxes->len; i++) {
    NnTextBox *b = &g_array_index (boxes, NnTextBox, i);

    for (gint k = 0; k < 4; k++)
      gst_nn_frame_mapping_to_frame (&m, &b->quad.p[k].x, &b->quad.p[k].y);
  }
  nn_text_boxes_sort ((NnTextBox *) boxes->data, boxes->len);
  GST_LOG_OBJECT (self, "%u boxes", boxes->len);
  if (boxes->len == 0 && whole > 0
      && (guint) MIN (m.frame_width, m.frame_height) <= whole) {
    /* a word crop or a tight one-line screenshot: no border around the
     * text for the detector to find; the whole frame is the box */
    NnTextBox b = { { { { 0, 0 }, { m.frame_width, 0 },
        { m.frame_width, m.frame_height }, { 0, m.frame_height } } } };

    b.core = b.quad;
    b.score = 0.0;
    g_array_append_val (boxes, b);
    GST_LOG_OBJECT (self, "no box on a %dx%d frame: the whole frame",
        m.frame_width, m.frame_height);
  }

  for (guint i = 0; i < boxes->len; i++) {
    NnTextBox *b = &g_array_index (boxes, NnTextBox, i);

    gst_nn_add_text_roi (f->frame, (gint) i, &b->quad, b->score, m.frame_width,
        m.frame_height);
  }
  post_boxes_message (self, f->frame, (NnTextBox *) boxes->data, boxes->len);
  g_array_unref (boxes);
  return GST_FLOW_OK;
}

static void
gst_nn_db_decode_stop (GstNnDecoder *decoder)
{
  GstNnDbDecode *self = GST_NN_DB_DECODE (decoder);

  self->map_width = self->map_height = 0;
}

static void
gst_nn_db_decode_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnDbDecode *self = GST_NN_DB_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_THRESHOLD:
      self->params.threshold = g_value_get_double (value);
      break;
    case PROP_BOX_THRESHOLD:
      self->params.box_threshold = g_value_get_double (value);
      break;
    case PROP_UNCLIP_RATIO:
      self->params.unclip_ratio = g_value_get_double (value);
      break;
    case PROP_MIN_SIZE:
      self->params.min_size = g_value_get_double (value);
      break;
    case PROP_MAX_CANDIDATES:
      self->params.max_candidates = g_value_get_uint (value);
      break;
    case PROP_TIDY:
      self->tidy = g_value_get_boolean (value);
      break;
    case PROP_WHOLE_FRAME_SIZE:
      self->whole_frame_size = g_value_get_uint (value);
      break;
    case PROP_REGION_THRESHOLD:
      self->params.region_threshold = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_db_decode_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnDbDecode *self = GST_NN_DB_DECODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_THRESHOLD:
      g_value_set_double (value, self->params.threshold);
      break;
    case PROP_BOX_THRESHOLD:
      g_value_set_double (value, self->params.box_threshold);
      break;
    case PROP_UNCLIP_RATIO:
      g_value_set_double (value, self->params.unclip_ratio);
      break;
    case PROP_MIN_SIZE:
      g_value_set_double (value, self->params.min_size);
      break;
    case PROP_MAX_CANDIDATES:
      g_value_set_uint (value, self->params.max_candidates);
      break;
    case PROP_TIDY:
      g_value_set_boolean (value, self->tidy);
      break;
    case PROP_WHOLE_FRAME_SIZE:
      g_value_set_uint (value, self->whole_frame_size);
      break;
    case PROP_REGION_THRESHOLD:
      g_value_set_double (value, self->params.region_threshold);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_db_decode_class_init (GstNnDbDecodeClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNnDecoderClass *decoder_class = GST_NN_DECODER_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;

  GST_DEBUG_CATEGORY_INIT (gst_nn_db_decode_debug, "nndbdecode", 0,
      "nnpipe DB text-box decoder");

  gobject_class->set_property = gst_nn_db_decode_set_property;
  gobject_class->get_property = gst_nn_db_decode_get_property;

  g_object_class_install_property (gobject_class, PROP_THRESHOLD,
      g_param_spec_double ("threshold", "Threshold",
          "Probability above which a map pixel counts as text", 0.0, 1.0,
          DEFAULT_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_BOX_THRESHOLD,
      g_param_spec_double ("box-threshold", "Box threshold",
          "Minimum mean probability inside a box to keep it", 0.0, 1.0,
          DEFAULT_BOX_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_UNCLIP_RATIO,
      g_param_spec_double ("unclip-ratio", "Unclip ratio",
          "Box growth: each side moves out by area * ratio / perimeter", 0.0,
          100.0, DEFAULT_UNCLIP_RATIO, flags));
  g_object_class_install_property (gobject_class, PROP_MIN_SIZE,
      g_param_spec_double ("min-size", "Minimum size",
          "Minimum short side of a box in map pixels (before unclip; min-size + 2 after)",
          0.0, 10000.0, DEFAULT_MIN_SIZE, flags));
  g_object_class_install_property (gobject_class, PROP_MAX_CANDIDATES,
      g_param_spec_uint ("max-candidates", "Maximum candidates",
          "Connected regions of the map examined at most per frame", 0,
          G_MAXUINT, DEFAULT_MAX_CANDIDATES, flags));
  /**
   * GstNnDbDecode:tidy:
   *
   * After the unclip growth, join the overlapping boxes of one line (the
   * overlap would be read twice) and cut a box back where it reaches past
   * the middle between its line and the next one (dense pages).
   */
  g_object_class_install_property (gobject_class, PROP_TIDY,
      g_param_spec_boolean ("tidy", "Tidy",
          "Join overlapping boxes of one line and stop each box halfway to the neighbouring line",
          DEFAULT_TIDY, flags));
  /**
   * GstNnDbDecode:whole-frame-size:
   *
   * A word crop or a tight screenshot of one line gives the detector no
   * border around the text to find: when it finds no box on a frame whose
   * short side is at most this many pixels, the whole frame becomes one
   * text box (box-score 0).  0: never.
   */
  g_object_class_install_property (gobject_class, PROP_WHOLE_FRAME_SIZE,
      g_param_spec_uint ("whole-frame-size", "Whole-frame size",
          "When no box is found on a frame whose short side is at most this many pixels, the whole frame is one box (0: never)",
          0, G_MAXUINT, DEFAULT_WHOLE_FRAME_SIZE, flags));

  /**
   * GstNnDbDecode:region-threshold:
   *
   * The rectangle of a curved or slanted line (a photographed page, a
   * sign on a cylinder) holds much background, and its mean probability
   * falls below #GstNnDbDecode:box-threshold although the line is plain
   * text: such a box is kept when the mean over its connected region's own
   * pixels (those above #GstNnDbDecode:threshold; PaddleOCR's score_mode
   * "slow" scores the region's contour) is at least this.  Faint specks
   * and icons score 0.6 to 0.86 there, lines 0.9 and more.  1: never.
   */
  g_object_class_install_property (gobject_class, PROP_REGION_THRESHOLD,
      g_param_spec_double ("region-threshold", "Region threshold",
          "Keep a box below box-threshold when the mean over its region's own pixels is at least this (curved lines; 1: never)",
          0.0, 1.0, DEFAULT_REGION_THRESHOLD, flags));

  gst_element_class_set_static_metadata (element_class, "DB text-box decoder",
      "Filter/Analyzer/Video/Tensor",
      "Finds text boxes in a DB text detector's probability map and attaches them to the original frame as region-of-interest metas",
      "nnpipe developers");

  decoder_class->set_info = GST_DEBUG_FUNCPTR (gst_nn_db_decode_set_info);
  decoder_class->decode = GST_DEBUG_FUNCPTR (gst_nn_db_decode_decode);
  decoder_class->stop = GST_DEBUG_FUNCPTR (gst_nn_db_decode_stop);
}

static void
gst_nn_db_decode_init (GstNnDbDecode *self)
{
  self->params.threshold = DEFAULT_THRESHOLD;
  self->params.box_threshold = DEFAULT_BOX_THRESHOLD;
  self->params.unclip_ratio = DEFAULT_UNCLIP_RATIO;
  self->params.min_size = DEFAULT_MIN_SIZE;
  self->params.max_candidates = DEFAULT_MAX_CANDIDATES;
  self->tidy = DEFAULT_TIDY;
  self->whole_frame_size = DEFAULT_WHOLE_FRAME_SIZE;
  self->params.region_threshold = DEFAULT_REGION_THRESHOLD;
}
