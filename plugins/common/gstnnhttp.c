/* GStreamer nnpipe plugin: metrics and health over HTTP (see gstnnhttp.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnhttp.h"

#include <libsoup/soup.h>
#include <stdarg.h>
#include <string.h>

typedef struct
{
  gchar *path;
  GstNnHttpPageFunc func;
  gpointer data;
} Page;

typedef struct
{
  GstNnHttpCollectFunc func;
  gpointer data;
} Collector;

struct _GstNnHttp
{
  gchar *address;
  GThread *thread;
  GMainContext *context;
  GMainLoop *loop;
  SoupServer *server; /* HTTP thread */
  guint port;

  GMutex lock; /* all below; start-up too */
  GCond cond;
  gboolean started;
  GError *error;      /* from start-up */
  GArray *collectors; /* Collector */
  GPtrArray *pages;   /* Page* */
  GstNnHttpReadyFunc ready;
  gpointer ready_data;
};

/* One family of a scrape: its declaration and samples. */
typedef struct
{
  gchar *name;
  gchar *type;
  gchar *help;
  GString *samples;
} Family;

struct _GstNnMetrics
{
  GPtrArray *families; /* Family*, in the order first declared */
  GHashTable *by_name; /* name -> Family (not owned) */
};

static void
family_free (Family *f)
{
  g_free (f->name);
  g_free (f->type);
  g_free (f->help);
  g_string_free (f->samples, TRUE);
  g_free (f);
}

void
gst_nn_metrics_declare (GstNnMetrics *m, const gchar *name, const gchar *type,
    const gchar *help)
{
  Family *f;

  g_return_if_fail (m != NULL && name != NULL && type != NULL);
  if (g_hash_table_contains (m->by_name, name))
    return;
  f = g_new0 (Family, 1);
  f->name = g_strdup (name);
  f->type = g_strdup (type);
  /* HELP text: backslash and newline escaped */
  f->help = g_strdup (help ? help : "");
  for (gchar *p = f->help; *p; p++)
    if (*p == '\n')
      *p = ' ';
  f->samples = g_string_new (NULL);
  g_ptr_array_add (m->families, f);
  g_hash_table_insert (m->by_name, f->name, f);
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void
append_label_value (GString *s, const gchar *v)
{
  for (const gchar *p = v ? v : ""; *p; p++) {
    if (*p == '\\' || *p == '"')
      g_string_append_c (s, '\\');
    if (*p == '\n') {
      g_string_append (s, "\\n");
      continue;
    }
    g_string_append_c (s, *p);
  }
}

static void
append_value (GString *s, gdouble v)
{
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (v != v)
    g_string_append (s, "NaN");
  else if (v > G_MAXDOUBLE)
    g_string_append (s, "+Inf");
  else if (v < -G_MAXDOUBLE)
    g_string_append (s, "-Inf");
  else if (v == (gdouble) (gint64) v && v < 1e15 && v > -1e15)
    g_string_append_printf (s, "%" G_GINT64_FORMAT, (gint64) v);
  else
    g_string_append (s, g_ascii_dtostr (buf, sizeof buf, v));
}

void
gst_nn_metrics_add (GstNnMetrics *m, const gchar *name, gdouble value, ...)
{
  Family *f;
  va_list ap;
  const gchar *label;
  gboolean first = TRUE;

  g_return_if_fail (m != NULL && name != NULL);
  f = g_hash_table_lookup (m->by_name, name);
  g_return_if_fail (f != NULL);
  g_string_append (f->samples, name);
  va_start (ap, value);
  while ((label = va_arg (ap, const gchar *)) != NULL) {
    const gchar *v = va_arg (ap, const gchar *);

    g_string_append (f->samples, first ? "{" : ",");
    g_string_append_printf (f->samples, "%s=\"", label);
    append_label_value (f->samples, v);
    g_string_append_c (f->samples, '"');
    first = FALSE;
  }
  va_end (ap);
  if (!first)
    g_string_append_c (f->samples, '}');
  g_string_append_c (f->samples, ' ');
  append_value (f->samples, value);
  g_string_append_c (f->samples, '\n');
}

gchar *
gst_nn_http_metrics_text (GstNnHttp *http)
{
  GstNnMetrics m;
  GString *out = g_string_new (NULL);

  m.families = g_ptr_array_new_with_free_func ((GDestroyNotify) family_free);
  m.by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g_mutex_lock (&http->lock);
  for (guint i = 0; i < http->collectors->len; i++) {
    Collector *c = &g_array_index (http->collectors, Collector, i);
    c->func (&m, c->data);
  }
  g_mutex_unlock (&http->lock);
  for (guint i = 0; i < m.families->len; i++) {
    Family *f = g_ptr_array_index (m.families, i);

    g_string_append_printf (out, "# HELP %s %s\n# TYPE %s %s\n%s", f->name,
        f->help, f->name, f->type, f->samples->str);
  }
  g_hash_table_unref (m.by_name);
  g_ptr_array_unref (m.families);
  return g_string_free (out, FALSE);
}

/* ------------------------------------------------------------ the server */

static void
respond (SoupServerMessage *msg, guint status, const gchar *type, gchar *body)
{
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, type, SOUP_MEMORY_TAKE, body,
      strlen (body));
}

static void
handle (SoupServer *server, SoupServerMessage *msg, const char *path,
    GHashTable *query, gpointer data)
{
  GstNnHttp *http = data;
  const char *method = soup_server_message_get_method (msg);

  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0) {
    respond (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "text/plain",
        g_strdup ("only GET\n"));
    return;
  }
  if (strcmp (path, "/metrics") == 0) {
    respond (msg, SOUP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8",
        gst_nn_http_metrics_text (http));
  } else if (strcmp (path, "/healthz") == 0) {
    respond (msg, SOUP_STATUS_OK, "text/plain", g_strdup ("ok\n"));
  } else if (strcmp (path, "/readyz") == 0) {
    gchar *why = NULL;
    gboolean ready;

    g_mutex_lock (&http->lock);
    ready = http->ready == NULL || http->ready (http->ready_data, &why);
    g_mutex_unlock (&http->lock);
    if (ready)
      respond (msg, SOUP_STATUS_OK, "text/plain", g_strdup ("ready\n"));
    else
      respond (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "text/plain",
          g_strdup_printf ("not ready: %s\n", why ? why : "?"));
    g_free (why);
  } else {
    Page *page = NULL;
    const gchar *type = "text/plain";
    gchar *body = NULL;

    g_mutex_lock (&http->lock);
    for (guint i = 0; i < http->pages->len && page == NULL; i++)
      if (strcmp (((Page *) http->pages->pdata[i])->path, path) == 0)
        page = http->pages->pdata[i];
    if (page)
      body = page->func (page->data, &type);
    g_mutex_unlock (&http->lock);
    if (body)
      respond (msg, SOUP_STATUS_OK, type, body);
    else
      respond (msg, SOUP_STATUS_NOT_FOUND, "text/plain",
          g_strdup ("not found: /metrics, /healthz, /readyz\n"));
  }
}

static GSocketAddress *
parse_address (const gchar *address, GError **error)
{
  GSocketConnectable *na = g_network_address_parse (address, 0, error);
  GInetAddress *ia;
  GSocketAddress *sa;

  if (na == NULL)
    return NULL;
  ia = g_inet_address_new_from_string (
      g_network_address_get_hostname (G_NETWORK_ADDRESS (na)));
  if (ia == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "'%s' is not an IP address and port", address);
    g_object_unref (na);
    return NULL;
  }
  sa = g_inet_socket_address_new (ia,
      g_network_address_get_port (G_NETWORK_ADDRESS (na)));
  g_object_unref (ia);
  g_object_unref (na);
  return sa;
}

static gpointer
http_thread (gpointer data)
{
  GstNnHttp *http = data;
  GSocketAddress *sa;
  GError *err = NULL;
  GSList *uris;

  g_main_context_push_thread_default (http->context);
  http->server = soup_server_new ("server-header", "nnpipe", NULL);
  soup_server_add_handler (http->server, NULL, handle, http, NULL);
  sa = parse_address (http->address, &err);
  if (sa && soup_server_listen (http->server, sa, 0, &err)) {
    uris = soup_server_get_uris (http->server);
    if (uris)
      http->port = (guint) g_uri_get_port (uris->data);
    g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  }
  g_clear_object (&sa);
  g_mutex_lock (&http->lock);
  http->error = err;
  http->started = TRUE;
  g_cond_broadcast (&http->cond);
  g_mutex_unlock (&http->lock);
  if (err == NULL)
    g_main_loop_run (http->loop);
  soup_server_disconnect (http->server);
  g_clear_object (&http->server);
  g_main_context_pop_thread_default (http->context);
  return NULL;
}

GstNnHttp *
gst_nn_http_new (const gchar *address, GError **error)
{
  GstNnHttp *http = g_new0 (GstNnHttp, 1);

  g_return_val_if_fail (address != NULL, NULL);
  http->address = g_strdup (address);
  g_mutex_init (&http->lock);
  g_cond_init (&http->cond);
  http->collectors = g_array_new (FALSE, FALSE, sizeof (Collector));
  http->pages = g_ptr_array_new ();
  http->context = g_main_context_new ();
  http->loop = g_main_loop_new (http->context, FALSE);
  http->thread = g_thread_new ("nnpipe-http", http_thread, http);
  g_mutex_lock (&http->lock);
  while (!http->started)
    g_cond_wait (&http->cond, &http->lock);
  g_mutex_unlock (&http->lock);
  if (http->error) {
    g_propagate_prefixed_error (error, g_steal_pointer (&http->error),
        "cannot serve HTTP on %s: ", address);
    gst_nn_http_free (http);
    return NULL;
  }
  return http;
}

guint
gst_nn_http_get_port (GstNnHttp *http)
{
  return http->port;
}

void
gst_nn_http_add_collector (GstNnHttp *http, GstNnHttpCollectFunc func,
    gpointer data)
{
  Collector c = { func, data };

  g_mutex_lock (&http->lock);
  g_array_append_val (http->collectors, c);
  g_mutex_unlock (&http->lock);
}

void
gst_nn_http_set_ready_func (GstNnHttp *http, GstNnHttpReadyFunc func,
    gpointer data)
{
  g_mutex_lock (&http->lock);
  http->ready = func;
  http->ready_data = data;
  g_mutex_unlock (&http->lock);
}

void
gst_nn_http_add_page (GstNnHttp *http, const gchar *path,
    GstNnHttpPageFunc func, gpointer data)
{
  Page *p = g_new0 (Page, 1);

  p->path = g_strdup (path);
  p->func = func;
  p->data = data;
  g_mutex_lock (&http->lock);
  g_ptr_array_add (http->pages, p);
  g_mutex_unlock (&http->lock);
}

static gboolean
quit_loop (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

void
gst_nn_http_free (GstNnHttp *http)
{
  if (http == NULL)
    return;
  if (http->thread) {
    GSource *src = g_idle_source_new ();

    g_source_set_callback (src, quit_loop, http->loop, NULL);
    g_source_attach (src, http->context);
    g_source_unref (src);
    g_thread_join (http->thread);
  }
  for (guint i = 0; i < http->pages->len; i++) {
    Page *p = http->pages->pdata[i];
    g_free (p->path);
    g_free (p);
  }
  g_ptr_array_unref (http->pages);
  g_array_unref (http->collectors);
  g_main_loop_unref (http->loop);
  g_main_context_unref (http->context);
  g_clear_error (&http->error);
  g_mutex_clear (&http->lock);
  g_cond_clear (&http->cond);
  g_free (http->address);
  g_free (http);
}
