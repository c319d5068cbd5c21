/* GStreamer nnpipe plugin: the server, one connection from accept to close
 * (admission, TLS, the conversation, clean-up) and the reaper thread that
 * ends late handshakes and idle clients (see gstnnserver-private.h,
 * docs/remote.md, "Running a server exposed to a network"). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver-private.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_nn_server_debug

/* how often the reaper looks at the connections */
#define REAPER_PERIOD_MS 200

/* TCP keepalive: a peer whose machine vanished is found out after
 * KEEPIDLE + KEEPCNT * KEEPINTVL seconds of silence */
#define KEEPIDLE_S 60
#define KEEPINTVL_S 10
#define KEEPCNT 3

static void
set_peer (Client *c, GSocketConnection *connection)
{
  GSocketAddress *addr =
      g_socket_connection_get_remote_address (connection, NULL);

  if (G_IS_INET_SOCKET_ADDRESS (addr)) {
    GInetSocketAddress *isa = G_INET_SOCKET_ADDRESS (addr);
    GInetAddress *ia = g_inet_socket_address_get_address (isa);

    c->ip = g_inet_address_to_string (ia);
    c->peer = g_inet_address_get_family (ia) == G_SOCKET_FAMILY_IPV6
        ? g_strdup_printf ("[%s]:%u", c->ip,
            g_inet_socket_address_get_port (isa))
        : g_strdup_printf ("%s:%u", c->ip,
            g_inet_socket_address_get_port (isa));
  } else {
    c->ip = g_strdup ("?");
    c->peer = g_strdup ("?");
  }
  g_clear_object (&addr);
}

static void
set_socket_options (GSocket *sock)
{
  g_socket_set_option (sock, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
  g_socket_set_keepalive (sock, TRUE);
  g_socket_set_option (sock, IPPROTO_TCP, TCP_KEEPIDLE, KEEPIDLE_S, NULL);
  g_socket_set_option (sock, IPPROTO_TCP, TCP_KEEPINTVL, KEEPINTVL_S, NULL);
  g_socket_set_option (sock, IPPROTO_TCP, TCP_KEEPCNT, KEEPCNT, NULL);
}

/* Close without a reset: a socket closed with bytes of the peer unread
 * sends an RST, which can destroy the ERROR just sent before the peer reads
 * it.  So: FIN first, then what the peer still sends is read and dropped
 * for a moment (LINGER_MS, at most 1 MiB). */
#define LINGER_MS 200

static void
close_gently (Client *c)
{
  gint64 until = g_get_monotonic_time () + LINGER_MS * 1000;
  gsize drained = 0;
  gchar buf[4096];

  if (!g_socket_shutdown (c->sock, FALSE, TRUE, NULL))
    return;
  g_socket_set_blocking (c->sock, FALSE);
  while (drained < (1u << 20)) {
    gint64 left = until - g_get_monotonic_time ();
    gssize n;

    if (left <= 0
        || !g_socket_condition_timed_wait (c->sock, G_IO_IN, left, NULL, NULL))
      break;
    n = g_socket_receive (c->sock, buf, sizeof buf, NULL, NULL);
    if (n <= 0)
      break;
    drained += (gsize) n;
  }
}

/* The TLS handshake (within the reaper's deadline).  NULL when done (the
 * client talks through the TLS stream now), else why not (g_free);
 * *plain when the peer is a plain nnpipe client (it can read an ERROR). */
static gchar *
tls_accept (Listener *s, Client *c, gboolean *plain)
{
  GError *err = NULL;
  GIOStream *tls;
  guint8 first = 0;
  GInputVector v = { &first, 1 };
  gint flags = G_SOCKET_MSG_PEEK;
  GTlsCertificateFlags bad = 0;
  gboolean ok;
  gssize n;
  gchar *why;

  *plain = FALSE;
  /* a plain client starts with "NNPR", a TLS one with a handshake record */
  n = g_socket_receive_message (c->sock, NULL, &v, 1, NULL, NULL, &flags,
      c->cancellable, &err);
  if (n <= 0)
    goto failed;
  if (first == NNP_REMOTE_MAGIC[0]) {
    *plain = TRUE;
    return g_strdup (
        "this server talks TLS: set tls=true (and tls-ca-file) on the client");
  }
  tls = g_tls_server_connection_new (c->stream, s->cert, &err);
  if (tls == NULL)
    goto failed;
  if (s->client_ca) {
    g_tls_connection_set_database (G_TLS_CONNECTION (tls), s->client_ca);
    g_object_set (tls, "authentication-mode", G_TLS_AUTHENTICATION_REQUIRED,
        NULL);
  }
  g_signal_connect (tls, "accept-certificate",
      G_CALLBACK (gst_nn_remote_tls_on_accept_certificate), &bad);
  ok =
      g_tls_connection_handshake (G_TLS_CONNECTION (tls), c->cancellable, &err);
  g_signal_handlers_disconnect_by_func (tls,
      gst_nn_remote_tls_on_accept_certificate, &bad);
  if (!ok) {
    g_object_unref (tls);
    if (bad) {
      gchar *what = gst_nn_remote_tls_flags_text (bad);

      why = g_strdup_printf (
          "TLS handshake failed: the client's certificate is refused: %s (%s)",
          what, err->message);
      g_free (what);
      g_clear_error (&err);
      return why;
    }
    goto failed;
  }
  g_object_unref (c->stream);
  c->stream = tls;
  return NULL;

failed:
  if (err == NULL)
    why = g_strdup ("TLS handshake failed: connection closed");
  else
    why = g_strdup_printf ("TLS handshake failed: %s", err->message);
  g_clear_error (&err);
  return why;
}

gboolean
gst_nn_server_on_run (GThreadedSocketService *service,
    GSocketConnection *connection, GObject *source_object, gpointer user_data)
{
  Listener *s = gst_nn_server_listener_ref (user_data);
  Client *c = g_new0 (Client, 1);
  gchar *why = NULL;
  gboolean plain = TRUE;

  c->ref_count = 1;
  g_mutex_init (&c->write_lock);
  c->cancellable = g_cancellable_new ();
  c->stream = g_object_ref (G_IO_STREAM (connection));
  c->sock = g_socket_connection_get_socket (connection);
  set_peer (c, connection);
  set_socket_options (c->sock);

  g_mutex_lock (&s->lock);
  if (s->stopped) {
    g_mutex_unlock (&s->lock);
    goto done;
  }
  s->running++;
  c->id = ++s->next_id;
  c->accepted_us = g_get_monotonic_time ();
  s->stats.connections++;
  why = gst_nn_server_peers_admit_locked (s, c->ip);
  if (why == NULL)
    g_hash_table_insert (s->clients, &c->id, gst_nn_server_client_ref (c));
  g_mutex_unlock (&s->lock);
  if (why) {
    /* refused before reading anything: a plain client reads why */
    if (s->cert == NULL)
      gst_nn_server_client_send_error (c, why);
    gst_nn_server_log (s, c->id, c->peer, "refused", why);
    goto done_running;
  }

  if (s->cert) {
    why = tls_accept (s, c, &plain);
    if (why) {
      g_mutex_lock (&s->lock);
      if (c->kicked) {
        g_free (why);
        why = g_strdup (c->kicked);
      } else {
        s->stats.tls_failures++;
      }
      g_mutex_unlock (&s->lock);
      if (plain)
        gst_nn_server_client_send_error (c, why);
      gst_nn_server_log (s, c->id, c->peer, "refused", why);
      goto removed;
    }
  }

  gst_nn_server_client_serve (s, c);

removed:
  g_mutex_lock (&s->lock);
  g_hash_table_remove (s->clients, &c->id);
  gst_nn_server_peers_release_locked (s, c->ip);
  g_mutex_unlock (&s->lock);
  if (c->writer) {
    /* no more results are queued for it: stop the writer */
    g_cancellable_cancel (c->cancellable);
    g_async_queue_push (c->results, g_new0 (Result, 1));
    g_thread_join (c->writer);
    c->writer = NULL;
  }
done_running:
  g_free (why);
  g_mutex_lock (&s->lock);
  s->running--;
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
done:
  close_gently (c);
  g_io_stream_close (c->stream, NULL, NULL);
  gst_nn_server_client_unref (c);
  gst_nn_server_listener_unref (s);
  return TRUE;
}

/* ------------------------------------------------------------ reaper */

static gpointer
reaper_thread (gpointer data)
{
  Listener *s = data;
  GHashTableIter it;
  gpointer value;

  g_mutex_lock (&s->lock);
  while (!s->stopped) {
    gint64 now = g_get_monotonic_time ();

    g_hash_table_iter_init (&it, s->clients);
    while (g_hash_table_iter_next (&it, NULL, &value)) {
      Client *c = value;
      gchar *why = NULL;

      if (c->kicked)
        continue;
      if (!c->authed
          && now - c->accepted_us
              > (gint64) s->config.handshake_timeout * 1000) {
        why = g_strdup_printf ("no %sHELLO within %u ms (handshake timeout)",
            s->cert ? "TLS handshake and " : "", s->config.handshake_timeout);
        s->stats.handshake_timeouts++;
      } else if (c->authed && s->config.idle_timeout != G_MAXUINT
          && g_atomic_int_get (&c->at_stage) == 0
          && now - c->last_rx_us
              > (gint64) s->config.idle_timeout * G_USEC_PER_SEC) {
        why = g_strdup_printf ("idle for %u s (idle timeout)",
            s->config.idle_timeout);
        s->stats.idle_timeouts++;
      }
      if (why) {
        gst_nn_server_client_kick_locked (c, why, !c->authed);
        g_free (why);
      }
    }
    g_cond_wait_until (&s->reaper_cond, &s->lock,
        now + REAPER_PERIOD_MS * G_TIME_SPAN_MILLISECOND);
  }
  g_mutex_unlock (&s->lock);
  return NULL;
}

void
gst_nn_server_reaper_start (Listener *s)
{
  s->reaper = g_thread_new ("nnserver-reaper", reaper_thread, s);
}

void
gst_nn_server_reaper_stop (Listener *s)
{
  g_mutex_lock (&s->lock);
  g_cond_broadcast (&s->reaper_cond);
  g_mutex_unlock (&s->lock);
  if (s->reaper)
    g_thread_join (s->reaper);
  s->reaper = NULL;
}
