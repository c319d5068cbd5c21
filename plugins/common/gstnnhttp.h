/* GStreamer nnpipe plugin: a small HTTP server for Prometheus metrics and
 * health probes (libsoup-3, GLib only: nothing here knows GStreamer).
 *
 * It runs in a thread of its own with its own GMainContext, so it answers
 * whatever the application's main loop does (and without one).  What it
 * serves comes from callbacks, called in that thread at each request (they
 * must lock what they read):
 *
 *   GET /metrics   Prometheus text format 0.0.4: every collector added with
 *                  gst_nn_http_add_collector() writes its samples into a
 *                  GstNnMetrics (families are grouped and declared once,
 *                  label values escaped, in the order first written)
 *   GET /healthz   200 "ok" while the server runs (a liveness probe)
 *   GET /readyz    200 "ready", or 503 with the reason the ready function
 *                  gives (a readiness probe); 200 when none is set
 *   GET PATH       pages added with gst_nn_http_add_page() (text or JSON)
 *
 * Anything else is 404, a method other than GET/HEAD 405.
 *
 * Typical use (nnserversrc's metrics are gstnnserver-metrics.c):
 *
 *   GstNnHttp *http = gst_nn_http_new ("127.0.0.1:9100", &err);
 *   gst_nn_http_add_collector (http, my_collect, self);
 *   ...
 *   static void my_collect (GstNnMetrics *m, gpointer data) {
 *     gst_nn_metrics_declare (m, "nnpipe_frames_total", "counter",
 *         "Frames processed");
 *     gst_nn_metrics_add (m, "nnpipe_frames_total", 42, "part", "0..39",
 *         NULL);
 *   }
 *   ...
 *   gst_nn_http_free (http);   (before what the callbacks read goes)
 *
 * Metric names follow Prometheus' conventions: a prefix (nnpipe_), the unit
 * in the name (_seconds, _bytes), _total for counters. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GstNnHttp GstNnHttp;
typedef struct _GstNnMetrics GstNnMetrics;

/* Write the samples of one scrape into m (called in the HTTP thread). */
typedef void (*GstNnHttpCollectFunc) (GstNnMetrics *m, gpointer data);
/* Ready?  When not, *why (g_free'd by the caller) says why. */
typedef gboolean (*GstNnHttpReadyFunc) (gpointer data, gchar **why);
/* A page: its body (g_free'd by the caller); *content_type is static. */
typedef gchar *(*GstNnHttpPageFunc) (gpointer data, const gchar **content_type);

/* Listen on address ("127.0.0.1:9100", "[::]:9100", "0.0.0.0:0" for any
 * free port) and serve in a new thread.  NULL + error naming the address
 * when it cannot listen. */
GstNnHttp *gst_nn_http_new (const gchar *address, GError **error);
/* The port listened on. */
guint gst_nn_http_get_port (GstNnHttp *http);
/* Add a collector / set the ready function / add a page.  Call these before
 * the first request can rely on them (they are locked, any thread). */
void gst_nn_http_add_collector (GstNnHttp *http, GstNnHttpCollectFunc func,
    gpointer data);
void gst_nn_http_set_ready_func (GstNnHttp *http, GstNnHttpReadyFunc func,
    gpointer data);
void gst_nn_http_add_page (GstNnHttp *http, const gchar *path,
    GstNnHttpPageFunc func, gpointer data);
/* The text /metrics answers now (g_free); for tests and logs. */
gchar *gst_nn_http_metrics_text (GstNnHttp *http);
/* Stop serving (waits for a request being answered) and free. */
void gst_nn_http_free (GstNnHttp *http);

/* Declare a family: type "counter" or "gauge"; help one line.  Once per
 * scrape; a later declaration of the same name is ignored. */
void gst_nn_metrics_declare (GstNnMetrics *m, const gchar *name,
    const gchar *type, const gchar *help);
/* One sample of a declared family, with label name/value pairs ending in
 * NULL (values are escaped).  A sample of an undeclared family is a
 * programming error (g_return_if_fail). */
void gst_nn_metrics_add (GstNnMetrics *m, const gchar *name, gdouble value,
    ...) G_GNUC_NULL_TERMINATED;

G_END_DECLS
