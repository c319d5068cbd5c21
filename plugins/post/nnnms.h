/* nnpipe plugin: non-maximum suppression and top-k of detections, without
 * GStreamer.
 *
 * NN_NMS_HARD is ONNX NonMaxSuppression's greedy rule: detections in
 * descending score order (equal scores: the lower index first), one is
 * kept unless its IoU with a box kept before it (of its class, or of any
 * class when class-agnostic) is greater than the IoU threshold; at most
 * max_per_class kept per class (ONNX max_output_boxes_per_class).
 *
 * NN_NMS_WEIGHTED is MediaPipe's WEIGHTED algorithm
 * (NonMaxSuppressionCalculator): the best remaining detection and every
 * remaining one whose IoU with it is greater than the threshold form a
 * cluster; the cluster becomes one detection with the best one's score and
 * label and the score-weighted mean of the cluster's boxes and keypoints.
 * It smooths the box of a face that several anchors found. */
#pragma once

#include "nndetect.h"

G_BEGIN_DECLS

typedef enum
{
  NN_NMS_NONE,
  NN_NMS_HARD,
  NN_NMS_WEIGHTED,
} NnNmsMode;

typedef struct
{
  NnNmsMode mode;
  gdouble iou_threshold;   /* suppress above this IoU */
  gboolean class_agnostic; /* TRUE: boxes of different classes suppress */
  guint max_per_class;     /* 0: no bound */
  guint top_k;             /* at most this many in all, the best; 0: all */
} NnNmsParams;

/* Sort @dets (NnDetection) by descending score, equal scores by ascending
 * index. */
void nn_detections_sort (GArray *dets);

/* Apply @params to @dets in place: the survivors, best score first. */
void nn_nms (GArray *dets, const NnNmsParams *params);

G_END_DECLS
