/* GStreamer nnpipe plugin: nndetectdecode's properties (one table over
 * the Settings struct) and its enums.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndetectdecode-private.h"

/* ------------------------------------------------------------------ enums */

#define DEFINE_ENUM(fn, name, ...) \
  GType fn (void) \
  { \
    static GType type = 0; \
    static const GEnumValue values[] = { __VA_ARGS__, { 0, NULL, NULL } }; \
    if (g_once_init_enter (&type)) { \
      GType t = g_enum_register_static (name, values); \
      g_once_init_leave (&type, t); \
    } \
    return type; \
  }

/* clang-format off */
DEFINE_ENUM (gst_nn_detect_layout_get_type, "GstNnDetectLayout",
    { NN_DETECT_LAYOUT_SSD, "Anchor-based SSD (MediaPipe, BlazeFace)", "ssd" },
    { NN_DETECT_LAYOUT_YOLOV5, "YOLO v5/v7 [1,N,5+C]", "yolov5" },
    { NN_DETECT_LAYOUT_YOLOV8, "YOLO v8/v11 [1,4+C,N]", "yolov8" },
    { NN_DETECT_LAYOUT_BOXES_SCORES, "Boxes [1,N,4] and scores [1,N,C]",
        "boxes-scores" },
    { NN_DETECT_LAYOUT_NMS_INDICES,
        "Boxes, scores [1,C,N] and NonMaxSuppression's indices [K,3]",
        "nms-indices" })
DEFINE_ENUM (gst_nn_detect_preset_get_type, "GstNnDetectPreset",
    { PRESET_NONE, "None", "none" },
    { PRESET_BLAZEFACE,
        "MediaPipe BlazeFace (front 128 / back 256): SSD anchors, sigmoid, 6 keypoints, weighted NMS 0.3, label face", "blazeface" })
DEFINE_ENUM (gst_nn_detect_nms_get_type, "GstNnDetectNms",
    { NN_NMS_NONE, "None", "none" },
    { NN_NMS_HARD, "Greedy (ONNX NonMaxSuppression)", "hard" },
    { NN_NMS_WEIGHTED, "Weighted average of each cluster (MediaPipe)",
        "weighted" })
DEFINE_ENUM (gst_nn_detect_activation_get_type, "GstNnDetectActivation",
    { NN_SCORE_NONE, "Scores are probabilities", "none" },
    { NN_SCORE_SIGMOID, "Logistic", "sigmoid" },
    { NN_SCORE_SOFTMAX, "Softmax over the classes", "softmax" })
DEFINE_ENUM (gst_nn_detect_box_format_get_type, "GstNnDetectBoxFormat",
    { NN_BOX_XYXY, "x0, y0, x1, y1", "xyxy" },
    { NN_BOX_YXYX, "y0, x0, y1, x1", "yxyx" },
    { NN_BOX_CXCYWH, "centre x, centre y, width, height", "cxcywh" })
/* clang-format on */

/* ------------------------------------------------------------ properties */

static void
apply_preset (Settings *s, Preset preset)
{
  s->preset = preset;
  if (preset != PRESET_BLAZEFACE)
    return;
  /* MediaPipe's face_detection_short_range / back: anchors by input size
   * (ensure_anchors), TensorsToDetections and NonMaxSuppression options */
  s->layout = NN_DETECT_LAYOUT_SSD;
  s->activation = NN_SCORE_SIGMOID;
  s->score_clip = 100.0;
  s->threshold = 0.5;
  s->nms = NN_NMS_WEIGHTED;
  s->iou_threshold = 0.3;
  s->class_agnostic = TRUE;
  s->keypoints = 6;
  s->keypoint_offset = 4;
  s->box_format = NN_BOX_CXCYWH;
  s->box_exp = FALSE;
  g_free (s->anchor_strides);
  s->anchor_strides = g_strdup ("");
  g_free (s->labels);
  s->labels = g_strdup ("face");
}

/* The properties: one table, read and written through Settings offsets
 * (property id = index + 1). */
typedef enum
{
  T_ENUM,
  T_DOUBLE,
  T_INT,
  T_BOOL,
  T_STRING,
} PropType;

typedef struct
{
  const gchar *name;
  PropType type;
  gsize offset; /* in Settings */
  GType (*enum_type) (void);
  gdouble min, max, def;
  const gchar *blurb;
} PropDef;

#define F(field) G_STRUCT_OFFSET (Settings, field)
/* clang-format off */
static const PropDef props[] = {
  { "layout", T_ENUM, F (layout), gst_nn_detect_layout_get_type, 0, 0, DEFAULT_LAYOUT,
    "How the model writes its detections" },
  { "preset", T_ENUM, F (preset), gst_nn_detect_preset_get_type, 0, 0, PRESET_NONE,
    "Set the properties for a known model (properties after it override)" },
  { "threshold", T_DOUBLE, F (threshold), NULL, 0, 1, DEFAULT_THRESHOLD,
    "Least score of a detection (after the activation)" },
  { "iou-threshold", T_DOUBLE, F (iou_threshold), NULL, 0, 1,
    DEFAULT_IOU_THRESHOLD,
    "Overlap (IoU) above which NMS suppresses or merges a box" },
  { "nms", T_ENUM, F (nms), gst_nn_detect_nms_get_type, 0, 0, DEFAULT_NMS,
    "Non-maximum suppression" },
  { "class-agnostic", T_BOOL, F (class_agnostic), NULL, 0, 1, FALSE,
    "NMS across classes (else per class)" },
  { "top-k", T_INT, F (top_k), NULL, 0, G_MAXINT, 0,
    "Keep at most this many detections, the best (0: all)" },
  { "labels", T_STRING, F (labels), NULL, 0, 0, 0,
    "Comma-separated class labels, class 0 first" },
  { "labels-file", T_STRING, F (labels_file), NULL, 0, 0, 0,
    "File with one class label per line (when labels is empty)" },
  { "activation", T_ENUM, F (activation), gst_nn_detect_activation_get_type, 0, 0,
    DEFAULT_ACTIVATION, "Function turning raw scores into probabilities" },
  { "background-label", T_INT, F (background_label), NULL, -1, G_MAXINT, -1,
    "Class that is never a detection (-1: none)" },
  { "score-clip", T_DOUBLE, F (score_clip), NULL, 0, G_MAXDOUBLE, 0,
    "Raw scores clipped to +-this before the activation (0: none)" },
  { "anchor-strides", T_STRING, F (anchor_strides), NULL, 0, 0, 0,
    "ssd: stride of each anchor layer, e.g. \"8,16,16,16\" (layers of equal stride share a grid; empty with preset=blazeface: by input size)" },
  { "anchors-per-cell", T_STRING, F (anchors_per_cell), NULL, 0, 0, 0,
    "ssd: anchors per cell of each distinct stride, e.g. \"2,6\" (fixed-size anchors; empty: from the aspect ratios)" },
  { "anchor-offset", T_DOUBLE, F (anchor_offset), NULL, 0, 1,
    DEFAULT_ANCHOR_OFFSET, "ssd: anchor centre within its cell" },
  { "anchor-min-scale", T_DOUBLE, F (anchor_min_scale), NULL, 0, 10,
    DEFAULT_ANCHOR_MIN_SCALE, "ssd: scale of the first layer's anchors" },
  { "anchor-max-scale", T_DOUBLE, F (anchor_max_scale), NULL, 0, 10,
    DEFAULT_ANCHOR_MAX_SCALE, "ssd: scale of the last layer's anchors" },
  { "anchor-aspect-ratios", T_STRING, F (anchor_ratios), NULL, 0, 0, 0,
    "ssd: anchor aspect ratios (w/h) of each layer, e.g. \"1.0,2.0,0.5\"" },
  { "anchor-interpolated-ratio", T_DOUBLE, F (anchor_interpolated), NULL, 0,
    100, 1.0,
    "ssd: aspect ratio of the extra anchor between two layers' scales (0: none)" },
  { "anchor-fixed-size", T_BOOL, F (anchor_fixed), NULL, 0, 1, TRUE,
    "ssd: every anchor 1 x 1 (the regressors give absolute sizes)" },
  { "box-format", T_ENUM, F (box_format), gst_nn_detect_box_format_get_type, 0, 0,
    DEFAULT_BOX_FORMAT,
    "How a box is written (ssd: cxcywh, or yxyx for TensorFlow's order)" },
  { "box-normalized", T_BOOL, F (box_normalized), NULL, 0, 1, FALSE,
    "boxes-scores, nms-indices: boxes in [0, 1] of the input (else pixels)" },
  { "box-scale", T_STRING, F (box_scale), NULL, 0, 0, 0,
    "ssd: x, y, w, h scales of the regressors (empty: the input size)" },
  { "box-exp", T_BOOL, F (box_exp), NULL, 0, 1, FALSE,
    "ssd: sizes are exp() of the regression (TensorFlow SSD)" },
  { "keypoints", T_INT, F (keypoints), NULL, 0, NN_DETECT_MAX_KEYPOINTS, 0,
    "ssd: keypoints (x, y pairs) in each regressor row" },
  { "keypoint-offset", T_INT, F (keypoint_offset), NULL, 0, 1024,
    DEFAULT_KEYPOINT_OFFSET,
    "ssd: index of the first keypoint value in a regressor row" },
  { "dfl-bins", T_INT, F (dfl_bins), NULL, 0, 64, 0,
    "yolov8: bins of each side's DFL distribution (0: plain boxes)" },
  { "strides", T_STRING, F (strides), NULL, 0, 0, 0,
    "yolov8 with DFL: strides of the grids, e.g. \"8,16,32\"" },
  { "input-width", T_INT, F (input_width), NULL, 0, 65536, 0,
    "Model input width (0: from nnconvert's transform meta)" },
  { "input-height", T_INT, F (input_height), NULL, 0, 65536, 0,
    "Model input height (0: from nnconvert's transform meta)" },
  { "merge", T_BOOL, F (merge), NULL, 0, 1, FALSE,
    "Detections already on the frame (an earlier nndetectdecode's, another model or scale) join this one's NMS" },
};
/* clang-format on */
#undef F

static GParamSpec *
prop_spec (const PropDef *d)
{
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;

  switch (d->type) {
    case T_ENUM:
      gst_type_mark_as_plugin_api (d->enum_type (), 0);
      return g_param_spec_enum (d->name, d->name, d->blurb, d->enum_type (),
          (gint) d->def, flags);
    case T_DOUBLE:
      return g_param_spec_double (d->name, d->name, d->blurb, d->min, d->max,
          d->def, flags);
    case T_INT:
      return g_param_spec_int (d->name, d->name, d->blurb, (gint) d->min,
          (gint) d->max, (gint) d->def, flags);
    case T_BOOL:
      return g_param_spec_boolean (d->name, d->name, d->blurb, d->def != 0,
          flags);
    default:
      return g_param_spec_string (d->name, d->name, d->blurb, "", flags);
  }
}

void
gst_nn_detect_decode_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (object);
  const PropDef *d;
  guint8 *field;

  if (prop_id == 0 || prop_id > G_N_ELEMENTS (props)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  d = &props[prop_id - 1];
  GST_OBJECT_LOCK (self);
  field = (guint8 *) &self->settings + d->offset;
  switch (d->type) {
    case T_ENUM:
      *(gint *) field = g_value_get_enum (value);
      if (d->offset == G_STRUCT_OFFSET (Settings, preset))
        apply_preset (&self->settings, self->settings.preset);
      break;
    case T_DOUBLE:
      *(gdouble *) field = g_value_get_double (value);
      break;
    case T_INT:
      *(gint *) field = g_value_get_int (value);
      break;
    case T_BOOL:
      *(gboolean *) field = g_value_get_boolean (value);
      break;
    default:
      g_free (*(gchar **) field);
      *(gchar **) field = g_value_dup_string (value);
      break;
  }
  self->gen++;
  GST_OBJECT_UNLOCK (self);
}

void
gst_nn_detect_decode_get_property (GObject *object, guint prop_id,
    GValue *value, GParamSpec *pspec)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (object);
  const PropDef *d;
  const guint8 *field;

  if (prop_id == 0 || prop_id > G_N_ELEMENTS (props)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  d = &props[prop_id - 1];
  GST_OBJECT_LOCK (self);
  field = (const guint8 *) &self->settings + d->offset;
  switch (d->type) {
    case T_ENUM:
      g_value_set_enum (value, *(const gint *) field);
      break;
    case T_DOUBLE:
      g_value_set_double (value, *(const gdouble *) field);
      break;
    case T_INT:
      g_value_set_int (value, *(const gint *) field);
      break;
    case T_BOOL:
      g_value_set_boolean (value, *(const gboolean *) field);
      break;
    default:
      g_value_set_string (value, *(gchar *const *) field);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}
void
gst_nn_detect_decode_install_properties (GObjectClass *klass)
{
  for (guint i = 0; i < G_N_ELEMENTS (props); i++)
    g_object_class_install_property (klass, i + 1, prop_spec (&props[i]));
}
