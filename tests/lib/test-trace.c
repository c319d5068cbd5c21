/* Unit tests: the tracer (include/nnpipe/trace.h). */
#include <nnpipe/nnpipe.h>
#include <nnpipe/trace.h>

#include "exec/trace-private.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>

#define N_THREADS 4
#define N_SPANS 2000

typedef struct {
  NnpTrace *trace;
  int track;
} Writer;

static gpointer
write_spans (gpointer data)
{
  Writer *w = data;

  for (int i = 0; i < N_SPANS; i++) {
    gint64 t = nnp_trace_now ();
    nnp_trace_span (w->trace, w->track, i, t, t + 1);
  }
  return NULL;
}

static cJSON *
load_json (const char *path)
{
  g_autofree char *text = NULL;
  cJSON *root;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  root = cJSON_Parse (text);
  g_assert_nonnull (root);
  return root;
}

/* Per track id: X events in frame order, and their number. */
static int
count_spans (const cJSON *root, int tid, gboolean *in_order)
{
  const cJSON *ev;
  int n = 0;
  double last = -1;

  *in_order = TRUE;
  cJSON_ArrayForEach (ev, cJSON_GetObjectItem (root, "traceEvents"))
  {
    if (strcmp (cJSON_GetObjectItem (ev, "ph")->valuestring, "X") != 0
        || cJSON_GetObjectItem (ev, "tid")->valueint != tid)
      continue;
    double f = cJSON_GetObjectItem (cJSON_GetObjectItem (ev, "args"), "frame")->valuedouble;
    *in_order &= f > last;
    last = f;
    n++;
  }
  return n;
}

/* Four threads on four tracks of one trace, opened twice by path. */
static void
test_threads_shared (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.json", NULL);
  NnpTrace *a = nnp_trace_open (path, 0, NULL);
  NnpTrace *b = nnp_trace_open (path, 0, NULL);
  GThread *threads[N_THREADS];
  Writer w[N_THREADS];
  cJSON *root;

  g_assert_true (a == b);
  for (int k = 0; k < N_THREADS; k++) {
    g_autofree char *name = g_strdup_printf ("stage%d \"q\"", k);
    w[k].trace = k % 2 ? a : b;
    w[k].track = nnp_trace_add_track (w[k].trace, name, N_THREADS - k);
    g_assert_cmpint (w[k].track, ==, nnp_trace_add_track (a, name, 0));
    threads[k] = g_thread_new ("w", write_spans, &w[k]);
  }
  for (int k = 0; k < N_THREADS; k++)
    g_thread_join (threads[k]);
  g_assert_cmpuint (nnp_trace_get_n_events (a), ==, N_THREADS * N_SPANS);
  g_assert_true (nnp_trace_close (b, NULL));
  /* one reference left: the file still holds the empty trace of open() */
  root = load_json (path);
  g_assert_cmpint (cJSON_GetArraySize (cJSON_GetObjectItem (root, "traceEvents")), ==, 0);
  cJSON_Delete (root);
  g_assert_true (nnp_trace_close (a, NULL));

  root = load_json (path);
  for (int k = 0; k < N_THREADS; k++) {
    gboolean in_order;
    g_assert_cmpint (count_spans (root, w[k].track, &in_order), ==, N_SPANS);
    g_assert_true (in_order);
  }
  g_assert_cmpint (
      cJSON_GetObjectItem (cJSON_GetObjectItem (root, "otherData"), "dropped_events")->valueint, ==,
      0);
  /* the quote in the track name is escaped: the file parsed */
  cJSON_Delete (root);
  g_unlink (path);
  g_rmdir (dir);
}

/* A full trace drops and counts; it never grows past max_events. */
static void
test_bounded (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.json", NULL);
  NnpTrace *t = nnp_trace_open (path, 5000, NULL);
  int track = nnp_trace_add_track (t, "s", 0);
  int q = nnp_trace_add_counter (t, "queue0");
  guint cap;
  cJSON *root;

  for (int i = 0; i < 10000; i++)
    nnp_trace_span (t, track, i, i, i + 1);
  nnp_trace_counter (t, q, 3, 1);
  cap = nnp_trace_get_n_events (t);
  g_assert_cmpuint (cap, >=, 5000);
  g_assert_cmpuint (cap, <, 10000);
  g_assert_cmpuint (nnp_trace_get_n_dropped (t), ==, 10001 - cap);
  g_assert_true (nnp_trace_close (t, NULL));
  root = load_json (path);
  g_assert_cmpuint (
      cJSON_GetObjectItem (cJSON_GetObjectItem (root, "otherData"), "dropped_events")->valueint, ==,
      10001 - cap);
  cJSON_Delete (root);
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_bad_path (void)
{
  g_autoptr (GError) err = NULL;

  g_assert_null (nnp_trace_open ("/nonexistent-dir/t.json", 0, &err));
  g_assert_error (err, NNP_ERROR, NNP_ERROR_IO);
  g_assert_nonnull (strstr (err->message, "/nonexistent-dir/t.json"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/trace/threads-shared", test_threads_shared);
  g_test_add_func ("/trace/bounded", test_bounded);
  g_test_add_func ("/trace/bad-path", test_bad_path);
  return g_test_run ();
}
