/* GStreamer nnpipe plugin: the server's parts (see gstnnserver.h,
 * docs/remote.md), each file building only on those listed after it
 * (check-layers: no loops):
 *   gstnnserver.c         listening sockets shared by port, parts
 *                         (endpoints), the API nnserversrc/sink use
 *   gstnnserver-metrics.c /metrics, /healthz, /readyz, /parts over HTTP
 *                         (gstnnhttp.h)
 *   gstnnserver-accept.c  one connection from accept to close: admission
 *                         (limits, back-off), TLS, the reaper thread that
 *                         ends late handshakes and idle clients
 *   gstnnserver-client.c  one client's conversation: HELLO, its frames into
 *                         its part's queue (caps checked against the part),
 *                         PING/COST, its results and keepalives back; and
 *                         what it needs below it (the meta, frames, part
 *                         keys, listener refs)
 *   gstnnserver-peers.c   the table of peer addresses (connections, failed
 *                         authentications and their back-off) and logging */
#pragma once

#include "gstnnserver.h"

#include <nnpipe/nnpipe.h>
#include <nnpipe/part.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_server_debug);

/* one connection (a client once its HELLO is accepted); refs: the
 * listener's table and its connection thread */
typedef struct
{
  gint ref_count;
  guint64 id;
  gchar *peer;       /* "127.0.0.1:41234" */
  gchar *ip;         /* "127.0.0.1": the key of its address's limits */
  GIOStream *stream; /* the socket connection or its TLS wrapper, owned */
  GSocket *sock;     /* its socket (borrowed from the connection) */
  GMutex write_lock; /* one message at a time on the stream */
  GCancellable *cancellable; /* cancelled when the server stops */
  /* results wait here for the client's writer thread, so a client that
   * does not read them stalls nobody: past MAX_RESULTS_QUEUED it is dropped */
  GAsyncQueue *results; /* Result* */
  GThread *writer;
  gint at_stage; /* its frames queued or at the stage (atomic) */
  /* the reaper's clock (listener lock): accepted when, HELLO accepted
   * (authed), last message received */
  gint64 accepted_us;
  gboolean authed;
  gint64 last_rx_us;
  gchar *kicked; /* why the reaper or the server ended it (listener lock) */
  gboolean kick_tell;  /* ... and whether the peer gets it as an ERROR */
  gsize preauth_bytes; /* its share of the pre-auth budget (listener lock) */
  gboolean talks_tls;  /* a TLS client at a plain server: no ERROR for it */
  /* its part, from the HELLO, and what checks its frames' caps (reader
   * thread only) */
  guint8 part_kind;
  gchar *part;
  guint part_stage;
  NnpPart *check;   /* or NULL: not made yet, or no model to check with */
  GstCaps *caps_ok; /* the last caps that fitted, with ... */
  gchar *shapes_ok; /* ... these model input shapes */
  GstNnServer *ep;  /* the part it talks to (listener lock), or NULL */
} Client;

#define MAX_RESULTS_QUEUED 16

typedef struct
{
  guint64 seq;
  gchar *caps;
  GstBuffer *buffer; /* NULL: the writer stops */
} Result;

/* Counters of a listener, for /metrics (listener lock, or atomic where
 * said).  Names as exposed: gstnnserver-metrics.c. */
typedef struct
{
  guint64 connections;      /* accepted */
  guint64 rejected_limit;   /* refused: max-connections */
  guint64 rejected_address; /* refused: max-per-address */
  guint64 rejected_backoff; /* refused: address in auth back-off */
  guint64 rejected_budget;  /* refused: pre-auth memory budget */
  guint64 auth_failures;
  guint64 tls_failures;
  guint64 handshake_timeouts;
  guint64 idle_timeouts;
  guint64 protocol_errors; /* ERRORs sent for malformed messages */
  guint64 refusals;        /* ERRORs sent for a HELLO refused (not auth) */
  guint64 caps_refused;    /* frames refused for their caps */
} ServerStats;

/* A peer address: its open connections and failed authentications. */
typedef struct
{
  guint n_conns;
  guint failures;       /* failed authentications in a row */
  gint64 blocked_until; /* monotonic us; new connections refused before */
  gint64 last_failure;
} PeerAddr;

/* The listening socket of a port, shared by the nnserversrc elements that
 * serve parts on it (the first one made it: its config counts). */
typedef struct _Listener Listener;
struct _Listener
{
  gint ref_count;
  GstNnServerConfig config; /* owned copies, limits defaulted */
  GObject *owner;           /* the first nnserversrc, for logs (not a ref) */
  GSocketService *service;  /* made, started and stopped in accept_thread */
  GThread *accept_thread;   /* accepts in accept_ctx: no main loop of the
                              application needed, none disturbed */
  GMainContext *accept_ctx;
  GMainLoop *accept_loop;
  GSocketAddress *accept_sa; /* the address to listen on (start-up) */
  gboolean accept_ready;     /* start-up done (lock) */
  GError *accept_error;      /* start-up failed: why (lock) */
  GTlsCertificate *cert;     /* or NULL */
  GTlsDatabase *client_ca;   /* mutual TLS: or NULL */
  guint port;                /* the bound port */

  GMutex lock; /* all below, and every endpoint's fields */
  GCond cond;
  GHashTable *clients; /* id -> Client (ref): every open connection */
  guint n_conns;
  guint64 next_id;
  GHashTable *addrs;    /* ip -> PeerAddr */
  gsize preauth_bytes;  /* HELLO bytes held by unauthenticated peers */
  GPtrArray *endpoints; /* GstNnServer* (not refs), the first one first */
  guint next_part_id;
  gboolean stopped;
  ServerStats stats;
  GThread *reaper; /* ends late handshakes and idle clients */
  GCond reaper_cond;
  gint running; /* connection threads in on_run (lock) */

  NnpModel *model; /* config.model loaded for the caps checks (lock), or NULL */
  gboolean model_failed;

  GMutex part_lock; /* one part request at a time */
  GstNnServerPartFunc part_func;
  gpointer part_data;

  struct _GstNnHttp *http; /* or NULL */
};

/* What one nnserversrc holds: the frames of the clients of one part. */
struct _GstNnServer
{
  Listener *l; /* ref */
  gchar *key;  /* the part served, NULL = any */
  guint id;    /* part_id in the metas of its frames */
  GObject *owner;
  guint max_queue;
  GQueue queue; /* GstNnServerFrame, at most max_queue */
  gboolean flushing, stopped;
  /* for /metrics (listener lock) */
  guint64 frames, results;
  gint in_stage;     /* popped, result not sent yet */
  gint64 busy_since; /* monotonic us when in_stage went above 0 */
  guint64 busy_us;   /* time with in_stage > 0, before busy_since */
  gint64 started_us; /* real time */
};

#define MAX_ENDPOINTS 16

/* gstnnserver-peers.c: the address table (listener lock held) */
/* Admit a new connection from ip: NULL, or why not (g_free). */
gchar *gst_nn_server_peers_admit_locked (Listener *s, const gchar *ip);
void gst_nn_server_peers_release_locked (Listener *s, const gchar *ip);
/* A failed authentication from ip: the back-off before its next
 * connection (ms). */
guint gst_nn_server_peers_auth_failed_locked (Listener *s, const gchar *ip);
void gst_nn_server_peers_auth_ok_locked (Listener *s, const gchar *ip);
/* One log line for the operator (nnpipe serve prints them): an element
 * message "nnserver-client" from the first nnserversrc with the event
 * (connected, refused, left), id, peer and reason, and a GST_INFO /
 * GST_WARNING line. */
void gst_nn_server_log (Listener *s, guint64 id, const gchar *peer,
    const gchar *event, const gchar *reason);

/* gstnnserver-client.c */
Listener *gst_nn_server_listener_ref (Listener *s);
void gst_nn_server_listener_unref (Listener *s);
Client *gst_nn_server_client_ref (Client *c);
void gst_nn_server_client_unref (Client *c);
/* Send ERROR(message) to the client (it is then dropped by the caller). */
void gst_nn_server_client_send_error (Client *c, const gchar *message);
void gst_nn_server_result_free (Result *r);
/* The conversation with one client after its TLS handshake: HELLO, then
 * its messages until it leaves or is dropped. */
void gst_nn_server_client_serve (Listener *s, Client *c);
/* End a connection (listener lock held): remember why, cancel its I/O;
 * with tell, its thread sends the reason as an ERROR (a peer at fault),
 * else it just closes (the server stops, an idle client: nnremote then
 * reconnects, to this server or the next). */
void gst_nn_server_client_kick_locked (Client *c, const gchar *why,
    gboolean tell);

/* gstnnserver-accept.c */
/* GThreadedSocketService::run: one connection, from accept to close
 * (user_data: the Listener). */
gboolean gst_nn_server_on_run (GThreadedSocketService *service,
    GSocketConnection *connection, GObject *source_object, gpointer user_data);
void gst_nn_server_reaper_start (Listener *s);
/* after s->stopped is set */
void gst_nn_server_reaper_stop (Listener *s);

/* gstnnserver-metrics.c */
/* Serve /metrics, /healthz, /readyz and /parts on config.http. */
gboolean gst_nn_server_metrics_start (Listener *s, GError **error);
void gst_nn_server_metrics_stop (Listener *s);

G_END_DECLS
