/* plugins/common/gstnnhttp.{c,h}: the metrics and health helper (issue 19;
 * issue 22 reuses it).  A server on a free loopback port, read with
 * libsoup's client: the Prometheus text of two collectors (families grouped
 * and declared once, label values escaped, integers and fractions),
 * /healthz, /readyz ready and not, a page, 404, 405, a bad address. */
#include "gstnnhttp.h"

#include <libsoup/soup.h>
#include <string.h>

static void
collect_a (GstNnMetrics *m, gpointer data)
{
  gst_nn_metrics_declare (m, "nnpipe_test_frames_total", "counter", "Frames\nseen \\o/");
  gst_nn_metrics_add (m, "nnpipe_test_frames_total", 42, "part", "0..39", NULL);
  gst_nn_metrics_declare (m, "nnpipe_test_busy_seconds_total", "counter", "Busy time");
  gst_nn_metrics_add (m, "nnpipe_test_busy_seconds_total", 1.5, NULL);
}

static void
collect_b (GstNnMetrics *m, gpointer data)
{
  /* the same family again, from another collector: one declaration */
  gst_nn_metrics_declare (m, "nnpipe_test_frames_total", "counter", "Frames seen");
  gst_nn_metrics_add (m, "nnpipe_test_frames_total", 7, "part", "a\"b\\c\nd", NULL);
}

static gboolean
ready (gpointer data, gchar **why)
{
  if (*(gboolean *) data)
    return TRUE;
  *why = g_strdup ("the stage is starting");
  return FALSE;
}

static gchar *
page (gpointer data, const gchar **type)
{
  *type = "application/json";
  return g_strdup ("{\"parts\": []}");
}

/* GET/POST path: the status, the body in *body (g_free) */
static guint
get (SoupSession *session, guint port, const gchar *method, const gchar *path, gchar **body)
{
  gchar *uri = g_strdup_printf ("http://127.0.0.1:%u%s", port, path);
  SoupMessage *msg = soup_message_new (method, uri);
  GBytes *bytes = soup_session_send_and_read (session, msg, NULL, NULL);
  guint status = soup_message_get_status (msg);

  *body = bytes ? g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes)) : NULL;
  if (bytes)
    g_bytes_unref (bytes);
  g_object_unref (msg);
  g_free (uri);
  return status;
}

static void
test_http_endpoints (void)
{
  GError *err = NULL;
  GstNnHttp *http = gst_nn_http_new ("127.0.0.1:0", &err);
  SoupSession *session = soup_session_new ();
  gboolean is_ready = FALSE;
  gchar *body = NULL, *text;
  guint port;

  g_assert_no_error (err);
  port = gst_nn_http_get_port (http);
  g_assert_cmpuint (port, >, 0);
  gst_nn_http_add_collector (http, collect_a, NULL);
  gst_nn_http_add_collector (http, collect_b, NULL);
  gst_nn_http_set_ready_func (http, ready, &is_ready);
  gst_nn_http_add_page (http, "/parts", page, NULL);

  text = gst_nn_http_metrics_text (http);
  g_assert_cmpstr (text, ==,
                   "# HELP nnpipe_test_frames_total Frames\\nseen \\\\o/\n"
                   "# TYPE nnpipe_test_frames_total counter\n"
                   "nnpipe_test_frames_total{part=\"0..39\"} 42\n"
                   "nnpipe_test_frames_total{part=\"a\\\"b\\\\c\\nd\"} 7\n"
                   "# HELP nnpipe_test_busy_seconds_total Busy time\n"
                   "# TYPE nnpipe_test_busy_seconds_total counter\n"
                   "nnpipe_test_busy_seconds_total 1.5\n");
  g_assert_cmpuint (get (session, port, "GET", "/metrics", &body), ==, 200);
  g_assert_cmpstr (body, ==, text);
  g_free (body);
  g_free (text);

  g_assert_cmpuint (get (session, port, "GET", "/healthz", &body), ==, 200);
  g_assert_cmpstr (body, ==, "ok\n");
  g_free (body);
  g_assert_cmpuint (get (session, port, "GET", "/readyz", &body), ==, 503);
  g_assert_cmpstr (body, ==, "not ready: the stage is starting\n");
  g_free (body);
  is_ready = TRUE;
  g_assert_cmpuint (get (session, port, "GET", "/readyz", &body), ==, 200);
  g_free (body);
  g_assert_cmpuint (get (session, port, "GET", "/parts", &body), ==, 200);
  g_assert_cmpstr (body, ==, "{\"parts\": []}");
  g_free (body);
  g_assert_cmpuint (get (session, port, "GET", "/nothing", &body), ==, 404);
  g_free (body);
  g_assert_cmpuint (get (session, port, "POST", "/metrics", &body), ==, 405);
  g_free (body);

  g_object_unref (session);
  gst_nn_http_free (http);
}

static void
test_http_bad_address (void)
{
  GError *err = NULL;

  g_assert_null (gst_nn_http_new ("nowhere:9100", &err));
  g_assert_nonnull (err);
  g_assert_nonnull (strstr (err->message, "cannot serve HTTP on nowhere:9100"));
  g_clear_error (&err);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/http/endpoints", test_http_endpoints);
  g_test_add_func ("/http/bad-address", test_http_bad_address);
  return g_test_run ();
}
