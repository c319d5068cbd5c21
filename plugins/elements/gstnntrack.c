/* GStreamer nnpipe plugin: nntrack
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nntrack
 * @title: nntrack
 * @short_description: follow detected objects across video frames
 *
 * nntrack reads the detections of each frame (the
 * #GstVideoRegionOfInterestMeta with a "detection" structure of
 * nndetectdecode, see gstnnresults.h) and gives each the id of the track
 * it belongs to: the meta's id and the structure's object_id, which
 * nnmetapublish writes as "track" and nnoverlay draws after the label (DL
 * Streamer's gvatrack, DeepStream's nvtracker).  Tracks follow their
 * object with a constant-velocity Kalman filter; detections are assigned to
 * tracks of their label by IoU (Hungarian algorithm), in one stage
 * (#GstNnTrack:mode "sort") or in ByteTrack's two ("bytetrack": weak
 * detections, from #GstNnTrack:low-threshold to
 * #GstNnTrack:high-threshold, only continue tracks, and those left without
 * a track are removed from the frame).  A track survives
 * #GstNnTrack:max-missed frames without detection, so an object that is
 * missed for a few frames keeps its id.
 *
 * On frames that the model skipped (nnstage inference-interval=N: the
 * frame carries a GstNnSkippedMeta and no detections) nntrack adds a
 * detection for each track followed at the last detection frame, at the
 * box its filter predicts, with the track's id and last score.
 *
 * The algorithm is plugins/post/nntracker.c.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=people.mp4 ! decodebin ! videoconvert ! \
 *     video/x-raw,format=RGB ! nnconvert width=256 height=256 \
 *       keep-aspect-ratio=true layout=nhwc mean=0.5 std=0.5 keep-frame=true ! \
 *     nnstage model=face_detection_back_256x256_barracuda.onnx \
 *       inference-interval=3 ! \
 *     nndetectdecode preset=blazeface ! nntrack ! nnoverlay ! videoconvert ! \
 *     autovideosink
 * ]| faces with their track ids, the model run on every third frame.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnntrack.h"
#include "gstnnresults.h"
#include "gstnnskip.h"
#include "nntracker.h"

#include <gst/video/video.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_track_debug);
#define GST_CAT_DEFAULT gst_nn_track_debug

#define DEFAULT_MODE NN_TRACKER_SORT
#define DEFAULT_IOU_THRESHOLD 0.3
#define DEFAULT_HIGH_THRESHOLD 0.5
#define DEFAULT_LOW_THRESHOLD 0.1
#define DEFAULT_MAX_MISSED 30
#define DEFAULT_MIN_HITS 1

enum
{
  PROP_0,
  PROP_MODE,
  PROP_IOU_THRESHOLD,
  PROP_HIGH_THRESHOLD,
  PROP_LOW_THRESHOLD,
  PROP_MAX_MISSED,
  PROP_MIN_HITS,
  PROP_TRACKS,
};

struct _GstNnTrack
{
  GstBaseTransform parent;

  /* properties (object lock) */
  NnTrackerParams params;
  guint64 tracks; /* tracks started since start */

  /* streaming state */
  GstVideoInfo info;
  NnTracker *tracker; /* owned; made at the first frame */
  GPtrArray *labels;  /* label_id -> label (owned strings) */
  guint64 last_id;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));

G_DEFINE_TYPE (GstNnTrack, gst_nn_track, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nntrack, "nntrack", GST_RANK_NONE,
    GST_TYPE_NN_TRACK);

GType
gst_nn_track_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { NN_TRACKER_SORT, "SORT: one IoU association of every detection", "sort" },
    { NN_TRACKER_BYTETRACK,
        "ByteTrack: strong detections first, then weak ones continue tracks",
        "bytetrack" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnTrackMode", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_nn_track_set_caps (GstBaseTransform *trans, GstCaps *incaps,
    GstCaps *outcaps)
{
  GstNnTrack *self = GST_NN_TRACK (trans);

  if (!gst_video_info_from_caps (&self->info, incaps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("invalid video caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  return TRUE;
}

static const gchar *
label_name (GstNnTrack *self, gint label_id)
{
  if (label_id >= 0 && (guint) label_id < self->labels->len
      && g_ptr_array_index (self->labels, label_id))
    return g_ptr_array_index (self->labels, label_id);
  return "object";
}

static void
remember_label (GstNnTrack *self, gint label_id, const gchar *label)
{
  if (label_id < 0 || label_id > 65535 || label == NULL)
    return;
  if ((guint) label_id >= self->labels->len)
    g_ptr_array_set_size (self->labels, label_id + 1);
  if (g_ptr_array_index (self->labels, label_id) == NULL)
    g_ptr_array_index (self->labels, label_id) = g_strdup (label);
}

static void
add_predicted (GstNnTrack *self, GstBuffer *buf)
{
  GArray *pred = g_array_new (FALSE, FALSE, sizeof (NnTrackState));
  gint w = GST_VIDEO_INFO_WIDTH (&self->info);
  gint h = GST_VIDEO_INFO_HEIGHT (&self->info);

  nn_tracker_predict (self->tracker, pred);
  for (guint i = 0; i < pred->len; i++) {
    NnTrackState *s = &g_array_index (pred, NnTrackState, i);
    GstVideoRegionOfInterestMeta *roi;

    roi = gst_nn_add_detection_roi (buf, (gint) s->id,
        label_name (self, s->box.label), s->box.label, s->box.score, s->box.x0,
        s->box.y0, s->box.x1, s->box.y1, NULL, 0, w, h);
    if (roi)
      gst_nn_roi_set_object_id (roi, (gint) s->id);
  }
  GST_LOG_OBJECT (self, "skipped frame: %u predicted boxes", pred->len);
  g_array_unref (pred);
}

static GstFlowReturn
gst_nn_track_transform_ip (GstBaseTransform *trans, GstBuffer *buf)
{
  GstNnTrack *self = GST_NN_TRACK (trans);
  gint w = GST_VIDEO_INFO_WIDTH (&self->info);
  gint h = GST_VIDEO_INFO_HEIGHT (&self->info);
  GPtrArray *rois;
  GArray *boxes;
  guint64 *ids;
  gpointer state = NULL;
  GstMeta *m;
  gboolean byte;

  if (self->tracker == NULL) {
    GST_OBJECT_LOCK (self);
    self->tracker = nn_tracker_new (&self->params);
    GST_OBJECT_UNLOCK (self);
  }
  byte = self->params.mode == NN_TRACKER_BYTETRACK;
  if (gst_buffer_has_nn_skipped_meta (buf)) {
    add_predicted (self, buf);
    return GST_FLOW_OK;
  }

  rois = g_ptr_array_new ();
  boxes = g_array_new (FALSE, FALSE, sizeof (NnTrackBox));
  while ((m = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    gdouble box[4], score = 0;
    GstStructure *s = gst_nn_roi_get_detection (roi, w, h, box);
    NnTrackBox b;
    gint label_id = 0;

    if (s == NULL)
      continue;
    gst_structure_get_double (s, "confidence", &score);
    gst_structure_get_int (s, "label_id", &label_id);
    remember_label (self, label_id, gst_structure_get_string (s, "label"));
    b.x0 = (gfloat) box[0];
    b.y0 = (gfloat) box[1];
    b.x1 = (gfloat) box[2];
    b.y1 = (gfloat) box[3];
    b.score = (gfloat) score;
    b.label = label_id;
    g_array_append_val (boxes, b);
    g_ptr_array_add (rois, roi);
  }
  ids = g_new0 (guint64, boxes->len + 1);
  nn_tracker_update (self->tracker, (NnTrackBox *) boxes->data, boxes->len,
      ids);
  for (guint i = 0; i < rois->len; i++) {
    GstVideoRegionOfInterestMeta *roi = g_ptr_array_index (rois, i);

    if (ids[i] != 0) {
      gst_nn_roi_set_object_id (roi, (gint) ids[i]);
      if (ids[i] > self->last_id) {
        GST_OBJECT_LOCK (self);
        self->tracks += ids[i] - self->last_id;
        GST_OBJECT_UNLOCK (self);
        self->last_id = ids[i];
      }
    } else if (byte) {
      /* a weak detection that continues no track: not an object */
      gst_buffer_remove_meta (buf, (GstMeta *) roi);
    }
  }
  GST_LOG_OBJECT (self, "%u detections tracked", boxes->len);
  g_free (ids);
  g_array_unref (boxes);
  g_ptr_array_unref (rois);
  return GST_FLOW_OK;
}

static gboolean
gst_nn_track_stop (GstBaseTransform *trans)
{
  GstNnTrack *self = GST_NN_TRACK (trans);

  g_clear_pointer (&self->tracker, nn_tracker_free);
  g_ptr_array_set_size (self->labels, 0);
  self->last_id = 0;
  gst_video_info_init (&self->info);
  return TRUE;
}

static gboolean
gst_nn_track_start (GstBaseTransform *trans)
{
  GstNnTrack *self = GST_NN_TRACK (trans);

  GST_OBJECT_LOCK (self);
  self->tracks = 0;
  GST_OBJECT_UNLOCK (self);
  return gst_nn_track_stop (trans);
}

static void
gst_nn_track_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnTrack *self = GST_NN_TRACK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->params.mode = (NnTrackerMode) g_value_get_enum (value);
      break;
    case PROP_IOU_THRESHOLD:
      self->params.iou_threshold = g_value_get_double (value);
      break;
    case PROP_HIGH_THRESHOLD:
      self->params.high_threshold = g_value_get_double (value);
      break;
    case PROP_LOW_THRESHOLD:
      self->params.low_threshold = g_value_get_double (value);
      break;
    case PROP_MAX_MISSED:
      self->params.max_missed = g_value_get_uint (value);
      break;
    case PROP_MIN_HITS:
      self->params.min_hits = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_track_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnTrack *self = GST_NN_TRACK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->params.mode);
      break;
    case PROP_IOU_THRESHOLD:
      g_value_set_double (value, self->params.iou_threshold);
      break;
    case PROP_HIGH_THRESHOLD:
      g_value_set_double (value, self->params.high_threshold);
      break;
    case PROP_LOW_THRESHOLD:
      g_value_set_double (value, self->params.low_threshold);
      break;
    case PROP_MAX_MISSED:
      g_value_set_uint (value, self->params.max_missed);
      break;
    case PROP_MIN_HITS:
      g_value_set_uint (value, self->params.min_hits);
      break;
    case PROP_TRACKS:
      g_value_set_uint64 (value, self->tracks);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_track_finalize (GObject *object)
{
  GstNnTrack *self = GST_NN_TRACK (object);

  nn_tracker_free (self->tracker);
  g_ptr_array_unref (self->labels);
  G_OBJECT_CLASS (gst_nn_track_parent_class)->finalize (object);
}

static void
gst_nn_track_class_init (GstNnTrackClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  /* the parameters are read when the tracker is made (first frame) */
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  GST_DEBUG_CATEGORY_INIT (gst_nn_track_debug, "nntrack", 0,
      "nnpipe object tracker");
  (void) gst_nn_skipped_meta_get_info ();

  gobject_class->set_property = gst_nn_track_set_property;
  gobject_class->get_property = gst_nn_track_get_property;
  gobject_class->finalize = gst_nn_track_finalize;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode", "Association of detections to tracks",
          GST_TYPE_NN_TRACK_MODE, DEFAULT_MODE, flags));
  g_object_class_install_property (gobject_class, PROP_IOU_THRESHOLD,
      g_param_spec_double ("iou-threshold", "IoU threshold",
          "Least IoU of a detection with a track's predicted box to continue it",
          0.0, 1.0, DEFAULT_IOU_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_HIGH_THRESHOLD,
      g_param_spec_double ("high-threshold", "High threshold",
          "bytetrack: detections scoring at least this are associated first and may start tracks",
          0.0, 1.0, DEFAULT_HIGH_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_LOW_THRESHOLD,
      g_param_spec_double ("low-threshold", "Low threshold",
          "bytetrack: weaker detections are ignored", 0.0, 1.0,
          DEFAULT_LOW_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_MAX_MISSED,
      g_param_spec_uint ("max-missed", "Max missed",
          "Frames a track survives without a detection", 0, 100000,
          DEFAULT_MAX_MISSED, flags));
  g_object_class_install_property (gobject_class, PROP_MIN_HITS,
      g_param_spec_uint ("min-hits", "Min hits",
          "Detections before a track gets its id (1: at once)", 1, 1000,
          DEFAULT_MIN_HITS, flags));
  g_object_class_install_property (gobject_class, PROP_TRACKS,
      g_param_spec_uint64 ("tracks", "Tracks",
          "Tracks (ids) started since the element started", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Object tracker",
      "Filter/Analyzer/Video",
      "Gives the detections on video frames stable track ids (SORT or ByteTrack) and predicts their boxes on frames the model skipped",
      "nnpipe developers");

  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_track_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_nn_track_transform_ip);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_nn_track_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_track_stop);
  trans_class->passthrough_on_same_caps = FALSE;
  gst_type_mark_as_plugin_api (GST_TYPE_NN_TRACK_MODE, 0);
}

static void
gst_nn_track_init (GstNnTrack *self)
{
  nn_tracker_params_init (&self->params);
  self->params.mode = DEFAULT_MODE;
  self->params.iou_threshold = DEFAULT_IOU_THRESHOLD;
  self->params.high_threshold = DEFAULT_HIGH_THRESHOLD;
  self->params.low_threshold = DEFAULT_LOW_THRESHOLD;
  self->params.max_missed = DEFAULT_MAX_MISSED;
  self->params.min_hits = DEFAULT_MIN_HITS;
  self->labels = g_ptr_array_new_with_free_func (g_free);
  gst_video_info_init (&self->info);
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}
