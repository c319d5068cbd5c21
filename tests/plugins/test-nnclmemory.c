/* nnstage on OpenCL (issue 6), with the library's copy counters
 * (nnp_device_get_copy_counts()):
 *
 * - two consecutive nnstages on the same OpenCL device (a model split with
 *   nodes=) exchange memory:OpenCL buffers: per frame only the first
 *   stage's input goes up and the last stage's output comes back, nothing
 *   crosses to the host between them;
 * - a CPU -> OpenCL boundary costs exactly one upload per crossing tensor
 *   per frame, an OpenCL -> CPU boundary one download per crossing tensor;
 * - outputs equal the whole model on the CPU within 1e-4 relative; frames
 *   in == frames out;
 * - a missing device (device-index=99) fails with an error naming
 *   opencl:99; with fallback=true a warning and the CPU's output;
 * - nnpipeline devices=cpu,opencl: a plan over both devices, the same
 *   copy counts, the CPU's output; opencl:99 with fallback=true on the CPU;
 * - GstNnDeviceMemory of an OpenCL device maps: read downloads once, write
 *   uploads at unmap; the device is shared through a GstContext of type
 *   nnpipe.opencl.device.
 *
 * Fails, naming pocl-opencl-icd, when no OpenCL device can be opened. */
#include "test-common.h"

#include <nnpipe/nnpipe.h>

/* from plugins/common/gstnndevicememory.h (the plugin's types live in the
 * plugin): OpenCL's caps feature and context type */
#define GST_CAPS_FEATURE_MEMORY_OPENCL "memory:OpenCL"
#define GST_NN_DEVICE_MEMORY_TYPE "NnpDeviceMemory"
#define GST_NN_CL_DEVICE_CONTEXT_TYPE "nnpipe.opencl.device"

static gboolean
is_cl_memory (GstMemory *mem)
{
  return mem->allocator && g_strcmp0 (mem->allocator->mem_type, GST_NN_DEVICE_MEMORY_TYPE) == 0;
}

#include <math.h>
#include <string.h>

#define FRAMES 5
#define H 24
#define W 32

static gchar *model_path;
static guint n_nodes; /* of the specialised residual model */

static const gchar *
input_caps (void)
{
  return "other/tensors,format=static,num_tensors=1,types=float32,dimensions=32:24:3:1,framerate=30/1";
}

/* Run FRAMES frames through a gst-launch style description; returns the
 * outputs (in system memory: the harness sink takes no device memory
 * unless sink_device) and the copies made while the frames ran. */
typedef struct {
  GPtrArray *buffers;
  NnpCopyCounts copies;
  guint crossing; /* tensors between element s0 and s1 */
  GstHarness *h;
} Run;

static GstStaticPadTemplate any_src =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate any_sink =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static Run
run_chain (const gchar *desc, gboolean sink_device, GstBus *bus)
{
  Run r = { 0 };
  NnpCopyCounts before, after;
  GstElement *s0, *bin;

  /* the bus before the elements start: they post while starting */
  bin = gst_parse_bin_from_description (desc, TRUE, NULL);
  fail_unless (bin != NULL, "cannot parse %s", desc);
  if (bus)
    gst_element_set_bus (bin, bus);
  r.h = gst_harness_new_empty ();
  gst_harness_add_element_full (r.h, bin, &any_src, "sink", &any_sink, "src");
  gst_object_unref (bin);
  r.buffers = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  gst_harness_set_src_caps_str (r.h, input_caps ());
  gst_harness_set_sink_caps_str (
      r.h, sink_device ? "other/tensors(" GST_CAPS_FEATURE_MEMORY_OPENCL ")" : "other/tensors");

  /* the first frame builds the stages (weights go up then: not counted) */
  nnp_test_push_frames (r.h, 3 * H * W, 1, 0, 1);
  nnp_test_pull_frames (r.h, 0, 1, r.buffers);

  nnp_device_get_copy_counts (&before);
  nnp_test_push_frames (r.h, 3 * H * W, 1, 1, FRAMES - 1);
  nnp_test_pull_frames (r.h, 1, FRAMES - 1, r.buffers);
  nnp_device_get_copy_counts (&after);
  r.copies.to_device = after.to_device - before.to_device;
  r.copies.to_host = after.to_host - before.to_host;
  for (guint i = 1; i < FRAMES; i++)
    fail_unless_equals_uint64 (GST_BUFFER_PTS (g_ptr_array_index (r.buffers, i)),
                               i * NNP_TEST_FRAME_DURATION);

  s0 = gst_bin_get_by_name (GST_BIN (r.h->element), "s0");
  if (s0) {
    GstPad *pad = gst_element_get_static_pad (s0, "src");
    GstCaps *caps = gst_pad_get_current_caps (pad);
    gint n = 0;

    fail_unless (caps != NULL);
    gst_structure_get_int (gst_caps_get_structure (caps, 0), "num_tensors", &n);
    r.crossing = (guint) n;
    GST_INFO ("between the stages: %" GST_PTR_FORMAT, caps);
    gst_caps_unref (caps);
    gst_object_unref (pad);
    gst_object_unref (s0);
  }

  nnp_test_finish_eos (r.h);
  return r;
}

static void
run_clear (Run *r)
{
  gst_harness_teardown (r->h);
  g_ptr_array_unref (r->buffers);
}

/* The whole model on the CPU, same frames. */
static GPtrArray *
reference (void)
{
  gchar *desc = g_strdup_printf ("nnstage model=%s", model_path);
  Run r = run_chain (desc, FALSE, NULL);
  GPtrArray *ret = g_ptr_array_ref (r.buffers);

  g_free (desc);
  run_clear (&r);
  return ret;
}

static void
assert_close (GPtrArray *got, GPtrArray *want)
{
  fail_unless_equals_int (got->len, want->len);
  for (guint i = 0; i < got->len; i++) {
    GstBuffer *a = g_ptr_array_index (got, i), *b = g_ptr_array_index (want, i);
    GstMapInfo ma, mb;
    gdouble max_err = 0, max_ref = 0;

    fail_unless (gst_buffer_map (a, &ma, GST_MAP_READ));
    fail_unless (gst_buffer_map (b, &mb, GST_MAP_READ));
    fail_unless_equals_uint64 (ma.size, mb.size);
    for (gsize k = 0; k < ma.size / sizeof (gfloat); k++) {
      gfloat x = ((gfloat *) ma.data)[k], y = ((gfloat *) mb.data)[k];

      max_err = MAX (max_err, fabs ((gdouble) x - y));
      max_ref = MAX (max_ref, fabs ((gdouble) y));
    }
    gst_buffer_unmap (a, &ma);
    gst_buffer_unmap (b, &mb);
    fail_unless (max_err <= 1e-4 * MAX (max_ref, 1e-6), "frame %u: max error %g (max |ref| %g)", i,
                 max_err, max_ref);
  }
}

static gchar *
chain (const gchar *dev0, const gchar *dev1)
{
  guint cut = n_nodes / 2;

  return g_strdup_printf (
      "nnstage name=s0 model=%s device=%s nodes=0..%u ! queue ! nnstage name=s1 model=%s device=%s nodes=%u..%u",
      model_path, dev0, cut - 1, model_path, dev1, cut, n_nodes - 1);
}

GST_START_TEST (test_opencl_chain_no_copies)
{
  GPtrArray *ref = reference ();
  gchar *desc = chain ("opencl", "opencl");
  Run r = run_chain (desc, FALSE, NULL);

  GST_INFO ("opencl ! opencl: %u crossing tensors, %" G_GUINT64_FORMAT
            " uploads, %" G_GUINT64_FORMAT " downloads for %d frames",
            r.crossing, r.copies.to_device, r.copies.to_host, FRAMES - 1);
  fail_unless (r.crossing >= 2, "the cut should carry >= 2 tensors");
  /* only the first stage's input goes up, the last output comes back */
  fail_unless_equals_uint64 (r.copies.to_device, FRAMES - 1);
  fail_unless_equals_uint64 (r.copies.to_host, FRAMES - 1);
  assert_close (r.buffers, ref);
  run_clear (&r);
  g_free (desc);
  g_ptr_array_unref (ref);
}

GST_END_TEST;

GST_START_TEST (test_cpu_opencl_boundary)
{
  GPtrArray *ref = reference ();
  gchar *desc = chain ("cpu", "opencl");
  Run r = run_chain (desc, FALSE, NULL);

  /* one upload per crossing tensor per frame, one download of the output */
  fail_unless (r.crossing >= 2);
  fail_unless_equals_uint64 (r.copies.to_device, r.crossing * (FRAMES - 1));
  fail_unless_equals_uint64 (r.copies.to_host, FRAMES - 1);
  assert_close (r.buffers, ref);
  run_clear (&r);
  g_free (desc);

  desc = chain ("opencl", "cpu");
  r = run_chain (desc, FALSE, NULL);
  fail_unless_equals_uint64 (r.copies.to_device, FRAMES - 1);
  fail_unless_equals_uint64 (r.copies.to_host, r.crossing * (FRAMES - 1));
  assert_close (r.buffers, ref);
  run_clear (&r);
  g_free (desc);
  g_ptr_array_unref (ref);
}

GST_END_TEST;

/* Device memory out of the last stage; mapping it reads back once. */
GST_START_TEST (test_device_output_map)
{
  GPtrArray *ref = reference ();
  gchar *desc = g_strdup_printf ("nnstage model=%s device=opencl", model_path);
  Run r = run_chain (desc, TRUE, NULL);
  NnpCopyCounts c0, c1;
  GstMemory *mem;
  GstMapInfo map;
  gfloat orig;

  /* nothing came back while running: the outputs are still on the device */
  fail_unless_equals_uint64 (r.copies.to_host, 0);
  mem = gst_buffer_peek_memory (g_ptr_array_index (r.buffers, 1), 0);
  fail_unless (is_cl_memory (mem));
  nnp_device_get_copy_counts (&c0);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  gst_memory_unmap (mem, &map);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  gst_memory_unmap (mem, &map);
  nnp_device_get_copy_counts (&c1);
  fail_unless_equals_uint64 (c1.to_host - c0.to_host, 1);
  /* a write map uploads once, at unmap */
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READWRITE));
  orig = ((gfloat *) map.data)[0];
  ((gfloat *) map.data)[0] = 42.0f;
  gst_memory_unmap (mem, &map);
  nnp_device_get_copy_counts (&c0);
  fail_unless_equals_uint64 (c0.to_device - c1.to_device, 1);
  fail_unless_equals_uint64 (c0.to_host - c1.to_host, 0);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_WRITE));
  ((gfloat *) map.data)[0] = orig;
  gst_memory_unmap (mem, &map);

  assert_close (r.buffers, ref);
  run_clear (&r);
  g_free (desc);
  g_ptr_array_unref (ref);
}

GST_END_TEST;

static GstElement *
missing_device_stage (gboolean fallback)
{
  GstElement *e = nnp_test_make ("nnstage", "model", model_path, "fallback", fallback, NULL);

  gst_util_set_object_arg (G_OBJECT (e), "device", "opencl");
  g_object_set (e, "device-index", 99, NULL);
  return e;
}

GST_START_TEST (test_missing_device_error)
{
  GstElement *e = missing_device_stage (FALSE);
  GstBus *bus = gst_bus_new ();
  GError *err;
  gchar *debug = NULL;

  gst_element_set_bus (e, bus);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &debug, NULL);
  GST_INFO ("error: %s (%s)", err->message, debug);
  fail_unless (strstr (err->message, "opencl:99") != NULL, "the error does not name the device: %s",
               err->message);
  g_clear_error (&err);
  g_free (debug);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_END_TEST;

/* The warning of a fallback from the missing device opencl:99 on bus
 * (g_error_free()). */
static GError *
pop_fallback_warning (GstBus *bus)
{
  GError *err = nnp_test_pop_message (bus, GST_MESSAGE_WARNING, NULL, NULL);

  GST_INFO ("warning: %s", err->message);
  fail_unless (strstr (err->message, "opencl:99") != NULL, "%s", err->message);
  return err;
}

GST_START_TEST (test_missing_device_fallback)
{
  GPtrArray *ref = reference ();
  gchar *desc =
      g_strdup_printf ("nnstage model=%s device=opencl device-index=99 fallback=true", model_path);
  GstBus *bus = gst_bus_new ();
  Run r = run_chain (desc, FALSE, bus);
  GError *err = pop_fallback_warning (bus);

  fail_unless (strstr (err->message, "CPU") != NULL);
  g_clear_error (&err);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  /* on the CPU: no copies at all */
  fail_unless_equals_uint64 (r.copies.to_device, 0);
  fail_unless_equals_uint64 (r.copies.to_host, 0);
  assert_close (r.buffers, ref);
  gst_element_set_bus (r.h->element, NULL);
  run_clear (&r);
  gst_object_unref (bus);
  g_free (desc);
  g_ptr_array_unref (ref);
}

GST_END_TEST;

/* The nnpipeline-plan message on bus: the device of each stage ("cpu",
 * "opencl", ... in *devices, g_strfreev) and the tensors crossing the cut
 * after stage 0. */
static void
pop_plan (GstBus *bus, gchar ***devices, gint *crossing, gdouble *pred)
{
  GstMessage *msg;

  *devices = NULL;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);

    if (gst_structure_has_name (s, "nnpipeline-plan")) {
      const GValue *stages = gst_structure_get_value (s, "stages");
      guint n = gst_value_array_get_size (stages);

      g_strfreev (*devices);
      *devices = g_new0 (gchar *, n + 1);
      for (guint k = 0; k < n; k++) {
        const GstStructure *st = gst_value_get_structure (gst_value_array_get_value (stages, k));

        (*devices)[k] = g_strdup (gst_structure_get_string (st, "device"));
        if (k == 0)
          gst_structure_get_int (st, "outputs", crossing);
        if (k == 1)
          gst_structure_get_double (st, "predicted-ms", pred);
      }
    }
    gst_message_unref (msg);
  }
  fail_unless (*devices != NULL, "no nnpipeline-plan message");
}

/* nnpipeline devices=cpu,opencl plans with the partitioner's OpenCL costs
 * (the plan message shows both devices), runs stage 1 on OpenCL (one
 * upload per crossing tensor, one download of the output per frame) and
 * gives the CPU's output; an OpenCL device that is not there is planned on
 * the CPU with fallback=true, with a warning. */
GST_START_TEST (test_pipeline_cpu_opencl)
{
  GPtrArray *ref = reference ();
  gchar *desc = g_strdup_printf ("nnpipeline model=%s stages=2 devices=cpu,opencl stats-interval=0",
                                 model_path);
  GstBus *bus = gst_bus_new ();
  Run r = run_chain (desc, FALSE, bus);
  gchar **devices;
  gint crossing = 0;
  gdouble pred = -1;

  pop_plan (bus, &devices, &crossing, &pred);
  fail_unless_equals_int (g_strv_length (devices), 2);
  fail_unless_equals_string (devices[0], "cpu");
  fail_unless_equals_string (devices[1], "opencl");
  fail_unless (pred > 0, "no OpenCL stage prediction");
  fail_unless (crossing >= 1);
  GST_INFO ("cpu ! opencl: %d crossing, %" G_GUINT64_FORMAT " uploads, %" G_GUINT64_FORMAT
            " downloads",
            crossing, r.copies.to_device, r.copies.to_host);
  fail_unless_equals_uint64 (r.copies.to_device, crossing * (FRAMES - 1));
  fail_unless_equals_uint64 (r.copies.to_host, FRAMES - 1);
  assert_close (r.buffers, ref);
  g_strfreev (devices);
  gst_element_set_bus (r.h->element, NULL);
  run_clear (&r);
  g_free (desc);

  desc = g_strdup_printf (
      "nnpipeline model=%s stages=2 devices=cpu,opencl:99 fallback=true stats-interval=0",
      model_path);
  r = run_chain (desc, FALSE, bus);
  g_error_free (pop_fallback_warning (bus));
  pop_plan (bus, &devices, &crossing, &pred);
  fail_unless_equals_string (devices[1], "cpu");
  fail_unless_equals_uint64 (r.copies.to_device, 0);
  assert_close (r.buffers, ref);
  g_strfreev (devices);
  gst_element_set_bus (r.h->element, NULL);
  run_clear (&r);
  g_free (desc);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_ptr_array_unref (ref);
}

GST_END_TEST;

/* The device's context, as an element answers a CONTEXT query (new ref
 * to the device boxed in it, borrowed pointer). */
static gpointer
context_device (GstElement *e, GstContext **ctx_out)
{
  GstQuery *q = gst_query_new_context (GST_NN_CL_DEVICE_CONTEXT_TYPE);
  GstContext *answer = NULL;
  const GstStructure *st;
  const GValue *v;
  gpointer dev;

  GstPad *pad = gst_element_get_static_pad (e, "src");

  fail_unless (gst_pad_query (pad, q), "no answer to the context query");
  gst_object_unref (pad);
  gst_query_parse_context (q, &answer);
  fail_unless (answer != NULL);
  st = gst_context_get_structure (answer);
  fail_unless (gst_structure_get_string (st, "name") != NULL);
  fail_unless (gst_structure_get_string (st, "spec") != NULL);
  fail_unless (gst_structure_has_field (st, "cl-context"));
  fail_unless (gst_structure_has_field (st, "cl-queue"));
  fail_unless (gst_structure_has_field (st, "cl-device-id"));
  fail_unless_equals_string (gst_structure_get_string (st, "backend"), "opencl");
  v = gst_structure_get_value (st, "device");
  fail_unless (v != NULL && G_VALUE_HOLDS_BOXED (v));
  dev = g_value_get_boxed (v);
  if (ctx_out)
    *ctx_out = gst_context_ref (answer);
  gst_query_unref (q);
  return dev;
}

static GstElement *
cl_stage (void)
{
  GstElement *e = nnp_test_make ("nnstage", "model", model_path, NULL);

  gst_util_set_object_arg (G_OBJECT (e), "device", "opencl");
  return e;
}

/* A stage shares its device as a GstContext; a context set on another
 * stage (as an application or a bin does) is used by it. */
GST_START_TEST (test_context)
{
  GstElement *a = cl_stage (), *b = cl_stage ();
  GstContext *ctx = NULL;
  gpointer da, db;

  fail_unless_equals_int (gst_element_set_state (a, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  da = context_device (a, &ctx);
  fail_unless (da != NULL);
  gst_element_set_context (b, ctx);
  fail_unless_equals_int (gst_element_set_state (b, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  db = context_device (b, NULL);
  fail_unless (da == db);
  gst_element_set_state (a, GST_STATE_NULL);
  gst_element_set_state (b, GST_STATE_NULL);
  gst_context_unref (ctx);
  gst_object_unref (a);
  gst_object_unref (b);
}

GST_END_TEST;

static Suite *
nnclmemory_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnclmemory", 300, &tc);

  tcase_add_test (tc, test_opencl_chain_no_copies);
  tcase_add_test (tc, test_cpu_opencl_boundary);
  tcase_add_test (tc, test_device_output_map);
  tcase_add_test (tc, test_missing_device_error);
  tcase_add_test (tc, test_missing_device_fallback);
  tcase_add_test (tc, test_context);
  tcase_add_test (tc, test_pipeline_cpu_opencl);
  return s;
}

int
main (int argc, char **argv)
{
  NnpDevice *dev;
  NnpGraph *graph;
  GError *err = NULL;
  Suite *s;
  int nf;

  gst_check_init (&argc, &argv);
  dev = nnp_device_open ("opencl", &err);
  if (dev == NULL) {
    g_print ("FAIL: no OpenCL device (install the Debian package pocl-opencl-icd): %s\n",
             err->message);
    g_clear_error (&err);
    return 1;
  }
  GST_INFO ("OpenCL device: %s", nnp_device_get_name (dev));
  nnp_device_unref (dev);

  if (g_getenv ("NNP_TEST_MODELS_DIR") == NULL) {
    g_printerr ("NNP_TEST_MODELS_DIR is not set\n");
    return 1;
  }
  model_path = g_build_filename (g_getenv ("NNP_TEST_MODELS_DIR"), "residual.onnx", NULL);
  graph = nnp_test_specialize (model_path, "x", H, W, NULL, NULL, &err);
  if (graph == NULL) {
    g_printerr ("%s\n", err->message);
    return 1;
  }
  n_nodes = graph->nodes->len;
  g_assert_cmpuint (n_nodes, >=, 4);
  nnp_graph_unref (graph);

  s = nnclmemory_suite ();
  nf = gst_check_run_suite (s, "nnclmemory", __FILE__);
  g_free (model_path);
  return nf == 0 ? 0 : 1;
}
