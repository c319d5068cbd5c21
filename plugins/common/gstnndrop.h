/* GStreamer nnpipe plugin: the drop policy of live input (issue 22).
 *
 * A stage that cannot keep up with a live source must not queue its frames:
 * the source's frames would wait longer and longer (a 30 fps camera into an
 * 8 fps model is seconds behind after seconds).  With the policy on, a
 * frame that arrives later than `max-lateness` after its running time (the
 * clock's running time now, less the upstream latency, against the frame's
 * running time: it waited upstream while the stage ran the frames before
 * it) is dropped before it runs, and so is a frame a QoS event from
 * downstream said is too late; the next fresh frame runs instead.  So the
 * oldest waiting frames go, the frames that run are at most max-lateness
 * old, and the latency this adds is max-lateness (answered in LATENCY
 * queries, so that a synchronising sink does not drop what comes out).
 *
 * "auto" (the default) is on for live input (the LATENCY query upstream
 * says live: a camera, RTSP, `videotestsrc is-live=true`) and off for
 * files, where every frame is processed.  Crops of a frame (GstNnFrameMeta
 * with n_rois >= 0: the recogniser after nncrop) are never dropped: the
 * frame they belong to ran already.  Dropped frames are counted (the
 * element's `dropped` property, nnpipeline-stats) and each drop posts a QoS
 * message, as GStreamer elements that drop for lateness do.
 *
 * One GstNnDrop per stream: nnstage has one, nnpipeline one per sink pad
 * (gstnnpipeline-drop.c).  Thread-safe: frames, events and queries may come
 * from different threads. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  GST_NN_DROP_AUTO, /* on for live input, off otherwise */
  GST_NN_DROP_ON,   /* late frames are dropped, live or not */
  GST_NN_DROP_OFF,  /* every frame runs */
} GstNnDropMode;

#define GST_TYPE_NN_DROP_MODE (gst_nn_drop_mode_get_type ())
GType gst_nn_drop_mode_get_type (void);

#define GST_NN_DROP_DEFAULT_MODE GST_NN_DROP_AUTO
/* ns; -1: no bound by lateness (QoS events only) */
#define GST_NN_DROP_DEFAULT_MAX_LATENESS (200 * GST_MSECOND)

typedef struct
{
  GMutex lock;
  /* settings */
  GstNnDropMode mode;
  gint64 max_lateness;
  gboolean never; /* auto resolves to off whatever the input (a stage
                   * inside nnpipeline or a replica: the container drops) */
  /* stream state */
  GstSegment segment; /* the last SEGMENT event's */
  gboolean probed;    /* upstream's latency is known */
  gboolean live;
  GstClockTime upstream_latency;
  GstClockTime qos_earliest; /* running time; NONE: no QoS event */
  /* counters (since start) */
  guint64 processed, dropped;
} GstNnDrop;

void gst_nn_drop_init (GstNnDrop *drop);
void gst_nn_drop_clear (GstNnDrop *drop);
/* Forget the stream (start, stop, flush-stop); counters only with
 * counters. */
void gst_nn_drop_reset (GstNnDrop *drop, gboolean counters);

/* The properties drop, max-lateness and dropped (read-only), ids first_id
 * .. first_id + GST_NN_DROP_N_PROPS - 1; what_dropped names where frames
 * are dropped, for dropped's blurb. */
enum
{
  GST_NN_DROP_PROP_DROP,
  GST_NN_DROP_PROP_MAX_LATENESS,
  GST_NN_DROP_PROP_DROPPED,
  GST_NN_DROP_N_PROPS
};
void gst_nn_drop_install (GObjectClass *klass, guint first_id,
    const gchar *what_dropped);
/* set_property / get_property: FALSE when prop_id is not one of them.
 * dropped reads this GstNnDrop's count. */
gboolean gst_nn_drop_set_property (GstNnDrop *drop, guint first_id,
    guint prop_id, const GValue *value);
gboolean gst_nn_drop_get_property (GstNnDrop *drop, guint first_id,
    guint prop_id, GValue *value);
/* dst takes src's mode and max-lateness. */
void gst_nn_drop_copy_settings (GstNnDrop *dst, GstNnDrop *src);
void gst_nn_drop_set_never (GstNnDrop *drop, gboolean never);
guint64 gst_nn_drop_get_dropped (GstNnDrop *drop);

/* A serialized event of the stream (SEGMENT, FLUSH_STOP) or an upstream
 * one (QoS) passing by; never takes it. */
void gst_nn_drop_event (GstNnDrop *drop, GstEvent *event);

/* Should buf (arriving on `sinkpad` of `element`) be dropped?  Upstream's
 * latency is asked once per stream (peer query of sinkpad).  Counts it
 * either way; a drop posts a QoS message from element.  Never takes buf. */
gboolean gst_nn_drop_check (GstNnDrop *drop, GstElement *element,
    GstPad *sinkpad, GstBuffer *buf);

/* Is the policy dropping on this input (mode, and liveness for auto)? */
gboolean gst_nn_drop_is_active (GstNnDrop *drop);

/* A LATENCY query answered by upstream and the stages: learns liveness
 * from it and, when the policy is active on it, adds max-lateness. */
void gst_nn_drop_add_latency (GstNnDrop *drop, GstObject *obj, GstQuery *query);

G_END_DECLS
