/* GStreamer nnpipe plugin: the shared listening side of nnserversrc and
 * nnserversink (see gstnnserver.h, docs/remote.md). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver-private.h"
#include "gstnntensorcaps.h"

#include "gstnnhttp.h"

#include <nnpipe/nnpipe.h>
#include <string.h>
#include <sys/resource.h>

GST_DEBUG_CATEGORY (gst_nn_server_debug);
#define GST_CAT_DEFAULT gst_nn_server_debug

/* port -> Listener (no ref: removed when its first endpoint stops) */
static GMutex registry_lock;
static GHashTable *registry;

static void
ensure_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_nn_server_debug, "nnserver", 0,
        "nnpipe remote-stage server");
    g_once_init_leave (&once, 1);
  }
}

/* ------------------------------------------------------------ lifetime */

static GstNnServer *
endpoint_new (Listener *l, const GstNnServerConfig *config, GObject *owner)
{
  GstNnServer *ep = g_new0 (GstNnServer, 1);

  ep->l = gst_nn_server_listener_ref (l);
  ep->key = g_strdup (config->part);
  ep->owner = owner;
  ep->max_queue = config->max_queue;
  ep->id = ++l->next_part_id;
  ep->started_us = g_get_real_time ();
  g_queue_init (&ep->queue);
  g_ptr_array_add (l->endpoints, ep);
  return ep;
}

/* Join the listener of config->port: serve another part on it. */
static GstNnServer *
join (Listener *l, const GstNnServerConfig *config, GObject *owner,
    GError **error)
{
  GstNnServer *ep = NULL;

  g_mutex_lock (&l->lock);
  for (guint i = 0; i < l->endpoints->len; i++) {
    GstNnServer *o = g_ptr_array_index (l->endpoints, i);
    if (!o->stopped && g_strcmp0 (o->key, config->part) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "port %u already serves part '%.200s' in this process", l->port,
          config->part ? config->part : "(any)");
      g_mutex_unlock (&l->lock);
      return NULL;
    }
  }
  if (l->stopped || l->endpoints->len >= MAX_ENDPOINTS)
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "port %u serves %d parts already", l->port, MAX_ENDPOINTS);
  else
    ep = endpoint_new (l, config, owner);
  g_mutex_unlock (&l->lock);
  if (ep)
    GST_INFO_OBJECT (owner, "serving part '%.200s' on port %u",
        config->part ? config->part : "(any)", l->port);
  return ep;
}

/* The accept thread: listens on accept_sa and accepts in a context of its
 * own.  GThreadedSocketService without GIO's thread limit: at its limit it
 * stops and restarts the service from a connection's thread, which raced
 * with the accept when many connections closed at once (issue 19 D2: a
 * SIGSEGV in GIO's accept path on the main thread); max-connections bounds
 * the threads instead. */
static gpointer
accept_thread (gpointer data)
{
  Listener *s = data;
  GSocketAddress *bound = NULL;
  GError *err = NULL;
  gboolean ok;

  g_main_context_push_thread_default (s->accept_ctx);
  s->service = g_threaded_socket_service_new (-1);
  /* not yet: the first part is not there (accept_start starts it) */
  g_socket_service_stop (s->service);
  g_signal_connect (s->service, "run", G_CALLBACK (gst_nn_server_on_run), s);
  ok = g_socket_listener_add_address (G_SOCKET_LISTENER (s->service),
      s->accept_sa, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, &bound,
      &err);
  g_mutex_lock (&s->lock);
  if (ok)
    s->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  s->accept_error = err;
  s->accept_ready = TRUE;
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  g_clear_object (&bound);
  if (ok)
    g_main_loop_run (s->accept_loop);
  g_socket_service_stop (s->service);
  g_socket_listener_close (G_SOCKET_LISTENER (s->service));
  g_main_context_pop_thread_default (s->accept_ctx);
  return NULL;
}

static gboolean
accept_start (gpointer data)
{
  Listener *s = data;

  g_socket_service_start (s->service);
  return G_SOURCE_REMOVE;
}

static gboolean
accept_quit (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

/* Stop accepting and close the port (the service stays, for the
 * connections still running). */
static void
accept_stop (Listener *s)
{
  if (s->accept_thread == NULL)
    return;
  g_main_context_invoke (s->accept_ctx, accept_quit, s->accept_loop);
  g_thread_join (s->accept_thread);
  s->accept_thread = NULL;
}

/* A connection is a file descriptor: max-connections beyond the open-file
 * limit would make accept() fail (EMFILE) in a loop.  Raise the soft limit
 * to the hard one if needed, else lower max-connections to fit. */
static void
clamp_to_open_files (Listener *s)
{
  struct rlimit rl;
  rlim_t want = (rlim_t) s->config.max_connections + 128;

  if (getrlimit (RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
    return;
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want) {
    rl.rlim_cur = want;
    if (setrlimit (RLIMIT_NOFILE, &rl) == 0) {
      GST_INFO_OBJECT (s->owner, "open-file limit raised to %lu",
          (gulong) want);
      return;
    }
  }
  getrlimit (RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur > 256) {
    GST_WARNING_OBJECT (s->owner,
        "max-connections %u lowered to %lu: the open-file limit is %lu (ulimit -n)",
        s->config.max_connections, (gulong) (rl.rlim_cur - 128),
        (gulong) rl.rlim_cur);
    s->config.max_connections = (guint) (rl.rlim_cur - 128);
  } else {
    GST_WARNING_OBJECT (s->owner,
        "max-connections %u lowered to 128: the open-file limit is %lu (ulimit -n)",
        s->config.max_connections, (gulong) rl.rlim_cur);
    s->config.max_connections = MIN (s->config.max_connections, 128);
  }
}

GstNnServer *
gst_nn_server_start (const GstNnServerConfig *config, GObject *owner,
    GError **error)
{
  Listener *s;
  GstNnServer *ep;
  GInetAddress *ia;

  ensure_debug ();
  if (config->port != 0) {
    Listener *l = NULL;

    g_mutex_lock (&registry_lock);
    if (registry)
      l = g_hash_table_lookup (registry, GUINT_TO_POINTER (config->port));
    if (l)
      gst_nn_server_listener_ref (l);
    g_mutex_unlock (&registry_lock);
    if (l) {
      ep = join (l, config, owner, error);
      gst_nn_server_listener_unref (l);
      return ep;
    }
  }
  s = g_new0 (Listener, 1);
  s->ref_count = 1;
  s->owner = owner;
  g_mutex_init (&s->lock);
  g_mutex_init (&s->part_lock);
  g_cond_init (&s->cond);
  s->endpoints = g_ptr_array_new ();
  s->clients = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL,
      (GDestroyNotify) gst_nn_server_client_unref);
  s->config.host = g_strdup (config->host ? config->host : "127.0.0.1");
  s->config.port = config->port;
  s->config.tls_cert_file = g_strdup (config->tls_cert_file);
  s->config.tls_key_file = g_strdup (config->tls_key_file);
  s->config.token = g_strdup (config->token);
  s->config.digest = g_strdup (config->digest);
  s->config.part = g_strdup (config->part);
  s->config.model = g_strdup (config->model);
  s->config.device = g_strdup (config->device ? config->device : "cpu");
  s->config.max_payload = config->max_payload;
  s->config.max_queue = config->max_queue;
  s->config.tls_client_ca = g_strdup (config->tls_client_ca);
  s->config.http = g_strdup (config->http);
  s->config.handshake_timeout = config->handshake_timeout
      ? config->handshake_timeout
      : GST_NN_SERVER_DEFAULT_HANDSHAKE_TIMEOUT;
  s->config.idle_timeout = config->idle_timeout
      ? config->idle_timeout
      : GST_NN_SERVER_DEFAULT_IDLE_TIMEOUT;
  s->config.max_connections = config->max_connections
      ? config->max_connections
      : GST_NN_SERVER_DEFAULT_MAX_CONNECTIONS;
  s->config.max_per_address = config->max_per_address
      ? config->max_per_address
      : GST_NN_SERVER_DEFAULT_MAX_PER_ADDRESS;
  s->addrs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_cond_init (&s->reaper_cond);
  clamp_to_open_files (s);

  if (s->config.tls_client_ca && s->config.tls_client_ca[0]) {
    if (s->config.tls_cert_file == NULL || !s->config.tls_cert_file[0]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "client certificates (%s) need TLS: set a server certificate too",
          s->config.tls_client_ca);
      goto fail;
    }
    s->client_ca = gst_nn_remote_tls_database (s->config.tls_client_ca, error);
    if (s->client_ca == NULL) {
      g_prefix_error (error,
          "TLS client CA file '%s': ", s->config.tls_client_ca);
      goto fail;
    }
  }
  if (s->config.tls_cert_file && s->config.tls_cert_file[0]) {
    s->cert = gst_nn_remote_tls_certificate_load (s->config.tls_cert_file,
        s->config.tls_key_file, error);
    if (s->cert == NULL)
      goto fail;
  }

  ia = g_inet_address_new_from_string (s->config.host);
  if (ia == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "listen address '%s' is not an IP address", s->config.host);
    goto fail;
  }
  s->accept_sa = g_inet_socket_address_new (ia, (guint16) s->config.port);
  g_object_unref (ia);
  s->accept_ctx = g_main_context_new ();
  s->accept_loop = g_main_loop_new (s->accept_ctx, FALSE);
  s->accept_thread = g_thread_new ("nnserver-accept", accept_thread, s);
  g_mutex_lock (&s->lock);
  while (!s->accept_ready)
    g_cond_wait (&s->cond, &s->lock);
  g_mutex_unlock (&s->lock);
  if (s->accept_error) {
    g_propagate_prefixed_error (error, g_steal_pointer (&s->accept_error),
        "cannot listen on %s:%u: ", s->config.host, s->config.port);
    goto fail;
  }

  g_mutex_lock (&registry_lock);
  if (registry == NULL)
    registry = g_hash_table_new (g_direct_hash, g_direct_equal);
  if (g_hash_table_contains (registry, GUINT_TO_POINTER (s->port))) {
    g_mutex_unlock (&registry_lock);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "another nnserversrc of this process serves port %u", s->port);
    goto fail;
  }
  g_hash_table_insert (registry, GUINT_TO_POINTER (s->port), s);
  g_mutex_unlock (&registry_lock);

  if (s->config.http && s->config.http[0]
      && !gst_nn_server_metrics_start (s, error)) {
    g_mutex_lock (&registry_lock);
    g_hash_table_remove (registry, GUINT_TO_POINTER (s->port));
    g_mutex_unlock (&registry_lock);
    goto fail;
  }
  ep = endpoint_new (s, config, owner);
  gst_nn_server_listener_unref (s); /* the endpoint holds it */
  gst_nn_server_reaper_start (s);
  /* in the accept thread: the accept is attached to its context */
  g_main_context_invoke (s->accept_ctx, accept_start, s);
  GST_INFO_OBJECT (owner,
      "listening on %s:%u%s, at most %u connections (%u per address)",
      s->config.host, s->port,
      s->client_ca  ? " (TLS, client certificates)"
          : s->cert ? " (TLS)"
                    : "",
      s->config.max_connections, s->config.max_per_address);
  return ep;

fail:
  accept_stop (s);
  g_clear_object (&s->service);
  gst_nn_server_listener_unref (s);
  return NULL;
}

static void
cancel_client (gpointer key, gpointer value, gpointer data)
{
  Client *c = value;

  /* wakes its thread blocked in a read; that thread closes the stream */
  if (data == NULL || c->ep == data) {
    c->ep = NULL;
    gst_nn_server_client_kick_locked (c,
        data ? "the part stopped" : "the server stops", FALSE);
  }
}

void
gst_nn_server_stop (GstNnServer *ep)
{
  Listener *s = ep->l;
  gboolean first;

  g_mutex_lock (&s->lock);
  first = g_ptr_array_index (s->endpoints, 0) == ep;
  ep->stopped = TRUE;
  g_ptr_array_remove (s->endpoints, ep);
  /* its clients go (they reconnect and ask again); the first one's stop
   * closes the port */
  g_hash_table_foreach (s->clients, cancel_client, first ? NULL : ep);
  if (first)
    s->stopped = TRUE;
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);

  if (first) {
    g_mutex_lock (&registry_lock);
    if (registry
        && g_hash_table_lookup (registry, GUINT_TO_POINTER (s->port)) == s)
      g_hash_table_remove (registry, GUINT_TO_POINTER (s->port));
    g_mutex_unlock (&registry_lock);
    accept_stop (s);
    gst_nn_server_reaper_stop (s);
    gst_nn_server_metrics_stop (s);
    /* the connection threads log through the first nnserversrc: they end
     * (cancelled above) before it may go */
    g_mutex_lock (&s->lock);
    while (s->running > 0)
      g_cond_wait (&s->cond, &s->lock);
    g_mutex_unlock (&s->lock);
    g_clear_object (&s->service);
  }
  g_mutex_lock (&s->lock);
  g_queue_clear_full (&ep->queue, (GDestroyNotify) gst_nn_server_frame_free);
  g_mutex_unlock (&s->lock);
  g_free (ep->key);
  g_free (ep);
  gst_nn_server_listener_unref (s);
}

void
gst_nn_server_set_part_func (GstNnServer *ep, GstNnServerPartFunc func,
    gpointer data)
{
  g_mutex_lock (&ep->l->part_lock);
  ep->l->part_func = func;
  ep->l->part_data = data;
  g_mutex_unlock (&ep->l->part_lock);
}

void
gst_nn_server_set_log_func (GstNnServer *ep, GstNnServerLogFunc func,
    gpointer data)
{
  g_mutex_lock (&ep->l->lock);
  ep->l->log_func = func;
  ep->l->log_data = data;
  g_mutex_unlock (&ep->l->lock);
}

guint
gst_nn_server_get_port (GstNnServer *ep)
{
  return ep->l->port;
}

guint
gst_nn_server_get_n_clients (GstNnServer *ep)
{
  GHashTableIter it;
  gpointer value;
  guint n = 0;

  g_mutex_lock (&ep->l->lock);
  g_hash_table_iter_init (&it, ep->l->clients);
  while (g_hash_table_iter_next (&it, NULL, &value))
    n += ((Client *) value)->ep == ep ? 1 : 0;
  g_mutex_unlock (&ep->l->lock);
  return n;
}

guint
gst_nn_server_get_http_port (GstNnServer *ep)
{
  return ep->l->http ? gst_nn_http_get_port (ep->l->http) : 0;
}

void
gst_nn_server_drop_client (GstNnServer *ep, guint64 client_id,
    const gchar *message)
{
  Client *c;

  /* its own thread sends the ERROR and logs it */
  g_mutex_lock (&ep->l->lock);
  c = g_hash_table_lookup (ep->l->clients, &client_id);
  if (c)
    gst_nn_server_client_kick_locked (c, message, TRUE);
  g_mutex_unlock (&ep->l->lock);
}

/* A frame of ep leaves the stage (listener lock held). */
static void
frame_done_locked (GstNnServer *ep)
{
  if (ep->in_stage > 0 && --ep->in_stage == 0)
    ep->busy_us += (guint64) (g_get_monotonic_time () - ep->busy_since);
}

void
gst_nn_server_frame_dropped (GstNnServer *ep)
{
  g_mutex_lock (&ep->l->lock);
  frame_done_locked (ep);
  g_mutex_unlock (&ep->l->lock);
}

GstNnServerFrame *
gst_nn_server_pop (GstNnServer *ep)
{
  Listener *s = ep->l;
  GstNnServerFrame *f = NULL;

  g_mutex_lock (&s->lock);
  while (!ep->flushing && !s->stopped && g_queue_is_empty (&ep->queue))
    g_cond_wait (&s->cond, &s->lock);
  if (!ep->flushing && !s->stopped)
    f = g_queue_pop_head (&ep->queue);
  if (f && ep->in_stage++ == 0)
    ep->busy_since = g_get_monotonic_time ();
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  return f;
}

void
gst_nn_server_set_flushing (GstNnServer *ep, gboolean flushing)
{
  g_mutex_lock (&ep->l->lock);
  ep->flushing = flushing;
  g_cond_broadcast (&ep->l->cond);
  g_mutex_unlock (&ep->l->lock);
}

gboolean
gst_nn_server_send_result (guint port, const GstNnServerMeta *meta,
    const gchar *caps, GstBuffer *buffer)
{
  Listener *s = NULL;
  Client *c = NULL;
  gboolean ok = FALSE;

  ensure_debug ();
  g_mutex_lock (&registry_lock);
  if (registry)
    s = g_hash_table_lookup (registry, GUINT_TO_POINTER (port));
  if (s)
    gst_nn_server_listener_ref (s);
  g_mutex_unlock (&registry_lock);
  if (s == NULL)
    return FALSE;
  g_mutex_lock (&s->lock);
  for (guint i = 0; i < s->endpoints->len; i++) {
    GstNnServer *ep = g_ptr_array_index (s->endpoints, i);

    if (ep->id == meta->part_id) {
      ep->results++;
      frame_done_locked (ep);
    }
  }
  c = g_hash_table_lookup (s->clients, &meta->client_id);
  if (c && c->results) {
    if (g_async_queue_length (c->results) < MAX_RESULTS_QUEUED) {
      Result *r = g_new0 (Result, 1);

      r->seq = meta->seq;
      r->caps = g_strdup (caps);
      r->buffer = gst_buffer_ref (buffer);
      g_async_queue_push (c->results, r);
      ok = TRUE;
    } else {
      GST_WARNING_OBJECT (s->owner,
          "client %" G_GUINT64_FORMAT
          " does not read its results (%d waiting): dropped",
          meta->client_id, MAX_RESULTS_QUEUED);
      gst_nn_server_client_kick_locked (c,
          "too slow: results not read (16 waiting)", TRUE);
    }
  } else {
    GST_DEBUG ("client %" G_GUINT64_FORMAT " is gone, result %" G_GUINT64_FORMAT
               " dropped",
        meta->client_id, meta->seq);
  }
  g_mutex_unlock (&s->lock);
  gst_nn_server_listener_unref (s);
  return ok;
}
