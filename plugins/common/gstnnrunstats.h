/* GStreamer nnpipe plugin: what an element that runs stages measures
 * (gstnnrunstats.c): busy time and frames (its busy-time / frames
 * properties), the median processing time of the last runs (added to
 * LATENCY queries, a LATENCY message when it grows), trace spans
 * (include/nnpipe/trace.h) and the debug-slowdown of tests, and the
 * properties that show and steer them (trace, busy-time, frames,
 * debug-slowdown).  Used by nnstage; meant for any element that runs a
 * stage per buffer. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/trace.h>

G_BEGIN_DECLS

/* processing-time samples kept for the LATENCY query */
#define GST_NN_RUN_WINDOW 16

typedef struct
{
  GMutex lock;
  GstClockTime times[GST_NN_RUN_WINDOW];
  guint n_times, pos;
  GstClockTime reported;   /* latency last reported */
  guint64 busy_ns, frames; /* accumulated processing time, buffers */
  gint64 run_start;        /* monotonic us the current run began, 0
                                 * when none: busy time counts it too, so
                                 * busy over an interval never exceeds it */
  /* opened by gst_nn_run_stats_open_trace(), closed by _reset() */
  NnpTrace *trace;
  gint track;
  guint64 trace_frame;
  /* properties, kept by _reset() */
  gchar *trace_path; /* trace, or NULL */
  gdouble slowdown;  /* debug-slowdown FACTOR (0 = none) */
} GstNnRunStats;

/* The properties, in this order from the element's first_id on. */
enum
{
  GST_NN_RUN_STATS_PROP_TRACE,
  GST_NN_RUN_STATS_PROP_BUSY_TIME,
  GST_NN_RUN_STATS_PROP_FRAMES,
  GST_NN_RUN_STATS_PROP_DEBUG_SLOWDOWN,
  GST_NN_RUN_STATS_N_PROPS
};

/* Install the properties with ids first_id .. first_id +
 * GST_NN_RUN_STATS_N_PROPS - 1. */
void gst_nn_run_stats_install (GObjectClass *klass, guint first_id);
/* set_property / get_property of prop_id: FALSE when it is not one of
 * them (the element's own).  Any lock. */
gboolean gst_nn_run_stats_set_property (GstNnRunStats *st, guint first_id,
    guint prop_id, const GValue *value);
gboolean gst_nn_run_stats_get_property (GstNnRunStats *st, guint first_id,
    guint prop_id, GValue *value);

void gst_nn_run_stats_init (GstNnRunStats *st);
void gst_nn_run_stats_clear (GstNnRunStats *st);
/* Forget what was measured and close the trace (stop()).  FALSE + error
 * when the trace could not be written. */
gboolean gst_nn_run_stats_reset (GstNnRunStats *st, GstObject *obj,
    GError **error);
/* Open the trace the trace property names, or $NNP_TRACE when unset
 * (neither: no trace), with a track "OBJ_NAME (where)" at sort index. */
gboolean gst_nn_run_stats_open_trace (GstNnRunStats *st, GstObject *obj,
    const gchar *where, gint index, GError **error);

/* A run begins: returns its start (monotonic us). */
gint64 gst_nn_run_stats_begin (GstNnRunStats *st);
/* The run that began at t0 ends now (ok: it succeeded, so it counts): with
 * a debug-slowdown FACTOR, first a busy-wait of FACTOR times its length
 * (counted in the run: a slowed core, deterministic whatever the machine's
 * load, for nnpipeline's re-balancing test); then a trace span, and a
 * LATENCY message on element's bus when the median grew by more than a
 * quarter.  Returns the end (monotonic us). */
gint64 gst_nn_run_stats_end (GstNnRunStats *st, GstElement *element, gint64 t0,
    gboolean ok);


/* busy-time (ns, with the run in progress) and frames. */
guint64 gst_nn_run_stats_busy_ns (GstNnRunStats *st);
guint64 gst_nn_run_stats_frames (GstNnRunStats *st);
/* Add the median processing time to a LATENCY query's answer. */
void gst_nn_run_stats_add_latency (GstNnRunStats *st, GstObject *obj,
    GstQuery *query);

G_END_DECLS
