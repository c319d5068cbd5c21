/* GStreamer nnpipe plugin: the listening side of remote stages, shared by
 * nnserversrc and nnserversink (docs/remote.md).
 *
 * A GstNnServer listens on one TCP port (GThreadedSocketService: one thread
 * per client, no event loop of ours), checks each client's HELLO (protocol
 * version, model digest, part, token; TLS when a certificate is set), answers
 * PING and COST itself and queues the FRAMEs of every client, in arrival
 * order, for nnserversrc.  Each queued frame is tagged with a
 * GstNnServerMeta (client id, sequence number) that passes through the
 * pipeline (no tags) so nnserversink sends the RESULT back to the client
 * that sent the frame.  A client that sends anything malformed gets an ERROR
 * naming the problem and is dropped; the others are not affected.
 * Servers are found by port: nnserversrc port=P creates it, nnserversink
 * port=P finds it.  Further nnserversrc elements of the same process and
 * port join it, each serving another part (the first one's listening
 * settings count); a client goes to the one serving the part it names. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/remote.h>
#include "gstnnremotecommon.h"

G_BEGIN_DECLS

typedef struct _GstNnServer GstNnServer;

typedef struct
{
  gchar *host; /* address to listen on ("127.0.0.1", "0.0.0.0", "::") */
  guint port;  /* 0 = any free port (see gst_nn_server_get_port) */
  gchar *tls_cert_file; /* PEM certificate (+ key) or NULL for plain TCP */
  gchar *tls_key_file;  /* PEM key or NULL (then in the certificate file) */
  gchar *token;         /* shared secret a HELLO must carry, or NULL */
  gchar *digest;        /* model digest a HELLO must name, or NULL (any) */
  gchar *
      part; /* the part served (a node list key, see gst_nn_server_part_key), NULL = any */
  gchar *model;      /* model file for COST answers, or NULL */
  gchar *device;     /* device spec for COST answers */
  guint max_payload; /* bytes; larger messages are refused before allocation */
  guint max_queue;   /* frames queued for the pipeline (backpressure beyond) */
  /* limits per peer (docs/remote.md, "Running a server exposed to a
   * network"); 0 takes the default below */
  gchar *tls_client_ca;    /* PEM CA file: clients must show a certificate
                                it signed (mutual TLS), or NULL */
  guint handshake_timeout; /* ms from accept to HELLO answered */
  guint idle_timeout;      /* s without a message from an idle client
                                (G_MAXUINT: never) */
  guint max_connections;   /* open connections in all */
  guint max_per_address;   /* open connections from one IP address */
  gchar *http;             /* "ADDR:PORT" of /metrics, /healthz, /readyz,
                                /parts, or NULL */
} GstNnServerConfig;

#define GST_NN_SERVER_DEFAULT_HANDSHAKE_TIMEOUT 5000
#define GST_NN_SERVER_DEFAULT_IDLE_TIMEOUT 300
#define GST_NN_SERVER_DEFAULT_MAX_CONNECTIONS 512
#define GST_NN_SERVER_DEFAULT_MAX_PER_ADDRESS 64
/* A HELLO is read before its token is checked: at most this many bytes
 * (a plan JSON of thousands of nodes fits), read as they come, and all the
 * unauthenticated peers together hold at most PREAUTH_BUDGET bytes. */
#define GST_NN_SERVER_MAX_HELLO (1u << 20)
#define GST_NN_SERVER_PREAUTH_BUDGET (16u << 20)

/* Free the strings of a config. */
void gst_nn_server_config_clear (GstNnServerConfig *config);

/* One frame from a client, ready to become a buffer. */
typedef struct
{
  guint64 client_id;
  guint64 seq;
  GstCaps *caps;     /* owned */
  gchar *shapes;     /* model input shapes the client names, owned */
  GstBuffer *buffer; /* owned: one memory per tensor, wrapping the payload */
} GstNnServerFrame;

void gst_nn_server_frame_free (GstNnServerFrame *frame);

/* Create the server of config->port and start listening (error: address in
 * use, bad certificate...), or join the one of this process listening on
 * config->port to serve another part.  The result is what one nnserversrc
 * holds: the frames of the clients of its part. */
GstNnServer *gst_nn_server_start (const GstNnServerConfig *config,
    GObject *owner, GError **error);
/* Drop the part and its clients; the first one's stop closes the port
 * (every client goes). */
void gst_nn_server_stop (GstNnServer *server);
guint gst_nn_server_get_port (GstNnServer *server);

/* Called (from a client's thread) when a client asks for a part nobody
 * serves (its node names checked against the model when there is one): the
 * application may start an nnserversrc for `key` on this port before
 * returning (nnpipe serve builds a pipeline for it).  NULL, or why it
 * refuses the part (g_free'd; the client gets it in its ERROR). */
typedef gchar *(*GstNnServerPartFunc) (guint8 part_kind, const gchar *part,
    guint stage, const gchar *key, gpointer data);
void gst_nn_server_set_part_func (GstNnServer *server, GstNnServerPartFunc func,
    gpointer data);
guint gst_nn_server_get_n_clients (GstNnServer *server);
/* The HTTP port of the metrics and health endpoints (0: none). */
guint gst_nn_server_get_http_port (GstNnServer *server);

/* Next frame (blocks); NULL when unlocked (flushing) or stopped. */
GstNnServerFrame *gst_nn_server_pop (GstNnServer *server);
void gst_nn_server_set_flushing (GstNnServer *server, gboolean flushing);

/* Send ERROR(message) to client_id and drop it (no-op when gone). */
void gst_nn_server_drop_client (GstNnServer *server, guint64 client_id,
    const gchar *message);

/* GstNnServerMeta: which client and frame a buffer answers. */
typedef struct
{
  GstMeta meta;
  guint64 client_id;
  guint64 seq;
  guint part_id; /* the part (endpoint) that took it, see gstnnserver.c */
} GstNnServerMeta;

GType gst_nn_server_meta_api_get_type (void);
const GstMetaInfo *gst_nn_server_meta_get_info (void);
#define GST_NN_SERVER_META_API_TYPE (gst_nn_server_meta_api_get_type ())
#define gst_buffer_get_nn_server_meta(b) \
  ((GstNnServerMeta *) gst_buffer_get_meta ((b), GST_NN_SERVER_META_API_TYPE))
GstNnServerMeta *gst_buffer_add_nn_server_meta (GstBuffer *buffer,
    guint64 client_id, guint64 seq, guint part_id);

/* Send a RESULT to the client and frame meta names on the server
 * listening on port.  FALSE (not an error for the pipeline) when the client
 * is gone. */
gboolean gst_nn_server_send_result (guint port, const GstNnServerMeta *meta,
    const gchar *caps, GstBuffer *buffer);

/* The served-part key a HELLO is compared with: "" for the whole model, the
 * node list for NODES, the plan stage's node names joined by ',' for PLAN.
 * NULL + error for a plan that does not parse or has no such stage. */
gchar *gst_nn_server_part_key (guint8 part_kind, const gchar *part, guint stage,
    GError **error);


/* A frame nnserversrc popped and will not push (its caps refused): no
 * result will come for it (the part's busy time counts until then). */
void gst_nn_server_frame_dropped (GstNnServer *server);

G_END_DECLS
