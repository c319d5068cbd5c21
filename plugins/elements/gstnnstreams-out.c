/* GStreamer nnpipe plugin: nnstreams output side.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * The demux after the last stage: it pops the FIFO for each frame
 * leaving the chain (cutting a batch back into one frame per entry) and
 * delivers frames and the events queued behind them to src_N, in order.
 * See gstnnstreams.c for the whole picture.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstreams-private.h"
#include "gstnntensorcaps.h"

#include <nnpipe/error.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_nn_streams_debug

/* ------------------------------------------------------------------------ */
/* Output side: deliveries to src_N (out_lock held) */

/* An entry of the FIFO of frames in flight (a frame or an event queued
 * behind them): freed by whoever takes it out, on either side. */
void
gst_nn_streams_entry_free (Entry *e)
{
  if (e->event)
    gst_event_unref (e->event);
  gst_clear_buffer (&e->metas);
  g_free (e);
}

static gboolean
is_held_type (GstEvent *event)
{
  /* sticky events after caps in a pad's order: they wait for the first
   * caps on src_N, so caps never follow a segment there */
  return GST_EVENT_TYPE (event) != GST_EVENT_STREAM_START
      && GST_EVENT_TYPE (event) != GST_EVENT_EOS;
}

static void
deliver_event (Stream *st, GstEvent *event)
{
  if (st->released) {
    gst_event_unref (event);
    return;
  }
  if (st->out_caps == NULL && is_held_type (event)) {
    g_queue_push_tail (&st->held, event);
    return;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    GstEvent *e;

    /* a stream that ended before its first frame: its segment still goes
     * out before EOS */
    while ((e = g_queue_pop_head (&st->held)))
      gst_pad_push_event (st->demux_src, e);
  }
  GST_DEBUG ("stream %u: %" GST_PTR_FORMAT, st->index, event);
  gst_pad_push_event (st->demux_src, event);
}

/* buf of caps `caps` (NULL: none known) to st's output. */
static GstFlowReturn
deliver_buffer (Stream *st, GstCaps *caps, GstBuffer *buf)
{
  GstEvent *e;
  GstFlowReturn ret;

  if (st->released) {
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  if (caps
      && (st->out_caps == NULL || !gst_caps_is_equal (st->out_caps, caps))) {
    gst_caps_replace (&st->out_caps, caps);
    gst_pad_push_event (st->demux_src, gst_event_new_caps (st->out_caps));
  }
  while ((e = g_queue_pop_head (&st->held)))
    gst_pad_push_event (st->demux_src, e);
  ret = gst_pad_push (st->demux_src, buf);
  if (ret != GST_FLOW_OK)
    GST_DEBUG ("stream %u: downstream returned %s", st->index,
        gst_flow_get_name (ret));
  return ret;
}

/* Deliver the events at the head of the FIFO (those behind no frame in
 * flight).  out_lock held. */
void
gst_nn_streams_drain_events (GstNnStreams *sn)
{
  for (;;) {
    Entry *e;

    g_mutex_lock (&sn->lock);
    e = g_queue_peek_head (&sn->fifo);
    if (e == NULL || e->event == NULL
        || (e->after_chain_eos && !sn->chain_eos_out)) {
      g_mutex_unlock (&sn->lock);
      return;
    }
    g_queue_pop_head (&sn->fifo);
    g_mutex_unlock (&sn->lock);
    deliver_event (e->stream, g_steal_pointer (&e->event));
    gst_nn_streams_entry_free (e);
  }
}

/* The caps of one frame of a batch of n out of the stages (borrowed, in
 * sn), *info the batch's.  out_lock held. */
static GstCaps *
frame_out_caps (GstNnStreams *sn, guint n, GstNnTensorsInfo *info,
    GError **error)
{
  if (sn->chain_out_caps == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
        "a batch left the stages before their caps");
    return NULL;
  }
  if (!gst_nn_tensors_info_from_caps (info, sn->chain_out_caps, error))
    return NULL;
  if (sn->frame_out_caps == NULL || sn->frame_out_n != n) {
    gst_caps_replace (&sn->frame_out_caps, NULL);
    sn->frame_out_caps = gst_nn_batch_frame_caps (sn->chain_out_caps, n, error);
    sn->frame_out_n = n;
  }
  return sn->frame_out_caps;
}

/* The next frame entry of the FIFO, popped (events before it are
 * delivered first).  out_lock held. */
static Entry *
pop_frame (GstNnStreams *sn)
{
  Entry *e;

  gst_nn_streams_drain_events (sn);
  g_mutex_lock (&sn->lock);
  e = g_queue_pop_head (&sn->fifo);
  if (e && e->event == NULL) {
    gint64 lat = g_get_monotonic_time () - e->t_in;

    e->stream->frames_out++;
    e->stream->latency_sum_us += lat;
    e->stream->latency_max_us = MAX (e->stream->latency_max_us, lat);
  }
  g_mutex_unlock (&sn->lock);
  return e;
}

/* Frame buffer buf (owned) with entry e's timestamps to its stream. */
static void
deliver_frame (Entry *e, GstCaps *caps, GstBuffer *buf)
{
  buf = gst_buffer_make_writable (buf);
  GST_BUFFER_PTS (buf) = e->pts;
  GST_BUFFER_DTS (buf) = e->dts;
  GST_BUFFER_DURATION (buf) = e->duration;
  GST_BUFFER_OFFSET (buf) = e->offset;
  GST_BUFFER_OFFSET_END (buf) = e->offset_end;
  /* the frame's metas again (it went through the stages without) */
  if (e->metas)
    gst_buffer_copy_into (buf, e->metas, GST_BUFFER_COPY_META, 0, -1);
  /* one stream's downstream stopping (not linked, EOS, flushing, an error
   * there, posted by that element) does not stop the chain for the others */
  if (e->drop)
    gst_buffer_unref (buf);
  else
    (void) deliver_buffer (e->stream, caps, buf);
}

GstFlowReturn
gst_nn_streams_demux_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnStreams *sn = GST_NN_STREAM_DEMUX (parent)->streams;
  GstNnTensorsInfo info;
  GstCaps *caps;
  GError *err = NULL;
  Entry *e;
  guint n;

  g_mutex_lock (&sn->out_lock);
  e = pop_frame (sn);
  if (e == NULL || e->event)
    goto no_input;
  n = MAX (e->batch, 1);
  if (n == 1) {
    deliver_frame (e, sn->chain_out_caps, buf);
    gst_nn_streams_entry_free (e);
    gst_nn_streams_drain_events (sn);
    g_mutex_unlock (&sn->out_lock);
    return GST_FLOW_OK;
  }

  /* a batch: frame r's rows go to the r-th entry's stream */
  caps = frame_out_caps (sn, n, &info, &err);
  if (caps == NULL)
    goto bad_batch;
  for (guint r = 0; r < n; r++) {
    GstBuffer *frame;

    if (r > 0 && ((e = pop_frame (sn)) == NULL || e->event))
      goto no_input;
    frame = gst_nn_batch_slice (buf, &info, n, r);
    if (frame == NULL)
      goto short_batch;
    deliver_frame (e, caps, frame);
    g_clear_pointer (&e, gst_nn_streams_entry_free);
  }
  gst_buffer_unref (buf);
  gst_nn_streams_drain_events (sn);
  g_mutex_unlock (&sn->out_lock);
  return GST_FLOW_OK;

  /* ERRORS */
no_input : {
  g_mutex_unlock (&sn->out_lock);
  g_clear_pointer (&e, gst_nn_streams_entry_free);
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (sn->bin, STREAM, FAILED,
      ("a frame left the last stage that no stream put in"),
      ("the stages must give one output per input, in order"));
  return GST_FLOW_ERROR;
}
bad_batch : {
  g_mutex_unlock (&sn->out_lock);
  gst_nn_streams_entry_free (e);
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (sn->bin, STREAM, FAILED,
      ("cannot split a batch of %u frames back into frames: %s", n,
          err->message),
      ("batch-size > 1 needs a model whose outputs keep the batch dimension first"));
  g_clear_error (&err);
  return GST_FLOW_ERROR;
}
short_batch : {
  g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED,
      "the batch buffer is smaller than its caps say");
  goto bad_batch;
}
}

gboolean
gst_nn_streams_demux_sink_event (GstPad *pad, GstObject *parent,
    GstEvent *event)
{
  GstNnStreams *sn = GST_NN_STREAM_DEMUX (parent)->streams;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS: {
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      g_mutex_lock (&sn->out_lock);
      gst_caps_replace (&sn->chain_out_caps, caps);
      g_mutex_unlock (&sn->out_lock);
      break;
    }
    case GST_EVENT_EOS:
      /* every stream ended; nnpipeline's probe before this posted the final
       * statistics: the last stream's EOS may go now */
      g_mutex_lock (&sn->out_lock);
      g_mutex_lock (&sn->lock);
      sn->chain_eos_out = TRUE;
      g_mutex_unlock (&sn->lock);
      gst_nn_streams_drain_events (sn);
      g_mutex_unlock (&sn->out_lock);
      break;
    default:
      /* the chain's own stream-start, segment, flushes */
      break;
  }
  gst_event_unref (event);
  return TRUE;
}

/* Template caps `str` cut to filter (may be NULL).  New ref. */
GstCaps *
gst_nn_streams_template_caps (const gchar *str, GstCaps *filter)
{
  GstCaps *tmpl = gst_caps_from_string (str), *caps;

  if (filter == NULL)
    return tmpl;
  caps = gst_caps_intersect_full (filter, tmpl, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref (tmpl);
  return caps;
}

gboolean
gst_nn_streams_demux_sink_query (GstPad *pad, GstObject *parent,
    GstQuery *query)
{
  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *caps, *filter;

    gst_query_parse_caps (query, &filter);
    caps = gst_nn_streams_template_caps (GST_NN_TENSORS_CAPS_TEMPLATE, filter);
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  if (GST_QUERY_TYPE (query) == GST_QUERY_ACCEPT_CAPS) {
    gst_query_set_accept_caps_result (query, TRUE);
    return TRUE;
  }
  return FALSE;
}

/* Queries on src_N from downstream: the last stage's caps. */
gboolean
gst_nn_streams_demux_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstNnStreams *sn = GST_NN_STREAM_DEMUX (parent)->streams;

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    return gst_pad_peer_query (sn->demux_sink, query);
  return gst_pad_query_default (pad, parent, query);
}
