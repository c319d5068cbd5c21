/* GStreamer nnpipe plugin: nnmetapublish method=mqtt
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * DL Streamer's names (gvametapublish method=mqtt address=HOST:PORT
 * topic= mqtt-client-id=), with QoS, TLS and credentials read from a file;
 * the publishing itself (bounded queue, back-off, its own thread) is
 * gstnnmqtt.c.  Outages are reported on the bus: a warning when the broker
 * is lost and when the queue starts dropping, an element message
 * "nnmetapublish-mqtt" (event, address, reason, published, dropped,
 * queued) at every change of state.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmetapublish-mqtt.h"

#include <nnpipe/error.h>
#include <string.h>

#define DEFAULT_TOPIC "nnpipe"
#define DEFAULT_QOS 1
#define DEFAULT_MAX_QUEUE 1000
#define DEFAULT_RECONNECT_MAX 10000
#define DEFAULT_FLUSH_TIMEOUT 2000
#define CONNECT_TIMEOUT_MS 5000

GType
gst_nn_meta_publish_method_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_NN_META_PUBLISH_METHOD_FILE, "Write to location (a file, '-')",
        "file" },
    { GST_NN_META_PUBLISH_METHOD_MQTT,
        "Publish each frame's JSON to an MQTT broker", "mqtt" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnMetaPublishMethod", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

void
gst_nn_meta_publish_mqtt_init (GstNnMetaPublishMqtt *mq, GstElement *element)
{
  memset (mq, 0, sizeof (*mq));
  g_mutex_init (&mq->lock);
  mq->element = element;
  mq->topic = g_strdup (DEFAULT_TOPIC);
  mq->qos = DEFAULT_QOS;
  mq->max_queue = DEFAULT_MAX_QUEUE;
  mq->reconnect_max = DEFAULT_RECONNECT_MAX;
  mq->flush_timeout = DEFAULT_FLUSH_TIMEOUT;
}

void
gst_nn_meta_publish_mqtt_clear (GstNnMetaPublishMqtt *mq)
{
  gst_nn_meta_publish_mqtt_stop (mq);
  g_free (mq->address);
  g_free (mq->topic);
  g_free (mq->client_id);
  g_free (mq->credentials);
  g_free (mq->ca_file);
  g_free (mq->cert_file);
  g_free (mq->key_file);
  g_mutex_clear (&mq->lock);
}

static GParamSpec *
string_spec (const gchar *name, const gchar *nick, const gchar *blurb,
    const gchar *def)
{
  return g_param_spec_string (name, nick, blurb, def,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}

void
gst_nn_meta_publish_mqtt_install (GObjectClass *klass, guint first)
{
  const GParamFlags rw =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_METHOD,
      g_param_spec_enum ("method", "Method",
          "file: write to location; mqtt: publish each frame's JSON to the broker at address",
          GST_TYPE_NN_META_PUBLISH_METHOD, GST_NN_META_PUBLISH_METHOD_FILE,
          rw));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_ADDRESS,
      string_spec ("address", "Address",
          "method=mqtt: the broker, HOST:PORT (HOST alone: port 1883)", NULL));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_TOPIC,
      string_spec ("topic", "Topic", "method=mqtt: the topic published to",
          DEFAULT_TOPIC));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_CLIENT_ID,
      string_spec ("mqtt-client-id", "MQTT client id",
          "method=mqtt: the client id (empty: one made by libmosquitto)",
          NULL));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_QOS,
      g_param_spec_int ("qos", "QoS",
          "method=mqtt: MQTT QoS of the messages (0 at most once, 1 at least once, 2 exactly once)",
          0, 2, DEFAULT_QOS, rw));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_CREDENTIALS,
      string_spec ("mqtt-credentials", "MQTT credentials",
          "method=mqtt: a file of username=... and password=... lines (kept out of the command line)",
          NULL));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_TLS_CA_FILE,
      string_spec ("tls-ca-file", "TLS CA file",
          "method=mqtt: PEM file of the CAs that signed the broker's certificate: connect with TLS",
          NULL));
  g_object_class_install_property (klass,
      first + GST_NN_MQTT_PROP_TLS_CERT_FILE,
      string_spec ("tls-cert-file", "TLS certificate file",
          "method=mqtt, TLS: this client's certificate (PEM)", NULL));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_TLS_KEY_FILE,
      string_spec ("tls-key-file", "TLS key file",
          "method=mqtt, TLS: this client's private key (PEM)", NULL));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_MAX_QUEUE,
      g_param_spec_uint ("max-queue", "Max queue",
          "method=mqtt: messages waiting for the broker at most; beyond, the oldest is dropped (counted)",
          1, G_MAXINT, DEFAULT_MAX_QUEUE, rw));
  g_object_class_install_property (klass,
      first + GST_NN_MQTT_PROP_RECONNECT_MAX,
      g_param_spec_uint ("reconnect-max", "Reconnect max",
          "method=mqtt: ms of the longest wait between reconnections (the back-off doubles from 250 ms)",
          250, G_MAXINT, DEFAULT_RECONNECT_MAX, rw));
  g_object_class_install_property (klass,
      first + GST_NN_MQTT_PROP_FLUSH_TIMEOUT,
      g_param_spec_uint ("flush-timeout", "Flush timeout",
          "method=mqtt: at EOS, ms the queued messages get to reach a connected broker",
          0, G_MAXINT, DEFAULT_FLUSH_TIMEOUT, rw));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_PUBLISHED,
      g_param_spec_uint64 ("messages-published", "Messages published",
          "method=mqtt: messages the broker took (acknowledged; QoS 0: sent)",
          0, G_MAXUINT64, 0, ro));
  g_object_class_install_property (klass, first + GST_NN_MQTT_PROP_DROPPED,
      g_param_spec_uint64 ("messages-dropped", "Messages dropped",
          "method=mqtt: messages dropped (the queue was full while the broker was slow or away, or left at the stop)",
          0, G_MAXUINT64, 0, ro));
  gst_type_mark_as_plugin_api (GST_TYPE_NN_META_PUBLISH_METHOD, 0);
}

static void
replace (gchar **field, const GValue *value)
{
  g_free (*field);
  *field = g_value_dup_string (value);
}

gboolean
gst_nn_meta_publish_mqtt_set_property (GstNnMetaPublishMqtt *mq, guint first,
    guint prop_id, const GValue *value)
{
  gboolean ours = TRUE;

  if (prop_id < first || prop_id >= first + GST_NN_MQTT_N_PROPS)
    return FALSE;
  g_mutex_lock (&mq->lock);
  switch (prop_id - first) {
    case GST_NN_MQTT_PROP_METHOD:
      mq->method = g_value_get_enum (value);
      break;
    case GST_NN_MQTT_PROP_ADDRESS:
      replace (&mq->address, value);
      break;
    case GST_NN_MQTT_PROP_TOPIC:
      replace (&mq->topic, value);
      break;
    case GST_NN_MQTT_PROP_CLIENT_ID:
      replace (&mq->client_id, value);
      break;
    case GST_NN_MQTT_PROP_QOS:
      mq->qos = g_value_get_int (value);
      break;
    case GST_NN_MQTT_PROP_CREDENTIALS:
      replace (&mq->credentials, value);
      break;
    case GST_NN_MQTT_PROP_TLS_CA_FILE:
      replace (&mq->ca_file, value);
      break;
    case GST_NN_MQTT_PROP_TLS_CERT_FILE:
      replace (&mq->cert_file, value);
      break;
    case GST_NN_MQTT_PROP_TLS_KEY_FILE:
      replace (&mq->key_file, value);
      break;
    case GST_NN_MQTT_PROP_MAX_QUEUE:
      mq->max_queue = g_value_get_uint (value);
      break;
    case GST_NN_MQTT_PROP_RECONNECT_MAX:
      mq->reconnect_max = g_value_get_uint (value);
      break;
    case GST_NN_MQTT_PROP_FLUSH_TIMEOUT:
      mq->flush_timeout = g_value_get_uint (value);
      break;
    default:
      ours = FALSE; /* read-only */
      break;
  }
  g_mutex_unlock (&mq->lock);
  return ours;
}

gboolean
gst_nn_meta_publish_mqtt_get_property (GstNnMetaPublishMqtt *mq, guint first,
    guint prop_id, GValue *value)
{
  guint64 done = 0, dropped = 0;

  if (prop_id < first || prop_id >= first + GST_NN_MQTT_N_PROPS)
    return FALSE;
  g_mutex_lock (&mq->lock);
  if (mq->mqtt)
    gst_nn_mqtt_counts (mq->mqtt, &done, &dropped, NULL, NULL);
  else {
    done = mq->published;
    dropped = mq->dropped;
  }
  switch (prop_id - first) {
    case GST_NN_MQTT_PROP_METHOD:
      g_value_set_enum (value, mq->method);
      break;
    case GST_NN_MQTT_PROP_ADDRESS:
      g_value_set_string (value, mq->address);
      break;
    case GST_NN_MQTT_PROP_TOPIC:
      g_value_set_string (value, mq->topic);
      break;
    case GST_NN_MQTT_PROP_CLIENT_ID:
      g_value_set_string (value, mq->client_id);
      break;
    case GST_NN_MQTT_PROP_QOS:
      g_value_set_int (value, mq->qos);
      break;
    case GST_NN_MQTT_PROP_CREDENTIALS:
      g_value_set_string (value, mq->credentials);
      break;
    case GST_NN_MQTT_PROP_TLS_CA_FILE:
      g_value_set_string (value, mq->ca_file);
      break;
    case GST_NN_MQTT_PROP_TLS_CERT_FILE:
      g_value_set_string (value, mq->cert_file);
      break;
    case GST_NN_MQTT_PROP_TLS_KEY_FILE:
      g_value_set_string (value, mq->key_file);
      break;
    case GST_NN_MQTT_PROP_MAX_QUEUE:
      g_value_set_uint (value, mq->max_queue);
      break;
    case GST_NN_MQTT_PROP_RECONNECT_MAX:
      g_value_set_uint (value, mq->reconnect_max);
      break;
    case GST_NN_MQTT_PROP_FLUSH_TIMEOUT:
      g_value_set_uint (value, mq->flush_timeout);
      break;
    case GST_NN_MQTT_PROP_PUBLISHED:
      g_value_set_uint64 (value, done);
      break;
    case GST_NN_MQTT_PROP_DROPPED:
      g_value_set_uint64 (value, dropped);
      break;
    default:
      break;
  }
  g_mutex_unlock (&mq->lock);
  return TRUE;
}

gboolean
gst_nn_meta_publish_mqtt_enabled (GstNnMetaPublishMqtt *mq)
{
  gboolean on;

  g_mutex_lock (&mq->lock);
  on = mq->method == GST_NN_META_PUBLISH_METHOD_MQTT;
  g_mutex_unlock (&mq->lock);
  return on;
}

/* From the publisher's thread: the state on the bus. */
static void
on_event (gpointer user_data, GstNnMqttEvent event, const gchar *what)
{
  GstNnMetaPublishMqtt *mq = user_data;
  static const gchar *const names[] = { "connected", "disconnected",
    "dropping" };
  guint64 done = 0, dropped = 0;
  guint queued = 0, max_queue;
  gchar *address;
  GstStructure *s;

  g_mutex_lock (&mq->lock);
  address = g_strdup (mq->address);
  max_queue = mq->max_queue;
  if (mq->mqtt)
    gst_nn_mqtt_counts (mq->mqtt, &done, &dropped, &queued, NULL);
  g_mutex_unlock (&mq->lock);
  if (event == GST_NN_MQTT_DISCONNECTED)
    GST_ELEMENT_WARNING (mq->element, RESOURCE, WRITE,
        ("Lost the MQTT broker %s: %s; reconnecting, results wait in a queue of %u messages at most.",
            address, what ? what : "?", max_queue),
        (NULL));
  else if (event == GST_NN_MQTT_DROPPING)
    GST_ELEMENT_WARNING (mq->element, RESOURCE, WRITE,
        ("The MQTT broker %s takes no results: its queue is full, the oldest are dropped (counted in messages-dropped).",
            address),
        (NULL));
  s = gst_structure_new ("nnmetapublish-mqtt", "event", G_TYPE_STRING,
      names[event], "address", G_TYPE_STRING, address, "published",
      G_TYPE_UINT64, done, "dropped", G_TYPE_UINT64, dropped, "queued",
      G_TYPE_UINT, queued, NULL);
  if (what)
    gst_structure_set (s, "reason", G_TYPE_STRING, what, NULL);
  gst_element_post_message (mq->element,
      gst_message_new_element (GST_OBJECT (mq->element), s));
  g_free (address);
}

gboolean
gst_nn_meta_publish_mqtt_start (GstNnMetaPublishMqtt *mq)
{
  GstNnMqttSettings s = { 0 };
  GError *err = NULL;
  GstNnMqtt *mqtt;
  const gchar *prop = NULL;

  g_mutex_lock (&mq->lock);
  mq->published = mq->dropped = 0;
  if (mq->method != GST_NN_META_PUBLISH_METHOD_MQTT) {
    g_mutex_unlock (&mq->lock);
    return TRUE;
  }
  if (!gst_nn_mqtt_parse_address (mq->address, &s, &err)) {
    prop = "address";
  } else if (mq->topic == NULL || *mq->topic == '\0'
      || strpbrk (mq->topic, "#+")) {
    g_set_error (&err, NNP_ERROR, NNP_ERROR_INVALID,
        "invalid MQTT topic \"%s\": a topic to publish to is not empty and has no wildcard (# +)",
        mq->topic ? mq->topic : "");
    prop = "topic";
  } else if (mq->credentials
      && !gst_nn_mqtt_read_credentials (mq->credentials, &s, &err)) {
    prop = "mqtt-credentials";
  } else if ((mq->cert_file || mq->key_file) && mq->ca_file == NULL) {
    g_set_error (&err, NNP_ERROR, NNP_ERROR_INVALID,
        "a client certificate or key needs TLS: set tls-ca-file too");
    prop = "tls-ca-file";
  }
  s.topic = g_strdup (mq->topic);
  s.client_id = g_strdup (mq->client_id);
  s.qos = mq->qos;
  s.ca_file = g_strdup (mq->ca_file);
  s.cert_file = g_strdup (mq->cert_file);
  s.key_file = g_strdup (mq->key_file);
  s.max_queue = mq->max_queue;
  s.reconnect_max_ms = mq->reconnect_max;
  s.connect_timeout_ms = CONNECT_TIMEOUT_MS;
  g_mutex_unlock (&mq->lock);
  if (prop)
    goto bad_property;

  mqtt = gst_nn_mqtt_new (&s, on_event, mq, &err);
  gst_nn_mqtt_settings_clear (&s);
  if (mqtt == NULL)
    goto no_broker;
  g_mutex_lock (&mq->lock);
  mq->mqtt = mqtt;
  g_mutex_unlock (&mq->lock);
  return TRUE;

  /* ERRORS */
bad_property : {
  GST_ELEMENT_ERROR (mq->element, RESOURCE, SETTINGS, ("%s", err->message),
      ("property '%s'", prop));
  g_clear_error (&err);
  gst_nn_mqtt_settings_clear (&s);
  return FALSE;
}
no_broker : {
  GST_ELEMENT_ERROR (mq->element, RESOURCE, OPEN_WRITE, ("%s", err->message),
      ("method=mqtt"));
  g_clear_error (&err);
  return FALSE;
}
}

void
gst_nn_meta_publish_mqtt_publish (GstNnMetaPublishMqtt *mq, const gchar *json)
{
  /* mqtt is set at start and cleared at stop, both outside streaming */
  if (mq->mqtt)
    gst_nn_mqtt_publish (mq->mqtt, json, strlen (json));
}

void
gst_nn_meta_publish_mqtt_flush (GstNnMetaPublishMqtt *mq)
{
  guint timeout;

  g_mutex_lock (&mq->lock);
  timeout = mq->flush_timeout;
  g_mutex_unlock (&mq->lock);
  if (mq->mqtt && !gst_nn_mqtt_flush (mq->mqtt, timeout))
    GST_WARNING_OBJECT (mq->element,
        "results still queued for the MQTT broker after %u ms", timeout);
}

void
gst_nn_meta_publish_mqtt_stop (GstNnMetaPublishMqtt *mq)
{
  GstNnMqtt *mqtt;
  guint64 done = 0, dropped = 0;
  guint left;

  g_mutex_lock (&mq->lock);
  mqtt = g_steal_pointer (&mq->mqtt);
  g_mutex_unlock (&mq->lock);
  if (mqtt == NULL)
    return;
  gst_nn_mqtt_counts (mqtt, &done, &dropped, NULL, NULL);
  left = gst_nn_mqtt_free (mqtt);
  g_mutex_lock (&mq->lock);
  mq->published = done;
  mq->dropped = dropped + left;
  g_mutex_unlock (&mq->lock);
  if (left)
    GST_WARNING_OBJECT (mq->element,
        "%u results never reached the MQTT broker (counted as dropped)", left);
}
