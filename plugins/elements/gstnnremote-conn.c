/* GStreamer nnpipe plugin: nnremote, the connection (see
 * gstnnremote-private.h, docs/remote.md): connecting with HELLO, the link
 * probe, reconnecting with backoff to the same or the next host, sending
 * frames, and the watchdog telling a busy server from a hung one.
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

#include <netinet/in.h>
/* struct tcp_info with the byte counters (glibc's netinet/tcp.h lacks them) */
#include <linux/tcp.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_nn_remote_debug

#define PROBE_BYTES (1u << 20)

void
gst_nn_remote_pending_free (Pending *p)
{
  gst_clear_buffer (&p->buffer);
  gst_clear_caps (&p->caps);
  g_free (p->caps_str);
  g_free (p->shapes);
  if (p->event)
    gst_event_unref (p->event);
  g_free (p);
}

void
gst_nn_remote_drop_conn (GstNnRemote *self, guint64 gen)
{
  GIOStream *conn = NULL;
  GSocket *sock = NULL;
  GCancellable *cancel = NULL;

  g_mutex_lock (&self->lock);
  if (self->gen == gen && self->conn) {
    conn = self->conn;
    self->conn = NULL;
    sock = self->sock;
    self->sock = NULL;
    cancel = self->conn_cancel;
    self->conn_cancel = NULL;
  }
  g_mutex_unlock (&self->lock);
  if (conn) {
    /* wakes a sender or reader blocked on it; they hold their own refs */
    g_cancellable_cancel (cancel);
    g_io_stream_close (conn, NULL, NULL);
    g_object_unref (conn);
  }
  g_clear_object (&sock);
  g_clear_object (&cancel);
}

void
gst_nn_remote_send_pending (GstNnRemote *self)
{
  GPtrArray *todo = g_ptr_array_new ();
  GIOStream *conn = NULL;
  GCancellable *cancel = NULL;
  GError *err = NULL;
  guint64 gen;

  g_mutex_lock (&self->write_lock);
  g_mutex_lock (&self->lock);
  gen = self->gen;
  if (self->conn) {
    conn = g_object_ref (self->conn);
    cancel = g_object_ref (self->conn_cancel);
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
        NNP_REMOTE_FRAME, p->seq, p->caps_str, p->shapes, n, tensors, cancel,
        &err);
    gst_nn_remote_tensors_unmap (p->buffer, maps, n_maps);
  }
  g_mutex_unlock (&self->write_lock);
  for (guint i = 0; i < todo->len; i++)
    gst_nn_remote_pending_free (todo->pdata[i]);
  g_ptr_array_free (todo, TRUE);
  if (err) {
    GST_INFO_OBJECT (self, "sending failed: %s", err->message);
    g_error_free (err);
    /* the task sees the closed connection and reconnects */
    gst_nn_remote_drop_conn (self, gen);
  }
  g_clear_object (&conn);
  g_clear_object (&cancel);
}

void
gst_nn_remote_fail (GstNnRemote *self, const gchar *text, const gchar *detail)
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
    gchar **device, GSocket **sock_out, gboolean *fatal, GError **error)
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
    GIOStream *tls = gst_nn_remote_tls_client (G_IO_STREAM (sc), host, port,
        self->tls_ca, self->tls_cert, self->tls_key, self->cancellable, error);

    if (tls == NULL) {
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

  /* with TLS 1.3 the server judges a client certificate after the
   * handshake: its refusal comes with the first read */
  if (!nnp_remote_send (g_io_stream_get_output_stream (stream),
          NNP_REMOTE_HELLO, 0, self->hello, self->hello_size, self->cancellable,
          error)
      || !nnp_remote_recv (g_io_stream_get_input_stream (stream), 1u << 20, &h,
          &payload, self->cancellable, error)) {
    /* garbage, another protocol, another version: not worth retrying */
    if (g_error_matches (*error, NNP_ERROR, NNP_ERROR_PARSE)
        || g_error_matches (*error, NNP_ERROR, NNP_ERROR_UNSUPPORTED)
        || gst_nn_remote_tls_error_explain (error, host, port))
      *fatal = TRUE;
    else if (self->tls && (*error)->domain == G_IO_ERROR
        && (*error)->code != G_IO_ERROR_CANCELLED)
      g_prefix_error (error,
          "TLS: the server closed the connection after the handshake (did it refuse this client's certificate? tls-certificate): ");
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
      /* a full or busy server may take us later, or the next one now */
      *fatal = !g_str_has_prefix (msg, "server full")
          && !g_str_has_prefix (msg, "server busy")
          && !g_str_has_prefix (msg, "too many connections");
      g_free (msg);
      goto failed;
    }
    *device = msg;
    *sock_out = g_object_ref (sock);
    g_free (host);
  } else {
    g_aligned_free (payload);
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "answered HELLO with %s",
        nnp_remote_type_name (h.type));
    *fatal = TRUE;
    goto failed;
  }
  return stream;

failed:
  g_free (host);
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

gboolean
gst_nn_remote_connect_any (GstNnRemote *self)
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
      GSocket *sock = NULL;
      GIOStream *stream;

      if (self->stopping)
        goto out;
      stream = connect_one (self, self->addrs[i], (guint) MAX (left, 1000),
          &device, &sock, &fatal, &err);
      if (stream == NULL) {
        if (self->stopping
            || g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
          g_clear_error (&err);
          goto out;
        }
        if (fatal) {
          /* the reason first: what a person can change */
          gchar *text = g_str_has_prefix (err->message, "TLS: ")
              ? g_strdup_printf ("TLS with server %s failed: %s",
                  self->addrs[i], err->message + 5)
              : g_str_has_prefix (err->message, "refused: ")
              ? g_strdup_printf ("Server %s refused this client: %s",
                  self->addrs[i], err->message + 9)
              : g_strdup_printf ("Server %s cannot run this stage: %s",
                  self->addrs[i], err->message);
          gst_nn_remote_fail (self, text, err->message);
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
      /* from now on no socket timeout: the watchdog tells a hung server
       * (no byte moving for `timeout` while frames wait) from a busy one */
      g_socket_set_timeout (sock, 0);
      g_mutex_lock (&self->lock);
      if (self->connected_once)
        self->reconnects++;
      self->connected_once = TRUE;
      self->conn = stream;
      self->sock = sock;
      self->conn_cancel = g_cancellable_new ();
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
      gst_nn_remote_fail (self, text, s->str);
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
    gst_nn_remote_send_pending (self);
  return ok;
}


/* ------------------------------------------------------------ watchdog */

/* Bytes the peer sent us or acknowledged of ours, as the kernel counts
 * them: it moves while the server is alive (its results, its keepalives
 * while it computes, its TCP stack taking our frames), not when it hangs. */
static guint64
tcp_progress (GSocket *sock)
{
  struct tcp_info ti;
  socklen_t len = sizeof ti;

  memset (&ti, 0, sizeof ti);
  if (getsockopt (g_socket_get_fd (sock), IPPROTO_TCP, TCP_INFO, &ti, &len)
      != 0)
    return 0;
  return ti.tcpi_bytes_received + ti.tcpi_bytes_acked;
}

/* A server is hung, not busy, when frames wait and no byte has moved on
 * its connection for `timeout` ms: a server computing a frame slower than
 * that still sends keepalives (gstnnserver-client.c), so it is waited for.
 * Cancelling the connection wakes the task's read and a blocked send; the
 * task then moves on to the next host. */
static gpointer
watchdog_thread (gpointer data)
{
  GstNnRemote *self = data;
  guint64 last = 0, seen_gen = 0;
  gint64 since = 0;

  g_mutex_lock (&self->lock);
  while (!self->stopping) {
    gint64 now = g_get_monotonic_time ();
    guint period = CLAMP (self->timeout / 8, 5, 500);

    if (self->sock && self->n_frames > 0 && self->hung_gen != self->gen) {
      guint64 progress = tcp_progress (self->sock);

      if (since == 0 || seen_gen != self->gen || progress != last) {
        seen_gen = self->gen;
        last = progress;
        since = now;
      } else if (now - since >= (gint64) self->timeout * 1000) {
        GST_WARNING_OBJECT (self,
            "%s: nothing received or acknowledged for %u ms with %u frames waiting: hung, trying the next server",
            self->addrs[self->cur_addr], self->timeout, self->n_frames);
        self->hung_gen = self->gen;
        g_cancellable_cancel (self->conn_cancel);
        since = 0;
      }
    } else {
      since = 0;
    }
    g_cond_wait_until (&self->cond, &self->lock,
        now + (gint64) period * G_TIME_SPAN_MILLISECOND);
  }
  g_mutex_unlock (&self->lock);
  return NULL;
}

void
gst_nn_remote_watchdog_start (GstNnRemote *self)
{
  self->watchdog = g_thread_new ("nnremote-watchdog", watchdog_thread, self);
}

void
gst_nn_remote_watchdog_stop (GstNnRemote *self)
{
  /* the caller set stopping and broadcast the condition */
  if (self->watchdog)
    g_thread_join (self->watchdog);
  self->watchdog = NULL;
}
