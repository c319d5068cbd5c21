/* GstHarness tests of nnstage on tiny generated models (make-models.py):
 * negotiation both ways, wrong caps, output bit-identical to libnnpipe run
 * directly, frames and timestamps at EOS, state cycles without leaks, a
 * corrupt model, latency, several tensors per buffer, the part's
 * properties shared with nnremote. */
#include "test-common.h"

#include <nnpipe/nnpipe.h>

#include <string.h>

#define CONV_CAPS(w, h) \
  "other/tensors,format=static,num_tensors=1,types=float32," \
  "dimensions=" #w ":" #h ":3:1,framerate=30/1"
#define TWO_IO_CAPS \
  "other/tensors,format=static,num_tensors=2,types=\"float32,float32\"," \
  "dimensions=\"4:1,4:1\",framerate=0/1"

/* a model of the test models dir, or an absolute path */
static gchar *
model_path (const gchar *model)
{
  return g_path_is_absolute (model) ? g_strdup (model) : nnp_test_model_path (model);
}

static GstElement *
make_stage (const gchar *model, const gchar *first_prop, ...)
{
  gchar *path = model_path (model);
  GstElement *e = nnp_test_make ("nnstage", "model", path, NULL);
  va_list args;

  g_free (path);
  va_start (args, first_prop);
  if (first_prop)
    g_object_set_valist (G_OBJECT (e), first_prop, args);
  va_end (args);
  return e;
}

static GstHarness *
stage_harness (const gchar *model, const gchar *caps)
{
  GstHarness *h = nnp_test_harness_take (make_stage (model, NULL));

  if (caps)
    gst_harness_set_src_caps_str (h, caps);
  return h;
}

/* The reference: run the model with libnnpipe directly on the same input
 * (a one-stage plan, as `nnpipe run` does).  Returns the output tensors
 * (caller unrefs), n_outputs set. */
static GPtrArray *
reference_run (const gchar *model, const NnpInputShape *shapes, gint n, GstBuffer *input)
{
  gchar *path = model_path (model);
  GError *err = NULL;
  NnpModel *m = nnp_model_load (path, &err);
  NnpGraph *g;
  NnpStage *stage;
  GPtrArray *outs = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  NnpTensor *ins[4];
  GstMapInfo map;
  gsize off = 0;

  fail_unless (m != NULL, "%s", err ? err->message : "?");
  g = nnp_model_specialize (m, shapes, n, NNP_SPECIALIZE_DEFAULT, &err);
  fail_unless (g != NULL, "%s", err ? err->message : "?");
  stage = nnp_stage_new (g, NULL, 0, NULL, &err);
  fail_unless (stage != NULL, "%s", err ? err->message : "?");

  gst_buffer_map (input, &map, GST_MAP_READ);
  for (gint i = 0; i < n; i++) {
    const NnpValue *v = nnp_stage_get_input (stage, i);

    ins[i] = nnp_tensor_new_wrapped (v->dtype, &v->shape, map.data + off, NULL, NULL);
    off += ins[i]->nbytes;
  }
  fail_unless_equals_int (off, map.size);
  for (gint i = 0; i < nnp_stage_get_n_outputs (stage); i++)
    g_ptr_array_add (outs, nnp_stage_new_output (stage, i, NULL));
  fail_unless (nnp_stage_run (stage, ins, (NnpTensor *const *) outs->pdata, &err), "%s",
               err ? err->message : "?");
  for (gint i = 0; i < n; i++)
    nnp_tensor_unref (ins[i]);
  gst_buffer_unmap (input, &map);

  nnp_stage_free (stage);
  nnp_graph_unref (g);
  nnp_model_unref (m);
  g_free (path);
  return outs;
}

static void
assert_identical (GstBuffer *out, GPtrArray *ref)
{
  fail_unless_equals_int (gst_buffer_n_memory (out), ref->len);
  for (guint i = 0; i < ref->len; i++) {
    NnpTensor *t = g_ptr_array_index (ref, i);
    GstMemory *mem = gst_buffer_peek_memory (out, i);
    GstMapInfo map;

    fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
    fail_unless_equals_int (map.size, t->nbytes);
    fail_unless (memcmp (map.data, t->data, t->nbytes) == 0, "output %u differs from the library's",
                 i);
    gst_memory_unmap (mem, &map);
  }
}

static const GstStructure *
current_src_structure (GstHarness *h, GstCaps **caps_out)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);

  fail_unless (caps != NULL);
  *caps_out = caps;
  return gst_caps_get_structure (caps, 0);
}

static NnpInputShape
conv_shape (gint w, gint hgt)
{
  NnpInputShape s = { "x" };
  const int64_t dims[4] = { 1, 3, hgt, w };

  nnp_shape_set (&s.shape, 4, dims);
  return s;
}

GST_START_TEST (test_negotiate_downstream)
{
  /* output caps from shape inference; a new size renegotiates */
  GstHarness *h = stage_harness ("conv-relu-add.onnx", CONV_CAPS (8, 6));
  GstBuffer *in, *out;
  GstCaps *caps;
  const GstStructure *s;
  GPtrArray *ref;
  NnpInputShape shape;
  gint n, d;

  in = nnp_test_random_buffer (8 * 6 * 3, 1);
  shape = conv_shape (8, 6);
  ref = reference_run ("conv-relu-add.onnx", &shape, 1, in);
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  s = current_src_structure (h, &caps);
  fail_unless (gst_structure_has_name (s, "other/tensors"));
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"), "8:6:4:1");
  fail_unless_equals_string (gst_structure_get_string (s, "types"), "float32");
  fail_unless (gst_structure_get_fraction (s, "framerate", &n, &d));
  fail_unless_equals_int (n, 30);
  gst_caps_unref (caps);
  assert_identical (out, ref);
  g_ptr_array_unref (ref);
  gst_buffer_unref (out);

  /* dynamic model, new size */
  gst_harness_set_src_caps_str (h, CONV_CAPS (10, 5));
  in = nnp_test_random_buffer (10 * 5 * 3, 2);
  shape = conv_shape (10, 5);
  ref = reference_run ("conv-relu-add.onnx", &shape, 1, in);
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  s = current_src_structure (h, &caps);
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"), "10:5:4:1");
  gst_caps_unref (caps);
  assert_identical (out, ref);
  g_ptr_array_unref (ref);
  gst_buffer_unref (out);

  gst_harness_teardown (h);
}

GST_END_TEST;

static guint
stages_built (GstHarness *h)
{
  guint n = 0;

  g_object_get (h->element, "stages-built", &n, NULL);
  return n;
}

GST_START_TEST (test_stage_cache)
{
  /* shapes alternating on a dynamic model (as nncrop's text-wide crops
   * do): each shape's stage is built once, then reused, and its outputs
   * stay bit-identical to a fresh run at that shape */
  static const gchar *caps[2] = { CONV_CAPS (8, 6), CONV_CAPS (10, 5) };
  static const gint w[2] = { 8, 10 }, hgt[2] = { 6, 5 };
  GstHarness *h = stage_harness ("conv-relu-add.onnx", NULL);

  for (gint round = 0; round < 6; round++) {
    gint k = round % 2;
    GstBuffer *in = nnp_test_random_buffer ((gsize) w[k] * hgt[k] * 3, (guint) (round + 10));
    NnpInputShape shape = conv_shape (w[k], hgt[k]);
    GPtrArray *ref = reference_run ("conv-relu-add.onnx", &shape, 1, in);
    GstBuffer *out;

    gst_harness_set_src_caps_str (h, caps[k]);
    out = gst_harness_push_and_pull (h, in);
    fail_unless (out != NULL);
    assert_identical (out, ref);
    g_ptr_array_unref (ref);
    gst_buffer_unref (out);
    fail_unless_equals_int (stages_built (h), MIN (round + 1, 2));
  }

  /* a property write forgets the cached stages */
  g_object_set (h->element, "threads", 2, NULL);
  gst_harness_set_src_caps_str (h, caps[0]);
  gst_buffer_unref (gst_harness_push_and_pull (h, nnp_test_random_buffer (8 * 6 * 3, 30)));
  fail_unless_equals_int (stages_built (h), 3);

  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_shape_cache)
{
  /* three shapes in turn: with shape-cache=2 each comes back after being
   * dropped (a stage built every time), with 3 they all stay; raising the
   * property while running keeps the stages already built */
  static const gchar *caps[3] = { CONV_CAPS (8, 6), CONV_CAPS (10, 5), CONV_CAPS (4, 4) };
  static const gint w[3] = { 8, 10, 4 }, hgt[3] = { 6, 5, 4 };
  GstHarness *h = stage_harness ("conv-relu-add.onnx", NULL);
  gint shape_cache = 0;

  g_object_get (h->element, "shape-cache", &shape_cache, NULL);
  fail_unless_equals_int (shape_cache, 4);
  g_object_set (h->element, "shape-cache", 2, NULL);
  for (gint round = 0; round < 12; round++) {
    gint k = round % 3;
    GstBuffer *out;

    if (round == 6)
      g_object_set (h->element, "shape-cache", 3, NULL);
    gst_harness_set_src_caps_str (h, caps[k]);
    out = gst_harness_push_and_pull (
        h, nnp_test_random_buffer ((gsize) w[k] * hgt[k] * 3, (guint) round));
    fail_unless (out != NULL);
    gst_buffer_unref (out);
    /* rounds 0-5 miss every time; 6-8 build the one dropped last, then
     * all three stay */
    fail_unless_equals_int (stages_built (h), MIN (round + 1, 7));
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_negotiate_upstream)
{
  /* upstream asks what the model takes: exact caps for a static model */
  GstHarness *h = stage_harness ("two-io.onnx", NULL);
  GstCaps *caps = gst_pad_peer_query_caps (h->srcpad, NULL);
  const GstStructure *s;
  gint n = 0;

  fail_unless (caps != NULL && !gst_caps_is_empty (caps));
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (s, "other/tensors"));
  fail_unless (gst_structure_get_int (s, "num_tensors", &n));
  fail_unless_equals_int (n, 2);
  fail_unless_equals_string (gst_structure_get_string (s, "types"), "float32,float32");
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"), "4:1,4:1");

  /* fixating what we were offered negotiates */
  caps = gst_caps_fixate (caps);
  gst_harness_set_src_caps (h, caps);
  {
    GstBuffer *out = gst_harness_push_and_pull (h, nnp_test_random_buffer (8, 3));

    fail_unless (out != NULL);
    fail_unless_equals_int (gst_buffer_n_memory (out), 2);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);

  /* a dynamic model: types and rank known, sizes not */
  h = stage_harness ("conv-relu-add.onnx", NULL);
  caps = gst_pad_peer_query_caps (h->srcpad, NULL);
  fail_unless (caps != NULL && !gst_caps_is_empty (caps));
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (s, "num_tensors", &n));
  fail_unless_equals_int (n, 1);
  fail_unless_equals_string (gst_structure_get_string (s, "types"), "float32");
  fail_if (gst_structure_has_field (s, "dimensions"));
  gst_caps_unref (caps);

  /* downstream asks what we produce for fixed input */
  gst_harness_set_src_caps_str (h, CONV_CAPS (7, 3));
  caps = gst_pad_peer_query_caps (h->sinkpad, NULL);
  fail_unless (caps != NULL && !gst_caps_is_empty (caps));
  fail_unless_equals_string (
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions"), "7:3:4:1");
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_negotiate_with_nnconvert)
{
  /* upstream picks a 3-channel frame for a 3-channel model, although
   * nnconvert could also make 1-channel tensors (GRAY8) */
  gchar *path = nnp_test_model_path ("conv-relu-add.onnx");
  gchar *desc = g_strdup_printf (
      "videotestsrc num-buffers=3 ! video/x-raw,width=16,height=8 ! nnconvert ! nnstage model=\"%s\" ! fakesink name=sink",
      path);
  GstElement *pipeline;
  gchar *dims;

  fail_unless (gst_registry_check_feature_version (gst_registry_get (), "videotestsrc", 1, 0, 0),
               "no videotestsrc: install the Debian package gstreamer1.0-plugins-base");
  pipeline = nnp_test_launch_to_eos (desc, 30 * GST_SECOND);
  dims = nnp_test_current_dims (pipeline, "sink", "sink");
  fail_unless_equals_string (dims, "16:8:4:1");
  g_free (dims);
  nnp_test_launch_stop (pipeline);
  g_free (desc);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_singular_caps)
{
  /* NNStreamer's other/tensor (one tensor) form in, other/tensors out */
  GstHarness *h = stage_harness ("conv-relu-add.onnx",
                                 "other/tensor,type=float32,dimension=4:4:3:1,framerate=0/1");
  GstBuffer *out = gst_harness_push_and_pull (h, nnp_test_random_buffer (48, 4));
  GstCaps *caps;
  const GstStructure *s;

  fail_unless (out != NULL);
  s = current_src_structure (h, &caps);
  fail_unless (gst_structure_has_name (s, "other/tensors"));
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"), "4:4:4:1");
  gst_caps_unref (caps);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Push one buffer with wrong caps: not-negotiated, and an error on the bus
 * whose message contains every string of `want` (NULL-terminated). */
static void
check_wrong_caps (const gchar *model, const gchar *caps, gsize size, const gchar *const *want)
{
  GstHarness *h = stage_harness (model, NULL);
  GstBus *bus = gst_bus_new ();
  GError *err;
  gchar *debug = NULL;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, caps);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL, size, NULL)),
                          GST_FLOW_NOT_NEGOTIATED);

  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &debug, caps);
  fail_unless (g_error_matches (err, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION), "%s",
               err->message);
  for (gint i = 0; want[i]; i++)
    fail_unless (strstr (err->message, want[i]) != NULL, "error \"%s\" lacks \"%s\"", err->message,
                 want[i]);
  GST_INFO ("wrong caps %s -> %s (%s)", caps, err->message, debug);
  g_clear_error (&err);
  g_free (debug);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_wrong_caps)
{
  const gchar *channels[] = {
    "conv-relu-add.onnx", "input 'x' expects", "4 dims", "1x3x?x?", "got dimensions=8:6:2:1", NULL
  };
  const gchar *type[] = { "input 'x' expects", "float32", "types=uint8", NULL };
  const gchar *count[] = { "expects 1 input tensors", "'x'", "num_tensors=2", NULL };
  const gchar *infer[] = { "add-4x4.onnx", "shape inference failed for dimensions=5:5:3:1", "'add'",
                           NULL };
  const gchar *rank[] = { "input 'a' expects", "1x4", "got dimensions=4:2", NULL };

  check_wrong_caps (
      "conv-relu-add.onnx",
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=8:6:2:1,framerate=0/1",
      8 * 6 * 2 * 4, channels);
  check_wrong_caps (
      "conv-relu-add.onnx",
      "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=8:6:3:1,framerate=0/1",
      8 * 6 * 3, type);
  check_wrong_caps (
      "conv-relu-add.onnx",
      "other/tensors,format=static,num_tensors=2,types=\"float32,float32\",dimensions=\"8:6:3:1,8:6:3:1\",framerate=0/1",
      8 * 6 * 3 * 8, count);
  check_wrong_caps (
      "add-4x4.onnx",
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=5:5:3:1,framerate=0/1",
      5 * 5 * 3 * 4, infer);
  check_wrong_caps (
      "two-io.onnx",
      "other/tensors,format=static,num_tensors=2,types=\"float32,float32\",dimensions=\"4:2,4:1\",framerate=0/1",
      48, rank);
}

GST_END_TEST;

GST_START_TEST (test_bit_identical_multi_tensor)
{
  /* two inputs (one memory each, or one block as filesrc gives), two
   * outputs of one memory each; values checked against plain C too */
  GstHarness *h = stage_harness ("two-io.onnx", TWO_IO_CAPS);
  NnpInputShape shapes[2] = { { "a" }, { "b" } };
  const int64_t dims[2] = { 1, 4 };
  GstBuffer *block = nnp_test_random_buffer (8, 5), *split, *out;
  GPtrArray *ref;
  GstMapInfo map;
  const gfloat *x;

  nnp_shape_set (&shapes[0].shape, 2, dims);
  nnp_shape_set (&shapes[1].shape, 2, dims);
  ref = reference_run ("two-io.onnx", shapes, 2, block);

  gst_buffer_map (block, &map, GST_MAP_READ);
  x = (const gfloat *) map.data;
  for (gint i = 0; i < 4; i++) {
    fail_unless (((gfloat *) ((NnpTensor *) ref->pdata[0])->data)[i] == x[i] + x[4 + i]);
    fail_unless (((gfloat *) ((NnpTensor *) ref->pdata[1])->data)[i] == x[i] * x[4 + i]);
  }
  gst_buffer_unmap (block, &map);

  split = gst_buffer_new ();
  gst_buffer_append_memory (split, gst_memory_copy (gst_buffer_peek_memory (block, 0), 0, 16));
  gst_buffer_append_memory (split, gst_memory_copy (gst_buffer_peek_memory (block, 0), 16, 16));
  fail_unless_equals_int (gst_buffer_n_memory (split), 2);

  out = gst_harness_push_and_pull (h, split);
  assert_identical (out, ref);
  gst_buffer_unref (out);

  out = gst_harness_push_and_pull (h, gst_buffer_ref (block));
  assert_identical (out, ref);
  gst_buffer_unref (out);

  /* a wrong size is a stream error */
  fail_unless_equals_int (gst_harness_push (h, nnp_test_random_buffer (7, 6)), GST_FLOW_ERROR);

  g_ptr_array_unref (ref);
  gst_buffer_unref (block);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* a float16 model (tests/data/half.onnx: float16 input, weights and output
 * y, float32 output z): the pads carry float16 as the model declares, the
 * outputs are the library's bit for bit */
GST_START_TEST (test_float16_pads)
{
  const gchar *src = g_getenv ("NNP_SOURCE_DIR");
  gchar *path;
  GstHarness *h;
  NnpInputShape shape = { "x" };
  const int64_t dims[4] = { 1, 3, 6, 8 };
  GstBuffer *in, *out;
  GstMapInfo map;
  GPtrArray *ref;
  GstCaps *caps;
  GstStructure *st;

  fail_unless (src != NULL, "NNP_SOURCE_DIR is not set");
  path = g_build_filename (src, "tests", "data", "half.onnx", NULL);
  h = stage_harness (
      path,
      "other/tensors,format=static,num_tensors=1,types=float16,dimensions=8:6:3:1,framerate=0/1");
  /* float16 input: 16-bit patterns of values in [-1, 1) */
  in = gst_buffer_new_allocate (NULL, 3 * 6 * 8 * 2, NULL);
  gst_buffer_map (in, &map, GST_MAP_WRITE);
  for (gint i = 0; i < 3 * 6 * 8; i++) {
    gfloat f = (gfloat) ((i * 37) % 97) / 48.5f - 1.f;

    nnp_f32_to_half (NNP_DTYPE_FLOAT16, &f, (guint16 *) map.data + i, 1);
  }
  gst_buffer_unmap (in, &map);
  nnp_shape_set (&shape.shape, 4, dims);
  ref = reference_run (path, &shape, 1, in);
  fail_unless_equals_int (((NnpTensor *) ref->pdata[0])->dtype, NNP_DTYPE_FLOAT16);

  out = gst_harness_push_and_pull (h, in);
  caps = gst_pad_get_current_caps (h->sinkpad);
  st = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (st, "types"), "float16,float32");
  fail_unless_equals_string (gst_structure_get_string (st, "dimensions"), "4:3:4:1,8:6:4:1");
  gst_caps_unref (caps);
  assert_identical (out, ref);
  gst_buffer_unref (out);
  g_ptr_array_unref (ref);
  gst_harness_teardown (h);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_threads_identical)
{
  /* two pinned threads give the same bits as the single-threaded library */
  GstHarness *h =
      nnp_test_harness_take (make_stage ("conv-relu-add.onnx", "threads", 2, "cpus", "0,1", NULL));
  NnpInputShape shape = conv_shape (33, 17);
  GstBuffer *in = nnp_test_random_buffer (33 * 17 * 3, 7), *out;
  GPtrArray *ref = reference_run ("conv-relu-add.onnx", &shape, 1, in);

  gst_harness_set_src_caps_str (h, CONV_CAPS (33, 17));
  out = gst_harness_push_and_pull (h, in);
  assert_identical (out, ref);
  gst_buffer_unref (out);
  g_ptr_array_unref (ref);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A tagless test meta: must pass through nnstage. */
typedef struct {
  GstMeta meta;
  gint value;
} TestMeta;

static GType
test_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("NnStageTestMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean test_meta_transform (GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type,
                                     gpointer data);

static gboolean
test_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  ((TestMeta *) meta)->value = -1;
  return TRUE;
}

static const GstMetaInfo *
test_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) &info)) {
    const GstMetaInfo *mi =
        gst_meta_register (test_meta_api_get_type (), "NnStageTestMeta", sizeof (TestMeta),
                           test_meta_init, NULL, test_meta_transform);
    g_once_init_leave ((GstMetaInfo **) &info, (GstMetaInfo *) mi);
  }
  return info;
}

static gboolean
test_meta_transform (GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type, gpointer data)
{
  TestMeta *m = (TestMeta *) gst_buffer_add_meta (dest, test_meta_get_info (), NULL);

  m->value = ((TestMeta *) meta)->value;
  return TRUE;
}

GST_START_TEST (test_frames_and_timestamps)
{
  const guint N = 30;
  GstHarness *h = stage_harness ("conv-relu-add.onnx", CONV_CAPS (8, 8));
  GstClockTime last = GST_CLOCK_TIME_NONE;

  for (guint i = 0; i < N; i++) {
    GstBuffer *in = nnp_test_random_buffer (8 * 8 * 3, 100 + i);
    TestMeta *m;

    GST_BUFFER_PTS (in) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION (in) = GST_SECOND / 30;
    GST_BUFFER_OFFSET (in) = i;
    m = (TestMeta *) gst_buffer_add_meta (in, test_meta_get_info (), NULL);
    m->value = (gint) i;
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  fail_unless_equals_int (gst_harness_buffers_received (h), N);
  for (guint i = 0; i < N; i++) {
    GstBuffer *out = gst_harness_pull (h);
    TestMeta *m;

    fail_unless (out != NULL);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i * GST_SECOND / 30);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 30);
    if (GST_CLOCK_TIME_IS_VALID (last))
      fail_unless (GST_BUFFER_PTS (out) > last);
    last = GST_BUFFER_PTS (out);
    m = (TestMeta *) gst_buffer_get_meta (out, test_meta_api_get_type ());
    fail_unless (m != NULL, "meta lost on buffer %u", i);
    fail_unless_equals_int (m->value, i);
    gst_buffer_unref (out);
  }
  fail_unless (gst_harness_try_pull (h) == NULL);
  /* EOS went through */
  {
    GstEvent *ev;
    gboolean eos = FALSE;

    while ((ev = gst_harness_try_pull_event (h))) {
      eos |= GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
      gst_event_unref (ev);
    }
    fail_unless (eos);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_state_cycles)
{
  /* 10 x NULL -> PLAYING -> NULL in a pipeline with data flowing; every
   * object goes away at the end */
  gchar *path = nnp_test_model_path ("conv-relu-add.onnx");
  gchar *desc = g_strdup_printf (
      "appsrc name=src format=time caps=\"" CONV_CAPS (
          8, 6) "\" ! nnstage name=stage model=\"%s\" ! fakesink name=sink sync=false",
      path);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *src, *stage;
  GstBus *bus;

  fail_unless (pipeline != NULL);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  stage = gst_bin_get_by_name (GST_BIN (pipeline), "stage");
  bus = gst_element_get_bus (pipeline);

  for (gint cycle = 0; cycle < 10; cycle++) {
    GstMessage *msg;
    GstFlowReturn flow;

    fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
    for (gint i = 0; i < 3; i++) {
      GstBuffer *buf = nnp_test_random_buffer (8 * 6 * 3, cycle * 10 + i);

      GST_BUFFER_PTS (buf) = i * GST_MSECOND;
      g_signal_emit_by_name (src, "push-buffer", buf, &flow);
      gst_buffer_unref (buf);
      fail_unless_equals_int (flow, GST_FLOW_OK);
    }
    g_signal_emit_by_name (src, "end-of-stream", &flow);
    msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    fail_unless (msg != NULL);
    fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
    gst_message_unref (msg);
    fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
                            GST_STATE_CHANGE_SUCCESS);
  }

  /* us, the pipeline */
  ASSERT_OBJECT_REFCOUNT (stage, "nnstage", 2);
  gst_object_unref (src);
  gst_object_unref (stage);
  gst_object_unref (bus);
  /* a streaming thread that has stopped may still be handing its last
   * stream-status message to the bin for a moment (seen under TSan): wait
   * for that reference to go, up to 5 s; a leaked one stays and fails */
  for (gint i = 0; i < 500 && GST_OBJECT_REFCOUNT_VALUE (pipeline) > 1; i++)
    g_usleep (10000);
  ASSERT_OBJECT_REFCOUNT (pipeline, "pipeline", 1);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_element_cycles)
{
  /* the lone element: 10 x NULL -> PLAYING -> NULL */
  GstElement *e = make_stage ("conv-relu-add.onnx", NULL);

  for (gint i = 0; i < 10; i++) {
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  ASSERT_OBJECT_REFCOUNT (e, "nnstage", 1);
  gst_object_unref (e);
}

GST_END_TEST;

static void
check_bad_model (const gchar *name, const gchar *want_domain)
{
  GstElement *e = make_stage (name, NULL);
  GstBus *bus = gst_bus_new ();
  GError *err;
  gchar *debug = NULL, *all;

  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &debug, name);
  all = g_strdup_printf ("%s %s", err->message, debug ? debug : "");
  fail_unless (strstr (err->message, name) != NULL, "error \"%s\" does not name %s", err->message,
               name);
  fail_unless (g_quark_to_string (err->domain) != NULL);
  GST_INFO ("%s: %s", name, all);
  (void) want_domain;
  g_free (all);
  g_free (debug);
  g_clear_error (&err);

  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_START_TEST (test_corrupt_model)
{
  check_bad_model ("corrupt.onnx", "stream");
  check_bad_model ("no-such-model.onnx", "resource");
}

GST_END_TEST;

GST_START_TEST (test_latency)
{
  /* LATENCY adds the stage's processing time to upstream's */
  GstHarness *h = stage_harness ("conv-relu-add.onnx", CONV_CAPS (16, 16));

  gst_harness_set_upstream_latency (h, 10 * GST_MSECOND);
  for (gint i = 0; i < 5; i++) {
    GstBuffer *out = gst_harness_push_and_pull (h, nnp_test_random_buffer (16 * 16 * 3, i));
    gst_buffer_unref (out);
  }
  fail_unless (gst_harness_query_latency (h) > 10 * GST_MSECOND);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* nnstage and nnremote select a part with the same properties, installed
 * once (plugins/common/gstnnpartprops.c): the same types, flags and
 * defaults, values that round-trip, each element's own blurb; nnstage adds
 * the device properties and the run statistics' (gstnnrunstats.c). */
GST_START_TEST (test_part_properties)
{
  static const gchar *const shared[] = { "model", "plan", "plan-object", "stage", "nodes" };
  GstElement *els[2] = { gst_object_ref_sink (nnp_test_make ("nnstage", NULL)),
                         gst_object_ref_sink (nnp_test_make ("nnremote", NULL)) };
  GParamSpec *p[2];
  gchar *model, *plan, *nodes, *device, *name, *cpus, *trace;
  gint stage, index, threads, cache;
  gboolean fallback;
  gdouble slowdown;

  for (guint i = 0; i < G_N_ELEMENTS (shared); i++) {
    for (guint k = 0; k < 2; k++) {
      p[k] = g_object_class_find_property (G_OBJECT_GET_CLASS (els[k]), shared[i]);
      fail_unless (p[k] != NULL, "no property %s", shared[i]);
    }
    fail_unless (p[0]->value_type == p[1]->value_type, "%s", shared[i]);
    fail_unless_equals_int (p[0]->flags, p[1]->flags);
    fail_unless_equals_int (g_param_values_cmp (p[0], g_param_spec_get_default_value (p[0]),
                                                g_param_spec_get_default_value (p[1])),
                            0);
  }
  /* nnremote words model its own way: its digest goes to the server */
  fail_if (g_str_equal (
      g_param_spec_get_blurb (g_object_class_find_property (G_OBJECT_GET_CLASS (els[0]), "model")),
      g_param_spec_get_blurb (
          g_object_class_find_property (G_OBJECT_GET_CLASS (els[1]), "model"))));
  fail_unless (g_object_class_find_property (G_OBJECT_GET_CLASS (els[1]), "device") == NULL);

  for (guint k = 0; k < 2; k++) {
    g_object_set (els[k], "model", "m.onnx", "plan", "p.json", "stage", 3, "nodes", "a..b", NULL);
    g_object_get (els[k], "model", &model, "plan", &plan, "stage", &stage, "nodes", &nodes, NULL);
    fail_unless_equals_string (model, "m.onnx");
    fail_unless_equals_string (plan, "p.json");
    fail_unless_equals_int (stage, 3);
    fail_unless_equals_string (nodes, "a..b");
    g_free (model);
    g_free (plan);
    g_free (nodes);
  }

  g_object_get (els[0], "device", &device, "threads", &threads, NULL);
  fail_unless_equals_string (device, "cpu");
  fail_unless_equals_int (threads, 1);
  g_free (device);
  g_object_set (els[0], "device", "opencl:1", "device-index", 2, "device-name", "gpu", "fallback",
                TRUE, "threads", 3, "cpus", "0-1", "trace", "t.json", "debug-slowdown", 1.5,
                "shape-cache", 7, NULL);
  g_object_get (els[0], "device", &device, "device-index", &index, "device-name", &name, "fallback",
                &fallback, "threads", &threads, "cpus", &cpus, "trace", &trace, "debug-slowdown",
                &slowdown, "shape-cache", &cache, NULL);
  fail_unless_equals_string (device, "opencl:1");
  fail_unless_equals_int (index, 2);
  fail_unless_equals_string (name, "gpu");
  fail_unless (fallback);
  fail_unless_equals_int (threads, 3);
  fail_unless_equals_string (cpus, "0-1");
  fail_unless_equals_string (trace, "t.json");
  fail_unless_equals_float (slowdown, 1.5);
  fail_unless_equals_int (cache, 7);
  g_free (device);
  g_free (name);
  g_free (cpus);
  g_free (trace);

  gst_object_unref (els[0]);
  gst_object_unref (els[1]);
}

GST_END_TEST;

static Suite *
nnstage_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnstage", 120, &tc);

  tcase_add_test (tc, test_negotiate_downstream);
  tcase_add_test (tc, test_stage_cache);
  tcase_add_test (tc, test_shape_cache);
  tcase_add_test (tc, test_negotiate_upstream);
  tcase_add_test (tc, test_negotiate_with_nnconvert);
  tcase_add_test (tc, test_singular_caps);
  tcase_add_test (tc, test_wrong_caps);
  tcase_add_test (tc, test_bit_identical_multi_tensor);
  tcase_add_test (tc, test_threads_identical);
  tcase_add_test (tc, test_float16_pads);
  tcase_add_test (tc, test_frames_and_timestamps);
  tcase_add_test (tc, test_state_cycles);
  tcase_add_test (tc, test_element_cycles);
  tcase_add_test (tc, test_corrupt_model);
  tcase_add_test (tc, test_latency);
  tcase_add_test (tc, test_part_properties);
  return s;
}

GST_CHECK_MAIN (nnstage);
