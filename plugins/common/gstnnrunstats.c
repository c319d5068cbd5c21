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
gst_nn_run_stats_init (GstNnRunStats * st)
{
  memset (st, 0, sizeof (*st));
  g_mutex_init (&st->lock);
}

void
gst_nn_run_stats_clear (GstNnRunStats * st)
{
  gst_nn_run_stats_reset (st, NULL, NULL);
  g_mutex_clear (&st->lock);
}

gboolean
gst_nn_run_stats_reset (GstNnRunStats * st, GstObject * obj, GError ** error)
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
  GST_INFO_OBJECT (obj, "trace: %" G_GUINT64_FORMAT " frames, %u dropped "
      "events", st->trace_frame, nnp_trace_get_n_dropped (trace));
  return nnp_trace_close (trace, error);
}

gboolean
gst_nn_run_stats_open_trace (GstNnRunStats * st, const gchar * path,
    const gchar * track_name, gint index, GError ** error)
{
  if (path == NULL)
    path = nnp_trace_env_path ();
  if (path == NULL)
    return TRUE;
  st->trace = nnp_trace_open (path, 0, error);
  if (st->trace == NULL)
    return FALSE;
  st->track = nnp_trace_add_track (st->trace, track_name, index);
  st->trace_frame = 0;
  return TRUE;
}

/* The median of the last runs.  Lock held. */
static GstClockTime
median_locked (GstNnRunStats * st)
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
gst_nn_run_stats_begin (GstNnRunStats * st)
{
  gint64 t0 = g_get_monotonic_time ();

  g_mutex_lock (&st->lock);
  st->run_start = t0;
  g_mutex_unlock (&st->lock);
  return t0;
}

void
gst_nn_run_stats_end (GstNnRunStats * st, GstElement * element, gint64 t0,
    gint64 t1, gboolean ok)
{
  GstClockTime t = (GstClockTime) (t1 - t0) * GST_USECOND, median = 0;
  gboolean post = FALSE;

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
}

guint64
gst_nn_run_stats_busy_ns (GstNnRunStats * st)
{
  guint64 ns;

  g_mutex_lock (&st->lock);
  ns = st->busy_ns + (st->run_start ? (guint64) (g_get_monotonic_time () -
          st->run_start) * GST_USECOND : 0);
  g_mutex_unlock (&st->lock);
  return ns;
}

guint64
gst_nn_run_stats_frames (GstNnRunStats * st)
{
  guint64 n;

  g_mutex_lock (&st->lock);
  n = st->frames;
  g_mutex_unlock (&st->lock);
  return n;
}

void
gst_nn_run_stats_add_latency (GstNnRunStats * st, GstObject * obj,
    GstQuery * query)
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
  GST_DEBUG_OBJECT (obj, "latency: adding %" GST_TIME_FORMAT " processing "
      "time, min %" GST_TIME_FORMAT " max %" GST_TIME_FORMAT,
      GST_TIME_ARGS (ours), GST_TIME_ARGS (min), GST_TIME_ARGS (max));
  gst_query_set_latency (query, live, min, max);
}
