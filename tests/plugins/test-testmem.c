/* nnstage on a third backend (issue 24 item 5): "a third backend is a
 * folder and a line" holds in the plugin too.
 *
 * The test-only "testmem" backend (tests/lib/testmem-backend.c: its device
 * memory is host memory it allocates itself, it runs Relu, it counts the
 * copies it makes) is registered in libnnpipe, and the plugin, unchanged,
 * is registered beside it: this program links the plugin's objects and the
 * library's static twin (nnpipe_internal_dep), since the backend table is
 * not public API.  Then:
 *
 * - two nnstages with device=testmem exchange buffers in testmem memory:
 *   the caps between them have the feature derived from the backend's name
 *   (memory:testmem), their memories are GstNnDeviceMemory of the testmem
 *   device, and per frame only the first stage's input goes up and the
 *   last stage's output comes back (1 + 1 copies, not 2 + 2);
 * - outputs are Relu of the inputs, frames in == frames out, PTS kept;
 * - a stage answers a CONTEXT query of type nnpipe.testmem.device with its
 *   device;
 * - a CPU stage after a testmem stage takes system memory (the testmem
 *   stage's output is read back once per frame). */
#include "test-common.h"
#include "testmem-backend.h"
#include "gstnndevicememory.h"

#include <nnpipe/nnpipe.h>

#include <string.h>

#define FRAMES 4
#define N_FLOATS 8 /* relu.onnx: 1x1x2x4 */

/* gstnnpipe.c's GST_PLUGIN_DEFINE */
void gst_plugin_nnpipe_register (void);

static GstElement *
testmem_stage (const gchar *name, const gchar *device)
{
  gchar *path = nnp_test_model_path ("relu.onnx");
  GstElement *e = nnp_test_make ("nnstage", "name", name, "model", path, "device", device, NULL);

  g_free (path);
  return e;
}

/* Each memory of a buffer leaving "a" is testmem device memory. */
static GstPadProbeReturn
check_device_memory (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  guint *n = user_data;

  fail_unless_equals_int (gst_buffer_n_memory (buf), 1);
  for (guint i = 0; i < gst_buffer_n_memory (buf); i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);

    fail_unless (gst_is_nn_device_memory (mem), "not device memory");
    fail_unless_equals_string (nnp_device_get_backend (gst_nn_device_memory_get_device (mem)),
                               "testmem");
  }
  (*n)++;
  return GST_PAD_PROBE_OK;
}

/* Runs FRAMES frames through a ! b into sink_caps; checks the memory
 * between the stages (want_feature; NULL: system memory), the copies per
 * frame and the outputs. */
static void
run_two (const gchar *dev_b, const gchar *sink_caps, const gchar *want_feature, guint64 want_up,
         guint64 want_down)
{
  GstElement *bin = gst_bin_new (NULL);
  GstElement *a = testmem_stage ("a", "testmem");
  GstElement *b = testmem_stage ("b", dev_b);
  GstHarness *h;
  GstPad *pad;
  GstCaps *caps;
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  NnpCopyCounts c0, c1;
  GstCapsFeatures *f;
  gchar *in_caps = nnp_test_tensor_caps (1, 2, 4);
  guint n_device = 0;

  gst_bin_add_many (GST_BIN (bin), a, b, NULL);
  fail_unless (gst_element_link (a, b));
  pad = gst_element_get_static_pad (a, "sink");
  gst_element_add_pad (bin, gst_ghost_pad_new ("sink", pad));
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (b, "src");
  gst_element_add_pad (bin, gst_ghost_pad_new ("src", pad));
  gst_object_unref (pad);
  if (want_feature) {
    pad = gst_element_get_static_pad (a, "src");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, check_device_memory, &n_device, NULL);
    gst_object_unref (pad);
  }

  h = gst_harness_new_with_element (bin, "sink", "src");
  gst_harness_set_src_caps_str (h, in_caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  /* the first frame negotiates: count from the second on */
  nnp_test_push_frames (h, N_FLOATS, 11, 0, 1);
  nnp_test_pull_frames (h, 0, 1, out);
  nnp_device_get_copy_counts (&c0);
  nnp_test_push_frames (h, N_FLOATS, 11, 1, FRAMES - 1);
  nnp_test_pull_frames (h, 1, FRAMES - 1, out);
  nnp_device_get_copy_counts (&c1);

  /* the link between the stages */
  pad = gst_element_get_static_pad (a, "src");
  caps = gst_pad_get_current_caps (pad);
  gst_object_unref (pad);
  fail_unless (caps != NULL);
  f = gst_caps_get_features (caps, 0);
  if (want_feature) {
    fail_unless (gst_caps_features_contains (f, want_feature), "a -> b: %" GST_PTR_FORMAT, caps);
    fail_unless_equals_int (n_device, FRAMES);
  } else {
    fail_unless (f == NULL
                     || gst_caps_features_is_equal (f, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY),
                 "a -> b: %" GST_PTR_FORMAT, caps);
  }
  gst_caps_unref (caps);
  fail_unless_equals_int (c1.to_device - c0.to_device, want_up * (FRAMES - 1));
  fail_unless_equals_int (c1.to_host - c0.to_host, want_down * (FRAMES - 1));

  /* Relu of each frame, in order (output in device memory is read back
   * once per frame) */
  fail_unless_equals_int (out->len, FRAMES);
  nnp_device_get_copy_counts (&c0);
  for (guint i = 0; i < FRAMES; i++) {
    GstBuffer *in = nnp_test_random_frame (N_FLOATS, 11 + i, i);
    GstMapInfo mi, mo;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (g_ptr_array_index (out, i)), GST_BUFFER_PTS (in));
    fail_unless (gst_buffer_map (in, &mi, GST_MAP_READ));
    fail_unless (gst_buffer_map (g_ptr_array_index (out, i), &mo, GST_MAP_READ));
    fail_unless_equals_int (mo.size, N_FLOATS * sizeof (float));
    for (guint k = 0; k < N_FLOATS; k++) {
      float x = ((const float *) mi.data)[k];

      fail_unless (((const float *) mo.data)[k] == (x > 0.f ? x : 0.f),
                   "frame %u value %u: %g for Relu (%g)", i, k, ((const float *) mo.data)[k], x);
    }
    gst_buffer_unmap (g_ptr_array_index (out, i), &mo);
    gst_buffer_unmap (in, &mi);
    gst_buffer_unref (in);
  }
  nnp_device_get_copy_counts (&c1);
  fail_unless_equals_int (c1.to_host - c0.to_host,
                          g_str_has_prefix (sink_caps, "other/tensors(memory:") ? FRAMES : 0);
  nnp_test_finish_eos (h);
  gst_harness_teardown (h);
  gst_object_unref (bin);
  g_ptr_array_unref (out);
  g_free (in_caps);
}

/* testmem ! testmem ! (memory:testmem): in its memory between the stages
 * and after them; per frame 1 copy up and none down until the output is
 * read (with system memory between them it would be 2 up and 1 down). */
GST_START_TEST (test_testmem_to_testmem)
{
  run_two ("testmem", "other/tensors(memory:testmem)", "memory:testmem", 1, 0);
}

GST_END_TEST;

/* testmem ! testmem ! (system memory): still the device's memory between
 * the stages (b prefers its own memory on its sink pad, whatever comes after
 * it): per frame 1 copy up (a's input) and 1 down (b's output) */
GST_START_TEST (test_testmem_to_testmem_system_out)
{
  run_two ("testmem", "other/tensors", "memory:testmem", 1, 1);
}

GST_END_TEST;

/* testmem ! cpu: system memory between them; the testmem stage's input
 * goes up and its output comes down, the CPU stage copies nothing */
GST_START_TEST (test_testmem_to_cpu)
{
  run_two ("cpu", "other/tensors", NULL, 1, 1);
}

GST_END_TEST;

/* The device is shared through a context of the backend's own type. */
GST_START_TEST (test_context)
{
  GstElement *a = testmem_stage ("a", "testmem");
  GstQuery *q = gst_query_new_context ("nnpipe.testmem.device");
  GstContext *answer = NULL;
  const GstStructure *st;
  NnpDevice *dev = NULL;
  GstPad *pad;

  fail_unless_equals_int (gst_element_set_state (a, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
  pad = gst_element_get_static_pad (a, "src");
  fail_unless (gst_pad_query (pad, q), "no answer to the context query");
  gst_object_unref (pad);
  gst_query_parse_context (q, &answer);
  fail_unless (answer != NULL);
  st = gst_context_get_structure (answer);
  fail_unless_equals_string (gst_structure_get_string (st, "backend"), "testmem");
  fail_unless (gst_structure_get (st, "device", GST_TYPE_NN_DEVICE, &dev, NULL));
  fail_unless_equals_string (nnp_device_get_backend (dev), "testmem");
  nnp_device_unref (dev);
  gst_query_unref (q);
  /* not the OpenCL type */
  q = gst_query_new_context ("nnpipe.opencl.device");
  pad = gst_element_get_static_pad (a, "src");
  fail_if (gst_pad_query (pad, q), "answered the OpenCL context query");
  gst_object_unref (pad);
  gst_query_unref (q);
  gst_element_set_state (a, GST_STATE_NULL);
  gst_object_unref (a);
}

GST_END_TEST;

static Suite *
testmem_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("testmem", 120, &tc);

  tcase_add_test (tc, test_testmem_to_testmem);
  tcase_add_test (tc, test_testmem_to_testmem_system_out);
  tcase_add_test (tc, test_testmem_to_cpu);
  tcase_add_test (tc, test_context);
  return s;
}

int
main (int argc, char **argv)
{
  Suite *s;
  int nf;

  /* the third backend, then the plugin beside it */
  if (!nnp_backend_register (&nnp_testmem_backend))
    g_error ("could not register the testmem backend");
  gst_check_init (&argc, &argv);
  gst_plugin_nnpipe_register ();
  s = testmem_suite ();
  nf = gst_check_run_suite (s, "testmem", __FILE__);
  return nf == 0 ? 0 : 1;
}
