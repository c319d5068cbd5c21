/* GStreamer nnpipe plugin: nnremote
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnremote
 * @title: nnremote
 * @short_description: run a stage of the model on another machine
 *
 * nnremote sends each tensor buffer to an nnpipe server (`nnpipe serve`,
 * or nnserversrc ! ... ! nnserversink) and pushes the server's result
 * downstream, in order, with the input buffer's timestamps, flags and
 * metas (they never travel: the input buffer waits in a table keyed by the
 * frame's sequence number).  Up to #GstNnRemote:in-flight frames are on
 * the wire at once, hiding the round trip; beyond that the element blocks
 * (backpressure, bounded memory).
 *
 * The connection starts with a HELLO naming the protocol version, the
 * model's digest, the part to run (#GstNnRemote:nodes, or
 * #GstNnRemote:plan + #GstNnRemote:stage; else the whole model) and
 * #GstNnRemote:token; a server that refuses it (other model, other part,
 * wrong token or version) is an error naming the reason.  Then a PING
 * measures the round-trip time and a 1 MiB PING the bandwidth
 * (#GstNnRemote:rtt, #GstNnRemote:bandwidth).
 *
 * When the connection breaks, nnremote reconnects (backoff from 50 ms to
 * 1 s) to the same host or the next of #GstNnRemote:hosts and re-sends the
 * frames that have no result yet: none is lost, duplicated or reordered.
 * No server within #GstNnRemote:timeout ms is an error naming the hosts.
 * A server is hung, and left for the next host, when frames wait and no
 * byte has come from it or been acknowledged by it for
 * #GstNnRemote:timeout ms; a server computing a frame for longer than that
 * is not hung: it sends keepalives meanwhile.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=x.f32 blocksize=4915200 ! \
 *   other/tensors,format=static,num_tensors=1,types=float32,dimensions=640:640:3:1,framerate=0/1 ! \
 *   nnstage model=det.onnx nodes=0..40 ! \
 *   nnremote hosts="gpu1:7000|gpu2:7000" model=det.onnx nodes=41..101 ! \
 *   filesink location=y.f32
 * ]|
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnremote-private.h"
#include "gstnnmodelcaps.h"
#include "gstnnserver.h"
#include "gstnntensorcaps.h"

#include <string.h>

GST_DEBUG_CATEGORY (gst_nn_remote_debug);
#define GST_CAT_DEFAULT gst_nn_remote_debug

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 7000
#define DEFAULT_IN_FLIGHT 4
#define DEFAULT_TIMEOUT 10000
#define DEFAULT_MAX_PAYLOAD NNP_REMOTE_DEFAULT_MAX_PAYLOAD

/* after the part's properties (gstnnpartprops.h) */
enum
{
  PROP_HOST = GST_NN_PART_PROP_LAST,
  PROP_PORT,
  PROP_HOSTS,
  PROP_IN_FLIGHT,
  PROP_TIMEOUT,
  PROP_TLS,
  PROP_TLS_CA,
  PROP_TLS_CERTIFICATE,
  PROP_TLS_KEY,
  PROP_TOKEN,
  PROP_DIGEST,
  PROP_MAX_PAYLOAD,
  PROP_RTT,
  PROP_BANDWIDTH,
  PROP_RECONNECTS,
  PROP_SERVER,
  PROP_BUSY_TIME,
  PROP_FRAMES,
};

G_DEFINE_TYPE (GstNnRemote, gst_nn_remote, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (nnremote, "nnremote", GST_RANK_NONE,
    GST_TYPE_NN_REMOTE);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

/* ------------------------------------------------------------ sink pad */

static GstFlowReturn
gst_nn_remote_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstNnRemote *self = GST_NN_REMOTE (parent);
  GstFlowReturn ret = GST_FLOW_OK;
  Pending *p;

  if (self->in_caps == NULL)
    goto not_negotiated;
  g_mutex_lock (&self->lock);
  while (!self->flushing && !self->stopping && !self->failed
      && self->src_ret == GST_FLOW_OK && self->n_frames >= self->in_flight)
    g_cond_wait (&self->cond, &self->lock);
  if (self->flushing || self->stopping)
    ret = GST_FLOW_FLUSHING;
  else if (self->failed)
    ret = GST_FLOW_ERROR;
  else
    ret = self->src_ret;
  if (ret != GST_FLOW_OK) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buffer);
    return ret;
  }
  p = g_new0 (Pending, 1);
  p->seq = self->next_seq++;
  p->buffer = buffer;
  p->caps = gst_caps_ref (self->in_caps);
  p->caps_str = gst_caps_to_string (self->in_caps);
  p->shapes = g_strdup (self->in_shapes ? self->in_shapes : "");
  g_queue_push_tail (&self->pending, p);
  if (self->n_frames++ == 0)
    self->busy_since = g_get_monotonic_time ();
  g_mutex_unlock (&self->lock);
  gst_nn_remote_send_pending (self);
  return GST_FLOW_OK;

  /* ERRORS */
not_negotiated : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before a buffer."),
      (NULL));
  gst_buffer_unref (buffer);
  return GST_FLOW_NOT_NEGOTIATED;
}
}

static gboolean
gst_nn_remote_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnRemote *self = GST_NN_REMOTE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS: {
      GstCaps *caps;
      GstNnTensorsInfo info;
      GError *err = NULL;

      gst_event_parse_caps (event, &caps);
      if (!gst_nn_tensors_info_from_caps (&info, caps, &err)) {
        GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Invalid tensor caps."),
            ("%s", err->message));
        g_error_free (err);
        gst_event_unref (event);
        return FALSE;
      }
      gst_caps_replace (&self->in_caps, caps);
      /* a part after the first: which model input shapes (the stage
       * upstream specialised for) the server's stage must use */
      {
        gchar **keys = gst_nn_shapes_query_upstream (self->sinkpad,
            self->model_digest ? self->model_digest : "");

        g_clear_pointer (&self->in_shapes, g_free);
        /* the most recent first: the one the caps come from */
        if (keys && keys[0] && keys[0][0])
          self->in_shapes = g_strdup (keys[0]);
        g_strfreev (keys);
        GST_DEBUG_OBJECT (self,
            "caps %" GST_PTR_FORMAT ", model input shapes %s", caps,
            self->in_shapes ? self->in_shapes : "(none)");
      }
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      g_queue_clear_full (&self->pending,
          (GDestroyNotify) gst_nn_remote_pending_free);
      self->n_frames = 0;
      self->busy_since = 0;
      self->flushing = FALSE;
      self->src_ret = GST_FLOW_OK;
      g_mutex_unlock (&self->lock);
      return gst_pad_push_event (self->srcpad, event);
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);

  /* serialized: after the results of the frames before it */
  g_mutex_lock (&self->lock);
  if (self->pending.length == 0 && self->pushing == 0) {
    g_mutex_unlock (&self->lock);
    gst_nn_remote_push_event (self, event);
    return TRUE;
  }
  {
    Pending *p = g_new0 (Pending, 1);
    p->event = event;
    g_queue_push_tail (&self->pending, p);
  }
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_nn_remote_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS: {
      GstCaps *filter, *caps = gst_pad_get_pad_template_caps (pad);

      gst_query_parse_caps (query, &filter);
      if (filter) {
        GstCaps *c =
            gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = c;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------ states */

static gboolean
gst_nn_remote_prepare (GstNnRemote *self)
{
  NnpRemoteHello hello = { 0 };
  NnpPartRequest req = { 0 };
  NnpPartOptions o = { 0 };
  GError *err = NULL;
  gchar *list = NULL, *digest = NULL, *part = NULL, *model = NULL;
  gchar *plan_path = NULL, *nodes = NULL;
  NnpPlan *plan = NULL;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  list = self->hosts && self->hosts[0]
      ? g_strdup (self->hosts)
      : g_strdup_printf ("%s:%u", self->host, self->port);
  digest = g_strdup (self->digest);
  if (self->part.plan)
    plan = nnp_plan_copy (self->part.plan);
  model = g_strdup (self->part.model);
  plan_path = g_strdup (self->part.plan_path);
  nodes = g_strdup (self->part.nodes);
  o.stage = self->part.stage;
  GST_OBJECT_UNLOCK (self);

  /* the part the properties name, resolved as nnstage's (nnp_part_open()
   * starts with the same call); the model is the server's, named by its
   * digest: the digest property, else the model file's, else the plan's */
  o.plan = plan;
  o.plan_name = plan ? "the pipeline's plan" : NULL;
  o.nodes = nodes;
  ok = nnp_part_request_resolve (model, plan_path, &o, FALSE, &req, &err);
  if (plan)
    nnp_plan_free (plan);
  g_free (model);
  g_free (plan_path);
  g_free (nodes);
  if (!ok)
    goto bad_part;
  if (!(digest && digest[0])) {
    g_free (digest);
    digest = g_strdup (req.digest);
  }

  /* "remote://a:7000|b:7000" or "a:7000|b:7000" */
  g_strfreev (self->addrs);
  self->n_addrs = 0;
  self->addrs = gst_nn_remote_hosts_parse (list, &err);
  if (self->addrs == NULL)
    goto bad_hosts;
  self->n_addrs = (gint) g_strv_length (self->addrs);
  self->cur_addr = 0;

  hello.version = NNP_REMOTE_VERSION;
  hello.digest = digest ? digest : (gchar *) "";
  g_free (self->model_digest);
  self->model_digest = g_strdup (hello.digest);
  hello.token = self->token ? self->token : (gchar *) "";
  if (req.plan) {
    hello.part_kind = NNP_REMOTE_PART_PLAN;
    part = nnp_plan_to_json (req.plan);
    hello.stage = (guint32) req.stage;
  } else if (req.nodes) {
    hello.part_kind = NNP_REMOTE_PART_NODES;
    part = g_strdup (req.nodes);
  } else {
    hello.part_kind = NNP_REMOTE_PART_WHOLE;
    part = g_strdup ("");
  }
  hello.part = part;
  g_free (self->hello);
  self->hello = nnp_remote_hello_encode (&hello, &self->hello_size);
  g_free (part);
  g_free (digest);
  g_free (list);
  nnp_part_request_clear (&req);
  return TRUE;

  /* ERRORS */
bad_part : {
  gst_nn_part_props_post_error (GST_ELEMENT (self), err);
  goto fail;
}
bad_hosts : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid hosts '%s'.", list),
      ("%s", err ? err->message : "no host"));
  goto fail;
}
fail:
  g_clear_error (&err);
  g_free (digest);
  g_free (list);
  nnp_part_request_clear (&req);
  return FALSE;
}

static void
gst_nn_remote_reset (GstNnRemote *self)
{
  g_mutex_lock (&self->lock);
  g_queue_clear_full (&self->pending,
      (GDestroyNotify) gst_nn_remote_pending_free);
  self->n_frames = 0;
  self->next_seq = 0;
  g_clear_object (&self->conn);
  g_clear_object (&self->sock);
  g_clear_object (&self->conn_cancel);
  self->hung_gen = 0;
  self->failed = FALSE;
  self->flushing = FALSE;
  self->src_ret = GST_FLOW_OK;
  self->connected_once = FALSE;
  self->reconnects = 0;
  self->busy_since = 0;
  self->busy_ns = 0;
  self->frames = 0;
  g_mutex_unlock (&self->lock);
  gst_clear_caps (&self->in_caps);
  g_clear_pointer (&self->in_shapes, g_free);
  gst_clear_caps (&self->out_caps);
  gst_clear_event (&self->held_segment);
}

static GstStateChangeReturn
gst_nn_remote_change_state (GstElement *element, GstStateChange transition)
{
  GstNnRemote *self = GST_NN_REMOTE (element);
  GstStateChangeReturn ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!gst_nn_remote_prepare (self))
        return GST_STATE_CHANGE_FAILURE;
      gst_nn_remote_reset (self);
      g_mutex_lock (&self->lock);
      self->stopping = FALSE;
      g_mutex_unlock (&self->lock);
      g_clear_object (&self->cancellable);
      self->cancellable = g_cancellable_new ();
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      g_mutex_lock (&self->lock);
      self->stopping = TRUE;
      if (self->conn_cancel)
        g_cancellable_cancel (self->conn_cancel);
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      g_cancellable_cancel (self->cancellable);
      gst_nn_remote_watchdog_stop (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_remote_parent_class)
            ->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      gst_nn_remote_watchdog_start (self);
      gst_pad_start_task (self->srcpad, (GstTaskFunction) gst_nn_remote_loop,
          self, NULL);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      gst_pad_stop_task (self->srcpad);
      gst_nn_remote_reset (self);
      break;
    default:
      break;
  }
  return ret;
}

/* ------------------------------------------------------------ properties */

static void
gst_nn_remote_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnRemote *self = GST_NN_REMOTE (object);
  gchar **str = NULL;

  GST_OBJECT_LOCK (self);
  if (gst_nn_part_props_set (&self->part, prop_id, value))
    prop_id = 0;
  switch (prop_id) {
    case 0:
      break;
    case PROP_HOST:
      str = &self->host;
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_HOSTS:
      str = &self->hosts;
      break;
    case PROP_IN_FLIGHT:
      self->in_flight = g_value_get_uint (value);
      break;
    case PROP_TIMEOUT:
      self->timeout = g_value_get_uint (value);
      break;
    case PROP_TLS:
      self->tls = g_value_get_boolean (value);
      break;
    case PROP_TLS_CA:
      str = &self->tls_ca;
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
    case PROP_DIGEST:
      str = &self->digest;
      break;
    case PROP_MAX_PAYLOAD:
      self->max_payload = g_value_get_uint (value);
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
gst_nn_remote_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnRemote *self = GST_NN_REMOTE (object);

  GST_OBJECT_LOCK (self);
  if (gst_nn_part_props_get (&self->part, prop_id, value))
    prop_id = 0;
  switch (prop_id) {
    case 0:
      break;
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_HOSTS:
      g_value_set_string (value, self->hosts);
      break;
    case PROP_IN_FLIGHT:
      g_value_set_uint (value, self->in_flight);
      break;
    case PROP_TIMEOUT:
      g_value_set_uint (value, self->timeout);
      break;
    case PROP_TLS:
      g_value_set_boolean (value, self->tls);
      break;
    case PROP_TLS_CA:
      g_value_set_string (value, self->tls_ca);
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
    case PROP_DIGEST:
      g_value_set_string (value, self->digest);
      break;
    case PROP_MAX_PAYLOAD:
      g_value_set_uint (value, self->max_payload);
      break;
    case PROP_RTT:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value, self->rtt_us);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_BANDWIDTH:
      g_mutex_lock (&self->lock);
      g_value_set_double (value, self->bandwidth);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_RECONNECTS:
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->reconnects);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_SERVER:
      g_mutex_lock (&self->lock);
      g_value_set_string (value, self->server);
      g_mutex_unlock (&self->lock);
      break;
    case PROP_BUSY_TIME:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value,
          self->busy_ns
              + (self->busy_since
                      ? (g_get_monotonic_time () - self->busy_since) * 1000
                      : 0));
      g_mutex_unlock (&self->lock);
      break;
    case PROP_FRAMES:
      g_mutex_lock (&self->lock);
      g_value_set_uint64 (value, self->frames);
      g_mutex_unlock (&self->lock);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_remote_finalize (GObject *object)
{
  GstNnRemote *self = GST_NN_REMOTE (object);

  gst_nn_remote_reset (self);
  g_free (self->host);
  g_free (self->hosts);
  g_free (self->tls_ca);
  g_free (self->tls_cert);
  g_free (self->tls_key);
  g_free (self->token);
  g_free (self->digest);
  gst_nn_part_props_clear (&self->part);
  g_strfreev (self->addrs);
  g_free (self->hello);
  g_free (self->model_digest);
  g_free (self->server);
  g_clear_object (&self->cancellable);
  g_mutex_clear (&self->lock);
  g_mutex_clear (&self->write_lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (gst_nn_remote_parent_class)->finalize (object);
}

/* the part's properties, in nnremote's words */
static const gchar *const part_blurbs[GST_NN_PART_PROP_LAST] = {
  [GST_NN_PART_PROP_MODEL] =
      "The ONNX model (its digest is sent to the server)",
  [GST_NN_PART_PROP_NODES] =
      "The part to run remotely, as nnstage nodes= (\"a,b\", \"first..last\"); none: the whole model",
  [GST_NN_PART_PROP_PLAN] = "Plan file whose stage runs remotely",
  [GST_NN_PART_PROP_STAGE] = "Stage of the plan to run remotely",
};

static void
gst_nn_remote_class_init (GstNnRemoteClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  GST_DEBUG_CATEGORY_INIT (gst_nn_remote_debug, "nnremote", 0,
      "nnpipe remote-stage client");

  gobject_class->set_property = gst_nn_remote_set_property;
  gobject_class->get_property = gst_nn_remote_get_property;
  gobject_class->finalize = gst_nn_remote_finalize;

  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host", "Server host (without hosts)",
          DEFAULT_HOST, rw));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "Server port (without hosts)", 1,
          65535, DEFAULT_PORT, rw));
  g_object_class_install_property (gobject_class, PROP_HOSTS,
      g_param_spec_string ("hosts", "Hosts",
          "Servers to try in turn, \"a:7000|b:7000\" (a leading remote:// is allowed); overrides host and port",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_IN_FLIGHT,
      g_param_spec_uint ("in-flight", "In flight",
          "Frames sent and not yet answered, at most", 1, 1024,
          DEFAULT_IN_FLIGHT, rw));
  g_object_class_install_property (gobject_class, PROP_TIMEOUT,
      g_param_spec_uint ("timeout", "Timeout",
          "Milliseconds to find a server (at start and after a connection breaks) before failing; also: a server with frames waiting that "
          "sends and acknowledges nothing for this long is hung (a busy one sends keepalives) and left for the next host",
          1, G_MAXUINT, DEFAULT_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_TLS,
      g_param_spec_boolean ("tls", "TLS",
          "Talk TLS, checking the server's certificate", FALSE, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_CA,
      g_param_spec_string ("tls-ca-file", "TLS CA file",
          "PEM file of the certificate authorities to trust (default: the system's)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_CERTIFICATE,
      g_param_spec_string ("tls-certificate", "TLS certificate",
          "PEM file with this client's certificate (and its key unless tls-key is set), for a server that asks for one (mutual TLS)",
          NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TLS_KEY,
      g_param_spec_string ("tls-key", "TLS key",
          "PEM file with the client certificate's private key", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_TOKEN,
      g_param_spec_string ("token", "Token", "Shared secret for the server",
          NULL, rw));
  /* the part, selected as nnstage selects it (gstnnpartprops.h) */
  gst_nn_part_props_install (gobject_class, GST_NN_PART_PROPS_PART,
      part_blurbs);
  g_object_class_install_property (gobject_class, PROP_DIGEST,
      g_param_spec_string ("digest", "Digest",
          "Model digest (SHA-256 hex) instead of model", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PAYLOAD,
      g_param_spec_uint ("max-payload", "Max payload",
          "Largest result accepted (bytes)", 1024, G_MAXUINT32,
          DEFAULT_MAX_PAYLOAD, rw));
  g_object_class_install_property (gobject_class, PROP_RTT,
      g_param_spec_uint64 ("rtt", "RTT",
          "Round-trip time measured at the first connection (microseconds)", 0,
          G_MAXUINT64, 0, ro));
  g_object_class_install_property (gobject_class, PROP_BANDWIDTH,
      g_param_spec_double ("bandwidth", "Bandwidth",
          "Bytes per second measured at the first connection", 0, G_MAXDOUBLE,
          0, ro));
  g_object_class_install_property (gobject_class, PROP_RECONNECTS,
      g_param_spec_uint ("reconnects", "Reconnects",
          "Connections made after the first one", 0, G_MAXUINT, 0, ro));
  g_object_class_install_property (gobject_class, PROP_SERVER,
      g_param_spec_string ("server", "Server",
          "The server connected to now, \"host:port (device)\"", NULL, ro));

  /* the names of nnstage's: nnpipeline's stats read them */
  g_object_class_install_property (gobject_class, PROP_BUSY_TIME,
      g_param_spec_uint64 ("busy-time", "Busy time",
          "Nanoseconds with at least one frame at the server since start", 0,
          G_MAXUINT64, 0, ro));
  g_object_class_install_property (gobject_class, PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames", "Results pushed since start", 0,
          G_MAXUINT64, 0, ro));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "nnpipe remote stage",
      "Filter/Network", "Runs a stage of a model on an nnpipe server",
      "nnpipe");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_nn_remote_change_state);
}

static void
gst_nn_remote_init (GstNnRemote *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_remote_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->in_flight = DEFAULT_IN_FLIGHT;
  self->timeout = DEFAULT_TIMEOUT;
  self->max_payload = DEFAULT_MAX_PAYLOAD;
  gst_nn_part_props_init (&self->part);
  g_mutex_init (&self->lock);
  g_mutex_init (&self->write_lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->pending);
}
