/* GStreamer nnpipe plugin: nnremote
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnremote
 * @title: nnremote
 * @short_description: run a stage of the model on another machine
 *
 * nnremote sends each tensor buffer to an nnpipe server (`nnpipe serve`,
 * or nnserversrc ! ... ! nnserversink) and pushes the server's result
 * downstream, in order, with the input buffer's timestamps, flags and
 * metas (they never travel: the input buffer waits in a table keyed by the
 * frame's sequence number).  Up to #GstNnRemote:in-flight frames are on
 * the wire at once, hiding the round trip; beyond that the element blocks
 * (backpressure, bounded memory).
 *
 * The connection starts with a HELLO naming the protocol version, the
 * model's digest, the part to run (#GstNnRemote:nodes, or
 * #GstNnRemote:plan + #GstNnRemote:stage; else the whole model) and
 * #GstNnRemote:token; a server that refuses it (other model, other part,
 * wrong token or version) is an error naming the reason.  Then a PING
 * measures the round-trip time and a 1 MiB PING the bandwidth
 * (#GstNnRemote:rtt, #GstNnRemote:bandwidth).
 *
 * When the connection breaks, nnremote reconnects (backoff from 50 ms to
 * 1 s) to the same host or the next of #GstNnRemote:hosts and re-sends the
 * frames that have no result yet: none is lost, duplicated or reordered.
 * No server within #GstNnRemote:timeout ms is an error naming the hosts.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=x.f32 blocksize=4915200 ! \
 *   other/tensors,format=static,num_tensors=1,types=float32,dimensions=640:640:3:1,framerate=0/1 ! \
 *   nnstage model=det.onnx nodes=0..40 ! \
 *   nnremote hosts="gpu1:7000|gpu2:7000" model=det.onnx nodes=41..101 ! \
 *   filesink location=y.f32
 * ]|
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnremote.h"
#include "gstnnserver.h"
#include "gstnntensorcaps.h"

#include <nnpipe/nnpipe.h>
#include <nnpipe/remote.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_remote_debug);
#define GST_CAT_DEFAULT gst_nn_remote_debug

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 7000
#define DEFAULT_IN_FLIGHT 4
#define DEFAULT_TIMEOUT 10000
#define DEFAULT_MAX_PAYLOAD NNP_REMOTE_DEFAULT_MAX_PAYLOAD
#define PROBE_BYTES (1u << 20)

enum
{
  PROP_0,
  PROP_HOST,
  PROP_PORT,
  PROP_HOSTS,
  PROP_IN_FLIGHT,
  PROP_TIMEOUT,
  PROP_TLS,
  PROP_TLS_CA,
  PROP_TOKEN,
  PROP_MODEL,
  PROP_DIGEST,
  PROP_NODES,
  PROP_PLAN,
  PROP_PLAN_OBJECT,
  PROP_STAGE,
  PROP_MAX_PAYLOAD,
  PROP_RTT,
  PROP_BANDWIDTH,
  PROP_RECONNECTS,
  PROP_SERVER,
  PROP_BUSY_TIME,
  PROP_FRAMES,
};

/* a frame waiting for its result, or a serialized event behind frames */
typedef struct
{
  guint64 seq;
  GstBuffer *buffer; /* the input (metas, timestamps; re-sent) */
  GstCaps *caps;     /* its caps */
  gchar *caps_str;
  gchar *shapes;    /* model input shapes upstream named, or "" */
  guint64 sent_gen; /* connection generation it was sent on */
  GstEvent *event;  /* or an event (buffer NULL) */
} Pending;

struct _GstNnRemote
{
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  gchar *host;
  guint port;
  gchar *hosts;
  guint in_flight, timeout, max_payload;
  gboolean tls;
  gchar *tls_ca, *token, *model, *digest, *nodes, *plan_path;
  NnpPlan *plan;
  gint stage;

  /* from start to stop */
  gchar **addrs; /* "host:port" */
  gint n_addrs, cur_addr;
  guint8 *hello; /* encoded HELLO */
  gsize hello_size;
  GCancellable *cancellable;

  GMutex lock; /* everything below */
  GCond cond;
  GQueue pending; /* Pending, in seq order */
  guint n_frames; /* frames in `pending` */
  guint64 next_seq;
  GIOStream *conn; /* current connection or NULL */
  guint64 gen;     /* bumped at each connection */
  gboolean flushing, stopping, failed;
  gint pushing; /* results being pushed by the task */
  GstFlowReturn src_ret;
  GstCaps *in_caps;       /* streaming thread */
  gchar *in_shapes;       /* model input shapes upstream named for them */
  gchar *model_digest;    /* the digest sent in HELLO */
  GstCaps *out_caps;      /* task */
  GstEvent *held_segment; /* a segment waiting for the first caps */
  gchar *server;          /* "host:port (device)" of the connection */
  guint64 rtt_us;
  gdouble bandwidth;
  guint reconnects;
  gboolean connected_once;
  gint64 busy_since; /* monotonic us when frames went in flight, or 0 */
  guint64 busy_ns;   /* time with frames in flight, before busy_since */
  guint64 frames;    /* results pushed */

  GMutex write_lock; /* one writer on the connection */
};

G_DEFINE_TYPE (GstNnRemote, gst_nn_remote, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (nnremote, "nnremote", GST_RANK_NONE,
    GST_TYPE_NN_REMOTE);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

static void
pending_free (Pending *p)
{
  gst_clear_buffer (&p->buffer);
  gst_clear_caps (&p->caps);
  g_free (p->caps_str);
  g_free (p->shapes);
  if (p->event)
    gst_event_unref (p->event);
  g_free (p);
}

/* ------------------------------------------------------------ connection */

/* Drop connection generation gen (if still current): the task reconnects. */
static void
drop_conn (GstNnRemote *self, guint64 gen)
{
  GIOStream *conn = NULL;

  g_mutex_lock (&self->lock);
  if (self->gen == gen && self->conn) {
    conn = self->conn;
    self->conn = NULL;
  }
  g_mutex_unlock (&self->lock);
  if (conn) {
    g_io_stream_close (conn, NULL, NULL);
    g_object_unref (conn);
  }
}

/* Send every frame not sent on the current connection, in order. */
static void
send_pending (GstNnRemote *self)
{
  GPtrArray *todo = g_ptr_array_new ();
  GIOStream *conn = NULL;
  GError *err = NULL;
  guint64 gen;

  g_mutex_lock (&self->write_lock);
  g_mutex_lock (&self->lock);
  gen = self->gen;
  if (self->conn) {
    conn = g_object_ref (self->conn);
    for (GList *l = self->pending.head; l; l = l->next) {
      Pending *p = l->data;
      if (p->buffer && p->sent_gen != gen) {
        Pending *copy = g_new0 (Pending, 1);
        copy->seq = p->seq;
        copy->buffer = gst_buffer_ref (p->buffer);
        copy->caps = gst_caps_ref (p->caps);
        copy->caps_str = g_strdup (p->caps_str);
        copy->shapes = g_strdup (p->shapes);
        p->sent_gen = gen;
        g_ptr_array_add (todo, copy);
      }
    }
  }
  g_mutex_unlock (&self->lock);

  for (guint i = 0; conn && i < todo->len && err == NULL; i++) {
    Pending *p = todo->pdata[i];
    NnpRemoteTensor tensors[NNP_REMOTE_MAX_TENSORS];
    GstMapInfo maps[NNP_REMOTE_MAX_TENSORS];
    gint n = 0, n_maps = 0;

    if (!gst_nn_remote_tensors_map (p->buffer, p->caps, tensors, &n, maps,
            &n_maps, &err))
      break;
    nnp_remote_send_frame (g_io_stream_get_output_stream (conn),
        NNP_REMOTE_FRAME, p->seq, p->caps_str, p->shapes, n, tensors,
        self->cancellable, &err);
    gst_nn_remote_tensors_unmap (p->buffer, maps, n_maps);
  }
  g_mutex_unlock (&self->write_lock);
  for (guint i = 0; i < todo->len; i++)
    pending_free (todo->pdata[i]);
  g_ptr_array_free (todo, TRUE);
  if (err) {
    GST_INFO_OBJECT (self, "sending failed: %s", err->message);
    g_error_free (err);
    /* the task sees the closed connection and reconnects */
    drop_conn (self, gen);
  }
  g_clear_object (&conn);
}

/* Post a fatal error once and wake everybody. */
static void
fail (GstNnRemote *self, const gchar *text, const gchar *detail)
{
  g_mutex_lock (&self->lock);
  if (self->failed || self->stopping) {
    g_mutex_unlock (&self->lock);
    return;
  }
  self->failed = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("%s", text), ("%s", detail));
}

/* Connect to addr, TLS, HELLO.  The stream, or NULL + error; *fatal set
 * when the peer answered but refused or is not an nnpipe server. */
static GIOStream *
connect_one (GstNnRemote *self, const gchar *addr, guint timeout_ms,
    gchar **device, gboolean *fatal, GError **error)
{
  GSocketClient *client = g_socket_client_new ();
  GSocketConnection *sc;
  GIOStream *stream;
  NnpRemoteHeader h;
  guint8 *payload = NULL;
  GSocket *sock;
  gchar *host = NULL, *msg;
  guint16 port;

  *fatal = FALSE;
  if (!nnp_remote_address_parse (addr, &host, &port, error)) {
    *fatal = TRUE;
    g_object_unref (client);
    return NULL;
  }
  g_socket_client_set_timeout (client, MAX (1, (timeout_ms + 999) / 1000));
  sc = g_socket_client_connect_to_host (client, host, port, self->cancellable,
      error);
  g_object_unref (client);
  if (sc == NULL) {
    g_free (host);
    return NULL;
  }
  sock = g_socket_connection_get_socket (sc);
  g_socket_set_option (sock, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
  /* the handshake must not hang on a silent peer */
  g_socket_set_timeout (sock, MAX (1, (timeout_ms + 999) / 1000));
  if (self->tls) {
    GSocketConnectable *id = g_network_address_new (host, port);
    GIOStream *tls = g_tls_client_connection_new (G_IO_STREAM (sc), id, error);

    g_object_unref (id);
    if (tls && self->tls_ca && self->tls_ca[0]) {
      GTlsDatabase *db = g_tls_file_database_new (self->tls_ca, error);
      if (db == NULL)
        g_clear_object (&tls);
      else {
        g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
        g_object_unref (db);
      }
    }
    if (tls == NULL
        || !g_tls_connection_handshake (G_TLS_CONNECTION (tls),
            self->cancellable, error)) {
      g_prefix_error (error, "TLS: ");
      g_clear_object (&tls);
      g_object_unref (sc);
      g_free (host);
      *fatal = TRUE;
      return NULL;
    }
    stream = tls;
    g_object_unref (sc);
  } else {
    stream = G_IO_STREAM (sc);
  }
  g_free (host);

  if (!nnp_remote_send (g_io_stream_get_output_stream (stream),
          NNP_REMOTE_HELLO, 0, self->hello, self->hello_size, self->cancellable,
          error))
    goto failed;
  if (!nnp_remote_recv (g_io_stream_get_input_stream (stream), 1u << 20, &h,
          &payload, self->cancellable, error)) {
    /* garbage, another protocol, another version: not worth retrying */
    if (g_error_matches (*error, NNP_ERROR, NNP_ERROR_PARSE)
        || g_error_matches (*error, NNP_ERROR, NNP_ERROR_UNSUPPORTED))
      *fatal = TRUE;
    goto failed;
  }
  if (h.type == NNP_REMOTE_ERROR || h.type == NNP_REMOTE_HELLO_OK) {
    msg = nnp_remote_string_parse (payload, h.length, error);
    g_aligned_free (payload);
    if (msg == NULL) {
      *fatal = TRUE;
      goto failed;
    }
    if (h.type == NNP_REMOTE_ERROR) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "refused: %s", msg);
      g_free (msg);
      *fatal = TRUE;
      goto failed;
    }
    *device = msg;
    /* from now on: no progress at all for `timeout` (no result while frames
     * wait, a send that cannot go on) means a hung server */
    g_socket_set_timeout (sock, MAX (1, (self->timeout + 999) / 1000));
  } else {
    g_aligned_free (payload);
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "answered HELLO with %s",
        nnp_remote_type_name (h.type));
    *fatal = TRUE;
    goto failed;
  }
  return stream;

failed:
  g_io_stream_close (stream, NULL, NULL);
  g_object_unref (stream);
  return NULL;
}

/* PING round trips on a fresh connection: RTT, then bandwidth. */
static void
probe (GstNnRemote *self, GIOStream *stream)
{
  GInputStream *in = g_io_stream_get_input_stream (stream);
  GOutputStream *out = g_io_stream_get_output_stream (stream);
  guint8 *big = g_malloc0 (PROBE_BYTES), *payload = NULL;
  NnpRemoteHeader h;
  gint64 t0, t1, t2;

  t0 = g_get_monotonic_time ();
  if (!nnp_remote_send (out, NNP_REMOTE_PING, 1, NULL, 0, NULL, NULL)
      || !nnp_remote_recv (in, 64, &h, &payload, NULL, NULL)
      || h.type != NNP_REMOTE_PONG)
    goto out;
  g_clear_pointer (&payload, g_aligned_free);
  t1 = g_get_monotonic_time ();
  if (!nnp_remote_send (out, NNP_REMOTE_PING, 2, big, PROBE_BYTES, NULL, NULL)
      || !nnp_remote_recv (in, 64, &h, &payload, NULL, NULL)
      || h.type != NNP_REMOTE_PONG)
    goto out;
  t2 = g_get_monotonic_time ();
  g_mutex_lock (&self->lock);
  self->rtt_us = (guint64) (t1 - t0);
  /* the big ping's time beyond one round trip is the transfer */
  self->bandwidth = PROBE_BYTES * 1e6 / MAX (1, (t2 - t1) - (t1 - t0));
  g_mutex_unlock (&self->lock);
  GST_INFO_OBJECT (self, "rtt %" G_GINT64_FORMAT " us, bandwidth %.1f MB/s",
      t1 - t0, self->bandwidth / 1e6);
out:
  g_clear_pointer (&payload, g_aligned_free);
  g_free (big);
}

/* Wait up to ms, waking early when stopping.  FALSE when stopping. */
static gboolean
backoff_wait (GstNnRemote *self, guint ms)
{
  gint64 until = g_get_monotonic_time () + ms * G_TIME_SPAN_MILLISECOND;
  gboolean go;

  g_mutex_lock (&self->lock);
  while (!self->stopping && !self->flushing
      && g_cond_wait_until (&self->cond, &self->lock, until))
    ;
  go = !self->stopping;
  g_mutex_unlock (&self->lock);
  return go;
}

/* Connect to the current host or the next ones until timeout. */
static gboolean
connect_any (GstNnRemote *self)
{
  gint64 deadline = g_get_monotonic_time ()
      + (gint64) self->timeout * G_TIME_SPAN_MILLISECOND;
  gchar **reasons = g_new0 (gchar *, self->n_addrs + 1);
  guint delay = 50;
  gboolean ok = FALSE;

  for (;;) {
    for (gint k = 0; k < self->n_addrs; k++) {
      gint i = (self->cur_addr + k) % self->n_addrs;
      gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
      GError *err = NULL;
      gboolean fatal = FALSE;
      gchar *device = NULL;
      GIOStream *stream;

      if (self->stopping)
        goto out;
      stream = connect_one (self, self->addrs[i], (guint) MAX (left, 1000),
          &device, &fatal, &err);
      if (stream == NULL) {
        if (self->stopping
            || g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
          g_clear_error (&err);
          goto out;
        }
        if (fatal) {
          gchar *text = g_strdup_printf ("Server %s cannot run this stage.",
              self->addrs[i]);
          fail (self, text, err->message);
          g_free (text);
          g_error_free (err);
          goto out;
        }
        g_free (reasons[i]);
        reasons[i] = g_strdup (err->message);
        GST_DEBUG_OBJECT (self, "%s: %s", self->addrs[i], err->message);
        g_error_free (err);
        continue;
      }
      if (!self->connected_once)
        probe (self, stream);
      g_mutex_lock (&self->lock);
      if (self->connected_once)
        self->reconnects++;
      self->connected_once = TRUE;
      self->conn = stream;
      self->gen++;
      self->cur_addr = i;
      g_free (self->server);
      self->server = g_strdup_printf ("%s (%s)", self->addrs[i], device);
      g_mutex_unlock (&self->lock);
      GST_INFO_OBJECT (self, "connected to %s, device %s", self->addrs[i],
          device);
      g_free (device);
      ok = TRUE;
      goto out;
    }
    if (g_get_monotonic_time () >= deadline) {
      GString *s = g_string_new (NULL);
      gchar *text;

      for (gint i = 0; i < self->n_addrs; i++)
        g_string_append_printf (s, "%s%s (%s)", i ? ", " : "", self->addrs[i],
            reasons[i] ? reasons[i] : "not tried");
      text = g_strdup_printf ("No nnpipe server reachable within %u ms: %s.",
          self->timeout, s->str);
      fail (self, text, s->str);
      g_free (text);
      g_string_free (s, TRUE);
      goto out;
    }
    if (!backoff_wait (self, delay))
      goto out;
    delay = MIN (delay * 2, 1000);
  }
out:
  g_strfreev (reasons);
  if (ok)
    send_pending (self);
  return ok;
}

/* ------------------------------------------------------------ results */

/* Push an event item, holding a segment back until there are caps. */
static void
push_event (GstNnRemote *self, GstEvent *event)
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
    push_event (self, p->event);
    p->event = NULL;
    pending_free (p);
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
  pending_free (p);
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
  fail (self, text, err->message);
  g_free (text);
  g_error_free (err);
  gst_pad_pause_task (self->srcpad);
}
}

static void
gst_nn_remote_loop (GstNnRemote *self)
{
  GIOStream *conn;
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
  gen = self->gen;
  g_mutex_unlock (&self->lock);

  if (conn == NULL) {
    if (!connect_any (self))
      gst_pad_pause_task (self->srcpad);
    return;
  }
  if (!nnp_remote_recv (g_io_stream_get_input_stream (conn), self->max_payload,
          &h, &payload, self->cancellable, &err)) {
    g_object_unref (conn);
    if (self->stopping
        || g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_error_free (err);
      gst_pad_pause_task (self->srcpad);
      return;
    }
    if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
      guint waiting;

      g_mutex_lock (&self->lock);
      waiting = self->n_frames;
      g_mutex_unlock (&self->lock);
      /* idle: nothing was due (a TLS stream is not read on after a timeout) */
      if (waiting == 0 && !self->tls) {
        g_error_free (err);
        return;
      }
      if (waiting > 0) {
        GST_WARNING_OBJECT (self,
            "%s: no result for %u ms with %u frames "
            "waiting, trying the next server",
            self->addrs[self->cur_addr], self->timeout, waiting);
        self->cur_addr = (self->cur_addr + 1) % self->n_addrs;
      }
      g_error_free (err);
      drop_conn (self, gen);
      return;
    }
    if (g_error_matches (err, NNP_ERROR, NNP_ERROR_PARSE)
        || g_error_matches (err, NNP_ERROR, NNP_ERROR_UNSUPPORTED)) {
      gchar *text = g_strdup_printf ("Server %s sent garbage.",
          self->addrs[self->cur_addr]);
      fail (self, text, err->message);
      g_free (text);
      g_error_free (err);
      gst_pad_pause_task (self->srcpad);
      return;
    }
    GST_WARNING_OBJECT (self, "connection to %s lost (%s), reconnecting",
        self->addrs[self->cur_addr], err->message);
    g_error_free (err);
    drop_conn (self, gen);
    return;
  }
  g_object_unref (conn);

  switch (h.type) {
    case NNP_REMOTE_RESULT:
      handle_result (self, h.seq, payload, h.length);
      return;
    case NNP_REMOTE_ERROR: {
      gchar *msg = nnp_remote_string_parse (payload, h.length, NULL);
      gchar *text =
          g_strdup_printf ("Server %s failed.", self->addrs[self->cur_addr]);
      fail (self, text, msg ? msg : "(malformed ERROR message)");
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
      fail (self, text, "protocol error");
      g_free (text);
      gst_pad_pause_task (self->srcpad);
      break;
    }
  }
  g_aligned_free (payload);
}

/* ------------------------------------------------------------ sink pad */

static GstFlowReturn
gst_nn_remote_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstNnRemote *self = GST_NN_REMOTE (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  Pending *p;

  if (self->in_caps == NULL)
    goto not_negotiated;
  g_mutex_lock (&self->lock);
  while (!self->flushing && !self->stopping && !self->failed
      && self->src_ret == GST_FLOW_OK && self->n_frames >= self->in_flight)
    g_cond_wait (&self->cond, &self->lock);
  if (self->flushing || self->stopping)
    ret = GST_FLOW_FLUSHING;
  else if (self->failed)
    ret = GST_FLOW_ERROR;
  else
    ret = self->src_ret;
  if (ret != GST_FLOW_OK) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buffer);
    return ret;
  }
  p = g_new0 (Pending, 1);
  p->seq = self->next_seq++;
  p->buffer = buffer;
  p->caps = gst_caps_ref (self->in_caps);
  p->caps_str = gst_caps_to_string (self->in_caps);
  p->shapes = g_strdup (self->in_shapes ? self->in_shapes : "");
  g_queue_push_tail (&self->pending, p);
  if (self->n_frames++ == 0)
    self->busy_since = g_get_monotonic_time ();
  g_mutex_unlock (&self->lock);
  send_pending (self);
  return GST_FLOW_OK;

  /* ERRORS */
not_negotiated : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before a buffer."),
      (NULL));
  gst_buffer_unref (buffer);
  return GST_FLOW_NOT_NEGOTIATED;
}
}

static gboolean
gst_nn_remote_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnRemote *self = GST_NN_REMOTE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS: {
      GstCaps *caps;
      GstNnTensorsInfo info;
      GError *err = NULL;

      gst_event_parse_caps (event, &caps);
      if (!gst_nn_tensors_info_from_caps (&info, caps, &err)) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Invalid tensor caps."),
            ("%s", err->message));
        g_error_free (err);
        gst_event_unref (event);
        return FALSE;
      }
      gst_caps_replace (&self->in_caps, caps);
      /* a part after the first: which model input shapes (the stage
       * upstream specialised for) the server's stage must use */
      {
        GstQuery *q = gst_query_new_custom (GST_QUERY_CUSTOM,
            gst_structure_new (GST_NN_SHAPES_QUERY_NAME, "digest",
                G_TYPE_STRING, self->model_digest ? self->model_digest : "",
                NULL));
        const gchar *keys = NULL;

        g_clear_pointer (&self->in_shapes, g_free);
        if (gst_pad_peer_query (self->sinkpad, q))
          keys =
              gst_structure_get_string (gst_query_get_structure (q), "shapes");
        /* the most recent first: the one the caps come from */
        if (keys && keys[0])
          self->in_shapes = g_strndup (keys, strcspn (keys, "|"));
        GST_DEBUG_OBJECT (self,
            "caps %" GST_PTR_FORMAT ", model input shapes "
            "%s",
            caps, self->in_shapes ? self->in_shapes : "(none)");
        gst_query_unref (q);
      }
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      g_queue_clear_full (&self->pending, (GDestroyNotify) pending_free);
      self->n_frames = 0;
      self->busy_since = 0;
      self->flushing = FALSE;
      self->src_ret = GST_FLOW_OK;
      g_mutex_unlock (&self->lock);
      return gst_pad_push_event (self->srcpad, event);
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);

  /* serialized: after the results of the frames before it */
  g_mutex_lock (&self->lock);
  if (self->pending.length == 0 && self->pushing == 0) {
    g_mutex_unlock (&self->lock);
    push_event (self, event);
    return TRUE;
  }
  {
    Pending *p = g_new0 (Pending, 1);
    p->event = event;
    g_queue_push_tail (&self->pending, p);
  }
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_nn_remote_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS: {
      GstCaps *filter, *caps = gst_pad_get_pad_template_caps (pad);

      gst_query_parse_caps (query, &filter);
      if (filter) {
        GstCaps *c =
            gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = c;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------ states */

static gboolean
gst_nn_remote_prepare (GstNnRemote *self)
{
  NnpRemoteHello hello = { 0 };
  GError *err = NULL;
  gchar *list = NULL, *digest = NULL, *part = NULL;
  NnpPlan *plan = NULL;

  GST_OBJECT_LOCK (self);
  list = self->hosts && self->hosts[0]
      ? g_strdup (self->hosts)
      : g_strdup_printf ("%s:%u", self->host, self->port);
  digest = g_strdup (self->digest);
  if (self->plan)
    plan = nnp_plan_copy (self->plan);
  GST_OBJECT_UNLOCK (self);

  if (plan == NULL && self->plan_path && self->plan_path[0]) {
    plan = nnp_plan_load (self->plan_path, &err);
    if (plan == NULL)
      goto bad_plan;
  }
  if (!(digest && digest[0]) && self->model && self->model[0]) {
    NnpModel *model = nnp_model_load (self->model, &err);
    if (model == NULL)
      goto bad_model;
    g_free (digest);
    digest = g_strdup (nnp_model_get_digest (model));
    nnp_model_unref (model);
  }
  if (!(digest && digest[0]) && plan && plan->digest) {
    g_free (digest);
    digest = g_strdup (plan->digest);
  }

  /* "remote://a:7000|b:7000" or "a:7000|b:7000" */
  if (g_str_has_prefix (list, "remote://"))
    memmove (list, list + 9, strlen (list + 9) + 1);
  g_strfreev (self->addrs);
  self->addrs = g_strsplit (list, "|", 64);
  self->n_addrs = (gint) g_strv_length (self->addrs);
  for (gint i = 0; i < self->n_addrs; i++) {
    gchar *h = NULL;
    guint16 port;

    g_strstrip (self->addrs[i]);
    if (g_str_has_prefix (self->addrs[i], "remote://"))
      memmove (self->addrs[i], self->addrs[i] + 9,
          strlen (self->addrs[i] + 9) + 1);
    if (!nnp_remote_address_parse (self->addrs[i], &h, &port, &err))
      goto bad_hosts;
    g_free (h);
  }
  if (self->n_addrs == 0)
    goto bad_hosts;
  self->cur_addr = 0;

  hello.version = NNP_REMOTE_VERSION;
  hello.digest = digest ? digest : (gchar *) "";
  g_free (self->model_digest);
  self->model_digest = g_strdup (hello.digest);
  hello.token = self->token ? self->token : (gchar *) "";
  if (plan) {
    if (self->stage < 0 || self->stage >= plan->n_stages)
      goto bad_stage;
    hello.part_kind = NNP_REMOTE_PART_PLAN;
    part = nnp_plan_to_json (plan);
    hello.stage = (guint32) self->stage;
  } else if (self->nodes && self->nodes[0]) {
    hello.part_kind = NNP_REMOTE_PART_NODES;
    part = g_strdup (self->nodes);
  } else {
    hello.part_kind = NNP_REMOTE_PART_WHOLE;
    part = g_strdup ("");
  }
  hello.part = part;
  g_free (self->hello);
  self->hello = nnp_remote_hello_encode (&hello, &self->hello_size);
  g_free (part);
  g_free (digest);
  g_free (list);
  if (plan)
    nnp_plan_free (plan);
  return TRUE;

  /* ERRORS */
bad_plan : {
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot load the plan."),
      ("%s", err->message));
  goto fail;
}
bad_model : {
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot load the model."),
      ("%s", err->message));
  goto fail;
}
bad_hosts : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid hosts '%s'.", list),
      ("%s", err ? err->message : "no host"));
  goto fail;
}
bad_stage : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("Invalid stage %d.", self->stage),
      ("the plan has %d stages", plan->n_stages));
  goto fail;
}
fail:
  g_clear_error (&err);
  g_free (digest);
  g_free (list);
  if (plan)
    nnp_plan_free (plan);
  return FALSE;
}

static void
gst_nn_remote_reset (GstNnRemote *self)
{
  g_mutex_lock (&self->lock);
  g_queue_clear_full (&self->pending, (GDestroyNotify) pending_free);
  self->n_frames = 0;
  self->next_seq = 0;
  g_clear_object (&self->conn);
  self->failed = FALSE;
  self->flushing = FALSE;
  self->src_ret = GST_FLOW_OK;
  self->connected_once = FALSE;
  self->reconnects = 0;
  self->busy_since = 0;
  self->busy_ns = 0;
  self->frames = 0;
  g_mutex_unlock (&self->lock);
  gst_clear_caps (&self->in_caps);
  g_clear_pointer (&self->in_shapes, g_free);
  gst_clear_caps (&self->out_caps);
  gst_clear_event (&self->held_segment);
}

static GstStateChangeReturn
gst_nn_remote_change_state (GstElement *element, GstStateChange transition)
{
  GstNnRemote *self = GST_NN_REMOTE (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!gst_nn_remote_prepare (self))
        return GST_STATE_CHANGE_FAILURE;
      gst_nn_remote_reset (self);
      g_mutex_lock (&self->lock);
      self->stopping = FALSE;
      g_mutex_unlock (&self->lock);
      g_clear_object (&self->cancellable);
      self->cancellable = g_cancellable_new ();
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      g_mutex_lock (&self->lock);
      self->stopping = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      g_cancellable_cancel (self->cancellable);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_remote_parent_class)
            ->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      gst_pad_start_task (self->srcpad, (GstTaskFunction) gst_nn_remote_loop,
          self, NULL);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      gst_pad_stop_task (self->srcpad);
      gst_nn_remote_reset (self);
      break;
    default:
      break;
  }
  return ret;
}

/* ------------------------------------------------------------ properties */

static void
gst_nn_remote_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnRemote *self = GST_NN_REMOTE (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      str = &self->host;
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_HOSTS:
      str = &self->hosts;
      break;
    case PROP_IN_FLIGHT:
      self->in_flight = g_value_get_uint (value);
      break;
    case PROP_TIMEOUT:
      self->timeout = g_value_get_uint (value);
      break;
    case PROP_TLS:
      self->tls = g_value_get_boolean (value);
      break;
    case PROP_TLS_CA:
      str = &self->tls_ca;
      break;
    case PROP_TOKEN:
      str = &self->token;
      break;
    case PROP_MODEL:
      str = &self->model;
      break;
    case PROP_DIGEST:
      str = &self->digest;
      break;
    case PROP_NODES:
      str = &self->nodes;
      break;
    case PROP_PLAN:
      str = &self->plan_path;
      break;
    case PROP_PLAN_OBJECT: {
      const NnpPlan *plan = g_value_get_pointer (value);
      if (self->plan)
        nnp_plan_free (self->plan);
      self->plan = plan ? nnp_plan_copy (plan) : NULL;
      break;
    }
    case PROP_STAGE:
      self->stage = g_value_get_int (value);
      break;
    case PROP_MAX_PAYLOAD:
      self->max_payload = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  if (str) {
    g_free (*str);
    *str = g_value_dup_string (value);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_remote_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnRemote *self = GST_NN_REMOTE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_HOSTS:
      g_value_set_string (value, self->hosts);
      break;
    case PROP_IN_FLIGHT:
      g_value_set_uint (value, self->in_flight);
      break;
    case PROP_TIMEOUT:
      g_value_set_uint (value, self->timeout);
      break;
    case PROP_TLS:
      g_value_set_boolean (value, self->tls);
      break;
    case PROP_TLS_CA:
      g_value_set_string (value, self->tls_ca);
      break;
    case PROP_TOKEN:
      g_value_set_string (value, self->token);
      break;
    case PROP_MODEL:
      g_value_set_string (value, self->model);
      break;
    case PROP_DIGEST:
      g_value_set_string (value, self->digest);
      break;
    case PROP_NODES:
      g_value_set_string (value, self->nodes);
      break;
    case PROP_PLAN:
      g_value_set_string (value, self->plan_path);
      break;
    case PROP_STAGE:
      g_value_set_int (value, self->stage);
      break;
    case PROP_MAX_PAYLOAD:
      g_value_set_uint (value, self->max_payload);
      break;
    case PROP_RTT:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value, self->rtt_us);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_BANDWIDTH:
      g_mutex_lock (&self->lock);
      g_value_set_double (value, self->bandwidth);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_RECONNECTS:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->reconnects);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_SERVER:
      g_mutex_lock (&self->lock);
      g_value_set_string (value, self->server);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_BUSY_TIME:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value,
          self->busy_ns
              + (self->busy_since
                      ? (g_get_monotonic_time () - self->busy_since) * 1000
                      : 0));
      g_mutex_unlock (&self->lock);
      break;
    case PROP_FRAMES:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value, self->frames);
      g_mutex_unlock (&self->lock);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_remote_finalize (GObject *object)
{
  GstNnRemote *self = GST_NN_REMOTE (object);

  gst_nn_remote_reset (self);
  g_free (self->host);
  g_free (self->hosts);
  g_free (self->tls_ca);
  g_free (self->token);
  g_free (self->model);
  g_free (self->digest);
  g_free (self->nodes);
  g_free (self->plan_path);
  if (self->plan)
    nnp_plan_free (self->plan);
  g_strfreev (self->addrs);
  g_free (self->hello);
  g_free (self->model_digest);
  g_free (self->server);
  g_clear_object (&self->cancellable);
  g_mutex_clear (&self->lock);
  g_mutex_clear (&self->write_lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (gst_nn_remote_parent_class)->finalize (object);
}

static void
gst_nn_remote_class_init (GstNnRemoteClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  GST_DEBUG_CATEGORY_INIT (gst_nn_remote_debug, "nnremote", 0,
      "nnpipe remote-stage client");

  gobject_class->set_property = gst_nn_remote_set_property;
  gobject_class->get_property = gst_nn_remote_get_property;
  gobject_class->finalize = gst_nn_remote_finalize;

  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host", "Server host (without hosts)",
          DEFAULT_HOST, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "Server port (without hosts)", 1,
          65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_HOSTS,
      g_param_spec_string ("hosts", "Hosts",
          "Servers to try in turn, \"a:7000|b:7000\" (a leading remote:// is "
          "allowed); overrides host and port",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_IN_FLIGHT,
      g_param_spec_uint ("in-flight", "In flight",
          "Frames sent and not yet answered, at most", 1, 1024,
          DEFAULT_IN_FLIGHT, rw));
  g_object_class_install_property (gobject_class, PROP_TIMEOUT,
      g_param_spec_uint ("timeout", "Timeout",
          "Milliseconds to find a server (at start and after a connection "
          "breaks) before failing",
          1, G_MAXUINT, DEFAULT_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_TLS,
      g_param_spec_boolean ("tls", "TLS",
          "Talk TLS, checking the server's certificate", FALSE, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_CA,
      g_param_spec_string ("tls-ca-file", "TLS CA file",
          "PEM file of the certificate authorities to trust (default: the "
          "system's)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TOKEN,
      g_param_spec_string ("token", "Token", "Shared secret for the server",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "The ONNX model (its digest is sent to the server)", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DIGEST,
      g_param_spec_string ("digest", "Digest",
          "Model digest (SHA-256 hex) instead of model", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_NODES,
      g_param_spec_string ("nodes", "Nodes",
          "The part to run remotely, as nnstage nodes= (\"a,b\", "
          "\"first..last\"); none: the whole model",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_PLAN,
      g_param_spec_string ("plan", "Plan",
          "Plan file whose stage runs remotely", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_PLAN_OBJECT,
      g_param_spec_pointer ("plan-object", "Plan object",
          "An NnpPlan (copied) instead of a plan file (used by nnpipeline)",
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_STAGE,
      g_param_spec_int ("stage", "Stage", "Stage of the plan to run remotely",
          0, 1024, 0, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PAYLOAD,
      g_param_spec_uint ("max-payload", "Max payload",
          "Largest result accepted (bytes)", 1024, G_MAXUINT32,
          DEFAULT_MAX_PAYLOAD, rw));
  g_object_class_install_property (gobject_class, PROP_RTT,
      g_param_spec_uint64 ("rtt", "RTT",
          "Round-trip time measured at the first connection (microseconds)", 0,
          G_MAXUINT64, 0, ro));
  g_object_class_install_property (gobject_class, PROP_BANDWIDTH,
      g_param_spec_double ("bandwidth", "Bandwidth",
          "Bytes per second measured at the first connection", 0, G_MAXDOUBLE,
          0, ro));
  g_object_class_install_property (gobject_class, PROP_RECONNECTS,
      g_param_spec_uint ("reconnects", "Reconnects",
          "Connections made after the first one", 0, G_MAXUINT, 0, ro));
  g_object_class_install_property (gobject_class, PROP_SERVER,
      g_param_spec_string ("server", "Server",
          "The server connected to now, \"host:port (device)\"", NULL, ro));

  /* the names of nnstage's: nnpipeline's stats read them */
  g_object_class_install_property (gobject_class, PROP_BUSY_TIME,
      g_param_spec_uint64 ("busy-time", "Busy time",
          "Nanoseconds with at least one frame at the server since start", 0,
          G_MAXUINT64, 0, ro));
  g_object_class_install_property (gobject_class, PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames", "Results pushed since start", 0,
          G_MAXUINT64, 0, ro));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "nnpipe remote stage",
      "Filter/Network", "Runs a stage of a model on an nnpipe server",
      "nnpipe");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_nn_remote_change_state);
}

static void
gst_nn_remote_init (GstNnRemote *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->in_flight = DEFAULT_IN_FLIGHT;
  self->timeout = DEFAULT_TIMEOUT;
  self->max_payload = DEFAULT_MAX_PAYLOAD;
  g_mutex_init (&self->lock);
  g_mutex_init (&self->write_lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->pending);
}
