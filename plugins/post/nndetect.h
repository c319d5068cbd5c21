/* nnpipe plugin: object-detection box decoding, without GStreamer.
 *
 * A detector's output tensors -> a list of NnDetection (box, score, label,
 * keypoints) in the model input's pixels, for the output layouts of the
 * common detector families:
 *
 * - NN_DETECT_LAYOUT_SSD: anchor-based SSD as MediaPipe decodes it
 *   (TensorsToDetectionsCalculator): scores [N, C] and regressors [N, R]
 *   against N anchors (nn_ssd_anchors_generate(), MediaPipe's
 *   SsdAnchorsCalculator); BlazeFace, MobileNet-SSD.
 * - NN_DETECT_LAYOUT_YOLOV5: one tensor [N, 5 + C] of cx, cy, w, h,
 *   objectness, class scores (YOLO v5 / v7 exports); score = obj * class.
 * - NN_DETECT_LAYOUT_YOLOV8: one tensor [4 + C, N] (YOLO v8 / v11 exports),
 *   or [4 * bins + C, N] of raw DFL distributions over the grid points of
 *   the strides (the head before its DFL layer).
 * - NN_DETECT_LAYOUT_BOXES_SCORES: boxes [N, 4] and scores [N, C] (models
 *   exported with their own decoding).
 * - NN_DETECT_LAYOUT_NMS_INDICES: boxes [N, 4], scores [C, N] and the
 *   selected_indices [K, 3] (batch, class, box) of a graph that ends in
 *   ONNX NonMaxSuppression: no NMS of ours.
 *
 * Each anchor or row gives at most one detection, its best class (as
 * MediaPipe and Ultralytics do), when its score reaches the threshold.
 * Boxes are corners x0 <= x1, y0 <= y1 in continuous pixel units of the
 * model input (pixel (i, j) covers [i, i+1) x [j, j+1)).  NMS and top-k are
 * nnnms.h's. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define NN_DETECT_MAX_KEYPOINTS 17

typedef struct
{
  gfloat x0, y0, x1, y1; /* corners in model-input pixels */
  gfloat score;
  gint label;  /* class index */
  guint index; /* the anchor / row it came from */
  gint n_keypoints;
  gfloat keypoints[2 * NN_DETECT_MAX_KEYPOINTS]; /* x, y pairs, pixels */
} NnDetection;

typedef enum
{
  NN_DETECT_LAYOUT_SSD,
  NN_DETECT_LAYOUT_YOLOV5,
  NN_DETECT_LAYOUT_YOLOV8,
  NN_DETECT_LAYOUT_BOXES_SCORES,
  NN_DETECT_LAYOUT_NMS_INDICES,
} NnDetectLayout;

typedef enum
{
  NN_SCORE_NONE,    /* scores are probabilities already */
  NN_SCORE_SIGMOID, /* per class logistic */
  NN_SCORE_SOFTMAX, /* over the C classes of a row */
} NnScoreActivation;

/* How a box is written in a tensor row. */
typedef enum
{
  NN_BOX_XYXY,   /* x0, y0, x1, y1 */
  NN_BOX_YXYX,   /* y0, x0, y1, x1 (TensorFlow, ONNX center_point_box=0) */
  NN_BOX_CXCYWH, /* centre x, centre y, width, height */
} NnBoxFormat;

/* An SSD anchor, normalised to the input size (MediaPipe's Anchor). */
typedef struct
{
  gfloat cx, cy, w, h;
} NnAnchor;

/* MediaPipe's SsdAnchorsCalculatorOptions (the fields it uses). */
#define NN_SSD_MAX_LAYERS 16
#define NN_SSD_MAX_RATIOS 8
typedef struct
{
  gint input_width, input_height;
  gdouble min_scale, max_scale;
  gdouble offset_x, offset_y;
  gint n_layers;
  gint strides[NN_SSD_MAX_LAYERS];
  gint n_aspect_ratios;
  gdouble aspect_ratios[NN_SSD_MAX_RATIOS];
  gdouble interpolated_scale_aspect_ratio; /* 0: none */
  gboolean reduce_boxes_in_lowest_layer;
  gboolean fixed_anchor_size; /* every anchor 1 x 1 */
  /* > 0 overrides the anchors per cell of distinct stride k (layers of
   * equal stride merged), giving fixed-size anchors: a simpler way to say
   * "16x16 grid, 2 anchors; 8x8 grid, 6 anchors" */
  gint anchors_per_cell[NN_SSD_MAX_LAYERS];
} NnSsdAnchorOptions;

/* MediaPipe's face detection (short range, BlazeFace front 128x128; with
 * input 256 and strides 16, 32, 32, 32 the back model): 896 anchors. */
void nn_ssd_anchor_options_init_blazeface (NnSsdAnchorOptions *opts,
    gint input_size);

/* The anchors in MediaPipe's order (for each distinct stride: rows,
 * columns, anchors of a cell); a new array of NnAnchor (caller frees with
 * g_array_unref).  NULL with @error set on bad options. */
GArray *nn_ssd_anchors_generate (const NnSsdAnchorOptions *opts,
    GError **error);

typedef struct
{
  NnDetectLayout layout;
  gint input_width, input_height; /* the model input, pixels */
  NnScoreActivation activation;
  gdouble score_threshold; /* after the activation */
  gint background_label;   /* class ignored (softmax SSD), -1: none */

  /* SSD: regressor rows [dx, dy, dw, dh, kp0x, kp0y, ...] (box_format
   * NN_BOX_CXCYWH) or [dy, dx, dh, dw, ...] (NN_BOX_YXYX, TensorFlow's
   * order) against the anchors; box_scale x, y, w, h (MediaPipe's x_scale
   * ...; 0: the input size), box_exp: w, h are exp() of the regression */
  const NnAnchor *anchors;
  guint n_anchors;
  gdouble box_scale[4];
  gboolean box_exp;
  gint n_keypoints;     /* pairs after the box */
  gint keypoint_offset; /* index of the first keypoint value, usually 4 */
  gdouble score_clip;   /* raw scores clipped to +-clip first; 0: none */

  /* YOLO v8 with DFL: bins per side (0: plain boxes) and the strides of
   * the grids whose points are the N anchors, in order */
  gint dfl_bins;
  gint n_strides;
  gint strides[NN_SSD_MAX_LAYERS];

  /* BOXES_SCORES, NMS_INDICES: how a box is written; normalised to [0, 1]
   * of the input or in pixels */
  NnBoxFormat box_format;
  gboolean box_normalized;
} NnDetectParams;

/* Defaults: SSD, no activation, threshold 0.5, no background label,
 * CXCYWH boxes in pixels, keypoint_offset 4. */
void nn_detect_params_init (NnDetectParams *params);

/* Decoders: each appends NnDetection to @out.  FALSE with @error set when
 * the sizes do not fit the layout.  Rows are C-order floats. */

/* @scores: N x n_classes, @boxes: N x n_coords, N = n_anchors. */
gboolean nn_detect_decode_ssd (const NnDetectParams *params,
    const gfloat *scores, guint n_classes, const gfloat *boxes, guint n_coords,
    guint n, GArray *out, GError **error);

/* @data: N x (5 + n_classes). */
gboolean nn_detect_decode_yolov5 (const NnDetectParams *params,
    const gfloat *data, guint n, guint row, GArray *out, GError **error);

/* @data: rows x N (channel-major), rows = 4 + C or 4 * dfl_bins + C. */
gboolean nn_detect_decode_yolov8 (const NnDetectParams *params,
    const gfloat *data, guint rows, guint n, GArray *out, GError **error);

/* @boxes: N x 4, @scores: N x n_classes. */
gboolean nn_detect_decode_boxes_scores (const NnDetectParams *params,
    const gfloat *boxes, const gfloat *scores, guint n, guint n_classes,
    GArray *out, GError **error);

/* @boxes: N x 4, @scores: n_classes x N, @indices: K x 3 (batch, class,
 * box); batch must be 0.  The detections in the graph's order. */
gboolean nn_detect_decode_nms_indices (const NnDetectParams *params,
    const gfloat *boxes, const gfloat *scores, guint n, guint n_classes,
    const gint64 *indices, guint k, GArray *out, GError **error);

/* Intersection over union of two boxes (0 when either is empty). */
gfloat nn_detection_iou (const NnDetection *a, const NnDetection *b);

G_END_DECLS
