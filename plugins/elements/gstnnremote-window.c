/* GStreamer nnpipe plugin: nnremote, the in-flight window (see
 * gstnnremote-private.h, docs/remote.md): frames wait in a table keyed by
 * sequence number until their result comes; the task reads results and
 * pushes them in input order with the input's timestamps, flags and metas,
 * and the serialized events queued behind them.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnremote-private.h"

#define GST_CAT_DEFAULT gst_nn_remote_debug


void
gst_nn_remote_push_event (GstNnRemote *self, GstEvent *event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT && self->out_caps == NULL) {
    gst_event_replace (&self->held_segment, event);
    gst_event_unref (event);
    return;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->held_segment) {
    gst_pad_push_event (self->srcpad, self->held_segment);
    self->held_segment = NULL;
  }
  gst_pad_push_event (self->srcpad, event);
}

/* Push the events now at the head of the queue (task or drained sink). */
static void
push_head_events (GstNnRemote *self)
{
  for (;;) {
    Pending *p;

    g_mutex_lock (&self->lock);
    p = g_queue_peek_head (&self->pending);
    if (p == NULL || p->event == NULL) {
      g_mutex_unlock (&self->lock);
      return;
    }
    g_queue_pop_head (&self->pending);
    self->pushing++;
    g_mutex_unlock (&self->lock);
    gst_nn_remote_push_event (self, p->event);
    p->event = NULL;
    gst_nn_remote_pending_free (p);
    g_mutex_lock (&self->lock);
    self->pushing--;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }
}

static void
handle_result (GstNnRemote *self, guint64 seq, guint8 *payload, gsize size)
{
  NnpRemoteFrame frame;
  GError *err = NULL;
  GstCaps *caps;
  GstBuffer *out;
  Pending *p;
  GstFlowReturn ret;

  if (!nnp_remote_frame_parse (payload, size, &frame, &err)) {
    g_aligned_free (payload);
    goto bad_result;
  }
  caps = gst_nn_remote_frame_caps (&frame, &err);
  if (caps == NULL) {
    nnp_remote_frame_clear (&frame);
    g_aligned_free (payload);
    goto bad_result;
  }

  g_mutex_lock (&self->lock);
  p = g_queue_peek_head (&self->pending);
  if (p == NULL || seq < p->seq || self->flushing) {
    /* a result of a flushed frame, or one answered before a reconnect */
    g_mutex_unlock (&self->lock);
    GST_DEBUG_OBJECT (self, "stale result %" G_GUINT64_FORMAT " dropped", seq);
    goto drop;
  }
  if (seq != p->seq) {
    guint64 want = p->seq;
    g_mutex_unlock (&self->lock);
    err = g_error_new (NNP_ERROR, NNP_ERROR_PARSE,
        "result for frame %" G_GUINT64_FORMAT " where frame %" G_GUINT64_FORMAT
        " was next",
        seq, want);
    goto bad_order;
  }
  g_queue_pop_head (&self->pending);
  if (--self->n_frames == 0 && self->busy_since) {
    self->busy_ns += (g_get_monotonic_time () - self->busy_since) * 1000;
    self->busy_since = 0;
  }
  self->frames++;
  self->pushing++;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  out = gst_nn_remote_frame_to_buffer (&frame, payload, size);
  nnp_remote_frame_clear (&frame);
  gst_buffer_copy_into (out, p->buffer, GST_BUFFER_COPY_METADATA, 0, -1);
  if (self->out_caps == NULL || !gst_caps_is_equal (self->out_caps, caps)) {
    gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_replace (&self->out_caps, caps);
    if (self->held_segment) {
      gst_pad_push_event (self->srcpad, self->held_segment);
      self->held_segment = NULL;
    }
  }
  gst_caps_unref (caps);
  gst_nn_remote_pending_free (p);
  ret = gst_pad_push (self->srcpad, out);

  g_mutex_lock (&self->lock);
  self->pushing--;
  if (ret != GST_FLOW_OK)
    self->src_ret = ret;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  if (ret != GST_FLOW_OK && ret != GST_FLOW_FLUSHING) {
    if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS)
      GST_ELEMENT_FLOW_ERROR (self, ret);
    gst_pad_pause_task (self->srcpad);
    return;
  }
  push_head_events (self);
  return;

drop:
  nnp_remote_frame_clear (&frame);
  gst_caps_unref (caps);
  g_aligned_free (payload);
  return;

bad_order:
  nnp_remote_frame_clear (&frame);
  gst_caps_unref (caps);
  g_aligned_free (payload);
bad_result : {
  gchar *text = g_strdup_printf ("Server %s sent a bad result.",
      self->addrs[self->cur_addr]);
  gst_nn_remote_fail (self, text, err->message);
  g_free (text);
  g_error_free (err);
  gst_pad_pause_task (self->srcpad);
}
}

void
gst_nn_remote_loop (GstNnRemote *self)
{
  GIOStream *conn;
  GCancellable *cancel;
  NnpRemoteHeader h;
  guint8 *payload = NULL;
  GError *err = NULL;
  guint64 gen;

  g_mutex_lock (&self->lock);
  if (self->stopping || self->failed) {
    g_mutex_unlock (&self->lock);
    gst_pad_pause_task (self->srcpad);
    return;
  }
  conn = self->conn ? g_object_ref (self->conn) : NULL;
  cancel = conn ? g_object_ref (self->conn_cancel) : NULL;
  gen = self->gen;
  g_mutex_unlock (&self->lock);

  if (conn == NULL) {
    if (!gst_nn_remote_connect_any (self))
      gst_pad_pause_task (self->srcpad);
    return;
  }
  if (!nnp_remote_recv (g_io_stream_get_input_stream (conn), self->max_payload,
          &h, &payload, cancel, &err)) {
    gboolean hung;

    g_object_unref (conn);
    g_object_unref (cancel);
    g_mutex_lock (&self->lock);
    hung = self->hung_gen == gen;
    g_mutex_unlock (&self->lock);
    if (self->stopping) {
      g_error_free (err);
      gst_pad_pause_task (self->srcpad);
      return;
    }
    if (hung) {
      /* the watchdog found no byte moving for `timeout` (it said so) */
      self->cur_addr = (self->cur_addr + 1) % self->n_addrs;
      g_error_free (err);
      gst_nn_remote_drop_conn (self, gen);
      return;
    }
    if (g_error_matches (err, NNP_ERROR, NNP_ERROR_PARSE)
        || g_error_matches (err, NNP_ERROR, NNP_ERROR_UNSUPPORTED)) {
      gchar *text = g_strdup_printf ("Server %s sent garbage.",
          self->addrs[self->cur_addr]);
      gst_nn_remote_fail (self, text, err->message);
      g_free (text);
      g_error_free (err);
      gst_pad_pause_task (self->srcpad);
      return;
    }
    GST_WARNING_OBJECT (self, "connection to %s lost (%s), reconnecting",
        self->addrs[self->cur_addr], err->message);
    g_error_free (err);
    gst_nn_remote_drop_conn (self, gen);
    return;
  }
  g_object_unref (conn);
  g_object_unref (cancel);

  switch (h.type) {
    case NNP_REMOTE_RESULT:
      handle_result (self, h.seq, payload, h.length);
      return;
    case NNP_REMOTE_ERROR: {
      gchar *msg = nnp_remote_string_parse (payload, h.length, NULL);
      gchar *text =
          g_strdup_printf ("Server %s failed.", self->addrs[self->cur_addr]);
      gst_nn_remote_fail (self, text, msg ? msg : "(malformed ERROR message)");
      g_free (text);
      g_free (msg);
      gst_pad_pause_task (self->srcpad);
      break;
    }
    case NNP_REMOTE_PONG:
      break;
    default: {
      gchar *text = g_strdup_printf ("Server %s sent an unexpected %s.",
          self->addrs[self->cur_addr], nnp_remote_type_name (h.type));
      gst_nn_remote_fail (self, text, "protocol error");
      g_free (text);
      gst_pad_pause_task (self->srcpad);
      break;
    }
  }
  g_aligned_free (payload);
}
