/* GStreamer nnpipe plugin: the server's table of peer addresses (open
 * connections per address, failed authentications and their back-off) and
 * its log lines (see gstnnserver-private.h, docs/remote.md). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver-private.h"

#define GST_CAT_DEFAULT gst_nn_server_debug

/* After k failed authentications in a row from an address, new connections
 * from it are refused for BACKOFF_FIRST_MS * 2^(k-1), at most BACKOFF_MAX_MS;
 * the count is forgotten after a success or FORGET_US without failure. */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 10000
#define FORGET_US (600 * G_USEC_PER_SEC)

static PeerAddr *
addr_get (Listener *s, const gchar *ip, gboolean create)
{
  PeerAddr *a = g_hash_table_lookup (s->addrs, ip);

  if (a == NULL && create) {
    a = g_new0 (PeerAddr, 1);
    g_hash_table_insert (s->addrs, g_strdup (ip), a);
  }
  return a;
}

/* Forget an address with nothing to remember (bounded table). */
static void
addr_maybe_forget (Listener *s, const gchar *ip, PeerAddr *a, gint64 now)
{
  if (a->n_conns == 0
      && (a->failures == 0 || now - a->last_failure > FORGET_US))
    g_hash_table_remove (s->addrs, ip);
}

gchar *
gst_nn_server_peers_admit_locked (Listener *s, const gchar *ip)
{
  gint64 now = g_get_monotonic_time ();
  PeerAddr *a = addr_get (s, ip, FALSE);

  if (a && a->blocked_until > now) {
    s->stats.rejected_backoff++;
    return g_strdup_printf (
        "too many failed authentications from %s: retry in %" G_GINT64_FORMAT
        " ms",
        ip, (a->blocked_until - now + 999) / 1000);
  }
  if (s->n_conns >= s->config.max_connections) {
    s->stats.rejected_limit++;
    return g_strdup_printf (
        "server full: %u connections open (max-connections)", s->n_conns);
  }
  if (a && a->n_conns >= s->config.max_per_address) {
    s->stats.rejected_address++;
    return g_strdup_printf (
        "too many connections from %s: %u open (max-per-address)", ip,
        a->n_conns);
  }
  a = addr_get (s, ip, TRUE);
  a->n_conns++;
  s->n_conns++;
  return NULL;
}

void
gst_nn_server_peers_release_locked (Listener *s, const gchar *ip)
{
  PeerAddr *a = addr_get (s, ip, FALSE);

  g_return_if_fail (a != NULL && a->n_conns > 0 && s->n_conns > 0);
  a->n_conns--;
  s->n_conns--;
  addr_maybe_forget (s, ip, a, g_get_monotonic_time ());
}

guint
gst_nn_server_peers_auth_failed_locked (Listener *s, const gchar *ip)
{
  gint64 now = g_get_monotonic_time ();
  PeerAddr *a = addr_get (s, ip, TRUE);
  guint ms = BACKOFF_MAX_MS;

  if (a->failures > 0 && now - a->last_failure > FORGET_US)
    a->failures = 0;
  a->failures++;
  a->last_failure = now;
  if (a->failures <= 16)
    ms = MIN ((guint) BACKOFF_FIRST_MS << (a->failures - 1), BACKOFF_MAX_MS);
  a->blocked_until = now + (gint64) ms * 1000;
  s->stats.auth_failures++;
  return ms;
}

void
gst_nn_server_peers_auth_ok_locked (Listener *s, const gchar *ip)
{
  PeerAddr *a = addr_get (s, ip, FALSE);

  if (a) {
    a->failures = 0;
    a->blocked_until = 0;
  }
}

void
gst_nn_server_log (Listener *s, guint64 id, const gchar *peer,
    const gchar *event, const gchar *reason)
{
  GstNnServerLogFunc func;
  gpointer data;

  if (g_strcmp0 (event, "refused") == 0)
    GST_WARNING_OBJECT (s->owner,
        "client %" G_GUINT64_FORMAT " (%s) refused: %s", id, peer,
        reason ? reason : "");
  else
    GST_INFO_OBJECT (s->owner, "client %" G_GUINT64_FORMAT " (%s) %s%s%s", id,
        peer, event, reason ? ": " : "", reason ? reason : "");
  g_mutex_lock (&s->lock);
  func = s->log_func;
  data = s->log_data;
  g_mutex_unlock (&s->lock);
  if (func)
    func (event, id, peer, reason ? reason : "", g_get_real_time (), data);
  if (!GST_IS_ELEMENT (s->owner))
    return;
  gst_element_post_message (GST_ELEMENT (s->owner),
      gst_message_new_element (GST_OBJECT (s->owner),
          gst_structure_new ("nnserver-client", "event", G_TYPE_STRING, event,
              "id", G_TYPE_UINT64, id, "peer", G_TYPE_STRING, peer, "reason",
              G_TYPE_STRING, reason ? reason : "", NULL)));
}
