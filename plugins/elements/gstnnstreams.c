/* GStreamer nnpipe plugin: several streams through one nnpipeline.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Inside nnpipeline with request pads:
 *
 *   sink_0 -\                                          /- mq -> src_0
 *   sink_1 --> streammux -> stage0 ! queue ! stageN -> streamdemux -> mq -> src_1
 *   sink_2 -/                                          \- mq -> src_2
 *
 * The mux pushes one stream's frame at a time into the chain (the calling
 * streaming thread, under in_lock) and appends {stream, timestamps} to a
 * FIFO; the demux pops the FIFO for each frame leaving the last stage.  A
 * stream's serialized events (stream-start, segment, tags, EOS, custom)
 * do not travel through the stages: they go into the FIFO behind the
 * stream's frames in flight and are delivered to src_N in that order.
 * The chain gets one stream-start and segment of its own, a CAPS event
 * whenever the next frame's stream has other caps than the last one, and
 * EOS once every stream ended (so nnpipeline's final statistics come).
 *
 * With batch-size > 1 the mux collects frames of equal caps from several
 * streams (batch_add()) and pushes them as one buffer concatenated on dim 0
 * (gstnnbatch.c); their FIFO entries are neighbours and say how many frames
 * the buffer holds, and the demux cuts the output back into one frame per
 * entry.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnsourcemeta.h"
#include "gstnnstreams-private.h"
#include "gstnntensorcaps.h"

#include <nnpipe/error.h>
#include <string.h>

GST_DEBUG_CATEGORY (gst_nn_streams_debug);
#define GST_CAT_DEFAULT gst_nn_streams_debug

G_DEFINE_TYPE (GstNnStreamMux, gst_nn_stream_mux, GST_TYPE_ELEMENT);
G_DEFINE_TYPE (GstNnStreamDemux, gst_nn_stream_demux, GST_TYPE_ELEMENT);

static void
batch_clear (Batch *b)
{
  for (guint i = 0; i < b->frames->len; i++) {
    Pending *p = &g_array_index (b->frames, Pending, i);

    if (p->buf)
      gst_buffer_unref (p->buf);
  }
  g_array_unref (b->frames);
  gst_caps_unref (b->caps);
}

static Batch *
batch_new (GstCaps *caps, gint64 deadline)
{
  Batch *b = g_new0 (Batch, 1);

  b->ref_count = 1;
  b->caps = gst_caps_ref (caps);
  b->frames = g_array_new (FALSE, FALSE, sizeof (Pending));
  b->deadline = deadline;
  return b;
}

static Batch *
batch_ref (Batch *b)
{
  g_atomic_int_inc (&b->ref_count);
  return b;
}

static void
batch_unref (Batch *b)
{
  if (g_atomic_int_dec_and_test (&b->ref_count)) {
    batch_clear (b);
    g_free (b);
  }
}

/* Forget the stream state (start and stop). */
static void
streams_reset (GstNnStreams *sn)
{
  g_mutex_lock (&sn->batch_lock);
  g_clear_pointer (&sn->pending, batch_unref);
  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st)
      st->flushing = FALSE;
  }
  g_mutex_unlock (&sn->batch_lock);
  g_mutex_lock (&sn->in_lock);
  g_mutex_lock (&sn->out_lock);
  g_mutex_lock (&sn->lock);
  g_queue_clear_full (&sn->fifo, (GDestroyNotify) gst_nn_streams_entry_free);
  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st == NULL)
      continue;
    gst_caps_replace (&st->in_caps, NULL);
    gst_caps_replace (&st->out_caps, NULL);
    g_queue_clear_full (&st->held, (GDestroyNotify) gst_event_unref);
    st->ended = FALSE;
    st->frames_in = st->frames_out = 0;
    st->latency_sum_us = 0;
    st->latency_max_us = 0;
    g_clear_pointer (&st->source_id, g_free);
  }
  sn->chain_started = FALSE;
  sn->chain_eos = FALSE;
  sn->chain_eos_out = FALSE;
  gst_caps_replace (&sn->chain_in_caps, NULL);
  gst_caps_replace (&sn->chain_out_caps, NULL);
  gst_caps_replace (&sn->frame_out_caps, NULL);
  g_mutex_unlock (&sn->lock);
  g_mutex_unlock (&sn->out_lock);
  g_mutex_unlock (&sn->in_lock);
}

/* Frames waiting for a batch leave (with FLUSHING) or not. */
static void
batch_set_stopping (GstNnStreams *sn, gboolean stopping)
{
  g_mutex_lock (&sn->batch_lock);
  sn->stopping = stopping;
  g_cond_broadcast (&sn->batch_cond);
  g_mutex_unlock (&sn->batch_lock);
}

static GstStateChangeReturn
gst_nn_stream_mux_change_state (GstElement *element, GstStateChange transition)
{
  GstNnStreamMux *self = GST_NN_STREAM_MUX (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && self->streams) {
    streams_reset (self->streams);
    batch_set_stopping (self->streams, FALSE);
  }
  /* before the pads deactivate: they wait for the streaming threads */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY && self->streams)
    batch_set_stopping (self->streams, TRUE);
  ret = GST_ELEMENT_CLASS (gst_nn_stream_mux_parent_class)
            ->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY && self->streams)
    streams_reset (self->streams);
  return ret;
}

static void
gst_nn_stream_mux_class_init (GstNnStreamMuxClass *klass)
{
  GST_ELEMENT_CLASS (klass)->change_state = gst_nn_stream_mux_change_state;
}

static void
gst_nn_stream_mux_init (GstNnStreamMux *self)
{
}

static void
gst_nn_stream_demux_class_init (GstNnStreamDemuxClass *klass)
{
}

static void
gst_nn_stream_demux_init (GstNnStreamDemux *self)
{
}

/* ------------------------------------------------------------------------ */
/* Input side */

/* Append an event of st to the FIFO and deliver what can go now. */
static void
queue_event (GstNnStreams *sn, Stream *st, GstEvent *event)
{
  Entry *e = g_new0 (Entry, 1);

  e->stream = st;
  e->event = event;
  g_mutex_lock (&sn->out_lock);
  g_mutex_lock (&sn->lock);
  g_queue_push_tail (&sn->fifo, e);
  g_mutex_unlock (&sn->lock);
  gst_nn_streams_drain_events (sn);
  g_mutex_unlock (&sn->out_lock);
}

/* The stream's events so far are in the chain: start it (in_lock held). */
static gboolean
chain_start_locked (GstNnStreams *sn)
{
  gchar *id;

  if (sn->chain_started)
    return TRUE;
  id = g_strdup_printf ("nnpipeline-streams-%p", (gpointer) sn);
  gst_pad_push_event (sn->mux_src, gst_event_new_stream_start (id));
  g_free (id);
  sn->chain_started = TRUE;
  gst_caps_replace (&sn->chain_in_caps, NULL);
  /* caps come before the segment: pushed by the first frame */
  sn->chain_eos = FALSE;
  return TRUE;
}

/* Is every stream (not released) ended?  lock held. */
static gboolean
all_ended_locked (GstNnStreams *sn)
{
  gboolean all = TRUE, any = FALSE;

  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st == NULL || st->released)
      continue;
    any = TRUE;
    all = all && st->ended;
  }
  return any && all;
}

/* Did frames go into the stages, so that their EOS will come out?  in_lock
 * held. */
static gboolean
chain_running_locked (GstNnStreams *sn)
{
  return sn->chain_started && sn->chain_in_caps != NULL && !sn->chain_eos;
}

/* Every stream ended: EOS into the stages, once.  in_lock held. */
static void
chain_eos_locked (GstNnStreams *sn)
{
  gboolean running = chain_running_locked (sn);

  if (sn->chain_eos)
    return;
  sn->chain_eos = TRUE;
  if (!running)
    return; /* no frame went in: nothing waits for it */
  GST_DEBUG ("every stream ended: EOS into the stages");
  gst_pad_push_event (sn->mux_src, gst_event_new_eos ());
}

static void batch_kick (GstNnStreams *sn);

/* st ended (its EOS, or it failed): its EOS goes into the FIFO behind its
 * frames in flight.  The last stream's also sends EOS into the stages and
 * waits for it at the demux, so that nnpipeline's final statistics are
 * posted before the last stream ends (and with it the pipeline). */
static void
stream_end (GstNnStreams *sn, Stream *st, GstEvent *eos)
{
  Entry *e = g_new0 (Entry, 1);
  gboolean all;

  e->stream = st;
  e->event = eos;
  g_mutex_lock (&sn->in_lock);
  g_mutex_lock (&sn->lock);
  st->ended = TRUE;
  all = all_ended_locked (sn);
  e->after_chain_eos = all && chain_running_locked (sn);
  g_queue_push_tail (&sn->fifo, e);
  g_mutex_unlock (&sn->lock);
  if (all)
    chain_eos_locked (sn);
  g_mutex_unlock (&sn->in_lock);
  g_mutex_lock (&sn->out_lock);
  gst_nn_streams_drain_events (sn);
  g_mutex_unlock (&sn->out_lock);
  /* the frames waiting for a batch may wait for this stream no more */
  batch_kick (sn);
}

/* A stream that cannot go on: a warning naming it, its EOS behind its
 * frames in flight, the others untouched. */
static void
stream_fail (GstNnStreams *sn, Stream *st, const gchar *why)
{
  gboolean was_ended;

  g_mutex_lock (&sn->lock);
  was_ended = st->ended;
  g_mutex_unlock (&sn->lock);
  if (!was_ended) {
    GST_ELEMENT_WARNING (sn->bin, STREAM, FAILED,
        ("stream %u (pad sink_%u) stopped: %s; the other streams go on",
            st->index, st->index, why),
        (NULL));
    stream_end (sn, st, gst_event_new_eos ());
  }
}

/* Frames p[0..n-1] of caps `caps` (not owned) into the chain as one
 * buffer (concatenated on dim 0 when n > 1), their entries into the FIFO.
 * Takes the buffers. */
static GstFlowReturn
push_frames (GstNnStreams *sn, GstCaps *caps, Pending *p, guint n)
{
  GstNnTensorsInfo info;
  GstCaps *chain_caps;
  GstBuffer *buf;
  GstFlowReturn ret;

  chain_caps = n > 1
      ? gst_nn_batch_caps (caps, n, sn->batch_ranks, sn->n_batch_ranks, NULL)
      : gst_caps_ref (caps);
  g_mutex_lock (&sn->in_lock);
  if (sn->chain_eos || chain_caps == NULL
      || !gst_nn_tensors_info_from_caps (&info, caps, NULL)) {
    /* every stream had ended: a frame now is from a stream that ended (the
     * caps were accepted before: they are tensors) */
    g_mutex_unlock (&sn->in_lock);
    for (guint r = 0; r < n; r++)
      gst_clear_buffer (&p[r].buf);
    if (chain_caps)
      gst_caps_unref (chain_caps);
    return GST_FLOW_EOS;
  }
  chain_start_locked (sn);
  if (sn->chain_in_caps == NULL
      || !gst_caps_is_equal (sn->chain_in_caps, chain_caps)) {
    gboolean first = sn->chain_in_caps == NULL;

    gst_caps_replace (&sn->chain_in_caps, chain_caps);
    if (!gst_pad_push_event (sn->mux_src, gst_event_new_caps (chain_caps))) {
      gst_caps_replace (&sn->chain_in_caps, NULL);
      g_mutex_unlock (&sn->in_lock);
      gst_caps_unref (chain_caps);
      for (guint r = 0; r < n; r++)
        gst_clear_buffer (&p[r].buf);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    if (first) {
      GstSegment segment;

      gst_segment_init (&segment, GST_FORMAT_TIME);
      gst_pad_push_event (sn->mux_src, gst_event_new_segment (&segment));
    }
  }
  gst_caps_unref (chain_caps);

  g_mutex_lock (&sn->lock);
  for (guint r = 0; r < n; r++) {
    Entry *e = g_new0 (Entry, 1);
    GstBuffer *b = p[r].buf;
    GstNnSource src;

    /* where it comes from, for the statistics */
    if (gst_nn_source_meta_get (b, &src) && src.source_id
        && g_strcmp0 (src.source_id, p[r].stream->source_id) != 0) {
      g_free (p[r].stream->source_id);
      p[r].stream->source_id = g_strdup (src.source_id);
    }
    e->t_in = g_get_monotonic_time ();

    e->stream = p[r].stream;
    e->pts = GST_BUFFER_PTS (b);
    e->dts = GST_BUFFER_DTS (b);
    e->duration = GST_BUFFER_DURATION (b);
    e->offset = GST_BUFFER_OFFSET (b);
    e->offset_end = GST_BUFFER_OFFSET_END (b);
    /* the frame's metas wait in the FIFO, whatever path it takes */
    e->metas = gst_buffer_new ();
    gst_buffer_copy_into (e->metas, b, GST_BUFFER_COPY_META, 0, -1);
    e->batch = n;
    g_queue_push_tail (&sn->fifo, e);
    p[r].stream->frames_in++;
  }
  g_mutex_unlock (&sn->lock);
  if (n == 1) {
    /* its memory, flags and timestamps, without the metas */
    buf = gst_buffer_new ();
    gst_buffer_copy_into (buf, p[0].buf,
        GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS
            | GST_BUFFER_COPY_MEMORY,
        0, -1);
    gst_clear_buffer (&p[0].buf);
  } else {
    GstBuffer **frames = g_new (GstBuffer *, n);

    for (guint r = 0; r < n; r++)
      frames[r] = p[r].buf;
    buf = gst_nn_batch_concat (frames, n, &info);
    g_free (frames);
    gst_buffer_copy_into (buf, p[0].buf, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
    for (guint r = 0; r < n; r++)
      gst_clear_buffer (&p[r].buf);
  }
  sn->in_frames = n;
  ret = gst_pad_push (sn->mux_src, buf);
  g_mutex_unlock (&sn->in_lock);
  return ret;
}

/* Streams still running (frames may come).  lock held. */
static guint
live_locked (GstNnStreams *sn)
{
  guint n = 0;

  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st && !st->released && !st->ended)
      n++;
  }
  return n;
}

/* Should the pending batch leave now?  batch_lock held. */
static gboolean
batch_ready_locked (GstNnStreams *sn)
{
  Batch *b = sn->pending;
  guint live;

  if (b == NULL)
    return FALSE;
  if (b->frames->len >= sn->batch_size
      || g_get_monotonic_time () >= b->deadline)
    return TRUE;
  /* every stream still running has a frame in it: none would come */
  g_mutex_lock (&sn->lock);
  live = live_locked (sn);
  g_mutex_unlock (&sn->lock);
  return b->frames->len >= live;
}

/* Push batch b (taken out of sn->pending by the caller, its ref given),
 * wake its frames' threads.  No lock held. */
static void
batch_send (GstNnStreams *sn, Batch *b)
{
  GstFlowReturn ret =
      push_frames (sn, b->caps, (Pending *) b->frames->data, b->frames->len);

  g_mutex_lock (&sn->batch_lock);
  b->done = TRUE;
  b->ret = ret;
  g_cond_broadcast (&sn->batch_cond);
  g_mutex_unlock (&sn->batch_lock);
  batch_unref (b);
}

/* A stream ended: the pending batch may have all the frames it waits for
 * now. */
static void
batch_kick (GstNnStreams *sn)
{
  Batch *b = NULL;

  g_mutex_lock (&sn->batch_lock);
  if (batch_ready_locked (sn))
    b = g_steal_pointer (&sn->pending);
  g_mutex_unlock (&sn->batch_lock);
  if (b)
    batch_send (sn, b);
}

/* st's frames leave the pending batch (a flush, stopping).  batch_lock
 * held. */
static void
batch_remove_locked (GstNnStreams *sn, Stream *st)
{
  Batch *b = sn->pending;

  for (guint i = b->frames->len; i > 0; i--) {
    Pending *p = &g_array_index (b->frames, Pending, i - 1);

    if (p->stream == st) {
      gst_clear_buffer (&p->buf);
      g_array_remove_index (b->frames, i - 1);
    }
  }
  if (b->frames->len == 0)
    g_clear_pointer (&sn->pending, batch_unref);
}

/* batch-size > 1: buf (of caps, both taken) waits in the pending batch
 * until it leaves (batch_ready_locked()); this thread pushes it when it is
 * the one that finds it ready.  Returns the push's result. */
static GstFlowReturn
batch_add (GstNnStreams *sn, Stream *st, GstCaps *caps, GstBuffer *buf)
{
  Pending p = { st, buf };
  Batch *b;
  GstFlowReturn ret;

  g_mutex_lock (&sn->batch_lock);
  while (sn->pending && !gst_caps_is_equal (sn->pending->caps, caps)) {
    /* frames of another size go in a batch of their own: the pending one
     * leaves first */
    b = g_steal_pointer (&sn->pending);
    g_mutex_unlock (&sn->batch_lock);
    batch_send (sn, b);
    g_mutex_lock (&sn->batch_lock);
  }
  if (sn->stopping || st->flushing) {
    g_mutex_unlock (&sn->batch_lock);
    gst_caps_unref (caps);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  if (sn->pending == NULL)
    sn->pending = batch_new (caps,
        g_get_monotonic_time () + (gint64) (sn->batch_timeout / 1000));
  gst_caps_unref (caps);
  b = batch_ref (sn->pending);
  g_array_append_val (b->frames, p);

  while (!b->done) {
    if (b == sn->pending && (sn->stopping || st->flushing)) {
      batch_remove_locked (sn, st);
      g_mutex_unlock (&sn->batch_lock);
      batch_unref (b);
      return GST_FLOW_FLUSHING;
    }
    /* a batch on its way (flushing or not): wait for its push, so that
     * its frames are in the FIFO before this stream's flush-stop, which
     * drops them there */
    if (b == sn->pending && batch_ready_locked (sn)) {
      sn->pending = NULL;
      g_mutex_unlock (&sn->batch_lock);
      batch_send (sn, b); /* gives the ref pending had */
      g_mutex_lock (&sn->batch_lock);
      continue;
    }
    if (b == sn->pending)
      g_cond_wait_until (&sn->batch_cond, &sn->batch_lock, b->deadline);
    else
      g_cond_wait (&sn->batch_cond, &sn->batch_lock);
  }
  ret = sn->stopping || st->flushing ? GST_FLOW_FLUSHING : b->ret;
  g_mutex_unlock (&sn->batch_lock);
  batch_unref (b);
  return ret;
}

static GstFlowReturn
mux_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnStreams *sn = GST_NN_STREAM_MUX (parent)->streams;
  Stream *st = gst_pad_get_element_private (pad);
  GstNnTensorsInfo info;
  GstCaps *caps;
  gsize want, got;
  GstFlowReturn ret;

  g_mutex_lock (&sn->lock);
  if (st->ended) {
    g_mutex_unlock (&sn->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_EOS;
  }
  caps = st->in_caps ? gst_caps_ref (st->in_caps) : NULL;
  g_mutex_unlock (&sn->lock);
  if (caps == NULL)
    goto not_negotiated;
  /* a frame of the wrong size would fail a stage, and with it every
   * stream: it ends its own stream here */
  if (!gst_nn_tensors_info_from_caps (&info, caps, NULL))
    info.n_tensors = 0;
  want = gst_nn_tensors_info_get_size (&info);
  got = gst_buffer_get_size (buf);
  if (want > 0 && got != want)
    goto wrong_size;

  if (sn->batch_size > 1) {
    /* at the model's ranks ("16:16:3" and "16:16:3:1" are one shape and
     * share batches) */
    GstCaps *fitted =
        gst_nn_batch_caps (caps, 1, sn->batch_ranks, sn->n_batch_ranks, NULL);

    if (fitted) {
      gst_caps_unref (caps);
      caps = fitted;
    }
    return batch_add (sn, st, caps, buf);
  }
  {
    Pending p = { st, buf };

    ret = push_frames (sn, caps, &p, 1);
    gst_caps_unref (caps);
    return ret;
  }

  /* ERRORS */
not_negotiated : {
  gst_buffer_unref (buf);
  GST_WARNING_OBJECT (pad, "frame before caps");
  return GST_FLOW_NOT_NEGOTIATED;
}
wrong_size : {
  gchar *why = g_strdup_printf ("a frame of %" G_GSIZE_FORMAT
                                " bytes, its caps say %" G_GSIZE_FORMAT,
      got, want);

  gst_caps_unref (caps);
  gst_buffer_unref (buf);
  stream_fail (sn, st, why);
  g_free (why);
  return GST_FLOW_ERROR;
}
}

static gboolean
mux_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnStreams *sn = GST_NN_STREAM_MUX (parent)->streams;
  Stream *st = gst_pad_get_element_private (pad);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS: {
      GstCaps *caps;
      GError *err = NULL;

      gst_event_parse_caps (event, &caps);
      if (!sn->hooks.accept_caps (sn->user_data, caps, &err)) {
        if (err) {
          stream_fail (sn, st, err->message);
          g_error_free (err);
        }
        gst_event_unref (event);
        return FALSE;
      }
      g_mutex_lock (&sn->lock);
      gst_caps_replace (&st->in_caps, caps);
      g_mutex_unlock (&sn->lock);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      /* a frame of this stream waiting for its batch leaves it */
      g_mutex_lock (&sn->batch_lock);
      st->flushing = TRUE;
      g_cond_broadcast (&sn->batch_cond);
      g_mutex_unlock (&sn->batch_lock);
      return gst_pad_push_event (st->demux_src, event);
    case GST_EVENT_FLUSH_STOP:
      /* this stream's frames still in the stages are dropped on the way
       * out, its events there forgotten */
      g_mutex_lock (&sn->out_lock);
      g_mutex_lock (&sn->lock);
      for (GList *l = sn->fifo.head; l;) {
        GList *next = l->next;
        Entry *e = l->data;

        if (e->stream == st && e->event) {
          g_queue_delete_link (&sn->fifo, l);
          gst_nn_streams_entry_free (e);
        } else if (e->stream == st) {
          e->drop = TRUE;
        }
        l = next;
      }
      st->ended = FALSE;
      g_mutex_unlock (&sn->lock);
      g_queue_clear_full (&st->held, (GDestroyNotify) gst_event_unref);
      g_mutex_unlock (&sn->out_lock);
      g_mutex_lock (&sn->batch_lock);
      st->flushing = FALSE;
      g_mutex_unlock (&sn->batch_lock);
      return gst_pad_push_event (st->demux_src, event);
    case GST_EVENT_EOS:
      g_mutex_lock (&sn->lock);
      if (st->ended) {
        /* failed before: its EOS is out */
        g_mutex_unlock (&sn->lock);
        gst_event_unref (event);
        return TRUE;
      }
      g_mutex_unlock (&sn->lock);
      GST_DEBUG_OBJECT (pad, "stream %u ended", st->index);
      stream_end (sn, st, event);
      return TRUE;
    default:
      if (!GST_EVENT_IS_SERIALIZED (event))
        return gst_pad_push_event (st->demux_src, event);
      queue_event (sn, st, event);
      return TRUE;
  }
}

static gboolean
mux_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstNnStreams *sn = GST_NN_STREAM_MUX (parent)->streams;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS: {
      GstCaps *filter, *caps = NULL;
      GstPad *peer = gst_pad_get_peer (sn->mux_src);

      gst_query_parse_caps (query, &filter);
      if (peer) {
        /* the first stage answers as a whole-model nnstage */
        caps = gst_pad_query_caps (peer, filter);
        gst_object_unref (peer);
      } else {
        caps = sn->hooks.query_caps (sn->user_data, filter);
      }
      if (caps == NULL)
        caps = gst_nn_streams_template_caps (GST_NN_TENSORS_CAPS_TEMPLATE_ANY,
            filter);
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    case GST_QUERY_ACCEPT_CAPS: {
      GstCaps *caps,
          *tmpl = gst_caps_from_string (GST_NN_TENSORS_CAPS_TEMPLATE_ANY);

      gst_query_parse_accept_caps (query, &caps);
      gst_query_set_accept_caps_result (query,
          gst_caps_can_intersect (tmpl, caps));
      gst_caps_unref (tmpl);
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      return FALSE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* API */

GstNnStreams *
gst_nn_streams_new (GstBin *bin, const GstNnStreamsHooks *hooks,
    gpointer user_data)
{
  GstNnStreams *sn = g_new0 (GstNnStreams, 1);

  GST_DEBUG_CATEGORY_INIT (gst_nn_streams_debug, "nnstreams", 0,
      "nnpipeline streams (request pads)");
  sn->bin = bin;
  sn->hooks = *hooks;
  sn->user_data = user_data;
  g_mutex_init (&sn->lock);
  g_mutex_init (&sn->in_lock);
  g_mutex_init (&sn->out_lock);
  g_mutex_init (&sn->batch_lock);
  g_cond_init (&sn->batch_cond);
  sn->batch_size = 1;
  g_queue_init (&sn->fifo);
  sn->streams = g_ptr_array_new ();

  sn->mux = g_object_new (GST_TYPE_NN_STREAM_MUX, "name", "streammux", NULL);
  sn->demux =
      g_object_new (GST_TYPE_NN_STREAM_DEMUX, "name", "streamdemux", NULL);
  sn->mq = gst_element_factory_make ("multiqueue", "streamqueue");
  GST_NN_STREAM_MUX (sn->mux)->streams = sn;
  GST_NN_STREAM_DEMUX (sn->demux)->streams = sn;
  /* outputs wait here for their stream's downstream; a full queue grows
   * while another one is empty (multiqueue), so a sink prerolling on one
   * stream never keeps the others from their first frame */
  g_object_set (sn->mq, "max-size-buffers", 4, "max-size-bytes", 0,
      "max-size-time", (guint64) 0, NULL);

  sn->mux_src = gst_pad_new ("src", GST_PAD_SRC);
  gst_element_add_pad (sn->mux, sn->mux_src);
  sn->demux_sink = gst_pad_new ("sink", GST_PAD_SINK);
  gst_pad_set_chain_function (sn->demux_sink, gst_nn_streams_demux_chain);
  gst_pad_set_event_function (sn->demux_sink, gst_nn_streams_demux_sink_event);
  gst_pad_set_query_function (sn->demux_sink, gst_nn_streams_demux_sink_query);
  gst_element_add_pad (sn->demux, sn->demux_sink);

  gst_object_ref (sn->mux);
  gst_object_ref (sn->demux);
  gst_object_ref (sn->mq);
  gst_bin_add_many (bin, sn->mux, sn->demux, sn->mq, NULL);
  return sn;
}

void
gst_nn_streams_free (GstNnStreams *sn)
{
  if (sn == NULL)
    return;
  g_queue_clear_full (&sn->fifo, (GDestroyNotify) gst_nn_streams_entry_free);
  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st == NULL)
      continue;
    gst_caps_replace (&st->in_caps, NULL);
    gst_caps_replace (&st->out_caps, NULL);
    g_queue_clear_full (&st->held, (GDestroyNotify) gst_event_unref);
    gst_clear_object (&st->mq_sink);
    g_free (st->source_id);
    g_free (st);
  }
  g_ptr_array_unref (sn->streams);
  gst_caps_replace (&sn->chain_in_caps, NULL);
  gst_caps_replace (&sn->chain_out_caps, NULL);
  gst_caps_replace (&sn->frame_out_caps, NULL);
  g_clear_pointer (&sn->pending, batch_unref);
  GST_NN_STREAM_MUX (sn->mux)->streams = NULL;
  GST_NN_STREAM_DEMUX (sn->demux)->streams = NULL;
  gst_object_unref (sn->mux);
  gst_object_unref (sn->demux);
  gst_object_unref (sn->mq);
  g_mutex_clear (&sn->lock);
  g_mutex_clear (&sn->in_lock);
  g_mutex_clear (&sn->out_lock);
  g_mutex_clear (&sn->batch_lock);
  g_cond_clear (&sn->batch_cond);
  g_free (sn);
}

GstPad *
gst_nn_streams_request (GstNnStreams *sn, guint index,
    GstPadTemplate *sink_templ, GstPadTemplate *src_templ)
{
  Stream *st;
  gchar *name;
  GstPad *mq_src;

  if (index < sn->streams->len && g_ptr_array_index (sn->streams, index))
    return NULL;
  st = g_new0 (Stream, 1);
  st->index = index;
  g_queue_init (&st->held);

  name = g_strdup_printf ("sink_%u", index);
  st->mux_sink = gst_pad_new (name, GST_PAD_SINK);
  gst_pad_set_element_private (st->mux_sink, st);
  gst_pad_set_chain_function (st->mux_sink, mux_chain);
  gst_pad_set_event_function (st->mux_sink, mux_sink_event);
  gst_pad_set_query_function (st->mux_sink, mux_sink_query);
  GST_PAD_SET_PROXY_ALLOCATION (st->mux_sink);
  gst_element_add_pad (sn->mux, st->mux_sink);
  st->mq_sink = gst_element_request_pad_simple (sn->mq, name);
  g_free (name);

  name = g_strdup_printf ("src_%u", index);
  st->demux_src = gst_pad_new (name, GST_PAD_SRC);
  gst_pad_set_query_function (st->demux_src, gst_nn_streams_demux_src_query);
  gst_pad_use_fixed_caps (st->demux_src);
  gst_element_add_pad (sn->demux, st->demux_src);
  gst_pad_link (st->demux_src, st->mq_sink);
  /* the multiqueue's src pad has the same number as its sink pad */
  {
    GstIterator *it = gst_pad_iterate_internal_links (st->mq_sink);
    GValue v = G_VALUE_INIT;

    mq_src = NULL;
    if (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      mq_src = g_value_dup_object (&v);
      g_value_unset (&v);
    }
    gst_iterator_free (it);
  }
  st->src_ghost = gst_ghost_pad_new_from_template (name, mq_src, src_templ);
  gst_object_unref (mq_src);
  g_free (name);

  name = g_strdup_printf ("sink_%u", index);
  st->sink_ghost =
      gst_ghost_pad_new_from_template (name, st->mux_sink, sink_templ);
  g_free (name);

  g_mutex_lock (&sn->lock);
  if (index >= sn->streams->len)
    g_ptr_array_set_size (sn->streams, index + 1);
  g_ptr_array_index (sn->streams, index) = st;
  g_mutex_unlock (&sn->lock);

  gst_element_add_pad (GST_ELEMENT (sn->bin), st->src_ghost);
  gst_element_add_pad (GST_ELEMENT (sn->bin), st->sink_ghost);
  return st->sink_ghost;
}

void
gst_nn_streams_release (GstNnStreams *sn, GstPad *sink_ghost)
{
  Stream *st = NULL;
  gboolean all;

  /* released is read by deliveries (out_lock) and the FIFO side (lock) */
  g_mutex_lock (&sn->out_lock);
  g_mutex_lock (&sn->lock);
  for (guint i = 0; i < sn->streams->len && st == NULL; i++) {
    Stream *s = g_ptr_array_index (sn->streams, i);

    if (s && s->sink_ghost == sink_ghost)
      st = s;
  }
  if (st)
    st->released = TRUE;
  g_mutex_unlock (&sn->lock);
  g_mutex_unlock (&sn->out_lock);
  if (st == NULL)
    return;
  gst_element_remove_pad (GST_ELEMENT (sn->bin), st->sink_ghost);
  gst_element_remove_pad (GST_ELEMENT (sn->bin), st->src_ghost);
  /* the pads of the mux and demux stay (their Stream too, marked
   * released) until the element goes: frames in flight still find them */
  g_mutex_lock (&sn->in_lock);
  g_mutex_lock (&sn->lock);
  all = all_ended_locked (sn);
  g_mutex_unlock (&sn->lock);
  /* (the EOS may reach the demux in this thread: lock is not held) */
  if (all)
    chain_eos_locked (sn);
  g_mutex_unlock (&sn->in_lock);
  batch_kick (sn);
}

guint
gst_nn_streams_count (GstNnStreams *sn)
{
  guint n = 0;

  g_mutex_lock (&sn->lock);
  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);

    if (st && !st->released)
      n++;
  }
  g_mutex_unlock (&sn->lock);
  return n;
}

gboolean
gst_nn_streams_attach (GstNnStreams *sn, GstPad *first_sink, GstPad *last_src)
{
  /* new stages (nnpipeline's re-balancing swaps them between two frames,
   * in the thread that pushes the next one, in_lock held): linking
   * mux_src again schedules its sticky stream-start, caps and segment for
   * the new first stage with the next buffer, so the chain state stays */
  return GST_PAD_LINK_SUCCESSFUL (gst_pad_link (sn->mux_src, first_sink))
      && GST_PAD_LINK_SUCCESSFUL (gst_pad_link (last_src, sn->demux_sink));
}

GstPad *
gst_nn_streams_chain_in (GstNnStreams *sn)
{
  return sn->mux_src;
}

GstPad *
gst_nn_streams_chain_out (GstNnStreams *sn)
{
  return sn->demux_sink;
}

void
gst_nn_streams_set_batching (GstNnStreams *sn, guint batch_size,
    GstClockTime batch_timeout, const gint *ranks, guint n_ranks)
{
  g_mutex_lock (&sn->batch_lock);
  sn->batch_size = MAX (batch_size, 1);
  sn->batch_timeout = batch_timeout;
  sn->n_batch_ranks = MIN (n_ranks, GST_NN_TENSORS_MAX);
  memcpy (sn->batch_ranks, ranks, sn->n_batch_ranks * sizeof (gint));
  g_mutex_unlock (&sn->batch_lock);
}

guint
gst_nn_streams_in_frames (GstNnStreams *sn)
{
  /* called from the push, in_lock held by this thread */
  return MAX (sn->in_frames, 1);
}

guint
gst_nn_streams_out_frames (GstNnStreams *sn)
{
  guint n = 1;

  g_mutex_lock (&sn->lock);
  for (GList *l = sn->fifo.head; l; l = l->next) {
    Entry *e = l->data;

    if (e->event == NULL) {
      n = MAX (e->batch, 1);
      break;
    }
  }
  g_mutex_unlock (&sn->lock);
  return n;
}

static void
stream_stats_clear (gpointer data)
{
  g_free (((GstNnStreamStats *) data)->source_id);
}

GArray *
gst_nn_streams_get_stats (GstNnStreams *sn)
{
  GArray *out = g_array_new (FALSE, TRUE, sizeof (GstNnStreamStats));

  g_array_set_clear_func (out, stream_stats_clear);
  g_mutex_lock (&sn->lock);
  for (guint i = 0; i < sn->streams->len; i++) {
    Stream *st = g_ptr_array_index (sn->streams, i);
    GstNnStreamStats ss;

    if (st == NULL || st->released)
      continue;
    ss.index = st->index;
    ss.source_id = g_strdup (st->source_id);
    ss.frames_in = st->frames_in;
    ss.frames_out = st->frames_out;
    ss.latency_sum_us = st->latency_sum_us;
    ss.latency_max_us = st->latency_max_us;
    g_array_append_val (out, ss);
  }
  g_mutex_unlock (&sn->lock);
  return out;
}
