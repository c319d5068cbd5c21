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
  m->part_id = 0;
  return TRUE;
}

static gboolean
gst_nn_server_meta_transform (GstBuffer *dest, GstMeta *meta, GstBuffer *buffer,
    GQuark type, gpointer data)
{
  GstNnServerMeta *src = (GstNnServerMeta *) meta;

  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  return gst_buffer_add_nn_server_meta (dest, src->client_id, src->seq,
             src->part_id)
      != NULL;
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
    guint64 seq, guint part_id)
{
  GstNnServerMeta *m = (GstNnServerMeta *) gst_buffer_add_meta (buffer,
      gst_nn_server_meta_get_info (), NULL);

  m->client_id = client_id;
  m->seq = seq;
  m->part_id = part_id;
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
  g_free (c->tls_client_ca);
  g_free (c->http);
}

void
gst_nn_server_listener_unref (Listener *s)
{
  if (!g_atomic_int_dec_and_test (&s->ref_count))
    return;
  g_hash_table_unref (s->clients);
  g_hash_table_unref (s->addrs);
  g_clear_object (&s->accept_sa);
  g_clear_pointer (&s->accept_loop, g_main_loop_unref);
  g_clear_pointer (&s->accept_ctx, g_main_context_unref);
  g_clear_error (&s->accept_error);
  g_ptr_array_unref (s->endpoints);
  g_cond_clear (&s->reaper_cond);
  g_clear_object (&s->client_ca);
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
  g_free (c->ip);
  g_free (c->kicked);
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

/* The ERROR goes out even when the client's I/O was cancelled (that is
 * how it is ended), but never waits long for a peer that does not read. */
void
gst_nn_server_client_send_error (Client *c, const gchar *message)
{
  gsize size;
  guint8 *p;

  if (c->talks_tls)
    return;
  p = nnp_remote_string_encode (message, &size);
  if (c->sock)
    g_socket_set_timeout (c->sock, 2);
  g_mutex_lock (&c->write_lock);
  (void) nnp_remote_send (g_io_stream_get_output_stream (c->stream),
      NNP_REMOTE_ERROR, 0, p, size, NULL, NULL);
  g_mutex_unlock (&c->write_lock);
  g_free (p);
}

void
gst_nn_server_client_kick_locked (Client *c, const gchar *why, gboolean tell)
{
  if (c->kicked == NULL) {
    c->kicked = g_strdup (why);
    c->kick_tell = tell;
  }
  g_cancellable_cancel (c->cancellable);
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
 * application (nnpipe serve builds a pipeline for the part).  NULL when an
 * endpoint serves it, else why not (g_free). */
static gchar *
attach_client (Listener *s, Client *c, const NnpRemoteHello *h,
    const gchar *key)
{
  GstNnServer *ep;
  gboolean asked = FALSE;
  gchar *why = NULL;

  for (;;) {
    g_mutex_lock (&s->lock);
    ep = find_endpoint_locked (s, key);
    c->ep = ep;
    g_mutex_unlock (&s->lock);
    if (ep || asked || s->part_func == NULL || why)
      break;
    g_mutex_lock (&s->part_lock);
    g_mutex_lock (&s->lock);
    ep = find_endpoint_locked (s, key);
    g_mutex_unlock (&s->lock);
    if (ep == NULL && s->endpoints->len >= MAX_ENDPOINTS)
      why =
          g_strdup_printf ("this server runs %d parts already, the most it can",
              MAX_ENDPOINTS);
    else if (ep == NULL) {
      GST_INFO_OBJECT (s->owner,
          "client %" G_GUINT64_FORMAT
          " asks for part '%.200s': asking the application",
          c->id, key);
      why = s->part_func (h->part_kind, h->part, h->stage, key, s->part_data);
    }
    g_mutex_unlock (&s->part_lock);
    asked = TRUE;
  }
  if (ep)
    return NULL;
  if (why == NULL) {
    gchar *shown = g_strescape (key, NULL);

    why = g_strdup_printf (
        "part mismatch: the client asks for nodes '%.200s', this server runs '%.200s'",
        shown[0] ? shown : "(whole model)",
        s->config.part ? (s->config.part[0] ? s->config.part : "(whole model)")
                       : "(any)");
    g_free (shown);
  } else {
    gchar *t = g_strdup_printf ("part refused: %s", why);

    g_free (why);
    why = t;
  }
  return why;
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

/* The node names of a part key that the model does not have (a range's
 * ends, or each name of a list; topological indices are checked at the
 * first frame, at its shapes): NULL when all are known, else the message
 * (g_free). */
static gchar *
unknown_nodes (NnpModel *model, guint8 part_kind, const gchar *key)
{
  GError *err = NULL;
  gchar *why;

  if (part_kind == NNP_REMOTE_PART_WHOLE || key[0] == '\0'
      || nnp_graph_select_nodes (nnp_model_get_graph (model), key, NULL, &err))
    return NULL;
  why = g_strdup_printf ("model %s: %s", nnp_model_get_name (model),
      err->message);
  g_error_free (err);
  return why;
}

/* Check a HELLO and attach the client to its part: NULL when welcome, else
 * the reason (g_free); *auth_failed when the token was wrong. */
static gchar *
check_hello (Listener *s, Client *c, const NnpRemoteHello *h,
    gboolean *auth_failed)
{
  GError *err = NULL;
  gchar *key, *why = NULL;
  NnpModel *model;

  *auth_failed = !gst_nn_remote_token_ok (s->config.token, h->token);
  if (*auth_failed)
    return g_strdup ("authentication failed: wrong or missing token");
  if (s->config.digest && s->config.digest[0]
      && g_ascii_strcasecmp (s->config.digest, h->digest) != 0) {
    /* the client's text as C escapes: one line */
    gchar *shown = g_strescape (h->digest, NULL);

    why = g_strdup_printf (
        "model digest mismatch: the client runs model %.64s, this server serves %s",
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
  /* a part the model does not have is refused before anything starts */
  model = listener_model (s);
  if (model) {
    why = unknown_nodes (model, h->part_kind, key);
    nnp_model_unref (model);
  }
  if (why) {
    gchar *t = g_strdup_printf ("bad part: %s", why);

    g_free (why);
    g_free (key);
    return t;
  }
  why = attach_client (s, c, h, key);
  g_free (key);
  return why;
}

/* Queue a frame; blocks while the queue is full.  FALSE when stopping. */
static gboolean
server_push (Listener *s, Client *c, GstNnServerFrame *f)
{
  g_mutex_lock (&s->lock);
  /* (a kick cancels without signalling the condition: looked at often) */
  while (!s->stopped && !g_cancellable_is_cancelled (c->cancellable) && c->ep
      && !c->ep->stopped
      && g_queue_get_length (&c->ep->queue) >= MAX (c->ep->max_queue, 1))
    g_cond_wait_until (&s->cond, &s->lock,
        g_get_monotonic_time () + 100 * G_TIME_SPAN_MILLISECOND);
  if (s->stopped || g_cancellable_is_cancelled (c->cancellable) || c->ep == NULL
      || c->ep->stopped) {
    g_mutex_unlock (&s->lock);
    gst_nn_server_frame_free (f);
    return FALSE;
  }
  c->ep->frames++;
  gst_buffer_add_nn_server_meta (f->buffer, c->id, f->seq, c->ep->id);
  g_queue_push_tail (&c->ep->queue, f);
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  return TRUE;
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
      plan = nnp_plan_from_json (c->part, -1, &err);
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
    if (c->check == NULL)
      goto refused; /* its HELLO was checked: should not happen */
  }
  if (!gst_nn_tensors_info_from_caps (&info, caps, &err))
    goto refused;
  upstream[0] = shapes && shapes[0] ? (gchar *) shapes : NULL;
  spec = gst_nn_part_spec_for_info (c->check, &info, upstream, &err);
  if (spec == NULL)
    goto refused;
  nnp_part_spec_unref (spec);
  /* a copy: the frame's caps go to the stage's thread, these stay here
   * (GstCaps reference counts are invisible to ThreadSanitizer) */
  gst_clear_caps (&c->caps_ok);
  c->caps_ok = gst_caps_copy (caps);
  g_free (c->shapes_ok);
  c->shapes_ok = g_strdup (shapes);
  return NULL;

refused:
  str = gst_caps_to_string (caps);
  why = g_strdup_printf (
      "frame caps do not fit the served part: %s (caps %.300s)",
      err ? err->message : "bad plan", str);
  g_free (str);
  g_clear_error (&err);
  return why;
}

/* The HELLO, read before the client is authenticated: the header, then the
 * payload as it comes (never more than GST_NN_SERVER_MAX_HELLO, and all the
 * unauthenticated peers together within GST_NN_SERVER_PREAUTH_BUDGET), so a
 * peer holds only the memory it has sent.  *payload: g_free. */
static gboolean
hello_recv (Listener *s, Client *c, NnpRemoteHeader *h, guint8 **payload,
    GError **error)
{
  GInputStream *in = g_io_stream_get_input_stream (c->stream);
  guint8 head[NNP_REMOTE_HEADER_SIZE];
  gsize got = 0, want;
  gboolean ok;
  guint8 *buf;

  *payload = NULL;
  if (!g_input_stream_read_all (in, head, sizeof head, &got, c->cancellable,
          error))
    return FALSE;
  if (got < 4 && got < sizeof head) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "connection closed");
    return FALSE;
  }
  /* a TLS ClientHello (a handshake record) on a plain server */
  if (s->cert == NULL && head[0] == 0x16 && head[1] == 0x03) {
    /* no ERROR: a closed handshake tells a TLS client "not TLS" */
    c->talks_tls = TRUE;
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
        "the client talks TLS, this server does not (no certificate): set tls=false on the client or start the server with a certificate");
    return FALSE;
  }
  if (got < sizeof head) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
        "connection closed after %" G_GSIZE_FORMAT " bytes of a header", got);
    return FALSE;
  }
  if (!nnp_remote_header_parse (head,
          MIN (s->config.max_payload, GST_NN_SERVER_MAX_HELLO), h, error))
    return FALSE;
  if (h->type != NNP_REMOTE_HELLO) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "expected HELLO, got %s",
        nnp_remote_type_name (h->type));
    return FALSE;
  }
  want = h->length;
  buf = g_malloc (1);
  for (got = 0; got < want;) {
    gsize chunk = MIN (want - got, 16384), n = 0;

    g_mutex_lock (&s->lock);
    ok = s->preauth_bytes + chunk <= GST_NN_SERVER_PREAUTH_BUDGET;
    if (ok) {
      s->preauth_bytes += chunk;
      c->preauth_bytes += chunk;
    } else {
      s->stats.rejected_budget++;
    }
    g_mutex_unlock (&s->lock);
    if (!ok) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
          "server busy: unauthenticated peers hold %u MiB of HELLOs, try again",
          GST_NN_SERVER_PREAUTH_BUDGET >> 20);
      g_free (buf);
      return FALSE;
    }
    buf = g_realloc (buf, got + chunk);
    if (!g_input_stream_read_all (in, buf + got, chunk, &n, c->cancellable,
            error)) {
      g_free (buf);
      return FALSE;
    }
    if (n < chunk) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "connection closed");
      g_free (buf);
      return FALSE;
    }
    got += n;
  }
  *payload = buf;
  return TRUE;
}

static void
preauth_release (Listener *s, Client *c)
{
  g_mutex_lock (&s->lock);
  s->preauth_bytes -= c->preauth_bytes;
  c->preauth_bytes = 0;
  g_mutex_unlock (&s->lock);
}

/* Whether a failed read is the peer's fault (malformed, refused: it gets an
 * ERROR) rather than the connection's end. */
static gboolean
is_peer_fault (const GError *err)
{
  return err->domain == NNP_ERROR && err->code != NNP_ERROR_IO;
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

/* HELLO: NULL when accepted (HELLO-OK sent), else why not (g_free);
 * *counter: the stats counter the refusal counts in. */
static gchar *
serve_hello (Listener *s, Client *c, guint64 **counter)
{
  NnpRemoteHeader h;
  NnpRemoteHello hello;
  guint8 *payload = NULL, *ok;
  GError *err = NULL;
  gboolean auth_failed = FALSE, parsed;
  gchar *why;
  gsize size;

  *counter = &s->stats.protocol_errors;
  if (!hello_recv (s, c, &h, &payload, &err)) {
    preauth_release (s, c);
    goto failed;
  }
  parsed = nnp_remote_hello_parse (payload, h.length, &hello, &err);
  g_free (payload);
  preauth_release (s, c);
  if (!parsed)
    goto failed;
  why = check_hello (s, c, &hello, &auth_failed);
  c->part_kind = hello.part_kind;
  c->part = g_strdup (hello.part);
  c->part_stage = hello.stage;
  nnp_remote_hello_clear (&hello);
  if (auth_failed) {
    guint ms;

    g_mutex_lock (&s->lock);
    ms = gst_nn_server_peers_auth_failed_locked (s, c->ip);
    g_mutex_unlock (&s->lock);
    *counter = NULL; /* counted there */
    gchar *t =
        g_strdup_printf ("%s (next try from %s in %u ms at the earliest)", why,
            c->ip, ms);
    g_free (why);
    return t;
  }
  if (why) {
    *counter = &s->stats.refusals;
    return why;
  }
  g_mutex_lock (&s->lock);
  gst_nn_server_peers_auth_ok_locked (s, c->ip);
  g_mutex_unlock (&s->lock);
  ok = nnp_remote_string_encode (s->config.device ? s->config.device : "cpu",
      &size);
  if (!client_send (c, NNP_REMOTE_HELLO_OK, h.seq, ok, size, &err)) {
    g_free (ok);
    goto failed;
  }
  g_free (ok);
  return NULL;

failed:
  why = g_strdup (err->message);
  if (!is_peer_fault (err))
    *counter = NULL;
  g_clear_error (&err);
  return why;
}

void
gst_nn_server_client_serve (Listener *s, Client *c)
{
  GInputStream *in = g_io_stream_get_input_stream (c->stream);
  NnpRemoteHeader h;
  guint8 *payload = NULL;
  GError *err = NULL;
  gchar *why = NULL;
  guint64 *counter = NULL;
  gboolean tell;

  why = serve_hello (s, c, &counter);
  if (why)
    goto refuse_hello;
  g_mutex_lock (&s->lock);
  c->authed = TRUE;
  c->last_rx_us = g_get_monotonic_time ();
  c->results = g_async_queue_new ();
  c->writer = g_thread_try_new ("nnserver-writer", client_writer, c, &err);
  g_mutex_unlock (&s->lock);
  if (c->writer == NULL) {
    why = g_strdup_printf ("server out of threads: %s", err->message);
    g_clear_error (&err);
    counter = NULL;
    goto refuse;
  }
  gst_nn_server_log (s, c->id, c->peer, "connected", NULL);

  for (;;) {
    if (!nnp_remote_recv (in, s->config.max_payload, &h, &payload,
            c->cancellable, &err)) {
      /* a bad header after HELLO is the peer's fault: it gets an ERROR */
      if (is_peer_fault (err)) {
        counter = &s->stats.protocol_errors;
        goto bad_peer;
      }
      goto closed;
    }
    g_mutex_lock (&s->lock);
    c->last_rx_us = g_get_monotonic_time ();
    g_mutex_unlock (&s->lock);
    switch (h.type) {
      case NNP_REMOTE_FRAME: {
        NnpRemoteFrame frame;
        GstNnServerFrame *f;
        GstCaps *caps;

        counter = &s->stats.protocol_errors;
        if (!nnp_remote_frame_parse (payload, h.length, &frame, &err))
          goto bad_peer;
        /* canonical caps rebuilt from the parsed tensors */
        caps = gst_nn_remote_frame_caps (&frame, &err);
        if (caps == NULL) {
          nnp_remote_frame_clear (&frame);
          counter = &s->stats.caps_refused;
          goto bad_peer;
        }
        why = check_caps (s, c, caps, frame.shapes);
        if (why) {
          gst_caps_unref (caps);
          nnp_remote_frame_clear (&frame);
          counter = &s->stats.caps_refused;
          goto refuse;
        }
        f = g_new0 (GstNnServerFrame, 1);
        f->client_id = c->id;
        f->seq = h.seq;
        f->caps = caps;
        f->shapes = g_strdup (frame.shapes);
        f->buffer = gst_nn_remote_frame_to_buffer (&frame, payload, h.length);
        payload = NULL;
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
        gsize size;
        guint8 *out;
        gboolean ok;

        counter = &s->stats.protocol_errors;
        if (s->config.model == NULL) {
          why = g_strdup ("this server has no model file to answer COST");
          goto refuse;
        }
        out = nnp_remote_cost_reply (s->config.model, s->config.device, payload,
            h.length, &size, &err);
        if (out == NULL)
          goto bad_peer;
        ok = client_send (c, NNP_REMOTE_COST_REPLY, h.seq, out, size, &err);
        g_free (out);
        if (!ok)
          goto closed;
        break;
      }
      default:
        counter = &s->stats.protocol_errors;
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
  g_mutex_lock (&s->lock);
  if (counter)
    (*counter)++;
  g_mutex_unlock (&s->lock);
  gst_nn_server_client_send_error (c, why);
  gst_nn_server_log (s, c->id, c->peer, "refused", why);
  g_free (why);
  g_clear_pointer (&payload, g_aligned_free);
  return;
refuse_hello:
  /* ended by the reaper or the server: its reason */
  g_mutex_lock (&s->lock);
  tell = TRUE;
  if (c->kicked) {
    g_free (why);
    why = g_strdup (c->kicked);
    tell = c->kick_tell;
    counter = NULL;
  }
  if (counter)
    (*counter)++;
  g_mutex_unlock (&s->lock);
  if (tell)
    gst_nn_server_client_send_error (c, why);
  gst_nn_server_log (s, c->id, c->peer, "refused", why);
  g_free (why);
  return;
closed:
  g_mutex_lock (&s->lock);
  why = g_strdup (c->kicked ? c->kicked : err ? err->message : "stopping");
  tell = c->kicked && c->kick_tell;
  g_mutex_unlock (&s->lock);
  if (tell)
    gst_nn_server_client_send_error (c, why);
  gst_nn_server_log (s, c->id, c->peer, "left", why);
  g_free (why);
  g_clear_error (&err);
  g_clear_pointer (&payload, g_aligned_free);
}
