/* GStreamer nnpipe plugin: what an element that runs stages measures
 * (gstnnrunstats.c): busy time and frames (its busy-time / frames
 * properties), the median processing time of the last runs (added to
 * LATENCY queries, a LATENCY message when it grows) and trace spans
 * (include/nnpipe/trace.h).  Used by nnstage; meant for any element that
 * runs a stage per buffer. */
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
  GstClockTime reported;        /* latency last reported */
  guint64 busy_ns, frames;      /* accumulated processing time, buffers */
  gint64 run_start;             /* monotonic us the current run began, 0
                                 * when none: busy time counts it too, so
                                 * busy over an interval never exceeds it */
  /* opened by gst_nn_run_stats_open_trace(), closed by _reset() */
  NnpTrace *trace;
  gint track;
  guint64 trace_frame;
} GstNnRunStats;

void gst_nn_run_stats_init (GstNnRunStats * st);
void gst_nn_run_stats_clear (GstNnRunStats * st);
/* Forget what was measured and close the trace (stop()).  FALSE + error
 * when the trace could not be written. */
gboolean gst_nn_run_stats_reset (GstNnRunStats * st, GstObject * obj,
    GError ** error);
/* Open the trace at path, or at $NNP_TRACE when path is NULL (neither: no
 * trace), with a track named track_name at sort index. */
gboolean gst_nn_run_stats_open_trace (GstNnRunStats * st, const gchar * path,
    const gchar * track_name, gint index, GError ** error);

/* A run begins: returns its start (monotonic us). */
gint64 gst_nn_run_stats_begin (GstNnRunStats * st);
/* The run that began at t0 ended at t1 (ok: it succeeded, so it counts):
 * a trace span, and a LATENCY message on element's bus when the median
 * grew by more than a quarter. */
void gst_nn_run_stats_end (GstNnRunStats * st, GstElement * element,
    gint64 t0, gint64 t1, gboolean ok);

/* busy-time (ns, with the run in progress) and frames. */
guint64 gst_nn_run_stats_busy_ns (GstNnRunStats * st);
guint64 gst_nn_run_stats_frames (GstNnRunStats * st);
/* Add the median processing time to a LATENCY query's answer. */
void gst_nn_run_stats_add_latency (GstNnRunStats * st, GstObject * obj,
    GstQuery * query);

G_END_DECLS
