/* GStreamer nnpipe plugin: nndetectdecode
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nndetectdecode
 * @title: nndetectdecode
 * @short_description: decode an object detector's output into boxes
 *
 * nndetectdecode turns the output tensors of an object detector into
 * boxes on the original frame (nnconvert keep-frame=true upstream): one
 * #GstVideoRegionOfInterestMeta per object, of type the object's label,
 * with a "detection" structure as DL Streamer's gvadetect writes it
 * (label, label_id, confidence, the box normalised to the frame, keypoints
 * when the model gives them; see gstnnresults.h).  Boxes are mapped from
 * the model input back to the frame through nnconvert's transform meta
 * (scale and padding undone).
 *
 * #GstNnDetectDecode:layout says how the model writes its detections:
 *
 * - "ssd": anchor-based SSD decoded as MediaPipe does
 *   (TensorsToDetectionsCalculator): score tensors [1, N, C] and regressor
 *   tensors [1, N, R] (the tensors with the longest rows are the
 *   regressors; several of each are concatenated in order) against N
 *   anchors made from #GstNnDetectDecode:anchor-strides and the other
 *   anchor-* properties (MediaPipe's SsdAnchorsCalculator); regressors
 *   [dx, dy, w, h, keypoints...] scaled by #GstNnDetectDecode:box-scale
 *   (default: the input size), or TensorFlow's [dy, dx, dh, dw] with
 *   box-format=yxyx and box-exp=true.  MediaPipe BlazeFace
 *   (face_detection_front_128x128, face_detection_back_256x256: use
 *   preset=blazeface), MobileNet-SSD.
 * - "yolov5": one tensor [1, N, 5 + C] (cx, cy, w, h, objectness, class
 *   scores in input pixels; score = objectness x class): YOLO v5, v7.
 * - "yolov8": one tensor [1, 4 + C, N]: YOLO v8, v11; with
 *   #GstNnDetectDecode:dfl-bins, [1, 4 x bins + C, N] of raw DFL
 *   distributions over the grid points of #GstNnDetectDecode:strides.
 * - "boxes-scores": boxes [1, N, 4] (#GstNnDetectDecode:box-format, in
 *   pixels or normalised) and scores [1, N, C]: models exported with their
 *   own box decoding.
 * - "nms-indices": boxes [1, N, 4], scores [1, C, N] and the int64
 *   selected_indices [K, 3] of a graph that ends in NonMaxSuppression
 *   (no NMS of ours).
 *
 * Each anchor or row gives its best class when it scores at least
 * #GstNnDetectDecode:threshold (after #GstNnDetectDecode:activation), then
 * #GstNnDetectDecode:nms suppresses overlaps ("hard": ONNX
 * NonMaxSuppression's rule, per class or #GstNnDetectDecode:class-agnostic;
 * "weighted": MediaPipe's weighted average of each cluster) above
 * #GstNnDetectDecode:iou-threshold, and #GstNnDetectDecode:top-k keeps the
 * best.  Labels come from #GstNnDetectDecode:labels or
 * #GstNnDetectDecode:labels-file (one per line); without them the class
 * number is the label.  `location` writes one line per object: PTS (s),
 * label, score and the box "x0,y0,x1,y1" in frame pixels.
 *
 * With #GstNnDetectDecode:merge the detections already on the frame (an
 * earlier nndetectdecode's: another model, or the same at another scale,
 * run one after the other on the frame) take part in this decoder's NMS,
 * so the frame leaves with one set (pipelines/faces.sh runs BlazeFace's
 * back and front models so).
 *
 * Frames that the model skipped (nnstage inference-interval) pass through
 * without new boxes, for nntrack to fill in.
 *
 * The algorithms are plugins/post/nndetect.c and nnnms.c.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=people.jpg ! decodebin ! videoconvert ! \
 *     video/x-raw,format=RGB ! nnconvert width=256 height=256 \
 *       keep-aspect-ratio=true layout=nhwc mean=0.5 std=0.5 keep-frame=true ! \
 *     nnstage model=face_detection_back_256x256_barracuda.onnx ! \
 *     nndetectdecode preset=blazeface location=- ! nnoverlay ! \
 *     videoconvert ! pngenc ! filesink location=faces.png
 * ]| finds the faces of a photo (pipelines/faces.sh).
 * |[
 * ... ! nnconvert width=640 height=640 keep-aspect-ratio=true \
 *       keep-frame=true ! nnstage model=yolov8n.onnx ! \
 *     nndetectdecode layout=yolov8 labels-file=coco.txt threshold=0.25 \
 *       iou-threshold=0.45 ! ...
 * ]| an Ultralytics YOLO v8 export.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndetectdecode-private.h"
#include "gstnnmeta.h"
#include "gstnnresults.h"
#include "gstnnskip.h"
#include "nndetect.h"
#include "nnlabels.h"
#include "nnnms.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_detect_decode_debug);
#define GST_CAT_DEFAULT gst_nn_detect_decode_debug


G_DEFINE_TYPE (GstNnDetectDecode, gst_nn_detect_decode, GST_TYPE_NN_DECODER);
GST_ELEMENT_REGISTER_DEFINE (nndetectdecode, "nndetectdecode", GST_RANK_NONE,
    GST_TYPE_NN_DETECT_DECODE);

/* ---------------------------------------------------------------- helpers */

/* "8,16,16" -> numbers (at most @max); FALSE when not a list of @max or
 * fewer positive numbers. */
static gboolean
parse_list (const gchar *str, gdouble *out, gint max, gint *n)
{
  gchar **parts;
  gboolean ok = TRUE;

  *n = 0;
  if (str == NULL || *str == '\0')
    return TRUE;
  parts = g_strsplit (str, ",", -1);
  for (gint i = 0; parts[i] && ok; i++) {
    gchar *end;
    gdouble v = g_ascii_strtod (g_strstrip (parts[i]), &end);

    ok = *parts[i] && *end == '\0' && v >= 0 && *n < max;
    if (ok)
      out[(*n)++] = v;
  }
  g_strfreev (parts);
  return ok;
}

static void
settings_clear (Settings *s)
{
  g_free (s->anchor_strides);
  g_free (s->anchors_per_cell);
  g_free (s->anchor_ratios);
  g_free (s->box_scale);
  g_free (s->strides);
  g_free (s->labels);
  g_free (s->labels_file);
}

/* Make the streaming state from the settings (on the streaming thread);
 * FALSE after posting an error naming the bad value. */
static gboolean
make_state (GstNnDetectDecode *self)
{
  Settings *s = &self->settings;
  NnSsdAnchorOptions *o = &self->anchor_opts;
  gdouble v[NN_SSD_MAX_LAYERS];
  gint n;
  const gchar *bad = NULL, *what = NULL;
  gchar **labels = NULL;

  GST_OBJECT_LOCK (self);
  if (self->made && self->made_gen == self->gen) {
    GST_OBJECT_UNLOCK (self);
    return TRUE;
  }
  self->active = *s;
  memset (o, 0, sizeof (*o));
  o->offset_x = o->offset_y = s->anchor_offset;
  o->min_scale = s->anchor_min_scale;
  o->max_scale = s->anchor_max_scale;
  o->interpolated_scale_aspect_ratio = s->anchor_interpolated;
  o->fixed_anchor_size = s->anchor_fixed;
  if (!parse_list (s->anchor_strides, v, NN_SSD_MAX_LAYERS, &n)) {
    bad = s->anchor_strides;
    what = "anchor-strides";
  }
  o->n_layers = n;
  for (gint i = 0; i < n; i++)
    o->strides[i] = (gint) v[i];
  if (!parse_list (s->anchors_per_cell, v, NN_SSD_MAX_LAYERS, &n)) {
    bad = s->anchors_per_cell;
    what = "anchors-per-cell";
  }
  for (gint i = 0; i < n; i++)
    o->anchors_per_cell[i] = (gint) v[i];
  if (!parse_list (s->anchor_ratios, o->aspect_ratios, NN_SSD_MAX_RATIOS,
          &o->n_aspect_ratios)) {
    bad = s->anchor_ratios;
    what = "anchor-aspect-ratios";
  }
  memset (self->box_scale, 0, sizeof (self->box_scale));
  if (!parse_list (s->box_scale, v, 4, &n) || (n != 0 && n != 4)) {
    bad = s->box_scale;
    what = "box-scale";
  }
  for (gint i = 0; i < n; i++)
    self->box_scale[i] = v[i];
  if (!parse_list (s->strides, v, NN_SSD_MAX_LAYERS, &self->n_strides)) {
    bad = s->strides;
    what = "strides";
  }
  for (gint i = 0; i < self->n_strides; i++)
    self->strides[i] = (gint) v[i];
  if (s->labels && *s->labels) {
    labels = g_strsplit (s->labels, ",", -1);
    for (guint i = 0; labels[i]; i++)
      g_strstrip (labels[i]);
  } else if (s->labels_file && *s->labels_file) {
    GError *err = NULL;

    labels = nn_labels_read_file (s->labels_file, NN_LABELS_STRIP, NULL, &err);
    if (labels == NULL) {
      gchar *file = g_strdup (s->labels_file);

      GST_OBJECT_UNLOCK (self);
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read the labels file \"%s\".", file),
          ("%s", err->message));
      g_free (file);
      g_clear_error (&err);
      return FALSE;
    }
  }
  if (bad) {
    gchar *value = g_strdup (bad);

    GST_OBJECT_UNLOCK (self);
    g_strfreev (labels);
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, (NULL),
        ("invalid value \"%s\" for property '%s': a comma-separated list of non-negative numbers expected (at most %d%s)",
            value, what, NN_SSD_MAX_LAYERS,
            g_str_equal (what, "box-scale") ? ", exactly 4" : ""));
    g_free (value);
    return FALSE;
  }
  self->made_gen = self->gen;
  GST_OBJECT_UNLOCK (self);

  /* the strings of active belong to settings: do not use them */
  self->active.anchor_strides = self->active.anchors_per_cell = NULL;
  self->active.anchor_ratios = self->active.box_scale = NULL;
  self->active.strides = self->active.labels = NULL;
  self->active.labels_file = NULL;
  g_strfreev (self->labels);
  self->labels = labels;
  g_clear_pointer (&self->anchors, g_array_unref);
  self->made = TRUE;
  return TRUE;
}

static const gchar *
label_of (GstNnDetectDecode *self, gint label, gchar *buf, gsize len)
{
  if (self->labels && label >= 0
      && (guint) label < g_strv_length (self->labels))
    return self->labels[label];
  g_snprintf (buf, len, "%d", label);
  return buf;
}

/* -------------------------------------------------------------- set_info */

static gboolean
is_float (const GstNnTensorInfo *t)
{
  return t->dtype == NNP_DTYPE_FLOAT32 && t->shape.rank >= 2;
}

static gint64
dim (const GstNnTensorInfo *t, gint from_end)
{
  return t->shape.dims[t->shape.rank - from_end];
}

static gboolean
gst_nn_detect_decode_set_info (GstNnDecoder *decoder,
    const GstNnTensorsInfo *info)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (decoder);
  NnDetectLayout layout;
  const gchar *expected = NULL;
  guint nt = info->n_tensors;

  GST_OBJECT_LOCK (self);
  layout = self->settings.layout;
  GST_OBJECT_UNLOCK (self);
  self->n_scores = self->n_boxes = 0;
  self->indices_idx = -1;
  self->n = self->n_classes = self->row = 0;

  for (guint i = 0; i < nt; i++)
    if (!is_float (&info->tensors[i])
        && !(layout == NN_DETECT_LAYOUT_NMS_INDICES && i == nt - 1))
      goto bad;

  switch (layout) {
    case NN_DETECT_LAYOUT_SSD: {
      gint64 longest = 0, shortest = G_MAXINT64;
      guint nb = 0, ns = 0;

      expected = "score tensors [1,N,C] and longer regressor tensors [1,N,R]";
      for (guint i = 0; i < nt; i++) {
        longest = MAX (longest, dim (&info->tensors[i], 1));
        shortest = MIN (shortest, dim (&info->tensors[i], 1));
      }
      if (nt < 2 || longest == shortest || longest < 4)
        goto bad;
      for (guint i = 0; i < nt; i++) {
        const GstNnTensorInfo *t = &info->tensors[i];

        if (dim (t, 1) == longest) {
          self->boxes_idx[self->n_boxes++] = (gint) i;
          nb += (guint) dim (t, 2);
        } else if (dim (t, 1) == shortest) {
          self->scores_idx[self->n_scores++] = (gint) i;
          ns += (guint) dim (t, 2);
        } else {
          goto bad;
        }
      }
      if (nb != ns)
        goto bad;
      self->n = nb;
      self->n_classes = (guint) shortest;
      self->row = (guint) longest;
      break;
    }
    case NN_DETECT_LAYOUT_YOLOV5:
      expected = "one tensor [1,N,5+C]";
      if (nt != 1 || dim (&info->tensors[0], 1) < 6)
        goto bad;
      self->n = (guint) dim (&info->tensors[0], 2);
      self->row = (guint) dim (&info->tensors[0], 1);
      break;
    case NN_DETECT_LAYOUT_YOLOV8:
      expected = "one tensor [1,4+C,N]";
      if (nt != 1 || dim (&info->tensors[0], 2) < 5)
        goto bad;
      self->n = (guint) dim (&info->tensors[0], 1);
      self->row = (guint) dim (&info->tensors[0], 2);
      break;
    case NN_DETECT_LAYOUT_BOXES_SCORES: {
      gint b;

      expected = "boxes [1,N,4] and scores [1,N,C]";
      if (nt != 2)
        goto bad;
      b = dim (&info->tensors[0], 1) == 4 ? 0 : 1;
      if (dim (&info->tensors[b], 1) != 4
          || dim (&info->tensors[0], 2) != dim (&info->tensors[1], 2))
        goto bad;
      self->boxes_idx[self->n_boxes++] = b;
      self->scores_idx[self->n_scores++] = 1 - b;
      self->n = (guint) dim (&info->tensors[b], 2);
      self->n_classes = (guint) dim (&info->tensors[1 - b], 1);
      break;
    }
    default: { /* NMS indices */
      const GstNnTensorInfo *idx = &info->tensors[nt > 0 ? nt - 1 : 0];

      expected = "boxes [1,N,4], scores [1,C,N] and int64 indices [K,3]";
      if (nt != 3 || idx->dtype != NNP_DTYPE_INT64 || idx->shape.rank != 2
          || dim (idx, 1) != 3 || dim (&info->tensors[0], 1) != 4
          || dim (&info->tensors[0], 2) != dim (&info->tensors[1], 1))
        goto bad;
      self->boxes_idx[self->n_boxes++] = 0;
      self->scores_idx[self->n_scores++] = 1;
      self->indices_idx = 2;
      self->n = (guint) dim (&info->tensors[0], 2);
      self->n_classes = (guint) dim (&info->tensors[1], 2);
      break;
    }
  }
  g_free (self->scores_buf);
  g_free (self->boxes_buf);
  self->scores_buf = self->n_scores > 1
      ? g_new (gfloat, (gsize) self->n * self->n_classes)
      : NULL;
  self->boxes_buf =
      self->n_boxes > 1 ? g_new (gfloat, (gsize) self->n * self->row) : NULL;
  GST_DEBUG_OBJECT (self, "%u rows, %u classes, %u values a row", self->n,
      self->n_classes, self->row);
  return TRUE;

bad : {
  gchar *got = gst_nn_tensors_info_to_string (info);
  GEnumValue *v =
      g_enum_get_value (g_type_class_peek (gst_nn_detect_layout_get_type ()),
          layout);

  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
      ("layout %s: expected %s, got %s", v ? v->value_nick : "?",
          expected ? expected : "float32 tensors of rank 2 or more", got));
  g_free (got);
  return FALSE;
}
}

/* ---------------------------------------------------------------- decode */

/* One tensor, or the concatenation of several into @buf. */
static const gfloat *
gather (const GstNnDecoderFrame *f, const gint *idx, gint n, gfloat *buf)
{
  gsize off = 0;

  if (n == 1)
    return (const gfloat *) f->data[idx[0]];
  for (gint i = 0; i < n; i++) {
    gsize len = gst_nn_tensor_info_get_size (&f->tensors_info->tensors[idx[i]]);

    memcpy ((guint8 *) buf + off, f->data[idx[i]], len);
    off += len;
  }
  return buf;
}

/* The model input size: the properties, else nnconvert's meta. */
static gboolean
input_size (GstNnDetectDecode *self, const GstNnDecoderFrame *f, gint *w,
    gint *h)
{
  GstNnTransformMeta *tm = gst_buffer_get_nn_transform_meta (f->tensors);

  *w = self->active.input_width;
  *h = self->active.input_height;
  if ((*w <= 0 || *h <= 0) && tm) {
    *w = tm->tensor_width;
    *h = tm->tensor_height;
  }
  return *w > 0 && *h > 0;
}

static gboolean
ensure_anchors (GstNnDetectDecode *self, gint w, gint h)
{
  NnSsdAnchorOptions o = self->anchor_opts;
  GError *err = NULL;

  if (self->anchors && self->anchors_w == w && self->anchors_h == h)
    return TRUE;
  g_clear_pointer (&self->anchors, g_array_unref);
  if (o.n_layers == 0 && self->active.preset == PRESET_BLAZEFACE) {
    nn_ssd_anchor_options_init_blazeface (&o, MAX (w, h));
    /* keep the user's offset and per-cell counts */
    o.offset_x = self->anchor_opts.offset_x;
    o.offset_y = self->anchor_opts.offset_y;
  }
  o.input_width = w;
  o.input_height = h;
  if (o.n_layers == 0) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, (NULL),
        ("layout ssd needs anchors: set anchor-strides (e.g. \"8,16,16,16\") or preset=blazeface"));
    return FALSE;
  }
  self->anchors = nn_ssd_anchors_generate (&o, &err);
  if (self->anchors == NULL) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, (NULL),
        ("anchors: %s", err->message));
    g_clear_error (&err);
    return FALSE;
  }
  self->anchors_w = w;
  self->anchors_h = h;
  GST_DEBUG_OBJECT (self, "%u anchors for %dx%d", self->anchors->len, w, h);
  return TRUE;
}

/* A detection's box and keypoints from model-input to frame pixels. */
static void
detection_to_frame (NnDetection *d, const GstNnFrameMapping *map)
{
  gdouble x0 = d->x0, y0 = d->y0, x1 = d->x1, y1 = d->y1;

  gst_nn_frame_mapping_to_frame (map, &x0, &y0);
  gst_nn_frame_mapping_to_frame (map, &x1, &y1);
  d->x0 = (gfloat) x0;
  d->y0 = (gfloat) y0;
  d->x1 = (gfloat) x1;
  d->y1 = (gfloat) y1;
  for (gint k = 0; k < d->n_keypoints; k++) {
    gdouble kx = d->keypoints[2 * k], ky = d->keypoints[2 * k + 1];

    gst_nn_frame_mapping_to_frame (map, &kx, &ky);
    d->keypoints[2 * k] = (gfloat) kx;
    d->keypoints[2 * k + 1] = (gfloat) ky;
  }
}

/* merge=true: the detections already on the frame (an earlier
 * nndetectdecode's) join @dets, their metas removed (NMS decides). */
static void
take_frame_detections (GstBuffer *frame, GArray *dets, gint w, gint h)
{
  gpointer state = NULL;
  GstMeta *m;
  GPtrArray *taken = g_ptr_array_new ();

  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    gdouble box[4], score = 0;
    GstStructure *s = gst_nn_roi_get_detection (roi, w, h, box);
    const GValue *kp;
    NnDetection d;

    if (s == NULL)
      continue;
    memset (&d, 0, sizeof (d));
    d.x0 = (gfloat) box[0];
    d.y0 = (gfloat) box[1];
    d.x1 = (gfloat) box[2];
    d.y1 = (gfloat) box[3];
    gst_structure_get_double (s, "confidence", &score);
    d.score = (gfloat) score;
    gst_structure_get_int (s, "label_id", &d.label);
    d.index = 100000 + taken->len;
    kp = gst_structure_get_value (s, "keypoints");
    if (kp && GST_VALUE_HOLDS_ARRAY (kp)) {
      guint n =
          MIN (gst_value_array_get_size (kp) / 2, NN_DETECT_MAX_KEYPOINTS);

      d.n_keypoints = (gint) n;
      for (guint k = 0; k < 2 * n; k++) {
        const GValue *v = gst_value_array_get_value (kp, k);

        d.keypoints[k] = G_VALUE_HOLDS_DOUBLE (v)
            ? (gfloat) (g_value_get_double (v) * (k % 2 ? h : w))
            : 0.0f;
      }
    }
    g_array_append_val (dets, d);
    g_ptr_array_add (taken, roi);
  }
  for (guint i = 0; i < taken->len; i++)
    gst_buffer_remove_meta (frame, g_ptr_array_index (taken, i));
  g_ptr_array_unref (taken);
}

static GstFlowReturn
gst_nn_detect_decode_decode (GstNnDecoder *decoder, GstNnDecoderFrame *f)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (decoder);
  const Settings *s;
  NnDetectParams p;
  NnNmsParams np;
  GstNnFrameMapping map;
  GArray *dets;
  GError *err = NULL;
  gboolean ok = FALSE;
  const gfloat *scores, *boxes;
  gint w, h;

  if (!make_state (self))
    return GST_FLOW_ERROR;
  s = &self->active;
  if (!input_size (self, f, &w, &h))
    goto no_size;

  nn_detect_params_init (&p);
  p.layout = s->layout;
  p.input_width = w;
  p.input_height = h;
  p.activation = s->activation;
  p.score_threshold = s->threshold;
  p.background_label = s->background_label;
  p.score_clip = s->score_clip;
  memcpy (p.box_scale, self->box_scale, sizeof (p.box_scale));
  p.box_exp = s->box_exp;
  p.n_keypoints = s->keypoints;
  p.keypoint_offset = s->keypoint_offset;
  p.dfl_bins = s->dfl_bins;
  p.n_strides = self->n_strides;
  memcpy (p.strides, self->strides, sizeof (p.strides));
  p.box_format = s->box_format;
  p.box_normalized = s->box_normalized;

  dets = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  scores = self->n_scores
      ? gather (f, self->scores_idx, self->n_scores, self->scores_buf)
      : NULL;
  boxes = self->n_boxes
      ? gather (f, self->boxes_idx, self->n_boxes, self->boxes_buf)
      : (const gfloat *) f->data[0];
  switch (s->layout) {
    case NN_DETECT_LAYOUT_SSD:
      if (!ensure_anchors (self, w, h)) {
        g_array_unref (dets);
        return GST_FLOW_ERROR;
      }
      p.anchors = (const NnAnchor *) self->anchors->data;
      p.n_anchors = self->anchors->len;
      ok = nn_detect_decode_ssd (&p, scores, self->n_classes, boxes, self->row,
          self->n, dets, &err);
      break;
    case NN_DETECT_LAYOUT_YOLOV5:
      ok = nn_detect_decode_yolov5 (&p, boxes, self->n, self->row, dets, &err);
      break;
    case NN_DETECT_LAYOUT_YOLOV8:
      ok = nn_detect_decode_yolov8 (&p, boxes, self->row, self->n, dets, &err);
      break;
    case NN_DETECT_LAYOUT_BOXES_SCORES:
      ok = nn_detect_decode_boxes_scores (&p, boxes, scores, self->n,
          self->n_classes, dets, &err);
      break;
    default: {
      const GstNnTensorInfo *ti = &f->tensors_info->tensors[self->indices_idx];

      ok = nn_detect_decode_nms_indices (&p, boxes, scores, self->n,
          self->n_classes, (const gint64 *) f->data[self->indices_idx],
          (guint) dim (ti, 2), dets, &err);
      break;
    }
  }
  if (!ok)
    goto decode_failed;

  /* to frame pixels; NMS there, so that a second detector's boxes
   * (merge) meet the first's */
  gst_nn_frame_mapping_init (&map, f, w, h);
  self->frame_width = map.frame_width;
  self->frame_height = map.frame_height;
  for (guint i = 0; i < dets->len; i++)
    detection_to_frame (&g_array_index (dets, NnDetection, i), &map);
  if (s->merge)
    take_frame_detections (f->frame, dets, map.frame_width, map.frame_height);

  np.mode = s->layout == NN_DETECT_LAYOUT_NMS_INDICES && !s->merge ? NN_NMS_NONE
                                                                   : s->nms;
  np.iou_threshold = s->iou_threshold;
  np.class_agnostic = s->class_agnostic;
  np.max_per_class = 0;
  np.top_k = (guint) MAX (s->top_k, 0);
  nn_nms (dets, &np);

  for (guint i = 0; i < dets->len; i++) {
    NnDetection *d = &g_array_index (dets, NnDetection, i);
    gchar num[16];

    if (d->x1 <= d->x0 || d->y1 <= d->y0)
      continue; /* outside the frame (in the padding) */
    gst_nn_add_detection_roi (f->frame, (gint) i,
        label_of (self, d->label, num, sizeof (num)), d->label, d->score, d->x0,
        d->y0, d->x1, d->y1, d->n_keypoints ? d->keypoints : NULL,
        d->n_keypoints, map.frame_width, map.frame_height);
  }
  GST_LOG_OBJECT (self, "%u detections", dets->len);
  g_array_unref (dets);
  return GST_FLOW_OK;

  /* ERRORS */
no_size:
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
      ("the model input size is unknown: no nnconvert transform meta on the tensors and no input-width / input-height"));
  return GST_FLOW_ERROR;
decode_failed:
  GST_ELEMENT_ERROR (self, STREAM, DECODE,
      ("The detector's output does not fit the decoder's settings."),
      ("%s", err->message));
  g_clear_error (&err);
  g_array_unref (dets);
  return GST_FLOW_ERROR;
}

static void
gst_nn_detect_decode_finish (GstNnDecoder *decoder, GstBuffer *frame,
    gboolean whole)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (decoder);
  GString *lines;
  gpointer state = NULL;
  GstMeta *m;
  gint w = self->frame_width, h = self->frame_height;

  if (gst_nn_decoder_get_results_file (decoder) == NULL)
    return;
  lines = g_string_new (NULL);
  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    gdouble box[4], score = 0;
    GstStructure *s = gst_nn_roi_get_detection (roi, w, h, box);

    if (s == NULL)
      continue;
    gst_structure_get_double (s, "confidence", &score);
    g_string_append_printf (lines, "%.3f\t%s\t%.4f\t%.1f,%.1f,%.1f,%.1f\n",
        GST_BUFFER_PTS_IS_VALID (frame)
            ? GST_BUFFER_PTS (frame) / (gdouble) GST_SECOND
            : -1.0,
        gst_structure_get_string (s, "label"), score, box[0], box[1], box[2],
        box[3]);
  }
  gst_nn_decoder_write_results (decoder, lines->str);
  g_string_free (lines, TRUE);
}

static void
gst_nn_detect_decode_stop (GstNnDecoder *decoder)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (decoder);

  self->made = FALSE;
  g_clear_pointer (&self->anchors, g_array_unref);
}

static void
gst_nn_detect_decode_finalize (GObject *object)
{
  GstNnDetectDecode *self = GST_NN_DETECT_DECODE (object);

  settings_clear (&self->settings);
  g_strfreev (self->labels);
  g_clear_pointer (&self->anchors, g_array_unref);
  g_free (self->scores_buf);
  g_free (self->boxes_buf);
  G_OBJECT_CLASS (gst_nn_detect_decode_parent_class)->finalize (object);
}

static void
gst_nn_detect_decode_class_init (GstNnDetectDecodeClass *klass)
{
  GObjectClass *k = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNnDecoderClass *decoder_class = GST_NN_DECODER_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_detect_decode_debug, "nndetectdecode", 0,
      "nnpipe detection decoder");
  /* register the metas up front (applications look them up by name) */
  (void) GST_NN_FRAME_META_INFO;
  (void) GST_NN_TRANSFORM_META_INFO;
  (void) gst_nn_skipped_meta_get_info ();

  k->set_property = gst_nn_detect_decode_set_property;
  k->get_property = gst_nn_detect_decode_get_property;
  k->finalize = gst_nn_detect_decode_finalize;

  gst_nn_detect_decode_install_properties (k);

  gst_element_class_set_static_metadata (element_class, "Detection decoder",
      "Filter/Analyzer/Video/Tensor",
      "Decodes an object detector's output (SSD anchors, YOLO, boxes and scores) into region-of-interest metas on the original frame",
      "nnpipe developers");

  decoder_class->set_info = GST_DEBUG_FUNCPTR (gst_nn_detect_decode_set_info);
  decoder_class->decode = GST_DEBUG_FUNCPTR (gst_nn_detect_decode_decode);
  decoder_class->finish = GST_DEBUG_FUNCPTR (gst_nn_detect_decode_finish);
  decoder_class->stop = GST_DEBUG_FUNCPTR (gst_nn_detect_decode_stop);
}

static void
gst_nn_detect_decode_init (GstNnDetectDecode *self)
{
  Settings *s = &self->settings;

  s->layout = DEFAULT_LAYOUT;
  s->threshold = DEFAULT_THRESHOLD;
  s->iou_threshold = DEFAULT_IOU_THRESHOLD;
  s->nms = DEFAULT_NMS;
  s->activation = DEFAULT_ACTIVATION;
  s->background_label = -1;
  s->anchor_strides = g_strdup ("");
  s->anchors_per_cell = g_strdup ("");
  s->anchor_ratios = g_strdup ("1.0");
  s->box_scale = g_strdup ("");
  s->strides = g_strdup ("");
  s->labels = g_strdup ("");
  s->labels_file = g_strdup ("");
  s->anchor_offset = DEFAULT_ANCHOR_OFFSET;
  s->anchor_min_scale = DEFAULT_ANCHOR_MIN_SCALE;
  s->anchor_max_scale = DEFAULT_ANCHOR_MAX_SCALE;
  s->anchor_interpolated = 1.0;
  s->anchor_fixed = TRUE;
  s->box_format = DEFAULT_BOX_FORMAT;
  s->keypoint_offset = DEFAULT_KEYPOINT_OFFSET;
  self->indices_idx = -1;
}
