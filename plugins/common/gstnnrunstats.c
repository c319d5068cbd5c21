/* GStreamer nnpipe plugin: what an element that runs stages measures
 * (gstnnrunstats.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnrunstats.h"

#include <string.h>

GST_DEBUG_CATEGORY_EXTERN (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

void
gst_nn_run_stats_init (GstNnRunStats *st)
{
  memset (st, 0, sizeof (*st));
  g_mutex_init (&st->lock);
}

void
gst_nn_run_stats_clear (GstNnRunStats *st)
{
  gst_nn_run_stats_reset (st, NULL, NULL);
  g_clear_pointer (&st->trace_path, g_free);
  g_mutex_clear (&st->lock);
}

gboolean
gst_nn_run_stats_reset (GstNnRunStats *st, GstObject *obj, GError **error)
{
  NnpTrace *trace;

  g_mutex_lock (&st->lock);
  st->n_times = st->pos = 0;
  st->reported = 0;
  st->busy_ns = st->frames = 0;
  st->run_start = 0;
  trace = g_steal_pointer (&st->trace);
  g_mutex_unlock (&st->lock);
  if (trace == NULL)
    return TRUE;
  GST_INFO_OBJECT (obj,
      "trace: %" G_GUINT64_FORMAT " frames, %u dropped events", st->trace_frame,
      nnp_trace_get_n_dropped (trace));
  return nnp_trace_close (trace, error);
}

gboolean
gst_nn_run_stats_open_trace (GstNnRunStats *st, GstObject *obj,
    const gchar *where, gint index, GError **error)
{
  gchar *path, *track;

  g_mutex_lock (&st->lock);
  path = g_strdup (st->trace_path ? st->trace_path : nnp_trace_env_path ());
  g_mutex_unlock (&st->lock);
  if (path == NULL)
    return TRUE;
  st->trace = nnp_trace_open (path, 0, error);
  g_free (path);
  if (st->trace == NULL)
    return FALSE;
  track = g_strdup_printf ("%s (%s)", GST_OBJECT_NAME (obj), where);
  st->track = nnp_trace_add_track (st->trace, track, index);
  g_free (track);
  st->trace_frame = 0;
  return TRUE;
}

/* The median of the last runs.  Lock held. */
static GstClockTime
median_locked (GstNnRunStats *st)
{
  GstClockTime v[GST_NN_RUN_WINDOW];
  guint n = st->n_times;

  if (n == 0)
    return 0;
  memcpy (v, st->times, n * sizeof (GstClockTime));
  /* insertion sort: n <= 16 */
  for (guint i = 1; i < n; i++) {
    GstClockTime x = v[i];
    guint j = i;

    while (j > 0 && v[j - 1] > x) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
  return v[n / 2];
}

gint64
gst_nn_run_stats_begin (GstNnRunStats *st)
{
  gint64 t0 = g_get_monotonic_time ();

  g_mutex_lock (&st->lock);
  st->run_start = t0;
  g_mutex_unlock (&st->lock);
  return t0;
}

gint64
gst_nn_run_stats_end (GstNnRunStats *st, GstElement *element, gint64 t0,
    gboolean ok)
{
  gint64 t1 = g_get_monotonic_time (), until;
  GstClockTime t, median = 0;
  gboolean post = FALSE;

  g_mutex_lock (&st->lock);
  until = t1 + (gint64) ((t1 - t0) * st->slowdown);
  g_mutex_unlock (&st->lock);
  while (t1 < until)
    t1 = g_get_monotonic_time ();
  t = (GstClockTime) (t1 - t0) * GST_USECOND;
  g_mutex_lock (&st->lock);
  st->run_start = 0;
  if (ok) {
    st->busy_ns += t;
    st->frames++;
    st->times[st->pos] = t;
    st->pos = (st->pos + 1) % GST_NN_RUN_WINDOW;
    if (st->n_times < GST_NN_RUN_WINDOW)
      st->n_times++;
    median = median_locked (st);
    post = median > st->reported + st->reported / 4;
    if (post)
      st->reported = median;
  }
  g_mutex_unlock (&st->lock);

  if (ok && st->trace)
    nnp_trace_span (st->trace, st->track, (gint64) st->trace_frame++, t0, t1);
  if (post) {
    GST_DEBUG_OBJECT (element, "processing time now %" GST_TIME_FORMAT,
        GST_TIME_ARGS (median));
    gst_element_post_message (element,
        gst_message_new_latency (GST_OBJECT (element)));
  }
  return t1;
}

guint64
gst_nn_run_stats_busy_ns (GstNnRunStats *st)
{
  guint64 ns;

  g_mutex_lock (&st->lock);
  ns = st->busy_ns
      + (st->run_start ? (guint64) (g_get_monotonic_time () - st->run_start)
                  * GST_USECOND
                       : 0);
  g_mutex_unlock (&st->lock);
  return ns;
}

guint64
gst_nn_run_stats_frames (GstNnRunStats *st)
{
  guint64 n;

  g_mutex_lock (&st->lock);
  n = st->frames;
  g_mutex_unlock (&st->lock);
  return n;
}

void
gst_nn_run_stats_add_latency (GstNnRunStats *st, GstObject *obj,
    GstQuery *query)
{
  gboolean live;
  GstClockTime min, max, ours;

  gst_query_parse_latency (query, &live, &min, &max);
  g_mutex_lock (&st->lock);
  ours = median_locked (st);
  st->reported = ours;
  g_mutex_unlock (&st->lock);
  min += ours;
  if (GST_CLOCK_TIME_IS_VALID (max))
    max += ours;
  GST_DEBUG_OBJECT (obj,
      "latency: adding %" GST_TIME_FORMAT
      " processing time, min %" GST_TIME_FORMAT " max %" GST_TIME_FORMAT,
      GST_TIME_ARGS (ours), GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  gst_query_set_latency (query, live, min, max);
}

/* The properties (the element's docs, e.g. GstNnStage):
 *
 * trace: record when this stage ran which frame into a Chrome trace-event
 *   JSON file (opens in Perfetto and chrome://tracing; `nnpipe timeline
 *   FILE` draws it).  Stages given the same file share it; the file is
 *   written when the last of them stops.  Unset: the environment variable
 *   NNP_TRACE, if set, names the file.  See docs/pipeline.md.
 * busy-time: nanoseconds spent running the model since the element
 *   started, including the run in progress.
 * frames: buffers processed since the element started.
 * debug-slowdown: for tests and benchmarks: after each run, busy-wait this
 *   many times the run's length (0 = none), counted in busy-time: the stage
 *   behaves as if its core were FACTOR + 1 times slower.  May be changed
 *   while running. */
void
gst_nn_run_stats_install (GObjectClass *klass, guint first_id)
{
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  g_object_class_install_property (klass,
      first_id + GST_NN_RUN_STATS_PROP_TRACE,
      g_param_spec_string ("trace", "Trace",
          "Write a Chrome trace-event JSON file of the stage's runs (default: $NNP_TRACE)",
          NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass,
      first_id + GST_NN_RUN_STATS_PROP_BUSY_TIME,
      g_param_spec_uint64 ("busy-time", "Busy time",
          "Nanoseconds spent running the model since start", 0, G_MAXUINT64, 0,
          ro));
  g_object_class_install_property (klass,
      first_id + GST_NN_RUN_STATS_PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames", "Buffers processed since start",
          0, G_MAXUINT64, 0, ro));
  g_object_class_install_property (klass,
      first_id + GST_NN_RUN_STATS_PROP_DEBUG_SLOWDOWN,
      g_param_spec_double ("debug-slowdown", "Debug slowdown",
          "Busy-wait FACTOR x each run's time after it (testing)", 0.0, 100.0,
          0.0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
}

gboolean
gst_nn_run_stats_set_property (GstNnRunStats *st, guint first_id, guint prop_id,
    const GValue *value)
{
  g_mutex_lock (&st->lock);
  switch (prop_id - first_id) {
    case GST_NN_RUN_STATS_PROP_TRACE:
      g_free (st->trace_path);
      st->trace_path = g_value_dup_string (value);
      break;
    case GST_NN_RUN_STATS_PROP_DEBUG_SLOWDOWN:
      /* takes effect with the next frame */
      st->slowdown = g_value_get_double (value);
      break;
    default:
      g_mutex_unlock (&st->lock);
      return FALSE;
  }
  g_mutex_unlock (&st->lock);
  return TRUE;
}

gboolean
gst_nn_run_stats_get_property (GstNnRunStats *st, guint first_id, guint prop_id,
    GValue *value)
{
  switch (prop_id - first_id) {
    case GST_NN_RUN_STATS_PROP_TRACE:
      g_mutex_lock (&st->lock);
      g_value_set_string (value, st->trace_path);
      g_mutex_unlock (&st->lock);
      return TRUE;
    case GST_NN_RUN_STATS_PROP_BUSY_TIME:
      /* with the run in progress, if any */
      g_value_set_uint64 (value, gst_nn_run_stats_busy_ns (st));
      return TRUE;
    case GST_NN_RUN_STATS_PROP_FRAMES:
      g_value_set_uint64 (value, gst_nn_run_stats_frames (st));
      return TRUE;
    case GST_NN_RUN_STATS_PROP_DEBUG_SLOWDOWN:
      g_mutex_lock (&st->lock);
      g_value_set_double (value, st->slowdown);
      g_mutex_unlock (&st->lock);
      return TRUE;
    default:
      return FALSE;
  }
}
