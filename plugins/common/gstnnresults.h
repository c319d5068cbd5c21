/* GStreamer nnpipe plugin: results on frames, shared by the
 * post-processing elements.
 *
 * Text results are GstVideoRegionOfInterestMeta of roi_type "text" on the
 * original frame, with id = the box index in reading order and one
 * parameter structure named "nnpipe/text":
 *
 *   nnpipe/text, box-score=(double)0.93,
 *       points=(double)< x0, y0, x1, y1, x2, y2, x3, y3 >,
 *       text=(string)"HELLO", score=(double)0.98
 *
 * points are the rotated box's corners in frame pixels (top-left,
 * top-right, bottom-right, bottom-left of the text); text and score come
 * with nnctcdecode.  Classification results are a "nnpipe/class" structure
 * (label, class-id, score) on a ROI of type "class".
 *
 * GstNnFrameOut is the source side of an element that receives tensors and
 * pushes video frames: it turns the frame's GstVideoInfo into caps, sends
 * them before the first frame (and on a change) and holds the segment back
 * until then so sticky events stay in order. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <stdio.h>

#include "gstnnframemeta.h"
#include "gstnntensorcaps.h"
#include "nngeometry.h"

G_BEGIN_DECLS

#define GST_NN_TEXT_PARAM_NAME "nnpipe/text"
#define GST_NN_CLASS_PARAM_NAME "nnpipe/class"

/* Template caps of a frame-producing source pad. */
#define GST_NN_FRAME_CAPS_TEMPLATE "video/x-raw"

/* Add a "text" ROI to a writable frame: the bounding box of @quad clipped
 * to the frame, and an "nnpipe/text" structure with box-score and points.
 * Returns the meta (owned by the buffer). */
GstVideoRegionOfInterestMeta *gst_nn_add_text_roi (GstBuffer *frame, gint id,
    const NnQuad *quad, gdouble box_score, gint frame_width, gint frame_height);

/* The ROI meta with this id, or NULL (owned by the buffer). */
GstVideoRegionOfInterestMeta *gst_nn_find_roi (GstBuffer *frame, gint id);

/* The ROI's corners: from its "nnpipe/text" points when present, else its
 * rectangle. */
void gst_nn_roi_get_quad (GstVideoRegionOfInterestMeta *roi, NnQuad *quad);

/* Move a text ROI: its rectangle (frame pixels) and, when it has an
 * "nnpipe/text" structure, the corners there. */
void gst_nn_roi_set_quad (GstVideoRegionOfInterestMeta *roi, const NnQuad *quad,
    guint x, guint y, guint w, guint h);

typedef struct
{
  GstPad *srcpad;    /* not owned */
  GstVideoInfo info; /* of the caps last sent */
  gboolean have_caps;
  GstEvent *segment; /* held back until caps are out; owned */
} GstNnFrameOut;

void gst_nn_frame_out_init (GstNnFrameOut *out, GstPad *srcpad);
/* Forget caps and the held segment (READY, flushes keep the caps). */
void gst_nn_frame_out_reset (GstNnFrameOut *out);
/* Sink-side events: the tensor CAPS event is consumed (the caller parses it
 * first), SEGMENT is held back while no caps were sent.  Returns TRUE when
 * the event was taken (and the result stored in @ret), FALSE when the
 * caller should forward it. */
gboolean gst_nn_frame_out_sink_event (GstNnFrameOut *out, GstEvent *event,
    gboolean *ret);
/* Push a frame (takes ownership), sending caps from @info first if needed. */
GstFlowReturn gst_nn_frame_out_push (GstNnFrameOut *out, GstBuffer *frame,
    const GstVideoInfo *info);

/* The sink event handler of a post-processing element: a CAPS event goes
 * to set_caps (FALSE drops it and fails), then @out takes what it handles
 * (see gst_nn_frame_out_sink_event()), the rest is forwarded. */
typedef gboolean (*GstNnResultsSetCaps) (GstElement *element, GstCaps *caps);
gboolean gst_nn_results_sink_event (GstNnFrameOut *out, GstPad *pad,
    GstObject *parent, GstEvent *event, GstNnResultsSetCaps set_caps);

/* One frame's results being assembled from per-region tensors (nncrop's
 * GstNnFrameMeta: frame, n_rois, roi_id): a writable copy of the frame
 * that the results are written into, pushed once every region arrived,
 * when the next frame's first region arrives, or at EOS. */
typedef struct
{
  GstBuffer *src;   /* the source frame: identity; owned ref */
  GstBuffer *frame; /* its writable copy; owned */
  GstVideoInfo info;
  gint expected, received;
} GstNnFrameCollect;

/* TRUE when @fm belongs to another frame than the one being assembled:
 * the caller pushes the current one (gst_nn_frame_collect_take()) and
 * then calls gst_nn_frame_collect_start(). */
gboolean gst_nn_frame_collect_is_new (const GstNnFrameCollect *c,
    const GstNnFrameMeta *fm);
/* Start assembling @fm's frame (n_rois < 0, a whole frame, counts as one
 * region). */
void gst_nn_frame_collect_start (GstNnFrameCollect *c,
    const GstNnFrameMeta *fm);
/* Count one region read; TRUE when all of the frame's regions arrived. */
gboolean gst_nn_frame_collect_add (GstNnFrameCollect *c);
/* The assembled frame (caller owns it; NULL when none), with a warning in
 * the caller's debug category when regions are missing; the collector is
 * empty afterwards. */
GstBuffer *gst_nn_frame_collect_take (GstNnFrameCollect *c,
    GstDebugCategory *cat, GstObject *element);
/* Drop the frame being assembled (flushes, READY). */
void gst_nn_frame_collect_clear (GstNnFrameCollect *c);

/* The results file of a `location` property: "-" is stdout, NULL or ""
 * none (*file stays NULL).  FALSE after posting an OPEN_WRITE error. */
gboolean gst_nn_results_open_file (GstElement *element, const gchar *location,
    FILE **file);
/* Close it (not stdout) and set *file to NULL. */
void gst_nn_results_close_file (FILE **file);

/* ---- generic detections (nndetectdecode, nntrack, nnredact, nnmetapublish)
 *
 * A detected object is a GstVideoRegionOfInterestMeta whose roi_type is
 * its label, with one parameter structure named "detection" as DL
 * Streamer's gvadetect writes it:
 *
 *   detection, label=(string)face, label_id=(int)0,
 *       confidence=(double)0.93, x_min=(double)0.21, y_min=(double)0.1,
 *       x_max=(double)0.35, y_max=(double)0.32,
 *       keypoints=(double)< x0, y0, x1, y1, ... >, object_id=(int)7
 *
 * the box normalised to the frame (x / width, y / height; the meta's
 * rectangle is the same box in whole pixels, rounded outwards), keypoints
 * (when the model gives them) normalised the same way, and object_id the
 * track id once nntrack followed it (also the meta's id). */
#define GST_NN_DETECTION_PARAM_NAME "detection"

/* Add a detection to a writable frame: box (x0, y0)-(x1, y1) in frame
 * pixels (clipped to the frame), @keypoints n_keypoints (x, y) pairs in
 * frame pixels or NULL.  The meta's id is @id.  Returns the meta (owned
 * by the buffer). */
GstVideoRegionOfInterestMeta *gst_nn_add_detection_roi (GstBuffer *frame,
    gint id, const gchar *label, gint label_id, gdouble confidence, gdouble x0,
    gdouble y0, gdouble x1, gdouble y1, const gfloat *keypoints,
    gint n_keypoints, gint frame_width, gint frame_height);

/* The "detection" structure of @roi, or NULL (owned by the meta).  With
 * it, the box in frame pixels of a @width x @height frame. */
GstStructure *gst_nn_roi_get_detection (GstVideoRegionOfInterestMeta *roi,
    gint width, gint height, gdouble box[4]);

/* Set the track id: the meta's id and the structure's object_id. */
void gst_nn_roi_set_object_id (GstVideoRegionOfInterestMeta *roi, gint id);

/* The JSON object of a detection (cJSON, caller owns it):
 * {"label": "face", "score": 0.93, "box": [x0, y0, x1, y1], "track": 7}
 * with the box in frame pixels (2 decimals) and "track" only when
 * nntrack set object_id. */
struct cJSON;
struct cJSON *gst_nn_detection_to_json (GstVideoRegionOfInterestMeta *roi,
    const GstStructure *s, gint width, gint height);

G_END_DECLS
