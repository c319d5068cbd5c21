/* Helpers shared by the plugin tests; see test-common.h. */
#include "test-common.h"

gchar *
nnp_test_model_path (const gchar *name)
{
  const gchar *dir = g_getenv ("NNP_TEST_MODELS_DIR");

  fail_unless (dir != NULL, "NNP_TEST_MODELS_DIR is not set");
  return g_build_filename (dir, name, NULL);
}

gchar *
nnp_test_ocr_model (const gchar *name)
{
  const gchar *src = g_getenv ("NNP_SOURCE_DIR");
  gchar *path;

  fail_unless (src != NULL, "NNP_SOURCE_DIR is not set");
  path = g_build_filename (src, ".cache", "models", name, NULL);
  fail_unless (g_file_test (path, G_FILE_TEST_EXISTS), "%s is missing: run tools/fetch-models.sh",
               path);
  return path;
}

NnpGraph *
nnp_test_specialize (const gchar *path, const gchar *input, gint h, gint w,
                     NnpInputShape *shape_out, NnpModel **model_out, GError **error)
{
  NnpModel *m = nnp_model_load (path, error);
  const int64_t dims[4] = { 1, 3, h, w };
  NnpInputShape s;
  NnpGraph *g;

  if (m == NULL)
    return NULL;
  if (input) {
    s.name = input;
  } else {
    NnpGraph *mg = nnp_model_get_graph (m);

    s.name = nnp_graph_value (mg, g_array_index (mg->inputs, int, 0))->name;
  }
  nnp_shape_set (&s.shape, 4, dims);
  g = nnp_model_specialize (m, &s, 1, NNP_SPECIALIZE_DEFAULT, error);
  if (g != NULL && shape_out)
    *shape_out = s;
  if (g != NULL && model_out)
    *model_out = m;
  else
    nnp_model_unref (m);
  return g;
}

gchar *
nnp_test_tensor_caps (gint c, gint h, gint w)
{
  return g_strdup_printf (
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:%d:1,framerate=30/1",
      w, h, c);
}

GstBuffer *
nnp_test_random_buffer (gsize n_floats, guint32 seed)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, n_floats * sizeof (gfloat), NULL);
  GRand *rand = g_rand_new_with_seed (seed);
  GstMapInfo map;
  gfloat *f;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  f = (gfloat *) map.data;
  for (gsize i = 0; i < n_floats; i++)
    f[i] = (gfloat) g_rand_double_range (rand, -1.0, 1.0);
  gst_buffer_unmap (buf, &map);
  g_rand_free (rand);
  return buf;
}

GstBuffer *
nnp_test_random_frame (gsize n_floats, guint32 seed, guint64 index)
{
  GstBuffer *buf = nnp_test_random_buffer (n_floats, seed);

  GST_BUFFER_PTS (buf) = index * NNP_TEST_FRAME_DURATION;
  GST_BUFFER_DURATION (buf) = NNP_TEST_FRAME_DURATION;
  return buf;
}

GstElement *
nnp_test_make (const gchar *factory, const gchar *first_prop, ...)
{
  GstElement *e = gst_element_factory_make (factory, NULL);
  va_list args;

  fail_unless (e != NULL, "no %s element (GST_PLUGIN_PATH?)", factory);
  va_start (args, first_prop);
  if (first_prop)
    g_object_set_valist (G_OBJECT (e), first_prop, args);
  va_end (args);
  return e;
}

GstHarness *
nnp_test_harness_take (GstElement *e)
{
  GstHarness *h = gst_harness_new_with_element (e, "sink", "src");

  /* the harness holds its own reference */
  gst_object_unref (e);
  return h;
}

void
nnp_test_push_frames (GstHarness *h, gsize n_floats, guint32 seed, guint first, guint n)
{
  for (guint i = first; i < first + n; i++)
    fail_unless_equals_int (gst_harness_push (h, nnp_test_random_frame (n_floats, seed + i, i)),
                            GST_FLOW_OK);
}

void
nnp_test_pull_frames (GstHarness *h, guint first, guint n, GPtrArray *out)
{
  for (guint i = first; i < first + n; i++) {
    GstBuffer *buf = gst_harness_pull (h);

    fail_unless (buf != NULL, "frame %u did not come out", i);
    g_ptr_array_add (out, buf);
  }
}

void
nnp_test_finish_eos (GstHarness *h)
{
  GstBuffer *buf;

  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  while (gst_harness_pull_until_eos (h, &buf) && buf != NULL) {
    gst_buffer_unref (buf);
    fail ("more frames out than in");
  }
}

GError *
nnp_test_pop_message (GstBus *bus, GstMessageType type, gchar **debug, const gchar *what)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, type);
  GError *err = NULL;
  gchar *dbg = NULL;

  fail_unless (msg != NULL, "no %s message%s%s", gst_message_type_get_name (type), what ? ": " : "",
               what ? what : "");
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ERROR: gst_message_parse_error (msg, &err, &dbg); break;
    case GST_MESSAGE_WARNING: gst_message_parse_warning (msg, &err, &dbg); break;
    case GST_MESSAGE_INFO: gst_message_parse_info (msg, &err, &dbg); break;
    default: fail ("%s messages carry no GError", gst_message_type_get_name (type));
  }
  gst_message_unref (msg);
  if (debug)
    *debug = dbg;
  else
    g_free (dbg);
  return err;
}

GstElement *
nnp_test_launch_to_eos (const gchar *desc, GstClockTime timeout)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstBus *bus;
  GstMessage *msg;

  fail_unless (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE,
               "%s: does not start", desc);
  msg = gst_bus_timed_pop_filtered (bus, timeout, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "%s: no EOS", desc);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    fail ("%s: %s (%s)", desc, err->message, dbg);
  }
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  return pipe;
}

void
nnp_test_launch_stop (GstElement *pipeline)
{
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
}

gchar *
nnp_test_current_dims (GstElement *bin, const gchar *element, const gchar *pad)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (bin), element);
  GstPad *p;
  GstCaps *caps;
  gchar *dims;

  fail_unless (e != NULL, "no element named %s", element);
  p = gst_element_get_static_pad (e, pad);
  fail_unless (p != NULL, "%s has no %s pad", element, pad);
  caps = gst_pad_get_current_caps (p);
  fail_unless (caps != NULL, "no caps on %s:%s", element, pad);
  dims = g_strdup (gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions"));
  gst_caps_unref (caps);
  gst_object_unref (p);
  gst_object_unref (e);
  return dims;
}

Suite *
nnp_test_suite_new (const gchar *name, gint timeout, TCase **tc)
{
  Suite *s = suite_create (name);

  *tc = tcase_create ("general");
  suite_add_tcase (s, *tc);
  if (timeout > 0)
    tcase_set_timeout (*tc, timeout);
  return s;
}
