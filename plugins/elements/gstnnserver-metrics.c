/* GStreamer nnpipe plugin: the server's metrics, health and part list over
 * HTTP (gstnnhttp.h; docs/remote.md, "Metrics and health").  Every value is
 * read under the listener's lock at each scrape. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver-private.h"
#include "gstnnhttp.h"

#define GST_CAT_DEFAULT gst_nn_server_debug

static const gchar *
part_label (GstNnServer *ep)
{
  return ep->key == NULL ? "(any)" : ep->key[0] ? ep->key : "(whole model)";
}

#define COUNTER(name, help, value) \
  G_STMT_START \
  { \
    gst_nn_metrics_declare (m, name, "counter", help); \
    gst_nn_metrics_add (m, name, (gdouble) (value), NULL); \
  } \
  G_STMT_END

static void
collect (GstNnMetrics *m, gpointer data)
{
  Listener *s = data;
  const ServerStats *st = &s->stats;
  const gchar *rejected = "nnpipe_server_connections_rejected_total";
  GHashTableIter it;
  gpointer value;
  guint n_clients = 0;

  g_mutex_lock (&s->lock);
  COUNTER ("nnpipe_server_connections_total", "TCP connections accepted",
      st->connections);
  gst_nn_metrics_declare (m, rejected, "counter",
      "Connections refused before their HELLO, by reason");
  gst_nn_metrics_add (m, rejected, (gdouble) st->rejected_limit, "reason",
      "max_connections", NULL);
  gst_nn_metrics_add (m, rejected, (gdouble) st->rejected_address, "reason",
      "max_per_address", NULL);
  gst_nn_metrics_add (m, rejected, (gdouble) st->rejected_backoff, "reason",
      "auth_backoff", NULL);
  gst_nn_metrics_add (m, rejected, (gdouble) st->rejected_budget, "reason",
      "preauth_budget", NULL);
  COUNTER ("nnpipe_server_auth_failures_total",
      "HELLOs with a wrong or missing token", st->auth_failures);
  COUNTER ("nnpipe_server_tls_failures_total", "TLS handshakes that failed",
      st->tls_failures);
  COUNTER ("nnpipe_server_handshake_timeouts_total",
      "Connections ended for no HELLO within the handshake timeout",
      st->handshake_timeouts);
  COUNTER ("nnpipe_server_idle_timeouts_total",
      "Clients ended for the idle timeout", st->idle_timeouts);
  gst_nn_metrics_declare (m, "nnpipe_server_errors_total", "counter",
      "ERROR messages sent to clients, by kind");
  gst_nn_metrics_add (m, "nnpipe_server_errors_total",
      (gdouble) st->protocol_errors, "kind", "protocol", NULL);
  gst_nn_metrics_add (m, "nnpipe_server_errors_total", (gdouble) st->refusals,
      "kind", "refused", NULL);
  gst_nn_metrics_add (m, "nnpipe_server_errors_total",
      (gdouble) st->caps_refused, "kind", "caps", NULL);
  g_hash_table_iter_init (&it, s->clients);
  while (g_hash_table_iter_next (&it, NULL, &value))
    n_clients += ((Client *) value)->authed ? 1 : 0;
  gst_nn_metrics_declare (m, "nnpipe_server_connections", "gauge",
      "Connections open now (authenticated or not)");
  gst_nn_metrics_add (m, "nnpipe_server_connections", s->n_conns, NULL);
  gst_nn_metrics_declare (m, "nnpipe_server_clients", "gauge",
      "Clients whose HELLO was accepted, connected now");
  gst_nn_metrics_add (m, "nnpipe_server_clients", n_clients, NULL);
  gst_nn_metrics_declare (m, "nnpipe_server_preauth_bytes", "gauge",
      "HELLO bytes held for unauthenticated peers");
  gst_nn_metrics_add (m, "nnpipe_server_preauth_bytes",
      (gdouble) s->preauth_bytes, NULL);
  gst_nn_metrics_declare (m, "nnpipe_server_parts", "gauge",
      "Parts served on this port");
  gst_nn_metrics_add (m, "nnpipe_server_parts", s->endpoints->len, NULL);

  gst_nn_metrics_declare (m, "nnpipe_part_frames_total", "counter",
      "Frames queued for the part");
  gst_nn_metrics_declare (m, "nnpipe_part_results_total", "counter",
      "Results the part sent back");
  gst_nn_metrics_declare (m, "nnpipe_part_busy_seconds_total", "counter",
      "Time the part had a frame at its stage");
  gst_nn_metrics_declare (m, "nnpipe_part_queue_depth", "gauge",
      "Frames waiting for the part's stage");
  gst_nn_metrics_declare (m, "nnpipe_part_clients", "gauge",
      "Clients of the part");
  for (guint i = 0; i < s->endpoints->len; i++) {
    GstNnServer *ep = g_ptr_array_index (s->endpoints, i);
    const gchar *part = part_label (ep);
    guint64 busy = ep->busy_us;
    guint n = 0;

    if (ep->in_stage > 0)
      busy += (guint64) (g_get_monotonic_time () - ep->busy_since);
    g_hash_table_iter_init (&it, s->clients);
    while (g_hash_table_iter_next (&it, NULL, &value))
      n += ((Client *) value)->ep == ep ? 1 : 0;
    gst_nn_metrics_add (m, "nnpipe_part_frames_total", (gdouble) ep->frames,
        "part", part, NULL);
    gst_nn_metrics_add (m, "nnpipe_part_results_total", (gdouble) ep->results,
        "part", part, NULL);
    gst_nn_metrics_add (m, "nnpipe_part_busy_seconds_total", busy / 1e6, "part",
        part, NULL);
    gst_nn_metrics_add (m, "nnpipe_part_queue_depth",
        g_queue_get_length (&ep->queue), "part", part, NULL);
    gst_nn_metrics_add (m, "nnpipe_part_clients", n, "part", part, NULL);
  }
  g_mutex_unlock (&s->lock);
}

/* Ready: listening, and the first part (nnpipe serve's main one) is not
 * flushing (its pipeline runs). */
static gboolean
ready (gpointer data, gchar **why)
{
  Listener *s = data;
  gboolean ok;

  g_mutex_lock (&s->lock);
  ok = !s->stopped && s->endpoints->len > 0
      && !((GstNnServer *) g_ptr_array_index (s->endpoints, 0))->flushing;
  if (!ok)
    *why = g_strdup (s->stopped ? "stopping" : "no part running");
  g_mutex_unlock (&s->lock);
  return ok;
}

/* /parts: the parts served, as JSON. */
static gchar *
parts_page (gpointer data, const gchar **content_type)
{
  Listener *s = data;
  GString *out = g_string_new ("{\"parts\": [");
  GHashTableIter it;
  gpointer value;

  g_mutex_lock (&s->lock);
  for (guint i = 0; i < s->endpoints->len; i++) {
    GstNnServer *ep = g_ptr_array_index (s->endpoints, i);
    gchar *key = g_strescape (part_label (ep), NULL);
    guint n = 0;

    g_hash_table_iter_init (&it, s->clients);
    while (g_hash_table_iter_next (&it, NULL, &value))
      n += ((Client *) value)->ep == ep ? 1 : 0;
    g_string_append_printf (out,
        "%s\n  {\"part\": \"%s\", \"clients\": %u, \"frames\": %" G_GUINT64_FORMAT
        ", \"queued\": %u, \"started\": %" G_GINT64_FORMAT "}",
        i ? "," : "", key, n, ep->frames, g_queue_get_length (&ep->queue),
        ep->started_us / G_USEC_PER_SEC);
    g_free (key);
  }
  g_mutex_unlock (&s->lock);
  g_string_append (out, "\n]}\n");
  *content_type = "application/json";
  return g_string_free (out, FALSE);
}

gboolean
gst_nn_server_metrics_start (Listener *s, GError **error)
{
  s->http = gst_nn_http_new (s->config.http, error);
  if (s->http == NULL)
    return FALSE;
  gst_nn_http_add_collector (s->http, collect, s);
  gst_nn_http_set_ready_func (s->http, ready, s);
  gst_nn_http_add_page (s->http, "/parts", parts_page, s);
  GST_INFO_OBJECT (s->owner, "metrics and health on http://%s (port %u)",
      s->config.http, gst_nn_http_get_port (s->http));
  return TRUE;
}

void
gst_nn_server_metrics_stop (Listener *s)
{
  g_clear_pointer (&s->http, gst_nn_http_free);
}
