/* GStreamer nnpipe plugin: the server, one client's conversation, and the
 * meta, frames and part keys it uses (see gstnnserver-private.h,
 * docs/remote.md). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserver-private.h"
#include "gstnnmodelcaps.h"
#include "gstnntensorcaps.h"

#include <nnpipe/nnpipe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_nn_server_debug

/* While a client's frames are at the stage, an empty PONG goes to it every
 * KEEPALIVE_MS: nnremote takes a server that sends nothing for its timeout
 * as hung, and a stage may be slower than that. */
#define KEEPALIVE_MS 50

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

/* ------------------------------------------------------------ frames */

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

Listener *
gst_nn_server_listener_ref (Listener *s)
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

void
gst_nn_server_listener_unref (Listener *s)
{
  if (!g_atomic_int_dec_and_test (&s->ref_count))
    return;
  g_hash_table_unref (s->clients);
  g_ptr_array_unref (s->endpoints);
  g_mutex_clear (&s->part_lock);
  g_clear_object (&s->cert);
  g_clear_pointer (&s->model, nnp_model_unref);
  gst_nn_server_config_clear (&s->config);
  g_mutex_clear (&s->lock);
  g_cond_clear (&s->cond);
  g_free (s);
}

/* ------------------------------------------------------------ clients */

void
gst_nn_server_result_free (Result *r)
{
  g_free (r->caps);
  gst_clear_buffer (&r->buffer);
  g_free (r);
}

/* ------------------------------------------------------------ clients */

Client *
gst_nn_server_client_ref (Client *c)
{
  g_atomic_int_inc (&c->ref_count);
  return c;
}

void
gst_nn_server_client_unref (Client *c)
{
  if (!g_atomic_int_dec_and_test (&c->ref_count))
    return;
  g_clear_object (&c->stream);
  g_clear_object (&c->cancellable);
  if (c->results)
    g_async_queue_unref (c->results);
  g_mutex_clear (&c->write_lock);
  g_free (c->peer);
  g_free (c->part);
  g_clear_pointer (&c->check, nnp_part_free);
  gst_clear_caps (&c->caps_ok);
  g_free (c->shapes_ok);
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

void
gst_nn_server_client_send_error (Client *c, const gchar *message)
{
  gsize size;
  guint8 *p = nnp_remote_string_encode (message, &size);

  (void) client_send (c, NNP_REMOTE_ERROR, 0, p, size, NULL);
  g_free (p);
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

  if (!gst_nn_remote_token_ok (s->config.token, h->token))
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

/* The model of the served parts, loaded once (NULL: no model file, or it
 * does not load: the stage alone judges the caps). */
static NnpModel *
listener_model (Listener *s)
{
  NnpModel *model = NULL;

  g_mutex_lock (&s->lock);
  if (s->model == NULL && !s->model_failed && s->config.model
      && s->config.model[0]) {
    GError *err = NULL;

    s->model = nnp_model_load (s->config.model, &err);
    if (s->model == NULL) {
      GST_WARNING_OBJECT (s->owner, "no caps checks: %s", err->message);
      g_error_free (err);
      s->model_failed = TRUE;
    }
  }
  if (s->model)
    model = nnp_model_ref (s->model);
  g_mutex_unlock (&s->lock);
  return model;
}

/* Whether a client's frame fits its part of the model: the check the stage
 * makes on its CAPS event, made here first, because a refusal there stops
 * the stage for every client.  NULL when it fits (or nothing to check
 * with), else the reason (g_free), naming what the part expects and what
 * came. */
static gchar *
check_caps (Listener *s, Client *c, GstCaps *caps, const gchar *shapes)
{
  gchar *upstream[2] = { NULL, NULL };
  GstNnTensorsInfo info;
  NnpPartSpec *spec;
  GError *err = NULL;
  gchar *why, *str;

  if (c->caps_ok && gst_caps_is_equal (caps, c->caps_ok)
      && g_strcmp0 (shapes, c->shapes_ok) == 0)
    return NULL;
  if (c->check == NULL) {
    NnpModel *model = listener_model (s);
    NnpPartOptions o = { 0 };
    NnpPlan *plan = NULL;

    if (model == NULL)
      return NULL;
    /* only the shapes matter here, not the device the plan names */
    o.device = "cpu";
    if (c->part_kind == NNP_REMOTE_PART_PLAN) {
      plan = nnp_plan_from_json (c->part, -1, NULL);
      o.plan = plan;
      o.stage = (int) c->part_stage;
    } else if (c->part_kind == NNP_REMOTE_PART_NODES) {
      o.nodes = c->part;
    }
    o.cache_size = 1;
    c->check = (c->part_kind != NNP_REMOTE_PART_PLAN || plan)
        ? nnp_part_new (model, &o, &err)
        : NULL;
    if (plan)
      nnp_plan_free (plan);
    nnp_model_unref (model);
    if (c->check == NULL) {
      /* a part the model does not have: the stage reports it */
      GST_DEBUG_OBJECT (s->owner,
          "client %" G_GUINT64_FORMAT ": no caps "
          "check: %s",
          c->id, err ? err->message : "bad plan");
      g_clear_error (&err);
      return NULL;
    }
  }
  if (!gst_nn_tensors_info_from_caps (&info, caps, &err))
    goto refused;
  upstream[0] = shapes && shapes[0] ? (gchar *) shapes : NULL;
  spec = gst_nn_part_spec_for_info (c->check, &info, upstream, &err);
  if (spec == NULL)
    goto refused;
  nnp_part_spec_unref (spec);
  gst_caps_replace (&c->caps_ok, caps);
  g_free (c->shapes_ok);
  c->shapes_ok = g_strdup (shapes);
  return NULL;

refused:
  str = gst_caps_to_string (caps);
  why = g_strdup_printf ("frame caps do not fit the served part: %s "
                         "(caps %.300s)",
      err->message, str);
  g_free (str);
  g_error_free (err);
  return why;
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
    c->part_kind = hello.part_kind;
    c->part = g_strdup (hello.part);
    c->part_stage = hello.stage;
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
        why = check_caps (s, c, caps, frame.shapes);
        if (why) {
          gst_caps_unref (caps);
          nnp_remote_frame_clear (&frame);
          goto refuse;
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
        g_atomic_int_inc (&c->at_stage);
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
  gst_nn_server_client_send_error (c, why);
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

  for (;;) {
    NnpRemoteTensor tensors[NNP_REMOTE_MAX_TENSORS];
    GstMapInfo maps[NNP_REMOTE_MAX_TENSORS];
    GstCaps *caps = NULL;
    GError *err = NULL;
    gint n = 0, n_maps = 0;
    gboolean ok = FALSE;

    r = g_async_queue_timeout_pop (c->results, KEEPALIVE_MS * 1000);
    if (r == NULL) {
      /* its frames are at the stage, maybe for longer than the client's
       * timeout: tell it we are alive (it ignores the PONG) */
      if (g_atomic_int_get (&c->at_stage) > 0
          && !client_send (c, NNP_REMOTE_PONG, 0,
              (const guint8 *) "\0\0\0\0\0\0\0", 8, NULL))
        g_cancellable_cancel (c->cancellable);
      continue;
    }
    if (r->buffer == NULL)
      break;
    caps = gst_caps_from_string (r->caps);
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
    g_atomic_int_add (&c->at_stage, -1);
    g_clear_error (&err);
    gst_clear_caps (&caps);
    gst_nn_server_result_free (r);
  }
  gst_nn_server_result_free (r);
  return NULL;
}

gboolean
gst_nn_server_on_run (GThreadedSocketService *service,
    GSocketConnection *connection, GObject *source_object, gpointer user_data)
{
  Listener *s = gst_nn_server_listener_ref (user_data);
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
      gst_nn_server_client_unref (c);
      gst_nn_server_listener_unref (s);
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
  g_hash_table_insert (s->clients, &c->id, gst_nn_server_client_ref (c));
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
  gst_nn_server_client_unref (c);
  gst_nn_server_listener_unref (s);
  return TRUE;
}
