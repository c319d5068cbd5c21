/* GStreamer nnpipe plugin: results to an MQTT broker (libmosquitto).
 *
 * nnmetapublish method=mqtt hands each frame's JSON to a GstNnMqtt and
 * goes on at once: the message waits in a bounded queue that a thread of
 * the publisher's own sends to the broker.  The streaming thread never
 * waits for the network: when the broker is slow or gone the queue fills,
 * the oldest message is dropped for each new one (counted), and the thread
 * reconnects with exponential back-off (0.25 s doubling up to
 * reconnect-max).  A message is done when the broker acknowledged it (QoS
 * 1, 2) or it was written to the socket (QoS 0); messages in flight when
 * the connection drops are sent again after the reconnection, before the
 * queue (at-least-once with QoS >= 1: a receiver may see one twice).
 *
 * Each (re)connection uses a fresh libmosquitto client (its own queues
 * emptied: the un-acknowledged messages are ours to resend), driven by
 * mosquitto_loop() in the publisher's thread.  Events (connected, lost,
 * dropping) are reported through a callback from that thread. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GstNnMqtt GstNnMqtt;

typedef struct
{
  gchar *host;
  gint port;
  gchar *client_id; /* NULL: the library makes one */
  gchar *topic;
  gint qos;        /* 0, 1, 2 */
  gchar *username; /* NULL: none */
  gchar *password;
  gchar *ca_file;   /* TLS when set */
  gchar *cert_file; /* client certificate and key, or NULL */
  gchar *key_file;
  guint max_queue;          /* messages waiting at most */
  guint reconnect_max_ms;   /* longest back-off */
  guint connect_timeout_ms; /* the first connection's CONNACK */
} GstNnMqttSettings;

typedef enum
{
  GST_NN_MQTT_CONNECTED,
  GST_NN_MQTT_DISCONNECTED, /* lost: reconnecting with back-off */
  GST_NN_MQTT_DROPPING,     /* the queue is full: the oldest go (once per
                             * outage) */
} GstNnMqttEvent;

/* Called from the publisher's thread (DROPPING: from the thread that
 * publishes); `what` says why (the library's words) for DISCONNECTED.
 * Never called once gst_nn_mqtt_free() began. */
typedef void (*GstNnMqttNotify) (gpointer user_data, GstNnMqttEvent event,
    const gchar *what);

/* Parse "HOST:PORT", "HOST" (port 1883) or "[V6]:PORT" into s->host and
 * s->port.  FALSE with an error naming the address. */
gboolean gst_nn_mqtt_parse_address (const gchar *address, GstNnMqttSettings *s,
    GError **error);
/* Read "username=..." and "password=..." lines (# comments) of a
 * credentials file into s.  FALSE with an error naming the file. */
gboolean gst_nn_mqtt_read_credentials (const gchar *path, GstNnMqttSettings *s,
    GError **error);
void gst_nn_mqtt_settings_clear (GstNnMqttSettings *s);

/* Connect (waiting for the broker's CONNACK at most connect_timeout_ms:
 * an unreachable broker, refused credentials or a TLS failure at the start
 * is an error naming it) and start publishing.  settings are copied;
 * notify (may be NULL) gets the later events. */
GstNnMqtt *gst_nn_mqtt_new (const GstNnMqttSettings *settings,
    GstNnMqttNotify notify, gpointer user_data, GError **error);
/* Queue a message (copied); never blocks on the network. */
void gst_nn_mqtt_publish (GstNnMqtt *mqtt, const gchar *payload, gsize len);
/* Wait until every queued message is done, at most timeout_ms, and only
 * while connected.  TRUE when all are. */
gboolean gst_nn_mqtt_flush (GstNnMqtt *mqtt, guint timeout_ms);
/* Messages done and dropped so far; whether connected now. */
void gst_nn_mqtt_counts (GstNnMqtt *mqtt, guint64 *done, guint64 *dropped,
    guint *queued, gboolean *connected);
/* Stop; messages still queued are counted as dropped.  Returns their
 * number. */
guint gst_nn_mqtt_free (GstNnMqtt *mqtt);

G_END_DECLS
