/* GStreamer nnpipe plugin: nnpipeline, statistics
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* The nnpipeline-stats messages: a periodic one on the system clock's
 * thread every stats-interval ms, a final one at EOS from the streaming
 * thread.  The counters are under stats_lock; nothing here takes
 * build_lock. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"
#include "gstnnsourcemeta.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_nn_pipeline_debug

void
gst_nn_pipeline_stats_reset (GstNnPipeline *self)
{
  g_mutex_lock (&self->stats_lock);
  self->final_posted = FALSE;
  self->frames_in = self->frames_out = 0;
  self->first_in = self->first_out = self->last_out = 0;
  self->last_frames = 0;
  memset (self->last_busy, 0, sizeof (self->last_busy));
  g_queue_clear (&self->in_times);
  self->latency_sum_us = 0;
  self->latency_max_us = 0;
  self->last_latency_sum_us = self->last_frames_out = 0;
  g_clear_pointer (&self->source_id, g_free);
  if (self->stream_last == NULL)
    self->stream_last =
        g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  g_hash_table_remove_all (self->stream_last);
  g_mutex_unlock (&self->stats_lock);
}

void
gst_nn_pipeline_stats_set_elements (GstNnPipeline *self, GPtrArray *stages,
    GPtrArray *queues)
{
  g_mutex_lock (&self->stats_lock);
  g_ptr_array_set_size (self->stats_stages, 0);
  g_ptr_array_set_size (self->stats_queues, 0);
  for (guint i = 0; stages && i < stages->len; i++)
    g_ptr_array_add (self->stats_stages,
        gst_object_ref (g_ptr_array_index (stages, i)));
  for (guint i = 0; queues && i < queues->len; i++)
    g_ptr_array_add (self->stats_queues,
        gst_object_ref (g_ptr_array_index (queues, i)));
  g_mutex_unlock (&self->stats_lock);
}

/* The stages' busy time and frames and the queues' fill, read without
 * stats_lock (the elements take their own locks). */
typedef struct
{
  guint n_stages, n_queues;
  guint64 busy[MAX_STAGES], frames[MAX_STAGES];
  guint levels[MAX_STAGES];
} StatsSample;

/* Take references to the stages and queues (stats_lock held by caller). */
static void
stats_elements_locked (GstNnPipeline *self, GstElement **stages,
    GstElement **queues, StatsSample *sample)
{
  sample->n_stages = MIN (self->stats_stages->len, MAX_STAGES);
  sample->n_queues = MIN (self->stats_queues->len, MAX_STAGES);
  for (guint k = 0; k < sample->n_stages; k++)
    stages[k] = gst_object_ref (g_ptr_array_index (self->stats_stages, k));
  for (guint i = 0; i < sample->n_queues; i++)
    queues[i] = gst_object_ref (g_ptr_array_index (self->stats_queues, i));
}

/* Read the elements and drop the references. */
static void
stats_read (GstElement **stages, GstElement **queues, StatsSample *sample)
{
  for (guint k = 0; k < sample->n_stages; k++) {
    g_object_get (stages[k], "busy-time", &sample->busy[k], "frames",
        &sample->frames[k], NULL);
    gst_object_unref (stages[k]);
  }
  for (guint i = 0; i < sample->n_queues; i++) {
    g_object_get (queues[i], "current-level-buffers", &sample->levels[i], NULL);
    gst_object_unref (queues[i]);
  }
}

/* The request pads' streams: frames in and out, fps and mean latency over
 * the interval (final: the run), the largest latency, frames dropped at
 * its input, its source id.  stats_lock held; streams (taken without it)
 * and dropped[] read before. */
static void
add_streams_locked (GstNnPipeline *self, GstStructure *s, GArray *streams,
    const guint64 *dropped, gboolean final, gint64 dt)
{
  GValue arr = G_VALUE_INIT;

  g_value_init (&arr, GST_TYPE_ARRAY);
  for (guint i = 0; i < streams->len; i++) {
    GstNnStreamStats *ss = &g_array_index (streams, GstNnStreamStats, i);
    guint64 *last =
        g_hash_table_lookup (self->stream_last, GUINT_TO_POINTER (ss->index));
    guint64 d_out, d_lat;
    GstStructure *st;
    GValue v = G_VALUE_INIT;

    if (last == NULL) {
      last = g_new0 (guint64, 2);
      g_hash_table_insert (self->stream_last, GUINT_TO_POINTER (ss->index),
          last);
    }
    d_out =
        final ? ss->frames_out : ss->frames_out - MIN (last[0], ss->frames_out);
    d_lat = final ? ss->latency_sum_us
                  : ss->latency_sum_us - MIN (last[1], ss->latency_sum_us);
    last[0] = ss->frames_out;
    last[1] = ss->latency_sum_us;
    st = gst_structure_new ("stream", "index", G_TYPE_UINT, ss->index,
        "frames-in", G_TYPE_UINT64, ss->frames_in, "frames-out", G_TYPE_UINT64,
        ss->frames_out, "dropped", G_TYPE_UINT64, dropped[i], "fps",
        G_TYPE_DOUBLE, d_out * 1e6 / dt, "latency-ms", G_TYPE_DOUBLE,
        d_out ? d_lat / 1e3 / d_out : 0.0, "latency-max-ms", G_TYPE_DOUBLE,
        ss->latency_max_us / 1e3, NULL);
    if (ss->source_id)
      gst_structure_set (st, "source-id", G_TYPE_STRING, ss->source_id, NULL);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, st);
    gst_structure_free (st);
    gst_value_array_append_and_take_value (&arr, &v);
  }
  gst_structure_take_value (s, "streams", &arr);
}

/* Post an nnpipeline-stats message: periodic (the interval since the last
 * one) or final (the whole run, once, at EOS).  Called from the clock
 * thread and from a streaming thread: takes post_lock and stats_lock,
 * never build_lock (see the struct). */
static void
post_stats (GstNnPipeline *self, gboolean final)
{
  GstElement *stage_refs[MAX_STAGES], *queue_refs[MAX_STAGES];
  GValue stages = G_VALUE_INIT, queues = G_VALUE_INIT;
  StatsSample sample;
  GstStructure *s;
  gint64 before, now, dt;
  guint64 frames = 0, dropped, d_out, d_lat, *stream_dropped = NULL;
  GArray *streams = NULL;
  gdouble worst = -1.0;
  gint bottleneck = -1;

  g_mutex_lock (&self->post_lock);
  g_mutex_lock (&self->stats_lock);
  if (self->final_posted || self->stats_stages->len == 0) {
    g_mutex_unlock (&self->stats_lock);
    g_mutex_unlock (&self->post_lock);
    return;
  }
  if (final)
    self->final_posted = TRUE;
  stats_elements_locked (self, stage_refs, queue_refs, &sample);
  g_mutex_unlock (&self->stats_lock);

  /* busy time grows at most as fast as the clock: over [the previous read's
   * start, this read's end] no stage can be more than 100 % busy */
  before = g_get_monotonic_time ();
  stats_read (stage_refs, queue_refs, &sample);
  now = g_get_monotonic_time ();

  /* late frames of live input dropped at the inputs (never in the stages) */
  dropped = gst_nn_pipeline_drop_dropped (self, -1);
  /* the streams' own figures (their locks, not stats_lock) */
  if (self->streams) {
    streams = gst_nn_streams_get_stats (self->streams);
    stream_dropped = g_new0 (guint64, MAX (streams->len, 1));
    for (guint i = 0; i < streams->len; i++)
      stream_dropped[i] = gst_nn_pipeline_drop_dropped (self,
          (gint) g_array_index (streams, GstNnStreamStats, i).index);
  }
  g_value_init (&stages, GST_TYPE_ARRAY);
  g_value_init (&queues, GST_TYPE_ARRAY);
  g_mutex_lock (&self->stats_lock);
  dt = final ? now - self->first_in : now - self->last_tick;
  if (dt <= 0)
    dt = 1;
  for (guint k = 0; k < sample.n_stages; k++) {
    guint64 busy = sample.busy[k], f = sample.frames[k];
    gdouble pct;
    GValue v = G_VALUE_INIT;
    GstStructure *ss;

    pct = final ? busy / 1000.0 / dt * 100.0
                : (busy - MIN (busy, self->last_busy[k])) / 1000.0 / dt * 100.0;
    self->last_busy[k] = busy;
    if (pct > worst) {
      worst = pct;
      bottleneck = (gint) k;
    }
    if (k == sample.n_stages - 1)
      frames = f;
    ss = gst_structure_new ("stage", "index", G_TYPE_INT, (gint) k,
        "busy-percent", G_TYPE_DOUBLE, pct, "busy-ms", G_TYPE_DOUBLE,
        busy / 1e6, "frames", G_TYPE_UINT64, f, "ms-per-frame", G_TYPE_DOUBLE,
        f ? busy / 1e6 / f : 0.0, NULL);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, ss);
    gst_structure_free (ss);
    gst_value_array_append_and_take_value (&stages, &v);
  }
  for (guint i = 0; i < sample.n_queues; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_UINT);
    g_value_set_uint (&v, sample.levels[i]);
    gst_value_array_append_and_take_value (&queues, &v);
  }

  s = gst_structure_new ("nnpipeline-stats", "final", G_TYPE_BOOLEAN, final,
      "elapsed-ms", G_TYPE_DOUBLE, dt / 1000.0, "frames-in", G_TYPE_UINT64,
      self->frames_in, "frames-out", G_TYPE_UINT64, self->frames_out, "fps",
      G_TYPE_DOUBLE,
      final ? self->frames_out * 1e6 / dt
            : (frames - MIN (frames, self->last_frames)) * 1e6 / dt,
      "bottleneck-stage", G_TYPE_INT, bottleneck, "dropped", G_TYPE_UINT64,
      dropped, NULL);
  if (streams) {
    add_streams_locked (self, s, streams, stream_dropped, final, dt);
  } else {
    /* the static pads: one stream */
    d_out = final
        ? self->frames_out
        : self->frames_out - MIN (self->last_frames_out, self->frames_out);
    d_lat = final ? self->latency_sum_us
                  : self->latency_sum_us
            - MIN (self->last_latency_sum_us, self->latency_sum_us);
    gst_structure_set (s, "latency-ms", G_TYPE_DOUBLE,
        d_out ? d_lat / 1e3 / d_out : 0.0, "latency-max-ms", G_TYPE_DOUBLE,
        self->latency_max_us / 1e3, NULL);
    if (self->source_id)
      gst_structure_set (s, "source-id", G_TYPE_STRING, self->source_id, NULL);
  }
  self->last_frames_out = self->frames_out;
  self->last_latency_sum_us = self->latency_sum_us;
  /* steady-state rate: frames between the first and the last output, so the
   * time the first frame takes to fill the pipeline is not counted */
  if (final && self->frames_out > 1 && self->last_out > self->first_out)
    gst_structure_set (s, "steady-fps", G_TYPE_DOUBLE,
        (self->frames_out - 1) * 1e6 / (self->last_out - self->first_out),
        NULL);
  self->last_frames = frames;
  self->last_tick = before;
  g_mutex_unlock (&self->stats_lock);

  gst_structure_take_value (s, "stages", &stages);
  gst_structure_take_value (s, "queues", &queues);
  if (streams)
    g_array_unref (streams);
  g_free (stream_dropped);
  GST_DEBUG_OBJECT (self, "%" GST_PTR_FORMAT, s);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  g_mutex_unlock (&self->post_lock);
}

/* The periodic messages: a thread of our own (not the system clock's
 * thread: stopping must wait for a tick in progress, and TSan must see it
 * do so).  It runs while self->ticker is this thread; each period it posts
 * one message.  gst_nn_pipeline_stats_stop() joins it, so when that
 * returns no periodic message is being or will be posted. */
static gpointer
stats_ticker (gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  GThread *me = g_thread_self ();
  gint64 next;

  g_mutex_lock (&self->stats_lock);
  next = g_get_monotonic_time () + self->tick_period;
  while (self->ticker == me) {
    gint64 now;

    if (g_cond_wait_until (&self->ticker_cond, &self->stats_lock, next))
      continue; /* woken up: stopped (or spurious) */
    if (self->ticker != me)
      break;
    g_mutex_unlock (&self->stats_lock);
    post_stats (self, FALSE);
    g_mutex_lock (&self->stats_lock);
    /* periodic; a period missed (a slow post) is skipped, not caught up */
    now = g_get_monotonic_time ();
    next += self->tick_period;
    if (next <= now)
      next = now + self->tick_period;
  }
  g_mutex_unlock (&self->stats_lock);
  return NULL;
}

void
gst_nn_pipeline_stats_start (GstNnPipeline *self)
{
  guint interval;

  GST_OBJECT_LOCK (self);
  interval = self->stats_interval;
  GST_OBJECT_UNLOCK (self);
  if (interval == 0)
    return;

  g_mutex_lock (&self->post_lock);
  g_mutex_lock (&self->stats_lock);
  if (self->ticker == NULL) {
    GstElement *stage_refs[MAX_STAGES], *queue_refs[MAX_STAGES];
    StatsSample sample;

    /* the first interval starts now: work done before (prerolling in
     * PAUSED, an earlier PLAYING) is not counted in it */
    gint64 before;

    stats_elements_locked (self, stage_refs, queue_refs, &sample);
    g_mutex_unlock (&self->stats_lock);
    before = g_get_monotonic_time ();
    stats_read (stage_refs, queue_refs, &sample);
    g_mutex_lock (&self->stats_lock);
    for (guint k = 0; k < sample.n_stages; k++)
      self->last_busy[k] = sample.busy[k];
    self->last_frames =
        sample.n_stages ? sample.frames[sample.n_stages - 1] : 0;
    self->last_tick = before;
    self->tick_period = (gint64) interval * 1000;
    /* the thread does not hold a ref: it never outlives a stats_stop(),
     * which PLAYING -> PAUSED, EOS and finalize call */
    self->ticker = g_thread_new ("nnpipeline-stats", stats_ticker, self);
  }
  g_mutex_unlock (&self->stats_lock);
  g_mutex_unlock (&self->post_lock);
}

void
gst_nn_pipeline_stats_stop (GstNnPipeline *self)
{
  GThread *ticker;

  g_mutex_lock (&self->stats_lock);
  ticker = self->ticker;
  self->ticker = NULL;
  g_cond_broadcast (&self->ticker_cond);
  g_mutex_unlock (&self->stats_lock);
  if (ticker == NULL)
    return;
  if (ticker == g_thread_self ())
    g_thread_unref (ticker); /* a tick's message stopped the stats (a sync
                                 * bus handler): the loop ends after it */
  else
    g_thread_join (ticker);
}

GstPadProbeReturn
gst_nn_pipeline_stats_sink_probe (GstPad *pad, GstPadProbeInfo *info,
    gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  /* a batch of several streams' frames counts as its frames */
  guint n = self->streams ? gst_nn_streams_in_frames (self->streams) : 1;
  gint64 now = g_get_monotonic_time ();
  GstNnSource src;
  gboolean have_src = self->streams == NULL
      && gst_nn_source_meta_get (GST_PAD_PROBE_INFO_BUFFER (info), &src)
      && src.source_id;

  g_mutex_lock (&self->stats_lock);
  if (self->frames_in == 0)
    self->first_in = now;
  self->frames_in += n;
  if (self->streams == NULL) {
    /* the static pads: in order, one out per in */
    g_queue_push_tail (&self->in_times, GSIZE_TO_POINTER ((gsize) now));
    if (have_src && g_strcmp0 (src.source_id, self->source_id) != 0) {
      g_free (self->source_id);
      self->source_id = g_strdup (src.source_id);
    }
  }
  g_mutex_unlock (&self->stats_lock);
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn
gst_nn_pipeline_stats_src_probe (GstPad *pad, GstPadProbeInfo *info,
    gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    gint64 now = g_get_monotonic_time ();
    guint n = self->streams ? gst_nn_streams_out_frames (self->streams) : 1;

    g_mutex_lock (&self->stats_lock);
    if (self->frames_out == 0)
      self->first_out = now;
    self->frames_out += n;
    self->last_out = now;
    if (self->streams == NULL && !g_queue_is_empty (&self->in_times)) {
      gint64 t_in =
          (gint64) GPOINTER_TO_SIZE (g_queue_pop_head (&self->in_times));

      self->latency_sum_us += now - t_in;
      self->latency_max_us = MAX (self->latency_max_us, now - t_in);
    }
    g_mutex_unlock (&self->stats_lock);
  } else if (GST_IS_EVENT (info->data)
      && GST_EVENT_TYPE (GST_EVENT (info->data)) == GST_EVENT_EOS) {
    /* no periodic message after the final one */
    gst_nn_pipeline_stats_stop (self);
    post_stats (self, TRUE);
  } else if (GST_IS_EVENT (info->data)
      && GST_EVENT_TYPE (GST_EVENT (info->data)) == GST_EVENT_FLUSH_STOP) {
    /* a flushing seek after EOS: the stream goes on, and so do the stats */
    gboolean playing;

    g_mutex_lock (&self->post_lock);
    g_mutex_lock (&self->stats_lock);
    self->final_posted = FALSE;
    /* the frames in the stages were flushed */
    g_queue_clear (&self->in_times);
    g_mutex_unlock (&self->stats_lock);
    g_mutex_unlock (&self->post_lock);
    GST_OBJECT_LOCK (self);
    playing = GST_STATE (self) == GST_STATE_PLAYING
        && GST_STATE_PENDING (self) == GST_STATE_VOID_PENDING;
    GST_OBJECT_UNLOCK (self);
    if (playing)
      gst_nn_pipeline_stats_start (self);
  }
  return GST_PAD_PROBE_OK;
}
