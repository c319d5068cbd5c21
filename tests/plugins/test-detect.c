/* The detection, tracking and redaction algorithms (plugins/post/nndetect,
 * nnnms, nntracker, nnredact) on constructed tensors and images: known
 * boxes in, known boxes out. */
#include "nndetect.h"
#include "nnmask.h"
#include "nnnms.h"
#include "nnredact.h"
#include "nntracker.h"

#include <math.h>
#include <string.h>

#define ASSERT_NEAR(a, b, eps) g_assert_cmpfloat_with_epsilon ((a), (b), (eps))

/* ------------------------------------------------------------------ anchors */

static void
test_anchors_blazeface (void)
{
  NnSsdAnchorOptions o;
  GArray *a;
  const NnAnchor *v;

  nn_ssd_anchor_options_init_blazeface (&o, 128);
  a = nn_ssd_anchors_generate (&o, NULL);
  g_assert_nonnull (a);
  /* 16x16 cells x 2 + 8x8 cells x 6 */
  g_assert_cmpuint (a->len, ==, 896);
  v = (const NnAnchor *) a->data;
  ASSERT_NEAR (v[0].cx, 0.5 / 16, 1e-6);
  ASSERT_NEAR (v[1].cx, 0.5 / 16, 1e-6);
  ASSERT_NEAR (v[2].cx, 1.5 / 16, 1e-6);
  ASSERT_NEAR (v[0].w, 1.0, 1e-6);
  ASSERT_NEAR (v[32].cy, 1.5 / 16, 1e-6); /* row 1, column 0 */
  ASSERT_NEAR (v[512].cx, 0.5 / 8, 1e-6);
  ASSERT_NEAR (v[517].cx, 0.5 / 8, 1e-6);
  ASSERT_NEAR (v[518].cx, 1.5 / 8, 1e-6);
  ASSERT_NEAR (v[895].cx, 7.5 / 8, 1e-6);
  ASSERT_NEAR (v[895].cy, 7.5 / 8, 1e-6);
  g_array_unref (a);

  /* the back model: 256 with strides 16, 32: the same grid */
  nn_ssd_anchor_options_init_blazeface (&o, 256);
  a = nn_ssd_anchors_generate (&o, NULL);
  g_assert_cmpuint (a->len, ==, 896);
  g_array_unref (a);

  /* "16x16, 2 anchors; 8x8, 6 anchors" said with anchors_per_cell */
  memset (&o, 0, sizeof (o));
  o.input_width = o.input_height = 128;
  o.offset_x = o.offset_y = 0.5;
  o.n_layers = 2;
  o.strides[0] = 8;
  o.strides[1] = 16;
  o.anchors_per_cell[0] = 2;
  o.anchors_per_cell[1] = 6;
  a = nn_ssd_anchors_generate (&o, NULL);
  g_assert_cmpuint (a->len, ==, 896);
  ASSERT_NEAR (((NnAnchor *) a->data)[600].cx, 6.5 / 8, 1e-6);
  g_array_unref (a);
}

static void
test_anchors_ssd_mobilenet (void)
{
  /* MediaPipe's object detection (ssd_mobilenet_v2, 300x300): 1917 */
  NnSsdAnchorOptions o;
  GArray *a;
  GError *error = NULL;
  static const gint strides[6] = { 16, 32, 64, 128, 256, 512 };
  const NnAnchor *v;

  memset (&o, 0, sizeof (o));
  o.input_width = o.input_height = 300;
  o.min_scale = 0.2;
  o.max_scale = 0.95;
  o.offset_x = o.offset_y = 0.5;
  o.n_layers = 6;
  memcpy (o.strides, strides, sizeof (strides));
  o.n_aspect_ratios = 5;
  o.aspect_ratios[0] = 1.0;
  o.aspect_ratios[1] = 2.0;
  o.aspect_ratios[2] = 0.5;
  o.aspect_ratios[3] = 3.0;
  o.aspect_ratios[4] = 0.3333;
  o.reduce_boxes_in_lowest_layer = TRUE;
  o.interpolated_scale_aspect_ratio = 1.0;
  a = nn_ssd_anchors_generate (&o, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (a->len, ==, 1917);
  v = (const NnAnchor *) a->data;
  /* lowest layer: 0.1 at ratio 1, then the layer's scale at 2 and 0.5 */
  ASSERT_NEAR (v[0].w, 0.1, 1e-6);
  ASSERT_NEAR (v[1].w, 0.2 * sqrt (2.0), 1e-6);
  ASSERT_NEAR (v[1].h, 0.2 / sqrt (2.0), 1e-6);
  ASSERT_NEAR (v[0].cx, 0.5 / 19, 1e-6);
  g_array_unref (a);

  o.strides[2] = 0;
  g_assert_null (nn_ssd_anchors_generate (&o, &error));
  g_assert_nonnull (strstr (error->message, "stride 2"));
  g_clear_error (&error);
}

/* --------------------------------------------------------------- decoders */

static void
test_decode_ssd (void)
{
  NnSsdAnchorOptions o;
  NnDetectParams p;
  GArray *anchors, *out;
  gfloat *scores = g_new (gfloat, 896), *boxes = g_new0 (gfloat, 896 * 16);
  GError *error = NULL;
  const NnAnchor *a;
  NnDetection *d;

  nn_ssd_anchor_options_init_blazeface (&o, 128);
  anchors = nn_ssd_anchors_generate (&o, NULL);
  a = (const NnAnchor *) anchors->data;
  nn_detect_params_init (&p);
  p.input_width = p.input_height = 128;
  p.anchors = a;
  p.n_anchors = anchors->len;
  p.activation = NN_SCORE_SIGMOID;
  p.score_clip = 100;
  p.n_keypoints = 6;
  p.score_threshold = 0.5;
  for (gint i = 0; i < 896; i++)
    scores[i] = -8.0f;
  /* anchor 100 (row 3, column 2, second anchor): centre (20, 28) pixels;
   * a 30 x 40 box moved by (4, -2), keypoint 0 at (+1, +3) */
  scores[100] = 2.0f;
  boxes[100 * 16 + 0] = 4.0f;
  boxes[100 * 16 + 1] = -2.0f;
  boxes[100 * 16 + 2] = 30.0f;
  boxes[100 * 16 + 3] = 40.0f;
  boxes[100 * 16 + 4] = 1.0f;
  boxes[100 * 16 + 5] = 3.0f;
  /* anchor 700 (8x8 grid), under the threshold */
  scores[700] = -0.1f;
  boxes[700 * 16 + 2] = 10.0f;
  boxes[700 * 16 + 3] = 10.0f;

  out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  g_assert_true (nn_detect_decode_ssd (&p, scores, 1, boxes, 16, 896, out, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (out->len, ==, 1);
  d = &g_array_index (out, NnDetection, 0);
  ASSERT_NEAR (a[100].cx * 128, 20.0, 1e-4);
  ASSERT_NEAR (a[100].cy * 128, 28.0, 1e-4);
  ASSERT_NEAR (d->x0, 24.0 - 15.0, 1e-3);
  ASSERT_NEAR (d->x1, 24.0 + 15.0, 1e-3);
  ASSERT_NEAR (d->y0, 26.0 - 20.0, 1e-3);
  ASSERT_NEAR (d->y1, 26.0 + 20.0, 1e-3);
  ASSERT_NEAR (d->score, 1.0 / (1.0 + exp (-2.0)), 1e-5);
  g_assert_cmpint (d->label, ==, 0);
  g_assert_cmpuint (d->index, ==, 100);
  g_assert_cmpint (d->n_keypoints, ==, 6);
  ASSERT_NEAR (d->keypoints[0], 21.0, 1e-3);
  ASSERT_NEAR (d->keypoints[1], 31.0, 1e-3);
  ASSERT_NEAR (d->keypoints[2], 20.0, 1e-3);

  /* a lower threshold finds the second box */
  g_array_set_size (out, 0);
  p.score_threshold = 0.4;
  g_assert_true (nn_detect_decode_ssd (&p, scores, 1, boxes, 16, 896, out, NULL));
  g_assert_cmpuint (out->len, ==, 2);

  /* wrong sizes are errors naming them */
  g_assert_false (nn_detect_decode_ssd (&p, scores, 1, boxes, 16, 512, out, &error));
  g_assert_nonnull (strstr (error->message, "512 boxes but 896 anchors"));
  g_clear_error (&error);
  p.n_keypoints = 7;
  g_assert_false (nn_detect_decode_ssd (&p, scores, 1, boxes, 16, 896, out, &error));
  g_assert_nonnull (strstr (error->message, "7 keypoints"));
  g_clear_error (&error);

  g_array_unref (out);
  g_array_unref (anchors);
  g_free (scores);
  g_free (boxes);
}

static void
test_decode_ssd_softmax (void)
{
  /* TensorFlow order (y, x, h, w), exponential sizes, softmax with a
   * background class 0 */
  NnDetectParams p;
  NnAnchor anchor = { 0.5f, 0.25f, 0.2f, 0.4f };
  gfloat scores[3] = { 0.0f, 1.0f, 3.0f };
  gfloat boxes[4] = { 10.0f * 0.1f, 0.0f, 5.0f * logf (2.0f), 0.0f };
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnDetection *d;
  gdouble e = exp (0.0) + exp (1.0) + exp (3.0);

  nn_detect_params_init (&p);
  p.input_width = 100;
  p.input_height = 200;
  p.anchors = &anchor;
  p.n_anchors = 1;
  p.activation = NN_SCORE_SOFTMAX;
  p.background_label = 0;
  p.box_format = NN_BOX_YXYX;
  p.box_scale[0] = p.box_scale[1] = 10.0;
  p.box_scale[2] = p.box_scale[3] = 5.0;
  p.box_exp = TRUE;
  p.score_threshold = 0.3;
  g_assert_true (nn_detect_decode_ssd (&p, scores, 3, boxes, 4, 1, out, NULL));
  g_assert_cmpuint (out->len, ==, 1);
  d = &g_array_index (out, NnDetection, 0);
  g_assert_cmpint (d->label, ==, 2);
  ASSERT_NEAR (d->score, exp (3.0) / e, 1e-5);
  /* cy = 0.1 * 0.4 + 0.25 = 0.29; h = 2 * 0.4 = 0.8; cx = 0.5, w = 0.2 */
  ASSERT_NEAR (d->y0, (0.29 - 0.4) * 200, 1e-3);
  ASSERT_NEAR (d->y1, (0.29 + 0.4) * 200, 1e-3);
  ASSERT_NEAR (d->x0, 0.4 * 100, 1e-3);
  ASSERT_NEAR (d->x1, 0.6 * 100, 1e-3);
  g_array_unref (out);
}

static void
test_decode_yolov5 (void)
{
  /* rows: cx, cy, w, h, objectness, 3 classes */
  gfloat rows[3][8] = {
    { 100, 50, 20, 10, 0.9f, 0.1f, 0.8f, 0.2f },
    { 10, 10, 4, 4, 0.3f, 0.9f, 0.1f, 0.1f }, /* 0.27 < 0.5 */
    { 60, 70, 40, 20, 0.7f, 0.75f, 0.1f, 0.1f },
  };
  NnDetectParams p;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnDetection *d;
  GError *error = NULL;

  nn_detect_params_init (&p);
  p.layout = NN_DETECT_LAYOUT_YOLOV5;
  g_assert_true (nn_detect_decode_yolov5 (&p, &rows[0][0], 3, 8, out, NULL));
  g_assert_cmpuint (out->len, ==, 2);
  d = &g_array_index (out, NnDetection, 0);
  g_assert_cmpint (d->label, ==, 1);
  ASSERT_NEAR (d->score, 0.72, 1e-6);
  ASSERT_NEAR (d->x0, 90, 1e-4);
  ASSERT_NEAR (d->y1, 55, 1e-4);
  d = &g_array_index (out, NnDetection, 1);
  g_assert_cmpint (d->label, ==, 0);
  g_assert_cmpuint (d->index, ==, 2);
  ASSERT_NEAR (d->score, 0.525, 1e-6);
  ASSERT_NEAR (d->x1, 80, 1e-4);

  g_assert_false (nn_detect_decode_yolov5 (&p, &rows[0][0], 3, 5, out, &error));
  g_assert_nonnull (strstr (error->message, "5 + classes"));
  g_clear_error (&error);
  g_array_unref (out);
}

static void
test_decode_yolov8 (void)
{
  /* [4 + 2, N = 3], channel-major */
  gfloat t[6][3] = {
    { 50, 10, 200 }, /* cx */
    { 40, 10, 100 }, /* cy */
    { 20, 2, 60 },   /* w */
    { 10, 2, 30 },   /* h */
    { 0.1f, 0.2f, 0.95f }, { 0.6f, 0.3f, 0.1f },
  };
  NnDetectParams p;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnDetection *d;

  nn_detect_params_init (&p);
  p.layout = NN_DETECT_LAYOUT_YOLOV8;
  g_assert_true (nn_detect_decode_yolov8 (&p, &t[0][0], 6, 3, out, NULL));
  g_assert_cmpuint (out->len, ==, 2);
  d = &g_array_index (out, NnDetection, 0);
  g_assert_cmpint (d->label, ==, 1);
  ASSERT_NEAR (d->score, 0.6, 1e-6);
  ASSERT_NEAR (d->x0, 40, 1e-4);
  ASSERT_NEAR (d->y0, 35, 1e-4);
  d = &g_array_index (out, NnDetection, 1);
  g_assert_cmpint (d->label, ==, 0);
  ASSERT_NEAR (d->x1, 230, 1e-4);
  g_array_unref (out);
}

static void
test_decode_yolov8_dfl (void)
{
  /* input 16x16, stride 8: a 2x2 grid, N = 4; 4 bins a side, 1 class
   * (logit 3 after a sigmoid); point 3 (x 1, y 1, centre (12, 12)) has
   * distances left 1, top 2, right 0, bottom 3 strides */
  enum { BINS = 4, N = 4 };
  gfloat t[4 * BINS + 1][N];
  gint dist[4] = { 1, 2, 0, 3 };
  NnDetectParams p;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnDetection *d;
  GError *error = NULL;

  memset (t, 0, sizeof (t));
  for (gint side = 0; side < 4; side++)
    for (gint k = 0; k < BINS; k++)
      t[side * BINS + k][3] = k == dist[side] ? 40.0f : 0.0f;
  for (gint i = 0; i < N; i++)
    t[4 * BINS][i] = i == 3 ? 3.0f : -5.0f;
  nn_detect_params_init (&p);
  p.layout = NN_DETECT_LAYOUT_YOLOV8;
  p.input_width = p.input_height = 16;
  p.activation = NN_SCORE_SIGMOID;
  p.dfl_bins = BINS;
  p.n_strides = 1;
  p.strides[0] = 8;
  g_assert_true (nn_detect_decode_yolov8 (&p, &t[0][0], 4 * BINS + 1, N, out, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (out->len, ==, 1);
  d = &g_array_index (out, NnDetection, 0);
  g_assert_cmpuint (d->index, ==, 3);
  ASSERT_NEAR (d->score, 1.0 / (1.0 + exp (-3.0)), 1e-5);
  ASSERT_NEAR (d->x0, 12 - 8, 1e-3);
  ASSERT_NEAR (d->y0, 12 - 16, 1e-3);
  ASSERT_NEAR (d->x1, 12, 1e-3);
  ASSERT_NEAR (d->y1, 12 + 24, 1e-3);

  /* the grids must give the N points */
  p.strides[0] = 4;
  g_assert_false (nn_detect_decode_yolov8 (&p, &t[0][0], 4 * BINS + 1, N, out, &error));
  g_assert_nonnull (strstr (error->message, "give 16"));
  g_clear_error (&error);
  g_array_unref (out);
}

static void
test_decode_boxes_scores (void)
{
  /* normalised y0, x0, y1, x1 and two classes */
  gfloat boxes[2][4] = { { 0.1f, 0.2f, 0.5f, 0.6f }, { 0.5f, 0.5f, 0.4f, 0.9f } };
  gfloat scores[2][2] = { { 0.2f, 0.7f }, { 0.9f, 0.1f } };
  NnDetectParams p;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnDetection *d;

  nn_detect_params_init (&p);
  p.layout = NN_DETECT_LAYOUT_BOXES_SCORES;
  p.box_format = NN_BOX_YXYX;
  p.box_normalized = TRUE;
  p.input_width = 200;
  p.input_height = 100;
  g_assert_true (nn_detect_decode_boxes_scores (&p, &boxes[0][0], &scores[0][0], 2, 2, out, NULL));
  g_assert_cmpuint (out->len, ==, 2);
  d = &g_array_index (out, NnDetection, 0);
  g_assert_cmpint (d->label, ==, 1);
  ASSERT_NEAR (d->x0, 40, 1e-4);
  ASSERT_NEAR (d->y0, 10, 1e-4);
  ASSERT_NEAR (d->x1, 120, 1e-4);
  ASSERT_NEAR (d->y1, 50, 1e-4);
  /* corners in either order */
  d = &g_array_index (out, NnDetection, 1);
  ASSERT_NEAR (d->y0, 40, 1e-4);
  ASSERT_NEAR (d->y1, 50, 1e-4);
  g_array_unref (out);
}

static void
test_decode_nms_indices (void)
{
  gfloat boxes[3][4] = { { 0, 0, 10, 10 }, { 5, 5, 20, 20 }, { 1, 2, 3, 4 } };
  gfloat scores[2][3] = { { 0.9f, 0.1f, 0.6f }, { 0.2f, 0.8f, 0.3f } };
  gint64 idx[3][3] = { { 0, 0, 0 }, { 0, 0, 2 }, { 0, 1, 1 } };
  gint64 bad[1][3] = { { 0, 2, 1 } };
  NnDetectParams p;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  GError *error = NULL;
  NnDetection *d;

  nn_detect_params_init (&p);
  p.layout = NN_DETECT_LAYOUT_NMS_INDICES;
  p.box_format = NN_BOX_XYXY;
  p.score_threshold = 0.5;
  g_assert_true (nn_detect_decode_nms_indices (&p, &boxes[0][0], &scores[0][0], 3, 2, &idx[0][0], 3,
                                               out, NULL));
  g_assert_cmpuint (out->len, ==, 3);
  d = &g_array_index (out, NnDetection, 2);
  g_assert_cmpint (d->label, ==, 1);
  g_assert_cmpuint (d->index, ==, 1);
  ASSERT_NEAR (d->score, 0.8, 1e-6);
  ASSERT_NEAR (d->x1, 20, 1e-6);
  g_assert_false (nn_detect_decode_nms_indices (&p, &boxes[0][0], &scores[0][0], 3, 2, &bad[0][0],
                                                1, out, &error));
  g_assert_nonnull (strstr (error->message, "2 classes"));
  g_clear_error (&error);
  g_array_unref (out);
}

/* -------------------------------------------------------------------- NMS */

static NnDetection
det (gfloat x0, gfloat y0, gfloat x1, gfloat y1, gfloat score, gint label, guint index)
{
  NnDetection d;

  memset (&d, 0, sizeof (d));
  d.x0 = x0;
  d.y0 = y0;
  d.x1 = x1;
  d.y1 = y1;
  d.score = score;
  d.label = label;
  d.index = index;
  return d;
}

static void
test_nms_hard (void)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnNmsParams p = { NN_NMS_HARD, 0.5, FALSE, 0, 0 };
  NnDetection v[] = {
    det (0, 0, 10, 10, 0.8f, 0, 0),   det (1, 0, 11, 10, 0.9f, 0, 1), /* IoU 9/11 with 0: wins */
    det (0, 0, 10, 10, 0.7f, 1, 2),                                   /* another class */
    det (20, 20, 30, 30, 0.6f, 0, 3),                                 /* apart */
    det (5, 0, 15, 10, 0.95f, 1, 4),                                  /* IoU 1/3 with 2 */
  };

  g_array_append_vals (a, v, G_N_ELEMENTS (v));
  nn_nms (a, &p);
  g_assert_cmpuint (a->len, ==, 4);
  g_assert_cmpuint (g_array_index (a, NnDetection, 0).index, ==, 4);
  g_assert_cmpuint (g_array_index (a, NnDetection, 1).index, ==, 1);
  g_assert_cmpuint (g_array_index (a, NnDetection, 2).index, ==, 2);
  g_assert_cmpuint (g_array_index (a, NnDetection, 3).index, ==, 3);

  /* class-agnostic: 2 overlaps 1 (IoU 9/11) and goes */
  g_array_set_size (a, 0);
  g_array_append_vals (a, v, G_N_ELEMENTS (v));
  p.class_agnostic = TRUE;
  nn_nms (a, &p);
  g_assert_cmpuint (a->len, ==, 3);
  /* IoU 4/16 of 4 and 1 under 0.5: both stay */
  g_assert_cmpuint (g_array_index (a, NnDetection, 1).index, ==, 1);

  /* top-k and max per class */
  g_array_set_size (a, 0);
  g_array_append_vals (a, v, G_N_ELEMENTS (v));
  p.class_agnostic = FALSE;
  p.top_k = 2;
  nn_nms (a, &p);
  g_assert_cmpuint (a->len, ==, 2);
  g_array_set_size (a, 0);
  g_array_append_vals (a, v, G_N_ELEMENTS (v));
  p.top_k = 0;
  p.max_per_class = 1;
  nn_nms (a, &p);
  g_assert_cmpuint (a->len, ==, 2);
  g_assert_cmpuint (g_array_index (a, NnDetection, 0).index, ==, 4);
  g_assert_cmpuint (g_array_index (a, NnDetection, 1).index, ==, 1);
  g_array_unref (a);
}

static void
test_nms_weighted (void)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  NnNmsParams p = { NN_NMS_WEIGHTED, 0.3, TRUE, 0, 0 };
  NnDetection v[] = {
    det (0, 0, 10, 10, 0.6f, 0, 0),
    det (2, 0, 12, 10, 0.9f, 0, 1),
    det (40, 40, 50, 50, 0.5f, 0, 2),
  };
  NnDetection *d;

  v[0].n_keypoints = v[1].n_keypoints = 1;
  v[0].keypoints[0] = 5;
  v[1].keypoints[0] = 10;
  g_array_append_vals (a, v, G_N_ELEMENTS (v));
  nn_nms (a, &p);
  g_assert_cmpuint (a->len, ==, 2);
  d = &g_array_index (a, NnDetection, 0);
  /* (0.9 * 2 + 0.6 * 0) / 1.5 = 1.2; the best one's score and index */
  ASSERT_NEAR (d->x0, 1.2, 1e-5);
  ASSERT_NEAR (d->x1, 11.2, 1e-5);
  ASSERT_NEAR (d->keypoints[0], (0.9 * 10 + 0.6 * 5) / 1.5, 1e-5);
  ASSERT_NEAR (d->score, 0.9, 1e-6);
  g_assert_cmpuint (d->index, ==, 1);
  d = &g_array_index (a, NnDetection, 1);
  ASSERT_NEAR (d->x0, 40, 1e-6);
  g_array_unref (a);
}

/* ---------------------------------------------------------------- tracker */

static void
test_assign (void)
{
  /* the greedy choice (row 0 -> col 0, cost 1) is not the optimum */
  gdouble c[3 * 3] = { 1, 2, 9, 2, 9, 9, 9, 9, 1 };
  gdouble r[2 * 3] = { 5, 1, 3, 2, 1, 4 };
  gint m[3];

  nn_assign_min_cost (c, 3, 3, m);
  g_assert_cmpint (m[0], ==, 1);
  g_assert_cmpint (m[1], ==, 0);
  g_assert_cmpint (m[2], ==, 2);
  /* more columns than rows, and the transpose */
  nn_assign_min_cost (r, 2, 3, m);
  g_assert_cmpint (m[0], ==, 1);
  g_assert_cmpint (m[1], ==, 0);
  {
    gdouble t[3 * 2] = { 5, 2, 1, 1, 3, 4 };

    nn_assign_min_cost (t, 3, 2, m);
    g_assert_cmpint (m[0], ==, 1);
    g_assert_cmpint (m[1], ==, 0);
    g_assert_cmpint (m[2], ==, -1);
  }
}

static NnTrackBox
tbox (gdouble cx, gdouble cy, gdouble w, gdouble h, gfloat score)
{
  NnTrackBox b = { (gfloat) (cx - w / 2),
                   (gfloat) (cy - h / 2),
                   (gfloat) (cx + w / 2),
                   (gfloat) (cy + h / 2),
                   score,
                   0 };

  return b;
}

/* two boxes crossing (they overlap for several frames), one that leaves
 * for 5 frames and comes back: ids stay */
static void
run_crossing (NnTrackerMode mode)
{
  NnTrackerParams p;
  NnTracker *t;
  guint64 first[3] = { 0 };

  nn_tracker_params_init (&p);
  p.mode = mode;
  t = nn_tracker_new (&p);
  for (gint f = 0; f < 60; f++) {
    NnTrackBox d[3];
    guint64 ids[3];
    guint n = 0;

    d[n++] = tbox (20 + 4 * f, 100, 40, 40, 0.9f);
    d[n++] = tbox (260 - 4 * f, 110, 40, 40, 0.8f);
    if (f < 20 || f >= 25)
      d[n++] = tbox (100, 300 + f, 50, 60, mode == NN_TRACKER_BYTETRACK && f == 30 ? 0.3f : 0.9f);
    nn_tracker_update (t, d, n, ids);
    for (guint i = 0; i < n; i++) {
      g_assert_cmpuint (ids[i], !=, 0);
      if (f == 0)
        first[i] = ids[i];
      else
        g_assert_cmpuint (ids[i], ==, first[i]);
    }
  }
  g_assert_cmpuint (first[0], !=, first[1]);
  nn_tracker_free (t);
}

static void
test_tracker_crossing (void)
{
  run_crossing (NN_TRACKER_SORT);
  run_crossing (NN_TRACKER_BYTETRACK);
}

static void
test_tracker_predict (void)
{
  NnTrackerParams p;
  NnTracker *t;
  GArray *pred = g_array_new (FALSE, FALSE, sizeof (NnTrackState));
  guint64 id;
  NnTrackState *s;

  nn_tracker_params_init (&p);
  p.max_missed = 2;
  t = nn_tracker_new (&p);
  /* moving 3 pixels a frame right; inference on one frame of three */
  for (gint f = 0; f < 30; f++) {
    NnTrackBox b = tbox (50 + 3 * f, 80, 30, 30, 0.9f);

    if (f % 3 == 0) {
      nn_tracker_update (t, &b, 1, &id);
      g_assert_cmpuint (id, ==, 1);
    } else {
      g_array_set_size (pred, 0);
      nn_tracker_predict (t, pred);
      g_assert_cmpuint (pred->len, ==, 1);
      s = &g_array_index (pred, NnTrackState, 0);
      g_assert_cmpuint (s->id, ==, 1);
      if (f > 10) {
        /* the filter learnt the velocity */
        ASSERT_NEAR (0.5 * (s->box.x0 + s->box.x1), 50 + 3 * f, 1.0);
        ASSERT_NEAR (s->box.y1 - s->box.y0, 30, 1.0);
      }
    }
  }
  /* misses: the track ends after max_missed frames without detection */
  for (gint f = 0; f < 3; f++)
    nn_tracker_update (t, NULL, 0, NULL);
  g_array_set_size (pred, 0);
  nn_tracker_get_tracks (t, pred);
  g_assert_cmpuint (pred->len, ==, 0);
  {
    NnTrackBox b = tbox (50, 80, 30, 30, 0.9f);

    nn_tracker_update (t, &b, 1, &id);
    g_assert_cmpuint (id, ==, 2);
  }
  g_array_unref (pred);
  nn_tracker_free (t);
}

static void
test_tracker_min_hits (void)
{
  NnTrackerParams p;
  NnTracker *t;
  guint64 id;
  NnTrackBox b = tbox (50, 50, 20, 20, 0.9f);

  nn_tracker_params_init (&p);
  p.min_hits = 3;
  t = nn_tracker_new (&p);
  nn_tracker_update (t, &b, 1, &id);
  g_assert_cmpuint (id, ==, 0);
  nn_tracker_update (t, &b, 1, &id);
  g_assert_cmpuint (id, ==, 0);
  nn_tracker_update (t, &b, 1, &id);
  g_assert_cmpuint (id, ==, 1);
  nn_tracker_free (t);
}

/* -------------------------------------------------------------- redaction */

static guint8 *
noise_image (gint w, gint h, gint ps, guint32 seed)
{
  guint8 *img = g_malloc ((gsize) w * h * ps);
  GRand *r = g_rand_new_with_seed (seed);

  for (gsize i = 0; i < (gsize) w * h * ps; i++)
    img[i] = (guint8) g_rand_int_range (r, 0, 256);
  g_rand_free (r);
  return img;
}

/* Every pixel inside [x0,x1)x[y0,y1) of the plane changed (at least one
 * byte; or, for fill, equal to the fill), none outside. */
static void
check_rect (const NnPlane *p, const guint8 *orig, gint x0, gint y0, gint x1, gint y1,
            NnRedactMode mode)
{
  guint changed = 0, inside = 0;

  for (gint y = 0; y < p->height; y++)
    for (gint x = 0; x < p->width; x++) {
      const guint8 *a = orig + (gsize) y * p->stride + x * p->pstride;
      const guint8 *b = p->data + (gsize) y * p->stride + x * p->pstride;
      gboolean in = x >= x0 && x < x1 && y >= y0 && y < y1;

      if (!in) {
        g_assert_cmpmem (a, p->pstride, b, p->pstride);
        continue;
      }
      inside++;
      if (mode == NN_REDACT_FILL)
        g_assert_cmpmem (b, p->pstride, p->fill, p->pstride);
      if (memcmp (a, b, p->pstride) != 0)
        changed++;
    }
  /* noise: a mean or blur leaves almost no pixel as it was */
  g_assert_cmpuint (changed, >=, inside * 95 / 100);
}

static void
test_redact_packed (void)
{
  for (gint mode = NN_REDACT_PIXELATE; mode <= NN_REDACT_FILL; mode++)
    for (gint ps = 3; ps <= 4; ps++) {
      gint w = 64, h = 48;
      guint8 *img = noise_image (w, h, ps, 7 + mode);
      guint8 *orig = g_memdup2 (img, (gsize) w * h * ps);
      NnImage im = { 1, { { img, w * ps, ps, w, h, 0, 0, { 1, 2, 3, 4 } } } };

      nn_redact_rect (&im, 10, 5, 37, 30, (NnRedactMode) mode, 6);
      check_rect (&im.planes[0], orig, 10, 5, 37, 30, (NnRedactMode) mode);
      /* a box across the corner is clipped */
      memcpy (img, orig, (gsize) w * h * ps);
      nn_redact_rect (&im, 60, 40, 80, 60, (NnRedactMode) mode, 6);
      check_rect (&im.planes[0], orig, 60, 40, 64, 48, (NnRedactMode) mode);
      g_free (img);
      g_free (orig);
    }
}

static void
test_redact_pixelate_blocks (void)
{
  /* blocks of 4 from the corner: each block one value, its mean */
  guint8 img[8 * 8];
  NnImage im = { 1, { { img, 8, 1, 8, 8, 0, 0, { 0 } } } };

  for (gint i = 0; i < 64; i++)
    img[i] = (guint8) (i % 8 * 10);
  nn_redact_rect (&im, 0, 0, 8, 8, NN_REDACT_PIXELATE, 4);
  /* columns 0..3: 0 10 20 30 -> 15; 4..7: 40..70 -> 55 */
  g_assert_cmpuint (img[0], ==, 15);
  g_assert_cmpuint (img[3 * 8 + 3], ==, 15);
  g_assert_cmpuint (img[5 * 8 + 6], ==, 55);
}

static void
test_redact_i420 (void)
{
  gint w = 64, h = 48;
  guint8 *y = noise_image (w, h, 1, 1), *u = noise_image (w / 2, h / 2, 1, 2);
  guint8 *v = noise_image (w / 2, h / 2, 1, 3);
  guint8 *oy = g_memdup2 (y, w * h), *ou = g_memdup2 (u, w * h / 4);
  guint8 *ov = g_memdup2 (v, w * h / 4);

  for (gint mode = NN_REDACT_PIXELATE; mode <= NN_REDACT_FILL; mode++) {
    NnImage im = { 3,
                   { { y, w, 1, w, h, 0, 0, { 16 } },
                     { u, w / 2, 1, w / 2, h / 2, 1, 1, { 128 } },
                     { v, w / 2, 1, w / 2, h / 2, 1, 1, { 128 } } } };

    memcpy (y, oy, w * h);
    memcpy (u, ou, w * h / 4);
    memcpy (v, ov, w * h / 4);
    /* an odd box: chroma rounded outwards, [5, 31) -> [2, 16) */
    nn_redact_rect (&im, 5, 7, 31, 26, (NnRedactMode) mode, 4);
    check_rect (&im.planes[0], oy, 5, 7, 31, 26, (NnRedactMode) mode);
    check_rect (&im.planes[1], ou, 2, 3, 16, 13, (NnRedactMode) mode);
    check_rect (&im.planes[2], ov, 2, 3, 16, 13, (NnRedactMode) mode);
  }
  g_free (y);
  g_free (u);
  g_free (v);
  g_free (oy);
  g_free (ou);
  g_free (ov);
}

/* ------------------------------------------------------------------- mask */

static void
test_mask_alpha_and_blend (void)
{
  /* a 4x2 map over an 8x4 frame (scale 0.5): foreground the left half */
  gfloat map[2 * 4] = { 0.9f, 0.8f, 0.1f, 0.0f, 1.0f, 0.7f, 0.2f, 0.0f };
  NnMaskMapping m = { 0.5, 0.5, 0.0, 0.0 };
  guint8 alpha[8 * 4], soft[8 * 4];
  guint8 img[8 * 4 * 3];
  guint8 color[3] = { 0, 255, 0 };
  NnPlane p = { img, 8 * 3, 3, 8, 4, 0, 0, { 0 } };

  nn_mask_alpha (map, 4, 2, 4, &m, 8, 4, FALSE, FALSE, 0.5, alpha);
  for (gint y = 0; y < 4; y++)
    for (gint x = 0; x < 8; x++)
      g_assert_cmpuint (alpha[y * 8 + x], ==, x < 4 ? 255 : 0);
  /* soft: the bilinear value at pixel centres; (0, 0) -> map (-0.25,
   * -0.25) clamped: 0.9f = 0.8999999 -> 229 */
  nn_mask_alpha (map, 4, 2, 4, &m, 8, 4, FALSE, TRUE, 0.5, soft);
  g_assert_cmpuint (soft[0], ==, 229);
  g_assert_cmpuint (soft[7], ==, 0);
  /* logits */
  {
    gfloat logits[1] = { 0.0f };
    NnMaskMapping one = { 1.0, 1.0, 0.0, 0.0 };
    guint8 a;

    nn_mask_alpha (logits, 1, 1, 1, &one, 1, 1, TRUE, TRUE, 0.5, &a);
    g_assert_cmpuint (a, ==, 128);
  }
  memset (img, 200, sizeof (img));
  nn_mask_blend (&p, alpha, NULL, color);
  g_assert_cmpuint (img[0], ==, 200);             /* foreground kept */
  g_assert_cmpuint (img[(1 * 8 + 6) * 3], ==, 0); /* background: colour */
  g_assert_cmpuint (img[(1 * 8 + 6) * 3 + 1], ==, 255);
  /* half alpha: the mean */
  {
    guint8 px[3] = { 100, 100, 100 }, half = 128;
    NnPlane one = { px, 3, 3, 1, 1, 0, 0, { 0 } };

    nn_mask_blend (&one, &half, NULL, color);
    g_assert_cmpuint (px[0], ==, 50);
    g_assert_cmpuint (px[1], ==, 177);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/detect/anchors/blazeface", test_anchors_blazeface);
  g_test_add_func ("/detect/anchors/ssd-mobilenet", test_anchors_ssd_mobilenet);
  g_test_add_func ("/detect/decode/ssd", test_decode_ssd);
  g_test_add_func ("/detect/decode/ssd-softmax", test_decode_ssd_softmax);
  g_test_add_func ("/detect/decode/yolov5", test_decode_yolov5);
  g_test_add_func ("/detect/decode/yolov8", test_decode_yolov8);
  g_test_add_func ("/detect/decode/yolov8-dfl", test_decode_yolov8_dfl);
  g_test_add_func ("/detect/decode/boxes-scores", test_decode_boxes_scores);
  g_test_add_func ("/detect/decode/nms-indices", test_decode_nms_indices);
  g_test_add_func ("/detect/nms/hard", test_nms_hard);
  g_test_add_func ("/detect/nms/weighted", test_nms_weighted);
  g_test_add_func ("/track/assign", test_assign);
  g_test_add_func ("/track/crossing", test_tracker_crossing);
  g_test_add_func ("/track/predict", test_tracker_predict);
  g_test_add_func ("/track/min-hits", test_tracker_min_hits);
  g_test_add_func ("/redact/packed", test_redact_packed);
  g_test_add_func ("/redact/pixelate-blocks", test_redact_pixelate_blocks);
  g_test_add_func ("/redact/i420", test_redact_i420);
  g_test_add_func ("/mask/alpha-blend", test_mask_alpha_and_blend);
  return g_test_run ();
}
