/* Mistakes get clear errors at the default debug level (issue 10 item 5,
 * issue 14 F7):
 *
 * - a bad property value (nnpipeline stages/devices/debug-slowdown, nnstage cpus/device,
 *   nncrop mean/std, nnclassdecode labels) fails the start (the state
 *   change to PAUSED fails) with one error naming the property and value;
 * - one device syntax: the same spec strings are accepted or refused by
 *   nnp_device_spec_parse(), the device lists (nnpipeline devices=,
 *   `nnpipe split --devices`: tests/partition/test-partition.c), plans and nnstage device=; nnstage
 *   device=opencl:1 is not refused as a value; device=cpu:2 runs with two
 *   threads; one cpu list syntax (nnp_cpus_parse());
 * - caps that do not fit the model (one channel where it wants three, a
 *   fixed height that differs, wrong tensor dims), from nnconvert or from
 *   fixed caps, end in an error from nnstage / nnpipeline naming what the
 *   model expects and what it got, posted once however often upstream
 *   retries;
 * - the refused pipeline of issue 14 F7, run 30 times, always ends with
 *   that error and stops (never hangs).
 *
 * Models from NNP_TEST_MODELS_DIR (make-models.py, make-dag-models.py). */
#include "test-common.h"

#include <nnpipe/device.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

#include <string.h>

#define TIMEOUT (20 * GST_SECOND)

/* The ERROR messages of a finished or failed run (GError, source name). */
typedef struct {
  GPtrArray *messages; /* GError* */
  GPtrArray *sources;  /* gchar* (element names) */
} Errors;

static void
errors_init (Errors *e)
{
  e->messages = g_ptr_array_new_with_free_func ((GDestroyNotify) g_error_free);
  e->sources = g_ptr_array_new_with_free_func (g_free);
}

static void
errors_clear (Errors *e)
{
  g_ptr_array_unref (e->messages);
  g_ptr_array_unref (e->sources);
}

/* Collect every ERROR on bus until none comes for `quiet` (or timeout). */
static void
collect_errors (GstBus *bus, Errors *e, GstClockTime quiet)
{
  GstMessage *msg;

  while ((msg = gst_bus_timed_pop_filtered (bus, quiet, GST_MESSAGE_ERROR)) != NULL) {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    g_ptr_array_add (e->messages, err);
    g_ptr_array_add (e->sources, g_strdup (GST_OBJECT_NAME (msg->src)));
    gst_message_unref (msg);
  }
}

/* How many errors came from an element whose name starts with prefix. */
static guint
errors_from (const Errors *e, const gchar *prefix)
{
  guint n = 0;

  for (guint i = 0; i < e->sources->len; i++)
    n += g_str_has_prefix (g_ptr_array_index (e->sources, i), prefix);
  return n;
}

/* ------------------------------------------------------------------------ */
/* Bad property values fail the start */

/* desc's state change to PAUSED fails with exactly one error, from an
 * element named `element`, whose message names the property and value. */
static void
check_bad_property (const gchar *desc, const gchar *element, const gchar *property,
                    const gchar *value)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstBus *bus;
  Errors e;
  const GError *first;
  gchar *quoted = g_strdup_printf ("\"%s\"", value);
  gchar *named = g_strdup_printf ("property '%s'", property);

  fail_unless (p != NULL && err == NULL, "%s: %s", desc, err ? err->message : "?");
  bus = gst_element_get_bus (p);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  errors_init (&e);
  collect_errors (bus, &e, 100 * GST_MSECOND);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);

  fail_unless_equals_int (e.messages->len, 1);
  first = g_ptr_array_index (e.messages, 0);
  fail_unless (g_str_has_prefix (g_ptr_array_index (e.sources, 0), element), "%s: error from %s",
               desc, (gchar *) g_ptr_array_index (e.sources, 0));
  fail_unless (strstr (first->message, named) != NULL, "%s: \"%s\" lacks %s", desc, first->message,
               named);
  fail_unless (strstr (first->message, quoted) != NULL, "%s: \"%s\" lacks %s", desc, first->message,
               quoted);
  GST_INFO ("%s -> %s", desc, first->message);

  errors_clear (&e);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (quoted);
  g_free (named);
}

GST_START_TEST (test_bad_properties)
{
  gchar *conv = nnp_test_model_path ("conv-relu-add.onnx");
  gchar *res = nnp_test_model_path ("residual.onnx");
  const gchar *stages[] = { "0", "-1", "abc", "999", "2x" };

  for (guint i = 0; i < G_N_ELEMENTS (stages); i++) {
    gchar *d =
        g_strdup_printf ("appsrc ! nnpipeline model=%s stages=%s ! fakesink", res, stages[i]);

    check_bad_property (d, "nnpipeline", "stages", stages[i]);
    g_free (d);
  }
  {
    gchar *d = g_strdup_printf ("appsrc ! nnpipeline model=%s devices=cpu,gpu ! fakesink", res);

    check_bad_property (d, "nnpipeline", "devices", "cpu,gpu");
    g_free (d);
  }
  {
    const gchar *slow[] = { "abc", "0,-1", "0,101", "1x", "0,,1" };

    for (guint i = 0; i < G_N_ELEMENTS (slow); i++) {
      gchar *d = g_strdup_printf ("appsrc ! nnpipeline model=%s debug-slowdown=\"%s\" ! fakesink",
                                  res, slow[i]);

      check_bad_property (d, "nnpipeline", "debug-slowdown", slow[i]);
      g_free (d);
    }
  }
  {
    const gchar *cpus[] = { "abc", "0,,1", "3-1", "-2", "0-99999" };

    for (guint i = 0; i < G_N_ELEMENTS (cpus); i++) {
      gchar *d =
          g_strdup_printf ("appsrc ! nnstage model=%s cpus=\"%s\" ! fakesink", conv, cpus[i]);

      check_bad_property (d, "nnstage", "cpus", cpus[i]);
      g_free (d);
    }
  }
  {
    const gchar *devs[] = { "gpu", "opencl:", "cpu:0", "cpu:x", "cpu:2000" };

    for (guint i = 0; i < G_N_ELEMENTS (devs); i++) {
      gchar *d =
          g_strdup_printf ("appsrc ! nnstage model=%s device=\"%s\" ! fakesink", conv, devs[i]);

      check_bad_property (d, "nnstage", "device", devs[i]);
      g_free (d);
    }
  }
  check_bad_property ("appsrc ! nncrop mean=1,2 ! fakesink", "nncrop", "mean", "1,2");
  check_bad_property ("appsrc ! nncrop std=0 ! fakesink", "nncrop", "std", "0");
  check_bad_property ("appsrc ! nnclassdecode labels=/nonexistent ! fakesink", "nnclassdecode",
                      "labels", "/nonexistent");
  g_free (conv);
  g_free (res);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* One device syntax, one cpu list syntax */

GST_START_TEST (test_device_syntax)
{
  const gchar *good[] = { "cpu",      "CPU",      " cpu:2 ",     "cpu:1024",       "opencl",
                          "opencl:0", "opencl:1", "OpenCL:H100", "opencl:portable" };
  const gchar *good_dev[] = { "cpu",      "cpu",         "cpu",
                              "cpu",      "opencl",      "opencl:0",
                              "opencl:1", "opencl:H100", "opencl:portable" };
  const gint good_threads[] = { 0, 0, 2, 1024, 0, 0, 0, 0, 0 };
  const gchar *bad[] = { "",         "gpu",    "cpu:",    "cpu:0", "cpu:-1",
                         "cpu:1025", "cpu:2x", "opencl:", "cpux",  "cuda:0" };

  for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
    gchar *dev = NULL;
    gint threads = -1;
    GError *err = NULL;

    fail_unless (nnp_device_spec_parse (good[i], &dev, &threads, &err), "'%s': %s", good[i],
                 err ? err->message : "?");
    fail_unless_equals_string (dev, good_dev[i]);
    fail_unless_equals_int (threads, good_threads[i]);
    g_free (dev);
  }
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    GError *err = NULL;

    /* an unknown kind is a device error, a known one written wrong an
     * invalid value; in a device list, the latter is a plan error */
    gboolean empty = *bad[i] == '\0';
    gboolean unknown = empty || g_str_equal (bad[i], "gpu") || g_str_equal (bad[i], "cpux")
                       || g_str_equal (bad[i], "cuda:0");

    fail_if (nnp_device_spec_parse (bad[i], NULL, NULL, &err), "'%s'", bad[i]);
    fail_unless (g_error_matches (err, NNP_ERROR, unknown ? NNP_ERROR_DEVICE : NNP_ERROR_INVALID),
                 "'%s': %s", bad[i], err->message);
    g_clear_error (&err);
  }
}

GST_END_TEST;

GST_START_TEST (test_cpus_syntax)
{
  gint *cpus = NULL, n = -1;
  GError *err = NULL;

  fail_unless (nnp_cpus_parse ("0,1, 4-6,2", &cpus, &n, &err));
  fail_unless_equals_int (n, 6);
  fail_unless (cpus[0] == 0 && cpus[1] == 1 && cpus[2] == 4 && cpus[3] == 5 && cpus[4] == 6
               && cpus[5] == 2);
  g_free (cpus);
  fail_unless (nnp_cpus_parse ("", &cpus, &n, &err));
  fail_unless (cpus == NULL && n == 0);
  fail_unless (nnp_cpus_parse (NULL, &cpus, &n, &err));
  fail_unless (cpus == NULL && n == 0);
  fail_if (nnp_cpus_parse ("1,x", &cpus, &n, &err));
  fail_unless (strstr (err->message, "'x'") != NULL, "%s", err->message);
  fail_unless (cpus == NULL && n == 0);
  g_clear_error (&err);
}

GST_END_TEST;

/* A plan's "device" takes the same strings: "cpu:2" is two threads. */
GST_START_TEST (test_plan_device_syntax)
{
  const gchar *json =
      "{\"model\": \"m.onnx\", \"stages\": [{\"device\": \"cpu:2\", \"nodes\": [\"a\"]},{\"device\": \"OpenCL:1\", \"nodes\": [\"b\"]}]}";
  const gchar *bad =
      "{\"model\": \"m.onnx\", \"stages\": [{\"device\": \"gpu\", \"nodes\": [\"a\"]}]}";
  const gchar *clash =
      "{\"model\": \"m.onnx\", \"stages\": [{\"device\": \"cpu:2\", \"threads\": 3, \"nodes\": [\"a\"]}]}";
  GError *err = NULL;
  NnpPlan *plan = nnp_plan_from_json (json, strlen (json), &err);

  fail_unless (plan != NULL, "%s", err ? err->message : "?");
  fail_unless_equals_string (plan->stages[0].device, "cpu");
  fail_unless_equals_int (plan->stages[0].threads, 2);
  fail_unless_equals_string (plan->stages[1].device, "opencl:1");
  nnp_plan_free (plan);
  /* an unknown device loads; resolving says it is not available, and why
   * (the device syntax), as nnp_device_open() does */
  plan = nnp_plan_from_json (bad, strlen (bad), &err);
  fail_unless (plan != NULL, "%s", err ? err->message : "?");
  fail_unless_equals_string (plan->stages[0].device, "gpu");
  nnp_plan_free (plan);
  fail_unless (nnp_device_open ("gpu", &err) == NULL);
  fail_unless (strstr (err->message, "invalid device 'gpu'") != NULL, "%s", err->message);
  g_clear_error (&err);
  fail_unless (nnp_device_open ("cpu:2", &err) == NULL);
  fail_unless (strstr (err->message, "thread count") != NULL, "%s", err->message);
  g_clear_error (&err);
  fail_unless (nnp_plan_from_json (clash, strlen (clash), &err) == NULL);
  fail_unless (strstr (err->message, "disagree") != NULL, "%s", err->message);
  g_clear_error (&err);
}

GST_END_TEST;

/* nnstage device=opencl:1 is a valid value (the device may be missing on
 * this machine: then the error says so, not that the value is invalid);
 * device=cpu:2 runs the stage with two threads. */
GST_START_TEST (test_stage_device_values)
{
  gchar *conv = nnp_test_model_path ("conv-relu-add.onnx");
  gchar *caps = nnp_test_tensor_caps (3, 8, 8);
  gchar *desc;
  GstElement *p;
  GstBus *bus;
  GstStateChangeReturn ret;
  Errors e;

  desc = g_strdup_printf ("appsrc caps=\"%s\" ! nnstage model=%s device=opencl:1 ! fakesink", caps,
                          conv);
  p = gst_parse_launch (desc, NULL);
  bus = gst_element_get_bus (p);
  ret = gst_element_set_state (p, GST_STATE_PAUSED);
  errors_init (&e);
  collect_errors (bus, &e, 100 * GST_MSECOND);
  gst_element_set_state (p, GST_STATE_NULL);
  for (guint i = 0; i < e.messages->len; i++) {
    const GError *err = g_ptr_array_index (e.messages, i);

    fail_if (strstr (err->message, "invalid value") != NULL, "%s", err->message);
    fail_unless (strstr (err->message, "opencl:1") != NULL, "%s", err->message);
  }
  fail_unless (ret != GST_STATE_CHANGE_FAILURE || e.messages->len == 1);
  errors_clear (&e);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (desc);

  desc = g_strdup_printf (
      "videotestsrc num-buffers=3 ! video/x-raw,width=8,height=8 ! nnconvert ! nnstage model=%s device=cpu:2 ! fakesink",
      conv);
  p = nnp_test_launch_to_eos (desc, TIMEOUT);
  nnp_test_launch_stop (p);
  g_free (desc);
  g_free (caps);
  g_free (conv);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Caps that do not fit the model: one precise error, once */

/* Run desc (PLAYING) until its first error; then let upstream retry for a
 * while and stop.  The first error must come from `element`, contain
 * every string of want, and be the only one from that element. */
static void
check_refused (const gchar *desc, const gchar *element, const gchar *const *want)
{
  GError *perr = NULL;
  GstElement *p = gst_parse_launch (desc, &perr);
  GstBus *bus;
  GstMessage *msg;
  Errors e;
  const GError *first;

  fail_unless (p != NULL && perr == NULL, "%s: %s", desc, perr ? perr->message : "?");
  bus = gst_element_get_bus (p);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
  errors_init (&e);
  msg = gst_bus_timed_pop_filtered (bus, TIMEOUT, GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (msg != NULL, "%s: no error within the timeout", desc);
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_ERROR);
  {
    GError *err = NULL;

    gst_message_parse_error (msg, &err, NULL);
    g_ptr_array_add (e.messages, err);
    g_ptr_array_add (e.sources, g_strdup (GST_OBJECT_NAME (msg->src)));
  }
  gst_message_unref (msg);
  /* upstream retries the refused caps with each buffer it has */
  collect_errors (bus, &e, 300 * GST_MSECOND);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);

  first = g_ptr_array_index (e.messages, 0);
  fail_unless (g_str_has_prefix (g_ptr_array_index (e.sources, 0), element),
               "%s: first error from %s: %s", desc, (gchar *) g_ptr_array_index (e.sources, 0),
               first->message);
  fail_unless (g_error_matches (first, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION), "%s",
               first->message);
  for (gint i = 0; want[i]; i++)
    fail_unless (strstr (first->message, want[i]) != NULL, "%s: \"%s\" lacks \"%s\"", desc,
                 first->message, want[i]);
  fail_unless_equals_int (errors_from (&e, element), 1);
  GST_INFO ("%s -> %s (%u errors in all)", desc, first->message, e.messages->len);
  errors_clear (&e);
  gst_object_unref (bus);
  gst_object_unref (p);
}

GST_START_TEST (test_wrong_caps_errors)
{
  gchar *conv = nnp_test_model_path ("conv-relu-add.onnx");
  gchar *fixed = nnp_test_model_path ("fixed-h8.onnx");
  gchar *res = nnp_test_model_path ("residual.onnx");
  const gchar *gray[] = { "conv-relu-add.onnx", "input 'x' expects", "1x3x?x?",
                          "got dimensions=16:8:1:1", NULL };
  const gchar *height[] = { "fixed-h8.onnx", "input 'x' expects", "1x3x8x?",
                            "got dimensions=16:12:3:1", NULL };
  const gchar *dims[] = { "input 'x' expects", "1x3x?x?", "got dimensions=8:8:1:1", NULL };
  gchar *d;

  /* GRAY8 through nnconvert into a 3-channel model */
  d = g_strdup_printf (
      "videotestsrc num-buffers=5 ! video/x-raw,format=GRAY8,width=16,height=8 ! nnconvert ! nnstage model=%s ! fakesink",
      conv);
  check_refused (d, "nnstage", gray);
  g_free (d);
  /* a model with a fixed height fed another height */
  d = g_strdup_printf (
      "videotestsrc num-buffers=5 ! video/x-raw,format=RGB,width=16,height=12 ! nnconvert ! nnstage model=%s ! fakesink",
      fixed);
  check_refused (d, "nnstage", height);
  g_free (d);
  /* fixed tensor caps with wrong dims (filesrc retries each block) */
  d = g_strdup_printf (
      "filesrc location=/dev/zero blocksize=256 num-buffers=5 ! other/tensors,format=static,num_tensors=1,"
      "types=float32,dimensions=8:8:1:1,framerate=0/1 ! nnstage model=%s ! fakesink",
      conv);
  check_refused (d, "nnstage", dims);
  g_free (d);
  /* the same into nnpipeline */
  d = g_strdup_printf (
      "filesrc location=/dev/zero blocksize=256 num-buffers=5 ! other/tensors,format=static,num_tensors=1,"
      "types=float32,dimensions=8:8:1:1,framerate=0/1 ! nnpipeline model=%s stages=2 ! fakesink",
      res);
  check_refused (d, "nnpipeline", dims);
  g_free (d);
  g_free (conv);
  g_free (fixed);
  g_free (res);
}

GST_END_TEST;

/* A model whose output shape depends on the data (NonZero of a mask): the
 * elements' caps need fixed dimensions, so nnstage and nnpipeline refuse it,
 * naming the output and the node (`nnpipe run` runs it: ops-vs-ort). */
GST_START_TEST (test_data_dependent_output_refused)
{
  gchar *nz = nnp_test_model_path ("nonzero.onnx");
  const gchar *want[] = { "nonzero.onnx",
                          "output 'nz'",
                          "depends on the data",
                          "node 'nonzero' (NonZero)",
                          "fixed output dimensions",
                          NULL };
  gchar *d = g_strdup_printf (
      "videotestsrc num-buffers=3 ! video/x-raw,width=8,height=8 ! nnconvert ! nnstage model=%s ! fakesink",
      nz);

  check_refused (d, "nnstage", want);
  g_free (d);
  d = g_strdup_printf (
      "videotestsrc num-buffers=3 ! video/x-raw,width=8,height=8 ! nnconvert ! nnpipeline model=%s ! fakesink",
      nz);
  check_refused (d, "nnpipeline", want);
  g_free (d);
  g_free (nz);
}

GST_END_TEST;

/* Issue 14 F7: the refused pipeline, 30 times: each run ends with the
 * error (within the timeout) and stops.  (gst-launch-1.0 itself can hang
 * on any error posted while prerolling: its bus sync handler may quit its
 * main loop before the loop runs; docs/pipeline.md.) */
GST_START_TEST (test_refused_never_hangs)
{
  gchar *conv = nnp_test_model_path ("conv-relu-add.onnx");
  const gchar *want[] = { "input 'x' expects", "got dimensions=48:16:1:1", NULL };
  gchar *d = g_strdup_printf (
      "filesrc location=/dev/zero blocksize=3072 num-buffers=5 ! other/tensors,format=static,num_tensors=1,"
      "types=float32,dimensions=(string)48:16:1:1,framerate=0/1 ! nnstage model=%s ! fakesink",
      conv);

  for (gint i = 0; i < 30; i++)
    check_refused (d, "nnstage", want);
  g_free (d);
  g_free (conv);
}

GST_END_TEST;

static Suite *
errors_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("errors", 120, &tc);

  tcase_add_test (tc, test_bad_properties);
  tcase_add_test (tc, test_device_syntax);
  tcase_add_test (tc, test_cpus_syntax);
  tcase_add_test (tc, test_plan_device_syntax);
  tcase_add_test (tc, test_stage_device_values);
  tcase_add_test (tc, test_wrong_caps_errors);
  tcase_add_test (tc, test_refused_never_hangs);
  tcase_add_test (tc, test_data_dependent_output_refused);
  return s;
}

GST_CHECK_MAIN (errors);
