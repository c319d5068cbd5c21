/* GStreamer nnpipe plugin: the shared listening side of nnserversrc and
 * nnserversink (see gstnnserver.h, docs/remote.md). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver.h"
#include "gstnntensorcaps.h"

#include <nnpipe/nnpipe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_server_debug);
#define GST_CAT_DEFAULT gst_nn_server_debug

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
  GstNnServer *ep; /* the part it talks to (listener lock), or NULL */
} Client;

#define MAX_RESULTS_QUEUED 16

typedef struct
{
  guint64 seq;
  gchar *caps;
  GstBuffer *buffer; /* NULL: the writer stops */
} Result;

static void
result_free (Result *r)
{
  g_free (r->caps);
  gst_clear_buffer (&r->buffer);
  g_free (r);
}

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

/* ------------------------------------------------------------ meta */

GType
gst_nn_server_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstNnServerMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_nn_server_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstNnServerMeta *m = (GstNnServerMeta *) meta;

  m->client_id = m->seq = 0;
  return TRUE;
}

static gboolean
gst_nn_server_meta_transform (GstBuffer *dest, GstMeta *meta, GstBuffer *buffer,
    GQuark type, gpointer data)
{
  GstNnServerMeta *src = (GstNnServerMeta *) meta;

  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  return gst_buffer_add_nn_server_meta (dest, src->client_id, src->seq) != NULL;
}

const GstMetaInfo *
gst_nn_server_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) &info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NN_SERVER_META_API_TYPE,
        "GstNnServerMeta", sizeof (GstNnServerMeta), gst_nn_server_meta_init,
        NULL, gst_nn_server_meta_transform);
    g_once_init_leave ((GstMetaInfo **) &info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNnServerMeta *
gst_buffer_add_nn_server_meta (GstBuffer *buffer, guint64 client_id,
    guint64 seq)
{
  GstNnServerMeta *m = (GstNnServerMeta *) gst_buffer_add_meta (buffer,
      gst_nn_server_meta_get_info (), NULL);

  m->client_id = client_id;
  m->seq = seq;
  return m;
}

/* ------------------------------------------------------------ frames <-> buffers */

void
gst_nn_server_frame_free (GstNnServerFrame *frame)
{
  if (frame == NULL)
    return;
  gst_clear_caps (&frame->caps);
  g_free (frame->shapes);
  gst_clear_buffer (&frame->buffer);
  g_free (frame);
}

GstBuffer *
gst_nn_remote_frame_to_buffer (const NnpRemoteFrame *frame, guint8 *payload,
    gsize payload_size)
{
  /* the payload lives as long as any of the memories wrapping it */
  GBytes *holder = g_bytes_new_with_free_func (payload, payload_size,
      (GDestroyNotify) g_aligned_free, payload);
  GstBuffer *buf = gst_buffer_new ();

  for (gint i = 0; i < frame->n_tensors; i++) {
    const NnpRemoteTensor *t = &frame->tensors[i];

    gst_buffer_append_memory (buf,
        gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, payload, payload_size,
            t->offset, t->nbytes, g_bytes_ref (holder),
            (GDestroyNotify) g_bytes_unref));
  }
  g_bytes_unref (holder);
  return buf;
}

GstCaps *
gst_nn_remote_frame_caps (const NnpRemoteFrame *frame, GError **error)
{
  GstNnTensorsInfo info;
  GstCaps *caps = gst_caps_from_string (frame->caps);

  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
        "frame caps '%.200s' are not fixed caps", frame->caps);
    gst_clear_caps (&caps);
    return NULL;
  }
  if (!gst_nn_tensors_info_from_caps (&info, caps, error)) {
    gst_caps_unref (caps);
    return NULL;
  }
  if ((gint) info.n_tensors != frame->n_tensors)
    goto mismatch;
  for (gint i = 0; i < frame->n_tensors; i++) {
    if (info.tensors[i].dtype != frame->tensors[i].dtype
        || !gst_nn_shape_is_compatible (&info.tensors[i].shape,
            &frame->tensors[i].shape))
      goto mismatch;
  }
  return caps;

mismatch:
  g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
      "frame caps '%.200s' do not describe its %d tensors", frame->caps,
      frame->n_tensors);
  gst_caps_unref (caps);
  return NULL;
}

gboolean
gst_nn_remote_tensors_map (GstBuffer *buffer, GstCaps *caps,
    NnpRemoteTensor *tensors, gint *n_tensors, GstMapInfo *maps, gint *n_maps,
    GError **error)
{
  GstNnTensorsInfo info;
  guint n_mem = gst_buffer_n_memory (buffer);
  gboolean per_memory;
  gsize total, at = 0;

  if (!gst_nn_tensors_info_from_caps (&info, caps, error))
    return FALSE;
  total = gst_nn_tensors_info_get_size (&info);
  per_memory = n_mem == info.n_tensors;
  for (guint i = 0; per_memory && i < n_mem; i++)
    per_memory = gst_buffer_peek_memory (buffer, i)->size
        == gst_nn_tensor_info_get_size (&info.tensors[i]);
  if (!per_memory && gst_buffer_get_size (buffer) != total) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "buffer of %" G_GSIZE_FORMAT " bytes for tensors of %" G_GSIZE_FORMAT
        " bytes",
        gst_buffer_get_size (buffer), total);
    return FALSE;
  }
  if (!per_memory) {
    if (!gst_buffer_map (buffer, &maps[0], GST_MAP_READ))
      goto map_failed;
    *n_maps = -1;
  } else {
    for (guint i = 0; i < n_mem; i++) {
      if (!gst_memory_map (gst_buffer_peek_memory (buffer, i), &maps[i],
              GST_MAP_READ)) {
        gst_nn_remote_tensors_unmap (buffer, maps, (gint) i);
        goto map_failed;
      }
    }
    *n_maps = (gint) n_mem;
  }
  for (guint i = 0; i < info.n_tensors; i++) {
    NnpRemoteTensor *t = &tensors[i];

    t->dtype = info.tensors[i].dtype;
    t->shape = info.tensors[i].shape;
    t->nbytes = gst_nn_tensor_info_get_size (&info.tensors[i]);
    t->data = per_memory ? maps[i].data : maps[0].data + at;
    at += t->nbytes;
  }
  *n_tensors = (gint) info.n_tensors;
  return TRUE;

map_failed:
  g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot map the buffer");
  return FALSE;
}

void
gst_nn_remote_tensors_unmap (GstBuffer *buffer, GstMapInfo *maps, gint n_maps)
{
  if (n_maps < 0) {
    gst_buffer_unmap (buffer, &maps[0]);
    return;
  }
  for (gint i = 0; i < n_maps; i++)
    gst_memory_unmap (maps[i].memory, &maps[i]);
}

/* ------------------------------------------------------------ parts */

gchar *
gst_nn_server_part_key (guint8 part_kind, const gchar *part, guint stage,
    GError **error)
{
  NnpPlan *plan;
  gchar *key;

  if (part_kind == NNP_REMOTE_PART_WHOLE)
    return g_strdup ("");
  if (part_kind == NNP_REMOTE_PART_NODES)
    return g_strdup (part);
  plan = nnp_plan_from_json (part, -1, error);
  if (plan == NULL)
    return NULL;
  if (stage >= (guint) plan->n_stages) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
        "the plan has %d stages, no stage %u", plan->n_stages, stage);
    nnp_plan_free (plan);
    return NULL;
  }
  key = g_strjoinv (",", plan->stages[stage].nodes);
  nnp_plan_free (plan);
  return key;
}

/* ------------------------------------------------------------ clients */

static Client *
client_ref (Client *c)
{
  g_atomic_int_inc (&c->ref_count);
  return c;
}

static void
client_unref (Client *c)
{
  if (!g_atomic_int_dec_and_test (&c->ref_count))
    return;
  g_clear_object (&c->stream);
  g_clear_object (&c->cancellable);
  if (c->results)
    g_async_queue_unref (c->results);
  g_mutex_clear (&c->write_lock);
  g_free (c->peer);
  g_free (c);
}

static gboolean
client_send (Client *c, NnpRemoteType type, guint64 seq, const guint8 *payload,
    gsize size, GError **error)
{
  gboolean ok;

  g_mutex_lock (&c->write_lock);
  ok = nnp_remote_send (g_io_stream_get_output_stream (c->stream), type, seq,
      payload, size, c->cancellable, error);
  g_mutex_unlock (&c->write_lock);
  return ok;
}

static void
client_send_error (Client *c, const gchar *message)
{
  gsize size;
  guint8 *p = nnp_remote_string_encode (message, &size);

  (void) client_send (c, NNP_REMOTE_ERROR, 0, p, size, NULL);
  g_free (p);
}

static Listener *
server_ref (Listener *s)
{
  g_atomic_int_inc (&s->ref_count);
  return s;
}

void
gst_nn_server_config_clear (GstNnServerConfig *c)
{
  g_free (c->host);
  g_free (c->tls_cert_file);
  g_free (c->tls_key_file);
  g_free (c->token);
  g_free (c->digest);
  g_free (c->part);
  g_free (c->model);
  g_free (c->device);
}

static void
server_unref (Listener *s)
{
  if (!g_atomic_int_dec_and_test (&s->ref_count))
    return;
  g_hash_table_unref (s->clients);
  g_ptr_array_unref (s->endpoints);
  g_mutex_clear (&s->part_lock);
  g_clear_object (&s->cert);
  gst_nn_server_config_clear (&s->config);
  g_mutex_clear (&s->lock);
  g_cond_clear (&s->cond);
  g_free (s);
}

/* Tell the application (nnpipe serve logs them): an element message
 * "nnserver-client" from nnserversrc with event (connected, refused, left),
 * id, peer and reason. */
static void
post_client_event (Listener *s, Client *c, const gchar *event,
    const gchar *reason)
{
  if (!GST_IS_ELEMENT (s->owner))
    return;
  gst_element_post_message (GST_ELEMENT (s->owner),
      gst_message_new_element (GST_OBJECT (s->owner),
          gst_structure_new ("nnserver-client", "event", G_TYPE_STRING, event,
              "id", G_TYPE_UINT64, c->id, "peer", G_TYPE_STRING, c->peer,
              "reason", G_TYPE_STRING, reason ? reason : "", NULL)));
}

/* The endpoint serving key (or any part), NULL if none.  Listener lock held. */
static GstNnServer *
find_endpoint_locked (Listener *s, const gchar *key)
{
  GstNnServer *any = NULL;

  for (guint i = 0; i < s->endpoints->len; i++) {
    GstNnServer *ep = g_ptr_array_index (s->endpoints, i);

    if (ep->stopped)
      continue;
    if (ep->key == NULL && any == NULL)
      any = ep;
    else if (ep->key && strcmp (ep->key, key) == 0)
      return ep;
  }
  return any;
}

/* Give the client the endpoint of its part; when none serves it, ask the
 * application (nnpipe serve builds a pipeline for the part).  FALSE when no
 * endpoint serves it. */
static gboolean
attach_client (Listener *s, Client *c, const NnpRemoteHello *h,
    const gchar *key)
{
  GstNnServer *ep;
  gboolean asked = FALSE;

  for (;;) {
    g_mutex_lock (&s->lock);
    ep = find_endpoint_locked (s, key);
    c->ep = ep;
    g_mutex_unlock (&s->lock);
    if (ep || asked || s->part_func == NULL)
      break;
    g_mutex_lock (&s->part_lock);
    g_mutex_lock (&s->lock);
    ep = find_endpoint_locked (s, key);
    g_mutex_unlock (&s->lock);
    if (ep == NULL && s->endpoints->len < MAX_ENDPOINTS) {
      GST_INFO_OBJECT (s->owner,
          "client %" G_GUINT64_FORMAT " asks for part "
          "'%.200s': asking the application",
          c->id, key);
      s->part_func (h->part_kind, h->part, h->stage, key, s->part_data);
    }
    g_mutex_unlock (&s->part_lock);
    asked = TRUE;
  }
  return ep != NULL;
}

/* Check a HELLO and attach the client to its part: NULL when welcome, else
 * the reason (g_free). */
static gchar *
check_hello (Listener *s, Client *c, const NnpRemoteHello *h)
{
  GError *err = NULL;
  gchar *key, *why = NULL;

  if (s->config.token && s->config.token[0]
      && g_strcmp0 (s->config.token, h->token) != 0)
    return g_strdup ("authentication failed: wrong or missing token");
  if (s->config.digest && s->config.digest[0]
      && g_ascii_strcasecmp (s->config.digest, h->digest) != 0) {
    /* the client's text as C escapes: one line */
    gchar *shown = g_strescape (h->digest, NULL);

    why = g_strdup_printf ("model digest mismatch: the client runs model "
                           "%.64s, this server serves %s",
        shown, s->config.digest);
    g_free (shown);
    return why;
  }
  key = gst_nn_server_part_key (h->part_kind, h->part, h->stage, &err);
  if (key == NULL) {
    why = g_strdup_printf ("bad part: %s", err->message);
    g_error_free (err);
    return why;
  }
  if (!attach_client (s, c, h, key)) {
    gchar *shown = g_strescape (key, NULL);

    why = g_strdup_printf ("part mismatch: the client asks for nodes "
                           "'%.200s', this server runs '%.200s'",
        shown[0] ? shown : "(whole model)",
        s->config.part ? (s->config.part[0] ? s->config.part : "(whole model)")
                       : "(any)");
    g_free (shown);
  }
  g_free (key);
  return why;
}

/* Queue a frame; blocks while the queue is full.  FALSE when stopping. */
static gboolean
server_push (Listener *s, Client *c, GstNnServerFrame *f)
{
  g_mutex_lock (&s->lock);
  while (!s->stopped && !g_cancellable_is_cancelled (c->cancellable) && c->ep
      && !c->ep->stopped
      && g_queue_get_length (&c->ep->queue) >= MAX (c->ep->max_queue, 1))
    g_cond_wait (&s->cond, &s->lock);
  if (s->stopped || g_cancellable_is_cancelled (c->cancellable) || c->ep == NULL
      || c->ep->stopped) {
    g_mutex_unlock (&s->lock);
    gst_nn_server_frame_free (f);
    return FALSE;
  }
  g_queue_push_tail (&c->ep->queue, f);
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  return TRUE;
}

/* The conversation with one client, after the TLS handshake. */
static void
serve_client (Listener *s, Client *c)
{
  GInputStream *in = g_io_stream_get_input_stream (c->stream);
  NnpRemoteHeader h;
  guint8 *payload = NULL;
  GError *err = NULL;
  gchar *why = NULL;

  /* HELLO first */
  if (!nnp_remote_recv (in, MIN (s->config.max_payload, 4u << 20), &h, &payload,
          c->cancellable, &err))
    goto bad_peer;
  if (h.type != NNP_REMOTE_HELLO) {
    why = g_strdup_printf ("expected HELLO, got %s",
        nnp_remote_type_name (h.type));
    goto refuse;
  } else {
    NnpRemoteHello hello;
    gsize size;
    guint8 *ok;

    if (!nnp_remote_hello_parse (payload, h.length, &hello, &err))
      goto bad_peer;
    why = check_hello (s, c, &hello);
    nnp_remote_hello_clear (&hello);
    if (why)
      goto refuse;
    ok = nnp_remote_string_encode (s->config.device ? s->config.device : "cpu",
        &size);
    if (!client_send (c, NNP_REMOTE_HELLO_OK, h.seq, ok, size, &err)) {
      g_free (ok);
      goto bad_peer;
    }
    g_free (ok);
  }
  g_clear_pointer (&payload, g_aligned_free);
  GST_INFO_OBJECT (s->owner, "client %" G_GUINT64_FORMAT " (%s) connected",
      c->id, c->peer);
  post_client_event (s, c, "connected", NULL);

  for (;;) {
    if (!nnp_remote_recv (in, s->config.max_payload, &h, &payload,
            c->cancellable, &err))
      goto closed;
    switch (h.type) {
      case NNP_REMOTE_FRAME: {
        NnpRemoteFrame frame;
        GstNnServerFrame *f;
        GstCaps *caps;

        if (!nnp_remote_frame_parse (payload, h.length, &frame, &err))
          goto bad_peer;
        caps = gst_nn_remote_frame_caps (&frame, &err);
        if (caps == NULL) {
          nnp_remote_frame_clear (&frame);
          goto bad_peer;
        }
        f = g_new0 (GstNnServerFrame, 1);
        f->client_id = c->id;
        f->seq = h.seq;
        f->caps = caps;
        f->shapes = g_strdup (frame.shapes);
        f->buffer = gst_nn_remote_frame_to_buffer (&frame, payload, h.length);
        payload = NULL;
        gst_buffer_add_nn_server_meta (f->buffer, c->id, h.seq);
        nnp_remote_frame_clear (&frame);
        if (!server_push (s, c, f))
          goto closed;
        break;
      }
      case NNP_REMOTE_PING: {
        guint8 n[8];
        guint64 len = GUINT64_TO_LE ((guint64) h.length);

        memcpy (n, &len, 8);
        if (!client_send (c, NNP_REMOTE_PONG, h.seq, n, 8, &err))
          goto closed;
        break;
      }
      case NNP_REMOTE_COST: {
        NnpRemoteCostQuery q;
        NnpRemoteCostReply r;
        gsize size;
        guint8 *out;
        gboolean ok;

        if (!nnp_remote_cost_query_parse (payload, h.length, &q, &err))
          goto bad_peer;
        if (s->config.model == NULL) {
          nnp_remote_cost_query_clear (&q);
          why = g_strdup ("this server has no model file to answer COST");
          goto refuse;
        }
        ok = nnp_remote_cost_answer (s->config.model, s->config.device, &q, &r,
            &err);
        nnp_remote_cost_query_clear (&q);
        if (!ok) {
          why = g_strdup_printf ("COST: %s", err->message);
          g_clear_error (&err);
          goto refuse;
        }
        out = nnp_remote_cost_reply_encode (&r, &size);
        nnp_remote_cost_reply_clear (&r);
        ok = client_send (c, NNP_REMOTE_COST_REPLY, h.seq, out, size, &err);
        g_free (out);
        if (!ok)
          goto closed;
        break;
      }
      default:
        why = g_strdup_printf ("unexpected %s message from a client",
            nnp_remote_type_name (h.type));
        goto refuse;
    }
    g_clear_pointer (&payload, g_aligned_free);
  }

bad_peer:
  why = g_strdup (err->message);
  g_clear_error (&err);
refuse:
  GST_WARNING_OBJECT (s->owner,
      "client %" G_GUINT64_FORMAT " (%s) refused: "
      "%s",
      c->id, c->peer, why);
  client_send_error (c, why);
  post_client_event (s, c, "refused", why);
  g_free (why);
  g_clear_pointer (&payload, g_aligned_free);
  return;
closed:
  GST_INFO_OBJECT (s->owner, "client %" G_GUINT64_FORMAT " (%s) left: %s",
      c->id, c->peer, err ? err->message : "stopping");
  post_client_event (s, c, "left", err ? err->message : "stopping");
  g_clear_error (&err);
  g_clear_pointer (&payload, g_aligned_free);
}

/* The client's writer thread: sends its results in order. */
static gpointer
client_writer (gpointer data)
{
  Client *c = data;
  Result *r;

  while ((r = g_async_queue_pop (c->results)) != NULL && r->buffer != NULL) {
    NnpRemoteTensor tensors[NNP_REMOTE_MAX_TENSORS];
    GstMapInfo maps[NNP_REMOTE_MAX_TENSORS];
    GstCaps *caps = gst_caps_from_string (r->caps);
    GError *err = NULL;
    gint n = 0, n_maps = 0;
    gboolean ok = FALSE;

    if (caps
        && gst_nn_remote_tensors_map (r->buffer, caps, tensors, &n, maps,
            &n_maps, &err)) {
      g_mutex_lock (&c->write_lock);
      ok = nnp_remote_send_frame (g_io_stream_get_output_stream (c->stream),
          NNP_REMOTE_RESULT, r->seq, r->caps, "", n, tensors, c->cancellable,
          &err);
      g_mutex_unlock (&c->write_lock);
      gst_nn_remote_tensors_unmap (r->buffer, maps, n_maps);
    }
    if (!ok) {
      GST_INFO ("client %" G_GUINT64_FORMAT ": result %" G_GUINT64_FORMAT
                " not sent: %s",
          c->id, r->seq, err ? err->message : "bad caps");
      /* its reader thread sees the cancellation and drops it */
      g_cancellable_cancel (c->cancellable);
    }
    g_clear_error (&err);
    gst_clear_caps (&caps);
    result_free (r);
  }
  if (r)
    result_free (r);
  return NULL;
}

static gboolean
on_run (GThreadedSocketService *service, GSocketConnection *connection,
    GObject *source_object, gpointer user_data)
{
  Listener *s = server_ref (user_data);
  Client *c = g_new0 (Client, 1);
  GSocketAddress *addr;
  GError *err = NULL;

  c->ref_count = 1;
  g_mutex_init (&c->write_lock);
  c->cancellable = g_cancellable_new ();
  addr = g_socket_connection_get_remote_address (connection, NULL);
  if (G_IS_INET_SOCKET_ADDRESS (addr)) {
    gchar *ip = g_inet_address_to_string (
        g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (addr)));
    c->peer = g_strdup_printf ("%s:%u", ip,
        g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (addr)));
    g_free (ip);
  } else {
    c->peer = g_strdup ("?");
  }
  g_clear_object (&addr);
  g_socket_set_option (g_socket_connection_get_socket (connection), IPPROTO_TCP,
      TCP_NODELAY, 1, NULL);

  if (s->cert) {
    GIOStream *tls =
        g_tls_server_connection_new (G_IO_STREAM (connection), s->cert, &err);
    if (tls == NULL
        || !g_tls_connection_handshake (G_TLS_CONNECTION (tls), c->cancellable,
            &err)) {
      GST_WARNING_OBJECT (s->owner, "client %s: TLS handshake failed: %s",
          c->peer, err->message);
      post_client_event (s, c, "refused", err->message);
      g_clear_error (&err);
      g_clear_object (&tls);
      client_unref (c);
      server_unref (s);
      return TRUE;
    }
    c->stream = tls;
  } else {
    c->stream = g_object_ref (G_IO_STREAM (connection));
  }

  g_mutex_lock (&s->lock);
  if (s->stopped) {
    g_mutex_unlock (&s->lock);
    goto done;
  }
  c->id = ++s->next_id;
  c->results = g_async_queue_new ();
  c->writer = g_thread_new ("nnserver-writer", client_writer, c);
  g_hash_table_insert (s->clients, &c->id, client_ref (c));
  g_mutex_unlock (&s->lock);

  serve_client (s, c);

  g_mutex_lock (&s->lock);
  g_hash_table_remove (s->clients, &c->id);
  g_mutex_unlock (&s->lock);
  /* no more results are queued for it: stop the writer */
  g_cancellable_cancel (c->cancellable);
  g_async_queue_push (c->results, g_new0 (Result, 1));
  g_thread_join (c->writer);
  c->writer = NULL;
done:
  g_io_stream_close (c->stream, NULL, NULL);
  client_unref (c);
  server_unref (s);
  return TRUE;
}

/* ------------------------------------------------------------ lifetime */

static GstNnServer *
endpoint_new (Listener *l, const GstNnServerConfig *config, GObject *owner)
{
  GstNnServer *ep = g_new0 (GstNnServer, 1);

  ep->l = server_ref (l);
  ep->key = g_strdup (config->part);
  ep->owner = owner;
  ep->max_queue = config->max_queue;
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
          "port %u already "
          "serves part '%.200s' in this process",
          l->port, config->part ? config->part : "(any)");
      g_mutex_unlock (&l->lock);
      return NULL;
    }
  }
  if (l->stopped || l->endpoints->len >= MAX_ENDPOINTS)
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "port %u serves %d "
        "parts already",
        l->port, MAX_ENDPOINTS);
  else
    ep = endpoint_new (l, config, owner);
  g_mutex_unlock (&l->lock);
  if (ep)
    GST_INFO_OBJECT (owner, "serving part '%.200s' on port %u",
        config->part ? config->part : "(any)", l->port);
  return ep;
}

GstNnServer *
gst_nn_server_start (const GstNnServerConfig *config, GObject *owner,
    GError **error)
{
  Listener *s;
  GstNnServer *ep;
  GInetAddress *ia;
  GSocketAddress *sa, *bound = NULL;
  gboolean ok;

  ensure_debug ();
  if (config->port != 0) {
    Listener *l = NULL;

    g_mutex_lock (&registry_lock);
    if (registry)
      l = g_hash_table_lookup (registry, GUINT_TO_POINTER (config->port));
    if (l)
      server_ref (l);
    g_mutex_unlock (&registry_lock);
    if (l) {
      ep = join (l, config, owner, error);
      server_unref (l);
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
      (GDestroyNotify) client_unref);
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

  if (s->config.tls_cert_file && s->config.tls_cert_file[0]) {
    s->cert = s->config.tls_key_file && s->config.tls_key_file[0]
        ? g_tls_certificate_new_from_files (s->config.tls_cert_file,
            s->config.tls_key_file, error)
        : g_tls_certificate_new_from_file (s->config.tls_cert_file, error);
    if (s->cert == NULL) {
      g_prefix_error (error, "TLS certificate '%s': ", s->config.tls_cert_file);
      goto fail;
    }
  }

  ia = g_inet_address_new_from_string (s->config.host);
  if (ia == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "listen address '%s' is not an IP address", s->config.host);
    goto fail;
  }
  sa = g_inet_socket_address_new (ia, (guint16) s->config.port);
  g_object_unref (ia);
  s->service = g_threaded_socket_service_new (256);
  ok = g_socket_listener_add_address (G_SOCKET_LISTENER (s->service), sa,
      G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, &bound, error);
  g_object_unref (sa);
  if (!ok) {
    g_prefix_error (error, "cannot listen on %s:%u: ", s->config.host,
        s->config.port);
    goto fail;
  }
  s->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_object_unref (bound);

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

  ep = endpoint_new (s, config, owner);
  server_unref (s); /* the endpoint holds it */
  g_signal_connect (s->service, "run", G_CALLBACK (on_run), s);
  g_socket_service_start (s->service);
  GST_INFO_OBJECT (owner, "listening on %s:%u%s", s->config.host, s->port,
      s->cert ? " (TLS)" : "");
  return ep;

fail:
  if (s->service) {
    g_socket_listener_close (G_SOCKET_LISTENER (s->service));
    g_clear_object (&s->service);
  }
  server_unref (s);
  return NULL;
}

static void
cancel_client (gpointer key, gpointer value, gpointer data)
{
  Client *c = value;

  /* wakes its thread blocked in a read; that thread closes the stream */
  if (data == NULL || c->ep == data) {
    c->ep = NULL;
    g_cancellable_cancel (c->cancellable);
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
    g_socket_service_stop (s->service);
    g_socket_listener_close (G_SOCKET_LISTENER (s->service));
    g_clear_object (&s->service);
  }
  g_queue_clear_full (&ep->queue, (GDestroyNotify) gst_nn_server_frame_free);
  g_free (ep->key);
  g_free (ep);
  server_unref (s);
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

void
gst_nn_server_drop_client (GstNnServer *ep, guint64 client_id,
    const gchar *message)
{
  Client *c;

  g_mutex_lock (&ep->l->lock);
  c = g_hash_table_lookup (ep->l->clients, &client_id);
  if (c)
    client_ref (c);
  g_mutex_unlock (&ep->l->lock);
  if (c == NULL)
    return;
  client_send_error (c, message);
  g_cancellable_cancel (c->cancellable);
  client_unref (c);
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
gst_nn_server_send_result (guint port, guint64 client_id, guint64 seq,
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
    server_ref (s);
  g_mutex_unlock (&registry_lock);
  if (s == NULL)
    return FALSE;
  g_mutex_lock (&s->lock);
  c = g_hash_table_lookup (s->clients, &client_id);
  if (c) {
    if (g_async_queue_length (c->results) < MAX_RESULTS_QUEUED) {
      Result *r = g_new0 (Result, 1);

      r->seq = seq;
      r->caps = g_strdup (caps);
      r->buffer = gst_buffer_ref (buffer);
      g_async_queue_push (c->results, r);
      ok = TRUE;
    } else {
      client_ref (c);
    }
  }
  g_mutex_unlock (&s->lock);
  if (c == NULL) {
    GST_DEBUG ("client %" G_GUINT64_FORMAT " is gone, result %" G_GUINT64_FORMAT
               " dropped",
        client_id, seq);
  } else if (!ok) {
    GST_WARNING_OBJECT (s->owner,
        "client %" G_GUINT64_FORMAT " does not read "
        "its results (%d waiting): dropped",
        client_id, MAX_RESULTS_QUEUED);
    g_cancellable_cancel (c->cancellable);
    client_unref (c);
  }
  server_unref (s);
  return ok;
}
