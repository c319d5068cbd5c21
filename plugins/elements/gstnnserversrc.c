/* GStreamer nnpipe plugin: nnserversrc
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnserversrc
 * @title: nnserversrc
 * @short_description: receive tensors from nnremote clients
 *
 * nnserversrc listens on #GstNnServerSrc:host : #GstNnServerSrc:port
 * (localhost unless told otherwise), checks each client's HELLO (protocol
 * version, model digest, part, token) and pushes the frames of all clients,
 * in arrival order, each tagged with the client and its sequence number;
 * nnserversink with the same port sends each result back to its client.
 * A malformed or oversized message gets an ERROR and drops its client only.
 * With #GstNnServerSrc:tls-certificate the clients talk TLS.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 nnserversrc port=7000 model=m.onnx ! \
 *     nnstage model=m.onnx nodes=41..101 ! nnserversink port=7000
 * ]| (`nnpipe serve` builds this pipeline)
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserversrc.h"
#include "gstnnmodelcaps.h"
#include "gstnnserver.h"
#include "gstnntensorcaps.h"

#include <nnpipe/nnpipe.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_server_src_debug);
#define GST_CAT_DEFAULT gst_nn_server_src_debug

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 7000
#define DEFAULT_MAX_PAYLOAD NNP_REMOTE_DEFAULT_MAX_PAYLOAD
#define DEFAULT_MAX_QUEUE 4
#define DEFAULT_DEVICE "cpu"

enum
{
  PROP_0,
  PROP_HOST,
  PROP_PORT,
  PROP_CURRENT_PORT,
  PROP_TLS_CERTIFICATE,
  PROP_TLS_KEY,
  PROP_TOKEN,
  PROP_MODEL,
  PROP_DIGEST,
  PROP_PART,
  PROP_DEVICE,
  PROP_MAX_PAYLOAD,
  PROP_MAX_QUEUE,
  PROP_CLIENTS,
  PROP_TLS_CLIENT_CA,
  PROP_HANDSHAKE_TIMEOUT,
  PROP_IDLE_TIMEOUT,
  PROP_MAX_CONNECTIONS,
  PROP_MAX_PER_ADDRESS,
  PROP_HTTP,
  PROP_HTTP_PORT,
};

struct _GstNnServerSrc
{
  GstPushSrc parent;

  /* properties (object lock) */
  gchar *host;
  guint port;
  gchar *tls_cert, *tls_key, *token, *model, *digest, *part, *device;
  gchar *tls_client_ca, *http;
  guint max_payload, max_queue;
  guint handshake_timeout, idle_timeout, max_connections, max_per_address;

  GstNnServer *server; /* owned; from start to stop */
  GstCaps *caps;       /* caps of the last pushed frame */
  gchar *shapes;       /* its model input shapes (object lock) */
};

enum
{
  SIGNAL_PART_REQUESTED,
  SIGNAL_CLIENT_EVENT,
  LAST_SIGNAL
};
static guint signals[LAST_SIGNAL];

G_DEFINE_TYPE (GstNnServerSrc, gst_nn_server_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (nnserversrc, "nnserversrc", GST_RANK_NONE,
    GST_TYPE_NN_SERVER_SRC);

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

static void
gst_nn_server_src_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      str = &self->host;
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_TLS_CERTIFICATE:
      str = &self->tls_cert;
      break;
    case PROP_TLS_KEY:
      str = &self->tls_key;
      break;
    case PROP_TOKEN:
      str = &self->token;
      break;
    case PROP_MODEL:
      str = &self->model;
      break;
    case PROP_DIGEST:
      str = &self->digest;
      break;
    case PROP_PART:
      str = &self->part;
      break;
    case PROP_DEVICE:
      str = &self->device;
      break;
    case PROP_MAX_PAYLOAD:
      self->max_payload = g_value_get_uint (value);
      break;
    case PROP_MAX_QUEUE:
      self->max_queue = g_value_get_uint (value);
      break;
    case PROP_TLS_CLIENT_CA:
      str = &self->tls_client_ca;
      break;
    case PROP_HTTP:
      str = &self->http;
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      self->handshake_timeout = g_value_get_uint (value);
      break;
    case PROP_IDLE_TIMEOUT:
      self->idle_timeout = g_value_get_uint (value);
      break;
    case PROP_MAX_CONNECTIONS:
      self->max_connections = g_value_get_uint (value);
      break;
    case PROP_MAX_PER_ADDRESS:
      self->max_per_address = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  if (str) {
    g_free (*str);
    *str = g_value_dup_string (value);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_server_src_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_CURRENT_PORT:
      g_value_set_uint (value,
          self->server ? gst_nn_server_get_port (self->server) : 0);
      break;
    case PROP_TLS_CERTIFICATE:
      g_value_set_string (value, self->tls_cert);
      break;
    case PROP_TLS_KEY:
      g_value_set_string (value, self->tls_key);
      break;
    case PROP_TOKEN:
      g_value_set_string (value, self->token);
      break;
    case PROP_MODEL:
      g_value_set_string (value, self->model);
      break;
    case PROP_DIGEST:
      g_value_set_string (value, self->digest);
      break;
    case PROP_PART:
      g_value_set_string (value, self->part);
      break;
    case PROP_DEVICE:
      g_value_set_string (value, self->device);
      break;
    case PROP_MAX_PAYLOAD:
      g_value_set_uint (value, self->max_payload);
      break;
    case PROP_MAX_QUEUE:
      g_value_set_uint (value, self->max_queue);
      break;
    case PROP_CLIENTS:
      g_value_set_uint (value,
          self->server ? gst_nn_server_get_n_clients (self->server) : 0);
      break;
    case PROP_TLS_CLIENT_CA:
      g_value_set_string (value, self->tls_client_ca);
      break;
    case PROP_HTTP:
      g_value_set_string (value, self->http);
      break;
    case PROP_HTTP_PORT:
      g_value_set_uint (value,
          self->server ? gst_nn_server_get_http_port (self->server) : 0);
      break;
    case PROP_HANDSHAKE_TIMEOUT:
      g_value_set_uint (value, self->handshake_timeout);
      break;
    case PROP_IDLE_TIMEOUT:
      g_value_set_uint (value, self->idle_timeout);
      break;
    case PROP_MAX_CONNECTIONS:
      g_value_set_uint (value, self->max_connections);
      break;
    case PROP_MAX_PER_ADDRESS:
      g_value_set_uint (value, self->max_per_address);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gchar *
part_requested (guint8 part_kind, const gchar *part, guint stage,
    const gchar *key, gpointer data)
{
  gchar *why = NULL;

  g_signal_emit (data, signals[SIGNAL_PART_REQUESTED], 0, (guint) part_kind,
      part, stage, key, &why);
  return why;
}

static void
client_event (const gchar *event, guint64 id, const gchar *peer,
    const gchar *reason, gint64 time, gpointer data)
{
  g_signal_emit (data, signals[SIGNAL_CLIENT_EVENT], 0, event, id, peer, reason,
      time);
}

static gboolean
gst_nn_server_src_start (GstBaseSrc *src)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);
  GstNnServerConfig config = { 0 };
  NnpModel *model = NULL;
  GError *err = NULL;
  GstNnServer *server;

  GST_OBJECT_LOCK (self);
  config.host = g_strdup (self->host);
  config.port = self->port;
  config.tls_cert_file = g_strdup (self->tls_cert);
  config.tls_key_file = g_strdup (self->tls_key);
  config.token = g_strdup (self->token);
  config.digest = g_strdup (self->digest);
  config.part = g_strdup (self->part);
  config.model = g_strdup (self->model);
  config.device = g_strdup (self->device);
  config.max_payload = self->max_payload;
  config.max_queue = self->max_queue;
  config.tls_client_ca = g_strdup (self->tls_client_ca);
  config.http = g_strdup (self->http);
  config.handshake_timeout = self->handshake_timeout;
  config.idle_timeout = self->idle_timeout ? self->idle_timeout : G_MAXUINT;
  config.max_connections = self->max_connections;
  config.max_per_address = self->max_per_address;
  GST_OBJECT_UNLOCK (self);

  /* with a model and no digest: clients must run this model */
  if (config.model && config.model[0] && !(config.digest && config.digest[0])) {
    model = nnp_model_load (config.model, &err);
    if (model == NULL)
      goto no_model;
    g_free (config.digest);
    config.digest = g_strdup (nnp_model_get_digest (model));
    nnp_model_unref (model);
  }
  server = gst_nn_server_start (&config, G_OBJECT (self), &err);
  if (server == NULL)
    goto no_server;
  GST_OBJECT_LOCK (self);
  self->server = server;
  GST_OBJECT_UNLOCK (self);
  if (g_signal_has_handler_pending (self, signals[SIGNAL_PART_REQUESTED], 0,
          FALSE))
    gst_nn_server_set_part_func (server, part_requested, self);
  if (g_signal_has_handler_pending (self, signals[SIGNAL_CLIENT_EVENT], 0,
          FALSE))
    gst_nn_server_set_log_func (server, client_event, self);
  gst_nn_server_config_clear (&config);
  return TRUE;

  /* ERRORS */
no_model : {
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
      ("Cannot load the model '%s'.", config.model), ("%s", err->message));
  goto fail;
}
no_server : {
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Cannot start the server."),
      ("%s", err->message));
  goto fail;
}
fail:
  g_clear_error (&err);
  gst_nn_server_config_clear (&config);
  return FALSE;
}

static gboolean
gst_nn_server_src_stop (GstBaseSrc *src)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);
  GstNnServer *server;

  GST_OBJECT_LOCK (self);
  server = self->server;
  self->server = NULL;
  GST_OBJECT_UNLOCK (self);
  if (server)
    gst_nn_server_stop (server);
  gst_clear_caps (&self->caps);
  g_clear_pointer (&self->shapes, g_free);
  return TRUE;
}

/* A later part asks which model input shapes the tensors come from: the
 * client's, sent with the frame being pushed.
 *
 * LATENCY: not live.  The source pushes when a request comes (hence
 * gst_base_src_set_live, no preroll), but its frames are requests that
 * carry their client's timestamps, not captures in this pipeline's clock:
 * nothing downstream may sync on them or drop them as late (a stage's live
 * drop policy, gstnndrop.h); every frame is answered, and a client too slow
 * to be served is dropped whole by max-queue. */
static gboolean
gst_nn_server_src_query (GstBaseSrc *src, GstQuery *query)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);
  gboolean answered;

  if (gst_nn_shapes_query_is (query)) {
    GST_OBJECT_LOCK (self);
    answered = gst_nn_shapes_query_answer_keys (query, self->shapes);
    GST_OBJECT_UNLOCK (self);
    return answered;
  }
  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gst_query_set_latency (query, FALSE, 0, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (gst_nn_server_src_parent_class)
      ->query (src, query);
}

static gboolean
gst_nn_server_src_unlock (GstBaseSrc *src)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);

  if (self->server)
    gst_nn_server_set_flushing (self->server, TRUE);
  return TRUE;
}

static gboolean
gst_nn_server_src_unlock_stop (GstBaseSrc *src)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);

  if (self->server)
    gst_nn_server_set_flushing (self->server, FALSE);
  return TRUE;
}

/* The caps come with the frames (create sets them): nothing to choose here. */
static gboolean
gst_nn_server_src_negotiate (GstBaseSrc *src)
{
  return TRUE;
}

static GstFlowReturn
gst_nn_server_src_create (GstPushSrc *src, GstBuffer **buf)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (src);
  GstNnServerFrame *f = gst_nn_server_pop (self->server);

  if (f == NULL)
    return GST_FLOW_FLUSHING;
  /* before the caps: the next stage asks for them on the caps event */
  GST_OBJECT_LOCK (self);
  g_free (self->shapes);
  self->shapes = g_strdup (f->shapes);
  GST_OBJECT_UNLOCK (self);
  if (self->caps == NULL || !gst_caps_is_equal (self->caps, f->caps)) {
    GstPad *pad = GST_BASE_SRC_PAD (self);

    GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, f->caps);
    /* the stage is asked first (its own caps query): a CAPS event it
     * refuses would stop it for every client */
    if (!gst_pad_peer_query_accept_caps (pad, f->caps))
      goto refused;
    if (!gst_base_src_set_caps (GST_BASE_SRC (self), f->caps)) {
      /* the refused caps stay sticky on the pad: put the last good ones
       * back so the next frame does not meet them */
      if (self->caps)
        gst_base_src_set_caps (GST_BASE_SRC (self), self->caps);
      goto refused;
    }
    gst_caps_replace (&self->caps, f->caps);
  }
  *buf = f->buffer;
  f->buffer = NULL;
  gst_nn_server_frame_free (f);
  return GST_FLOW_OK;

refused : {
  gchar *msg = g_strdup_printf (
      "the served stage refuses the frame caps %" GST_PTR_FORMAT, f->caps);

  /* the client would wait for a result that cannot come: drop it */
  GST_WARNING_OBJECT (self, "client %" G_GUINT64_FORMAT ": %s", f->client_id,
      msg);
  gst_nn_server_drop_client (self->server, f->client_id, msg);
  gst_nn_server_frame_dropped (self->server);
  g_free (msg);
  gst_nn_server_frame_free (f);
  return GST_FLOW_OK;
}
}

static void
gst_nn_server_src_finalize (GObject *object)
{
  GstNnServerSrc *self = GST_NN_SERVER_SRC (object);

  g_free (self->host);
  g_free (self->tls_cert);
  g_free (self->tls_key);
  g_free (self->token);
  g_free (self->model);
  g_free (self->digest);
  g_free (self->part);
  g_free (self->device);
  g_free (self->tls_client_ca);
  g_free (self->http);
  g_free (self->shapes);
  G_OBJECT_CLASS (gst_nn_server_src_parent_class)->finalize (object);
}

static void
gst_nn_server_src_class_init (GstNnServerSrcClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *push_class = GST_PUSH_SRC_CLASS (klass);
  const GParamFlags rw =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  GST_DEBUG_CATEGORY_INIT (gst_nn_server_src_debug, "nnserversrc", 0,
      "nnpipe remote-stage server source");

  gobject_class->set_property = gst_nn_server_src_set_property;
  gobject_class->get_property = gst_nn_server_src_get_property;
  gobject_class->finalize = gst_nn_server_src_finalize;

  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host",
          "IP address to listen on (0.0.0.0 or :: for every interface)",
          DEFAULT_HOST, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "TCP port (0: any free port)", 0,
          65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_CURRENT_PORT,
      g_param_spec_uint ("current-port", "Current port",
          "The port listened on (0 when stopped)", 0, 65535, 0, ro));
  g_object_class_install_property (gobject_class, PROP_TLS_CERTIFICATE,
      g_param_spec_string ("tls-certificate", "TLS certificate",
          "PEM file with the server certificate (and the key unless tls-key is set); clients then talk TLS",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_KEY,
      g_param_spec_string ("tls-key", "TLS key",
          "PEM file with the certificate's private key", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TOKEN,
      g_param_spec_string ("token", "Token",
          "Shared secret every client's HELLO must carry", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "ONNX model served: clients must name its digest; answers COST queries",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DIGEST,
      g_param_spec_string ("digest", "Digest",
          "Model digest (SHA-256, hex) clients must name (default: model's)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_PART,
      g_param_spec_string ("part", "Part",
          "The part of the model served, as node names joined by ',' or an nnstage nodes= range; \"\" = the whole model; unset = any part",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Device of the served stage (told to clients, used for COST)",
          DEFAULT_DEVICE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PAYLOAD,
      g_param_spec_uint ("max-payload", "Max payload",
          "Largest message accepted (bytes); larger ones are refused before allocation",
          1024, G_MAXUINT32, DEFAULT_MAX_PAYLOAD, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_QUEUE,
      g_param_spec_uint ("max-queue", "Max queue",
          "Frames of all clients queued for the pipeline; beyond it clients wait (TCP backpressure)",
          1, 1024, DEFAULT_MAX_QUEUE, rw));
  g_object_class_install_property (gobject_class, PROP_CLIENTS,
      g_param_spec_uint ("clients", "Clients", "Clients connected now", 0,
          G_MAXUINT, 0, ro));
  g_object_class_install_property (gobject_class, PROP_TLS_CLIENT_CA,
      g_param_spec_string ("tls-client-ca", "TLS client CA",
          "PEM file of the CA(s) whose certificates clients must show (mutual TLS; needs tls-certificate)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_HANDSHAKE_TIMEOUT,
      g_param_spec_uint ("handshake-timeout", "Handshake timeout",
          "ms from accepting a connection to its HELLO (TLS handshake included); a slower peer is dropped",
          100, 600000, GST_NN_SERVER_DEFAULT_HANDSHAKE_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_IDLE_TIMEOUT,
      g_param_spec_uint ("idle-timeout", "Idle timeout",
          "s a client with no frame at the server may send nothing before it is dropped (0: never)",
          0, G_MAXUINT - 1, GST_NN_SERVER_DEFAULT_IDLE_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_CONNECTIONS,
      g_param_spec_uint ("max-connections", "Max connections",
          "Connections open at once (each has a thread); beyond it new ones get an ERROR",
          1, 65536, GST_NN_SERVER_DEFAULT_MAX_CONNECTIONS, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PER_ADDRESS,
      g_param_spec_uint ("max-per-address", "Max per address",
          "Connections open at once from one IP address", 1, 65536,
          GST_NN_SERVER_DEFAULT_MAX_PER_ADDRESS, rw));
  g_object_class_install_property (gobject_class, PROP_HTTP,
      g_param_spec_string ("http", "HTTP",
          "ADDR:PORT serving Prometheus /metrics, /healthz, /readyz and /parts (port 0: any free port; unset: none)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_HTTP_PORT,
      g_param_spec_uint ("http-port", "HTTP port",
          "The port of the HTTP endpoints (0 when none)", 0, 65535, 0, ro));

  /**
   * GstNnServerSrc::part-requested:
   * @src: the nnserversrc
   * @part_kind: 0 whole model, 1 a nodes= list, 2 a plan stage
   * @part: the nodes= list or the plan (JSON)
   * @stage: the plan's stage
   * @key: the part as node names (the part property of an nnserversrc
   *   serving it)
   *
   * A client asks for a part no nnserversrc of this port serves (emitted
   * from the client's thread; only when a handler is connected before
   * start).  The handler may start a pipeline with `nnserversrc port=P
   * part=KEY` before it returns; the client then talks to it.  With a
   * model, the part's node names were checked against it first.
   *
   * Returns: (transfer full) (nullable): NULL, or why the part is refused
   * (the client gets it in its ERROR)
   */
  signals[SIGNAL_PART_REQUESTED] = g_signal_new ("part-requested",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_STRING, 4, G_TYPE_UINT, G_TYPE_STRING, G_TYPE_UINT, G_TYPE_STRING);

  /**
   * GstNnServerSrc::client-event:
   * @src: the nnserversrc (the first of its port)
   * @event: "connected", "refused" or "left"
   * @id: the client's number
   * @peer: its address ("10.0.0.9:41234")
   * @reason: why ("" for none)
   * @time: when (us since the epoch)
   *
   * A client connected, was refused or left (emitted from its connection's
   * thread; only when a handler is connected before start).  The same goes
   * on the bus as an element message "nnserver-client"; the signal lets an
   * application log without its main loop reading the message.
   */
  signals[SIGNAL_CLIENT_EVENT] =
      g_signal_new ("client-event", G_TYPE_FROM_CLASS (klass),
          G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 5, G_TYPE_STRING,
          G_TYPE_UINT64, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT64);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "nnpipe remote-stage server source", "Source/Network",
      "Receives tensors from nnremote clients (with nnserversink)", "nnpipe");

  base_class->start = GST_DEBUG_FUNCPTR (gst_nn_server_src_start);
  base_class->stop = GST_DEBUG_FUNCPTR (gst_nn_server_src_stop);
  base_class->unlock = GST_DEBUG_FUNCPTR (gst_nn_server_src_unlock);
  base_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_nn_server_src_unlock_stop);
  base_class->query = GST_DEBUG_FUNCPTR (gst_nn_server_src_query);
  base_class->negotiate = GST_DEBUG_FUNCPTR (gst_nn_server_src_negotiate);
  push_class->create = GST_DEBUG_FUNCPTR (gst_nn_server_src_create);
}

static void
gst_nn_server_src_init (GstNnServerSrc *self)
{
  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->device = g_strdup (DEFAULT_DEVICE);
  self->max_payload = DEFAULT_MAX_PAYLOAD;
  self->max_queue = DEFAULT_MAX_QUEUE;
  self->handshake_timeout = GST_NN_SERVER_DEFAULT_HANDSHAKE_TIMEOUT;
  self->idle_timeout = GST_NN_SERVER_DEFAULT_IDLE_TIMEOUT;
  self->max_connections = GST_NN_SERVER_DEFAULT_MAX_CONNECTIONS;
  self->max_per_address = GST_NN_SERVER_DEFAULT_MAX_PER_ADDRESS;
  gst_base_src_set_live (GST_BASE_SRC (self), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}
