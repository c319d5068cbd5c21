/* GStreamer nnpipe plugin: nnremote's parts (docs/remote.md):
 *   gstnnremote.c         the element: pads, chain, events, states, properties
 *   gstnnremote-conn.c    connection: connect, HELLO, probe, reconnect with
 *                         backoff, the liveness watchdog, sending frames
 *   gstnnremote-window.c  the in-flight window: frames waiting for their
 *                         results, in order, and the task pushing them */
#pragma once

#include "gstnnremote.h"
#include "gstnnpartprops.h"
#include "gstnnremotecommon.h"

#include <nnpipe/nnpipe.h>
#include <nnpipe/remote.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_remote_debug);

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
  gchar *tls_ca, *token, *digest;
  gchar *tls_cert, *tls_key; /* client certificate for mutual TLS */
  GstNnPartProps part;       /* model, plan, plan-object, stage, nodes */

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
  GIOStream *conn;           /* current connection or NULL */
  GSocket *sock;             /* its socket (ref), for the watchdog */
  GCancellable *conn_cancel; /* cancels the connection's reads and writes */
  guint64 gen;               /* bumped at each connection */
  guint64 hung_gen;          /* the connection the watchdog found hung, or 0 */
  GThread *watchdog;
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

/* gstnnremote-window.c */
/* Push an event item downstream, holding a segment back until there are
 * caps (task, or the streaming thread when nothing waits). */
void gst_nn_remote_push_event (GstNnRemote *self, GstEvent *event);
/* The source pad's task: (re)connects, reads results, pushes them. */
void gst_nn_remote_loop (GstNnRemote *self);

/* gstnnremote-conn.c */
void gst_nn_remote_pending_free (Pending *p);
/* Send every frame not sent on the current connection, in order. */
void gst_nn_remote_send_pending (GstNnRemote *self);
/* Drop connection generation gen (if still current): the task reconnects. */
void gst_nn_remote_drop_conn (GstNnRemote *self, guint64 gen);
/* Connect to the current host or the next ones until timeout; FALSE when
 * stopping or failed (the error is posted). */
gboolean gst_nn_remote_connect_any (GstNnRemote *self);
/* Post a fatal error once and wake everybody. */
void gst_nn_remote_fail (GstNnRemote *self, const gchar *text,
    const gchar *detail);
/* The liveness watchdog thread (start/stop with the element). */
void gst_nn_remote_watchdog_start (GstNnRemote *self);
void gst_nn_remote_watchdog_stop (GstNnRemote *self);

G_END_DECLS
