/* GStreamer nnpipe plugin: nnmetapublish method=mqtt, its properties and
 * its publisher (gstnnmqtt.h); used by gstnnmetapublish.c only. */
#pragma once

#include <gst/gst.h>

#include "gstnnmqtt.h"

G_BEGIN_DECLS

typedef enum
{
  GST_NN_META_PUBLISH_METHOD_FILE,
  GST_NN_META_PUBLISH_METHOD_MQTT,
} GstNnMetaPublishMethod;

#define GST_TYPE_NN_META_PUBLISH_METHOD (gst_nn_meta_publish_method_get_type ())
GType gst_nn_meta_publish_method_get_type (void);

/* The properties, in this order from the element's first id on. */
enum
{
  GST_NN_MQTT_PROP_METHOD,
  GST_NN_MQTT_PROP_ADDRESS,
  GST_NN_MQTT_PROP_TOPIC,
  GST_NN_MQTT_PROP_CLIENT_ID,
  GST_NN_MQTT_PROP_QOS,
  GST_NN_MQTT_PROP_CREDENTIALS,
  GST_NN_MQTT_PROP_TLS_CA_FILE,
  GST_NN_MQTT_PROP_TLS_CERT_FILE,
  GST_NN_MQTT_PROP_TLS_KEY_FILE,
  GST_NN_MQTT_PROP_MAX_QUEUE,
  GST_NN_MQTT_PROP_RECONNECT_MAX,
  GST_NN_MQTT_PROP_FLUSH_TIMEOUT,
  GST_NN_MQTT_PROP_PUBLISHED,
  GST_NN_MQTT_PROP_DROPPED,
  GST_NN_MQTT_N_PROPS
};

typedef struct
{
  GMutex lock; /* everything below */
  GstNnMetaPublishMethod method;
  gchar *address, *topic, *client_id, *credentials;
  gchar *ca_file, *cert_file, *key_file;
  gint qos;
  guint max_queue, reconnect_max, flush_timeout;
  GstNnMqtt *mqtt;            /* owned, between start and stop */
  guint64 published, dropped; /* of the last run, after stop */
  GstElement *element;        /* not owned: the messages' source */
} GstNnMetaPublishMqtt;

void gst_nn_meta_publish_mqtt_init (GstNnMetaPublishMqtt *mq,
    GstElement *element);
void gst_nn_meta_publish_mqtt_clear (GstNnMetaPublishMqtt *mq);
void gst_nn_meta_publish_mqtt_install (GObjectClass *klass, guint first_id);
gboolean gst_nn_meta_publish_mqtt_set_property (GstNnMetaPublishMqtt *mq,
    guint first_id, guint prop_id, const GValue *value);
gboolean gst_nn_meta_publish_mqtt_get_property (GstNnMetaPublishMqtt *mq,
    guint first_id, guint prop_id, GValue *value);

/* method=mqtt? */
gboolean gst_nn_meta_publish_mqtt_enabled (GstNnMetaPublishMqtt *mq);
/* Connect (method=mqtt): FALSE after posting an error naming the property
 * or the broker. */
gboolean gst_nn_meta_publish_mqtt_start (GstNnMetaPublishMqtt *mq);
/* One frame's JSON: queued, never blocking on the network. */
void gst_nn_meta_publish_mqtt_publish (GstNnMetaPublishMqtt *mq,
    const gchar *json);
/* EOS: the queue's messages get flush-timeout ms (while connected). */
void gst_nn_meta_publish_mqtt_flush (GstNnMetaPublishMqtt *mq);
/* Stop; what was never sent is counted as dropped. */
void gst_nn_meta_publish_mqtt_stop (GstNnMetaPublishMqtt *mq);

G_END_DECLS
