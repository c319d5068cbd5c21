/* nnpipe plugin: multi-object tracking by detection, without GStreamer.
 *
 * Each track follows one object with a constant-velocity Kalman filter on
 * (centre x, centre y, aspect ratio w/h, height) and their velocities (the
 * filter of SORT / DeepSORT / ByteTrack).  Every frame the tracks are
 * predicted one step, then detections are assigned to tracks of their label
 * by maximum total IoU (Hungarian algorithm on 1 - IoU) among pairs with an
 * IoU of at least iou_threshold:
 *
 * - NN_TRACKER_SORT: one association of all detections (SORT);
 * - NN_TRACKER_BYTETRACK: ByteTrack's two stages: detections scoring at
 *   least high_threshold first, against every track; then the
 *   low-scoring ones (low_threshold to high_threshold) against the tracks
 *   still unmatched that were matched last frame (an occluded object's
 *   weak detection keeps its track).  Only high-scoring detections start
 *   tracks.
 *
 * A matched track takes the detection (filter update); an unmatched
 * detection starts a track with a new id (ids count up from 1, never
 * reused); a track unmatched for more than max_missed frames ends.  A
 * track is confirmed once matched min_hits times (1: at once). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  NN_TRACKER_SORT,
  NN_TRACKER_BYTETRACK,
} NnTrackerMode;

typedef struct
{
  NnTrackerMode mode;
  gdouble iou_threshold;  /* least IoU of a pair that may be assigned */
  gdouble high_threshold; /* ByteTrack: first-stage detections */
  gdouble low_threshold;  /* ByteTrack: weaker ones are ignored */
  guint max_missed;       /* frames a track survives without detection */
  guint min_hits;         /* matches before a track is confirmed */
} NnTrackerParams;

/* One box, in any consistent unit (pixels), x0 <= x1, y0 <= y1. */
typedef struct
{
  gfloat x0, y0, x1, y1;
  gfloat score;
  gint label;
} NnTrackBox;

/* A track's state after a frame. */
typedef struct
{
  NnTrackBox box; /* the filter's estimate (score: the last detection's) */
  guint64 id;
  guint missed; /* frames since its last detection */
  gboolean confirmed;
} NnTrackState;

typedef struct _NnTracker NnTracker;

/* SORT, IoU 0.3, ByteTrack thresholds 0.5 / 0.1, 30 missed, 1 hit. */
void nn_tracker_params_init (NnTrackerParams *params);

/* A tracker (free with nn_tracker_free); @params copied. */
NnTracker *nn_tracker_new (const NnTrackerParams *params);
void nn_tracker_free (NnTracker *tracker);
/* Forget every track (ids go on counting). */
void nn_tracker_reset (NnTracker *tracker);

/* One frame with detections: writes to @ids[i] the track id of detection
 * i, 0 when it has none (unconfirmed track, or a low-scoring detection
 * left over by ByteTrack). */
void nn_tracker_update (NnTracker *tracker, const NnTrackBox *dets, guint n,
    guint64 *ids);

/* One frame without detections (the model did not run on it): the tracks
 * move one step, no track counts a miss.  Appends to @out (NnTrackState)
 * the confirmed tracks that were matched on their last detection frame. */
void nn_tracker_predict (NnTracker *tracker, GArray *out);

/* The live tracks (NnTrackState), appended to @out. */
void nn_tracker_get_tracks (NnTracker *tracker, GArray *out);

/* Hungarian assignment on a rows x cols cost matrix (row-major): writes
 * to @match[r] the column of row r (or -1) minimising the total cost;
 * min(rows, cols) pairs.  Exposed for the tests. */
void nn_assign_min_cost (const gdouble *cost, guint rows, guint cols,
    gint *match);

G_END_DECLS
