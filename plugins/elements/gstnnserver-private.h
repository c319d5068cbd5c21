/* GStreamer nnpipe plugin: the server's parts (see gstnnserver.h,
 * docs/remote.md):
 *   gstnnserver.c         listening sockets shared by port, parts
 *                         (endpoints), the API nnserversrc/sink use
 *   gstnnserver-client.c  one client's conversation: HELLO, its frames into
 *                         its part's queue (caps checked against the part),
 *                         PING/COST, its results and keepalives back; and
 *                         what it needs below it (the meta, frames, part
 *                         keys, listener refs): gstnnserver.c builds on it,
 *                         never the reverse (check-layers: no loops) */
#pragma once

#include "gstnnserver.h"

#include <nnpipe/nnpipe.h>
#include <nnpipe/part.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_server_debug);

/* one connected client; refs: the server's table and its connection thread */
typedef struct
{
  gint ref_count;
  guint64 id;
  gchar *peer;       /* "127.0.0.1:41234" */
  GIOStream *stream; /* the socket connection or its TLS wrapper, owned */
  GMutex write_lock; /* one message at a time on the stream */
  GCancellable *cancellable; /* cancelled when the server stops */
  /* results wait here for the client's writer thread, so a client that
   * does not read them stalls nobody: past MAX_RESULTS_QUEUED it is dropped */
  GAsyncQueue *results; /* Result* */
  GThread *writer;
  gint at_stage; /* its frames queued or at the stage (atomic) */
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

/* The listening socket of a port, shared by the nnserversrc elements that
 * serve parts on it (the first one made it: its config counts). */
typedef struct _Listener Listener;
struct _Listener
{
  gint ref_count;
  GstNnServerConfig config; /* owned copies */
  GObject *owner;           /* the first nnserversrc, for logs (not a ref) */
  GSocketService *service;
  GTlsCertificate *cert; /* or NULL */
  guint port;            /* the bound port */

  GMutex lock; /* all below, and every endpoint's fields */
  GCond cond;
  GHashTable *clients; /* id -> Client (ref) */
  guint64 next_id;
  GPtrArray *endpoints; /* GstNnServer* (not refs), the first one first */
  gboolean stopped;

  NnpModel *model; /* config.model loaded for the caps checks (lock), or NULL */
  gboolean model_failed;

  GMutex part_lock; /* one part request at a time */
  GstNnServerPartFunc part_func;
  gpointer part_data;
};

/* What one nnserversrc holds: the frames of the clients of one part. */
struct _GstNnServer
{
  Listener *l; /* ref */
  gchar *key;  /* the part served, NULL = any */
  GObject *owner;
  guint max_queue;
  GQueue queue; /* GstNnServerFrame, at most max_queue */
  gboolean flushing, stopped;
};

#define MAX_ENDPOINTS 16

/* gstnnserver-client.c (gstnnserver.c builds on it, not the reverse) */
Listener *gst_nn_server_listener_ref (Listener *s);
void gst_nn_server_listener_unref (Listener *s);
Client *gst_nn_server_client_ref (Client *c);
void gst_nn_server_client_unref (Client *c);
/* Send ERROR(message) to the client (it is then dropped by the caller). */
void gst_nn_server_client_send_error (Client *c, const gchar *message);
void gst_nn_server_result_free (Result *r);
/* GThreadedSocketService::run: one client, from TLS handshake to goodbye
 * (user_data: the Listener). */
gboolean gst_nn_server_on_run (GThreadedSocketService *service,
    GSocketConnection *connection, GObject *source_object, gpointer user_data);

G_END_DECLS
