/* GStreamer nnpipe plugin: results to an MQTT broker (gstnnmqtt.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmqtt.h"

#include <errno.h>
#include <mosquitto.h>
#include <nnpipe/error.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_S 30
#define MAX_INFLIGHT 64
#define LOOP_MS 20
#define FIRST_BACKOFF_MS 250

/* A message sent and not yet done (acknowledged, or written for QoS 0). */
typedef struct
{
  gint mid;
  GBytes *payload;
} Inflight;

struct _GstNnMqtt
{
  gint ref_count; /* the owner's and the thread's */
  GstNnMqttSettings s;
  GstNnMqttNotify notify;
  gpointer user_data;

  GMutex lock;
  GCond cond;      /* queue emptied, state changes, stopping */
  GQueue queue;    /* GBytes*, waiting (lock) */
  GQueue inflight; /* Inflight*, in send order (lock) */
  guint64 done, dropped;
  gboolean connected;
  gboolean stopping;
  gboolean dropping_said; /* DROPPING notified in this outage */
  gint first;             /* the first connection: 0 pending, 1 up, -1
                           * failed (first_error says why) */
  gchar *first_error;
  gboolean exited; /* the thread is done with mosq */
  gint connack;    /* -1 until the CONNACK (thread only) */
};

static gchar *
dup_or_null (const gchar *s)
{
  return s && *s ? g_strdup (s) : NULL;
}

gboolean
gst_nn_mqtt_parse_address (const gchar *address, GstNnMqttSettings *s,
    GError **error)
{
  const gchar *colon;
  gchar *host, *end = NULL;
  gint64 port = 1883;

  if (address == NULL || *address == '\0')
    goto bad;
  if (address[0] == '[') {
    const gchar *close = strchr (address, ']');

    if (close == NULL || close == address + 1)
      goto bad;
    host = g_strndup (address + 1, close - address - 1);
    colon = close[1] == ':' ? close + 1 : NULL;
    if (close[1] != '\0' && colon == NULL) {
      g_free (host);
      goto bad;
    }
  } else {
    colon = strrchr (address, ':');
    host = colon ? g_strndup (address, colon - address) : g_strdup (address);
  }
  if (*host == '\0') {
    g_free (host);
    goto bad;
  }
  if (colon) {
    port = g_ascii_strtoll (colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || port < 1 || port > 65535) {
      g_free (host);
      goto bad;
    }
  }
  g_free (s->host);
  s->host = host;
  s->port = (gint) port;
  return TRUE;

bad:
  g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
      "invalid MQTT address \"%s\": expected HOST:PORT (or HOST, port 1883; [IPV6]:PORT)",
      address ? address : "");
  return FALSE;
}

gboolean
gst_nn_mqtt_read_credentials (const gchar *path, GstNnMqttSettings *s,
    GError **error)
{
  gchar *text = NULL, **lines;
  GError *err = NULL;
  gboolean ok = TRUE;

  if (!g_file_get_contents (path, &text, NULL, &err)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO,
        "cannot read the MQTT credentials file: %s", err->message);
    g_error_free (err);
    return FALSE;
  }
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; ok && lines[i]; i++) {
    gchar *line = g_strstrip (lines[i]);

    if (*line == '\0' || *line == '#')
      continue;
    if (g_str_has_prefix (line, "username=")) {
      g_free (s->username);
      s->username = g_strdup (line + 9);
    } else if (g_str_has_prefix (line, "password=")) {
      g_free (s->password);
      s->password = g_strdup (line + 9);
    } else {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "MQTT credentials file %s, line %u: expected username=... or password=...",
          path, i + 1);
      ok = FALSE;
    }
  }
  if (ok && s->username == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "MQTT credentials file %s has no username= line", path);
    ok = FALSE;
  }
  g_strfreev (lines);
  /* the password is not left in freed memory */
  memset (text, 0, strlen (text));
  g_free (text);
  return ok;
}

void
gst_nn_mqtt_settings_clear (GstNnMqttSettings *s)
{
  g_free (s->host);
  g_free (s->client_id);
  g_free (s->topic);
  g_free (s->username);
  if (s->password)
    memset (s->password, 0, strlen (s->password));
  g_free (s->password);
  g_free (s->ca_file);
  g_free (s->cert_file);
  g_free (s->key_file);
  memset (s, 0, sizeof (*s));
}

static void
mqtt_unref (GstNnMqtt *m)
{
  if (!g_atomic_int_dec_and_test (&m->ref_count))
    return;
  g_queue_clear_full (&m->queue, (GDestroyNotify) g_bytes_unref);
  while (!g_queue_is_empty (&m->inflight)) {
    Inflight *f = g_queue_pop_head (&m->inflight);

    g_bytes_unref (f->payload);
    g_free (f);
  }
  g_free (m->first_error);
  gst_nn_mqtt_settings_clear (&m->s);
  g_mutex_clear (&m->lock);
  g_cond_clear (&m->cond);
  g_free (m);
}

/* ------------------------------------------------------------------------ */
/* The publisher's thread */

static void
on_connect (struct mosquitto *mosq, void *obj, int rc)
{
  GstNnMqtt *m = obj;

  m->connack = rc;
}

static void
on_publish (struct mosquitto *mosq, void *obj, int mid)
{
  GstNnMqtt *m = obj;

  g_mutex_lock (&m->lock);
  for (GList *l = m->inflight.head; l; l = l->next) {
    Inflight *f = l->data;

    if (f->mid == mid) {
      g_queue_delete_link (&m->inflight, l);
      g_bytes_unref (f->payload);
      g_free (f);
      m->done++;
      break;
    }
  }
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
}

/* Tell the owner, unless it is stopping us. */
static void
notify (GstNnMqtt *m, GstNnMqttEvent event, const gchar *what)
{
  GstNnMqttNotify cb;
  gpointer user_data;

  g_mutex_lock (&m->lock);
  cb = m->stopping ? NULL : m->notify;
  user_data = m->user_data;
  g_mutex_unlock (&m->lock);
  if (cb)
    cb (user_data, event, what);
}

/* A libmosquitto client with our settings, or NULL and why. */
static struct mosquitto *
make_client (GstNnMqtt *m, gchar **why)
{
  struct mosquitto *mosq = mosquitto_new (m->s.client_id, TRUE, m);
  int rc = MOSQ_ERR_SUCCESS;

  if (mosq == NULL) {
    *why =
        g_strdup_printf ("cannot make an MQTT client: %s", g_strerror (errno));
    return NULL;
  }
  mosquitto_connect_callback_set (mosq, on_connect);
  mosquitto_publish_callback_set (mosq, on_publish);
  if (m->s.username)
    rc = mosquitto_username_pw_set (mosq, m->s.username, m->s.password);
  if (rc == MOSQ_ERR_SUCCESS && m->s.ca_file)
    rc = mosquitto_tls_set (mosq, m->s.ca_file, NULL, m->s.cert_file,
        m->s.key_file, NULL);
  if (rc != MOSQ_ERR_SUCCESS) {
    *why = g_strdup_printf ("MQTT client settings (TLS files %s, %s, %s): %s",
        m->s.ca_file ? m->s.ca_file : "-",
        m->s.cert_file ? m->s.cert_file : "-",
        m->s.key_file ? m->s.key_file : "-", mosquitto_strerror (rc));
    mosquitto_destroy (mosq);
    return NULL;
  }
  return mosq;
}

static gchar *
rc_string (int rc)
{
  if (rc == MOSQ_ERR_ERRNO)
    return g_strdup (g_strerror (errno));
  return g_strdup (mosquitto_strerror (rc));
}

/* Connect and wait for the CONNACK (at most timeout_ms).  NULL: connected;
 * else why not. */
static gchar *
connect_client (GstNnMqtt *m, struct mosquitto *mosq, guint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  int rc;

  m->connack = -1;
  rc = mosquitto_connect (mosq, m->s.host, m->s.port, KEEPALIVE_S);
  if (rc != MOSQ_ERR_SUCCESS)
    return rc_string (rc);
  while (m->connack < 0) {
    gboolean stopping;

    rc = mosquitto_loop (mosq, LOOP_MS, 1);
    if (rc != MOSQ_ERR_SUCCESS)
      return rc_string (rc);
    g_mutex_lock (&m->lock);
    stopping = m->stopping;
    g_mutex_unlock (&m->lock);
    if (stopping)
      return g_strdup ("stopping");
    if (g_get_monotonic_time () > deadline)
      return g_strdup_printf ("no CONNACK within %u ms", timeout_ms);
  }
  if (m->connack != 0)
    return g_strdup_printf ("refused: %s",
        mosquitto_connack_string (m->connack));
  return NULL;
}

/* Send what waits (up to MAX_INFLIGHT in flight).  FALSE when the
 * connection failed (why set). */
static gboolean
send_queued (GstNnMqtt *m, struct mosquitto *mosq, gchar **why)
{
  for (;;) {
    GBytes *b;
    Inflight *f;
    gsize len;
    const void *data;
    int rc;

    g_mutex_lock (&m->lock);
    if (g_queue_is_empty (&m->queue) || m->inflight.length >= MAX_INFLIGHT) {
      g_mutex_unlock (&m->lock);
      return TRUE;
    }
    b = g_queue_pop_head (&m->queue);
    f = g_new0 (Inflight, 1);
    f->payload = b;
    f->mid = -1;
    /* in flight before the call: its callback may come within it (QoS 0
     * is done once written), and the library sets the mid (through the
     * pointer, in this thread) before it sends */
    g_queue_push_tail (&m->inflight, f);
    g_mutex_unlock (&m->lock);
    data = g_bytes_get_data (b, &len);
    rc = mosquitto_publish (mosq, &f->mid, m->s.topic, (int) len, data,
        m->s.qos, false);
    g_mutex_lock (&m->lock);
    if (rc != MOSQ_ERR_SUCCESS) {
      /* back to the head of the queue */
      g_queue_remove (&m->inflight, f);
      g_queue_push_head (&m->queue, f->payload);
      g_free (f);
      g_mutex_unlock (&m->lock);
      *why = rc_string (rc);
      return FALSE;
    }
    g_mutex_unlock (&m->lock);
  }
}

/* The connection is gone: what was in flight goes back to the queue's
 * head, in order, to be sent again. */
static void
requeue_inflight (GstNnMqtt *m)
{
  g_mutex_lock (&m->lock);
  while (!g_queue_is_empty (&m->inflight)) {
    Inflight *f = g_queue_pop_tail (&m->inflight);

    g_queue_push_head (&m->queue, f->payload);
    g_free (f);
  }
  m->connected = FALSE;
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
}

static gpointer
publisher_thread (gpointer data)
{
  GstNnMqtt *m = data;
  guint backoff = FIRST_BACKOFF_MS;
  gboolean first = TRUE;

  for (;;) {
    gchar *why = NULL;
    struct mosquitto *mosq = make_client (m, &why);
    gboolean up = FALSE;
    gint64 until;

    if (mosq)
      why = connect_client (m, mosq,
          first ? m->s.connect_timeout_ms : m->s.reconnect_max_ms + 5000);
    if (mosq && why == NULL) {
      up = TRUE;
      backoff = FIRST_BACKOFF_MS;
      g_mutex_lock (&m->lock);
      m->connected = TRUE;
      m->dropping_said = FALSE;
      if (first)
        m->first = 1;
      g_cond_broadcast (&m->cond);
      g_mutex_unlock (&m->lock);
      if (!first)
        notify (m, GST_NN_MQTT_CONNECTED, NULL);
      first = FALSE;
      for (;;) {
        gboolean stopping;
        int rc;

        if (!send_queued (m, mosq, &why))
          break;
        rc = mosquitto_loop (mosq, LOOP_MS, 1);
        if (rc != MOSQ_ERR_SUCCESS) {
          why = rc_string (rc);
          break;
        }
        g_mutex_lock (&m->lock);
        stopping = m->stopping;
        g_mutex_unlock (&m->lock);
        if (stopping)
          break;
      }
      mosquitto_disconnect (mosq);
      requeue_inflight (m);
    }
    if (mosq)
      mosquitto_destroy (mosq);

    g_mutex_lock (&m->lock);
    if (first) {
      /* the first connection failed: the start fails */
      m->first = -1;
      m->first_error = why;
      why = NULL;
      g_cond_broadcast (&m->cond);
    }
    if (m->stopping || m->first < 0) {
      g_mutex_unlock (&m->lock);
      g_free (why);
      break;
    }
    g_mutex_unlock (&m->lock);
    if (up)
      notify (m, GST_NN_MQTT_DISCONNECTED, why);
    g_free (why);

    /* back-off, cut short by stopping */
    g_mutex_lock (&m->lock);
    until = g_get_monotonic_time () + (gint64) backoff * 1000;
    while (!m->stopping && g_cond_wait_until (&m->cond, &m->lock, until))
      ;
    g_mutex_unlock (&m->lock);
    backoff = MIN (backoff * 2, MAX (m->s.reconnect_max_ms, FIRST_BACKOFF_MS));
  }
  g_mutex_lock (&m->lock);
  m->exited = TRUE;
  g_cond_broadcast (&m->cond);
  g_mutex_unlock (&m->lock);
  mqtt_unref (m);
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* API */

GstNnMqtt *
gst_nn_mqtt_new (const GstNnMqttSettings *settings, GstNnMqttNotify notify,
    gpointer user_data, GError **error)
{
  static gsize lib_once;
  GstNnMqtt *m;
  gchar *why = NULL;
  struct mosquitto *probe;
  GThread *thread;
  gint64 deadline;

  if (g_once_init_enter (&lib_once)) {
    mosquitto_lib_init ();
    g_once_init_leave (&lib_once, 1);
  }
  m = g_new0 (GstNnMqtt, 1);
  m->ref_count = 1;
  m->s.host = g_strdup (settings->host);
  m->s.port = settings->port;
  m->s.client_id = dup_or_null (settings->client_id);
  m->s.topic = g_strdup (settings->topic);
  m->s.qos = CLAMP (settings->qos, 0, 2);
  m->s.username = dup_or_null (settings->username);
  m->s.password = dup_or_null (settings->password);
  m->s.ca_file = dup_or_null (settings->ca_file);
  m->s.cert_file = dup_or_null (settings->cert_file);
  m->s.key_file = dup_or_null (settings->key_file);
  m->s.max_queue = MAX (settings->max_queue, 1);
  m->s.reconnect_max_ms = settings->reconnect_max_ms;
  m->s.connect_timeout_ms = settings->connect_timeout_ms;
  m->notify = notify;
  m->user_data = user_data;
  g_mutex_init (&m->lock);
  g_cond_init (&m->cond);
  g_queue_init (&m->queue);
  g_queue_init (&m->inflight);

  /* settings the library refuses (TLS files) fail here, named */
  probe = make_client (m, &why);
  if (probe == NULL)
    goto failed;
  mosquitto_destroy (probe);

  g_atomic_int_inc (&m->ref_count); /* the thread's */
  thread = g_thread_new ("nnmqtt", publisher_thread, m);
  g_thread_unref (thread);
  /* the first CONNACK (the thread gives up at connect_timeout_ms; a TCP
   * connect that hangs longer is not waited for) */
  deadline = g_get_monotonic_time ()
      + (gint64) (m->s.connect_timeout_ms + 1000) * 1000;
  g_mutex_lock (&m->lock);
  while (m->first == 0 && g_cond_wait_until (&m->cond, &m->lock, deadline))
    ;
  if (m->first != 1) {
    why = m->first_error
        ? g_strdup (m->first_error)
        : g_strdup_printf ("no answer within %u ms", m->s.connect_timeout_ms);
    m->stopping = TRUE;
    g_cond_broadcast (&m->cond);
    g_mutex_unlock (&m->lock);
    goto failed;
  }
  g_mutex_unlock (&m->lock);
  return m;

failed:
  g_set_error (error, NNP_ERROR, NNP_ERROR_IO,
      "could not connect to the MQTT broker %s:%d: %s", m->s.host, m->s.port,
      why);
  g_free (why);
  mqtt_unref (m);
  return NULL;
}

void
gst_nn_mqtt_publish (GstNnMqtt *m, const gchar *payload, gsize len)
{
  gboolean say = FALSE;

  g_mutex_lock (&m->lock);
  while (m->queue.length >= m->s.max_queue) {
    g_bytes_unref (g_queue_pop_head (&m->queue));
    m->dropped++;
    if (!m->dropping_said)
      say = m->dropping_said = TRUE;
  }
  g_queue_push_tail (&m->queue, g_bytes_new (payload, len));
  g_mutex_unlock (&m->lock);
  if (say)
    notify (m, GST_NN_MQTT_DROPPING, NULL);
}

gboolean
gst_nn_mqtt_flush (GstNnMqtt *m, guint timeout_ms)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  gboolean all;

  g_mutex_lock (&m->lock);
  while (m->connected
      && (!g_queue_is_empty (&m->queue) || !g_queue_is_empty (&m->inflight))
      && g_cond_wait_until (&m->cond, &m->lock, deadline))
    ;
  all = g_queue_is_empty (&m->queue) && g_queue_is_empty (&m->inflight);
  g_mutex_unlock (&m->lock);
  return all;
}

void
gst_nn_mqtt_counts (GstNnMqtt *m, guint64 *done, guint64 *dropped,
    guint *queued, gboolean *connected)
{
  g_mutex_lock (&m->lock);
  if (done)
    *done = m->done;
  if (dropped)
    *dropped = m->dropped;
  if (queued)
    *queued = m->queue.length + m->inflight.length;
  if (connected)
    *connected = m->connected;
  g_mutex_unlock (&m->lock);
}

guint
gst_nn_mqtt_free (GstNnMqtt *m)
{
  gint64 deadline = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
  guint left;

  g_mutex_lock (&m->lock);
  m->stopping = TRUE;
  g_cond_broadcast (&m->cond);
  /* the thread ends within a loop turn, unless it is in a TCP connect:
   * then it ends (and frees) on its own later */
  while (!m->exited && g_cond_wait_until (&m->cond, &m->lock, deadline))
    ;
  left = m->queue.length + m->inflight.length;
  m->notify = NULL;
  g_mutex_unlock (&m->lock);
  mqtt_unref (m);
  return left;
}
