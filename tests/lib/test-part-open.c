/* Unit tests of nnp_part_open() and the CPU fallback policy
 * (include/nnpipe/part.h): what nnstage's start() was before it was a
 * library call.  A model path or a plan file (its model relative to the
 * file, its name in messages), plan and nodes refused together, a missing
 * stage, a digest that is not the model's, a missing or absent model file,
 * and a device that does not open: an error, or with fallback the CPU and
 * the reason; device-index / device-name as a device spec
 * (nnp_device_spec_select()).  tests/data/small.onnx: x [N,3,8,8] -> Conv, BN, Relu,
 * Reshape, Gemm, Softmax; small-constants.onnx is another model. */
#include <nnpipe/nnpipe.h>
#include <nnpipe/part.h>
#include <nnpipe/device.h>
#include <nnpipe/plan-make.h>
#include <nnpipe/specialize.h>

#include "backends/device-list.h"

#include <glib/gstdio.h>
#include <string.h>

static char *
data_path (const char *name)
{
  return g_build_filename (g_getenv ("NNP_SOURCE_DIR"), "tests", "data", name, NULL);
}

/* A two-stage plan of small.onnx at batch 1, saved as DIR/plan.json (its
 * model written relative to DIR). */
static char *
save_plan (const char *dir, NnpPlan **plan_out)
{
  g_autofree char *model_path = data_path ("small.onnx");
  g_autoptr (NnpModel) model = nnp_model_load (model_path, NULL);
  NnpInputShape shape = { "x", { 4, { 1, 3, 8, 8 } } };
  NnpPlanRequest req = { .n_stages = 2, .devices = "cpu:1,cpu:1", .cuts = "2" };
  GError *error = NULL;
  char *path = g_build_filename (dir, "plan.json", NULL);
  NnpPlan *plan;

  g_assert_nonnull (model);
  plan = nnp_plan_make (model, &shape, 1, &req, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (plan->n_stages, ==, 2);
  nnp_plan_save (plan, path, &error);
  g_assert_no_error (error);
  *plan_out = plan;
  return path;
}

/* The policy: fallback asked for, not the CPU, a device or kernel error. */
static void
test_fallback_policy (void)
{
  g_autoptr (GError) dev = g_error_new (NNP_ERROR, NNP_ERROR_DEVICE, "gone");
  g_autoptr (GError) op = g_error_new (NNP_ERROR, NNP_ERROR_UNSUPPORTED, "no kernel");
  g_autoptr (GError) bad = g_error_new (NNP_ERROR, NNP_ERROR_INVALID, "bad shape");

  g_assert_true (nnp_fallback_applies ("opencl", TRUE, dev));
  g_assert_true (nnp_fallback_applies ("opencl:1", TRUE, op));
  g_assert_false (nnp_fallback_applies ("opencl", FALSE, dev));
  g_assert_false (nnp_fallback_applies ("opencl", TRUE, bad));
  g_assert_false (nnp_fallback_applies ("opencl", TRUE, NULL));
  g_assert_false (nnp_fallback_applies ("cpu", TRUE, dev));
  g_assert_false (nnp_fallback_applies ("CPU:2", TRUE, dev));
  g_assert_false (nnp_fallback_applies (NULL, TRUE, dev));
}

/* A model path alone: the whole model on the CPU. */
static void
test_open_model (void)
{
  g_autofree char *path = data_path ("small.onnx");
  g_autoptr (NnpPart) part = NULL;
  GError *error = NULL, *why = NULL;
  NnpPartOptions o = { .nodes = "" }; /* "" is no nodes */

  part = nnp_part_open (path, "", &o, &why, &error);
  g_assert_no_error (error);
  g_assert_null (why);
  g_assert_true (nnp_part_is_whole (part));
  g_assert_true (nnp_part_takes_model_inputs (part));
  g_assert_cmpstr (nnp_part_get_device (part), ==, "cpu");
  g_assert_cmpstr (nnp_part_get_name (part), ==, "the whole model");
  g_assert_cmpstr (nnp_model_get_name (nnp_part_get_model (part)), ==, path);
}

/* A plan file: its model (relative to the file, opened from elsewhere),
 * its name in messages; a missing stage, plan with nodes, another model. */
static void
test_open_plan (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-part-open-XXXXXX", NULL);
  g_autofree char *other = data_path ("small-constants.onnx");
  g_autoptr (NnpPlan) plan = NULL;
  g_autofree char *plan_path = save_plan (dir, &plan);
  g_autoptr (NnpPart) part = NULL;
  NnpPartOptions o = { .stage = 1 };
  GError *error = NULL;
  NnpPart *p;

  part = nnp_part_open (NULL, plan_path, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (nnp_part_is_whole (part));
  g_assert_false (nnp_part_takes_model_inputs (part));
  g_assert_cmpstr (nnp_part_get_name (part), ==, "stage 1 of plan.json");
  g_assert_cmpstr (nnp_part_get_device (part), ==, "cpu");

  o.stage = 5;
  p = nnp_part_open (NULL, plan_path, &o, NULL, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_cmpstr (error->message, ==, "plan.json has 2 stages, there is no stage 5");
  g_clear_error (&error);

  o.stage = 0;
  o.nodes = "0..1";
  p = nnp_part_open (NULL, plan_path, &o, NULL, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "both a plan and nodes"));
  g_clear_error (&error);

  o.nodes = NULL;
  p = nnp_part_open (other, plan_path, &o, NULL, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "plan.json"));
  g_clear_error (&error);

  /* the plan object wins over a file, named as the caller says */
  o.plan = plan;
  o.plan_name = "the pipeline's plan";
  o.stage = 1;
  p = nnp_part_open (NULL, "no-such-plan.json", &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (nnp_part_get_name (p), ==, "stage 1 of the pipeline's plan");
  nnp_part_free (p);

  g_unlink (plan_path);
  g_rmdir (dir);
}

/* Files that are not there, or not given. */
static void
test_open_missing (void)
{
  GError *error = NULL;
  NnpPart *p;

  p = nnp_part_open ("no-such-model.onnx", NULL, NULL, NULL, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "could not read model \"no-such-model.onnx\""));
  g_clear_error (&error);

  p = nnp_part_open (NULL, "no-such-plan.json", NULL, NULL, &error);
  g_assert_null (p);
  g_assert_nonnull (strstr (error->message, "invalid plan \"no-such-plan.json\""));
  g_clear_error (&error);

  p = nnp_part_open ("", NULL, NULL, NULL, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "no model file given"));
  g_clear_error (&error);
}

/* A device that does not open (opencl:99 on any machine, or a build
 * without OpenCL): an error naming it, or with fallback the CPU and the
 * reason; the plan stage's device is the one opened. */
static void
test_open_device_fallback (void)
{
  g_autofree char *path = data_path ("small.onnx");
  g_autofree char *dir = g_dir_make_tmp ("nnp-part-open-XXXXXX", NULL);
  g_autoptr (NnpPlan) plan = NULL;
  g_autofree char *plan_path = save_plan (dir, &plan);
  NnpPartOptions o = { .device = "opencl:99" };
  NnpInputShape shape = { "x", { 4, { 1, 3, 8, 8 } } };
  GError *error = NULL, *why = NULL;
  NnpPartSpec *spec;
  NnpStage *stage;
  NnpPart *p;

  p = nnp_part_open (path, NULL, &o, &why, &error);
  g_assert_null (p);
  g_assert_null (why);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "device 'opencl:99' is not available: "));
  g_clear_error (&error);

  o.fallback = TRUE;
  p = nnp_part_open (path, NULL, &o, &why, &error);
  g_assert_no_error (error);
  g_assert_error (why, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (
      strstr (why->message, "device 'opencl:99' is not available, running on the CPU instead: "));
  g_clear_error (&why);
  g_assert_cmpstr (nnp_part_get_device (p), ==, "cpu");
  spec = nnp_part_reshape (p, &shape, 1, &error);
  g_assert_no_error (error);
  stage = nnp_part_prepare (p, spec, &why, &error);
  g_assert_no_error (error);
  g_assert_null (why); /* on the CPU from the start: nothing to fall back */
  g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (stage)), ==, "cpu");
  g_assert_false (nnp_part_spec_fell_back (spec));
  nnp_part_spec_unref (spec);
  nnp_part_free (p);

  /* the plan stage's device, not the caller's */
  g_free (plan->stages[1].device);
  plan->stages[1].device = g_strdup ("opencl:99");
  o.plan = plan;
  o.stage = 1;
  o.device = "cpu";
  p = nnp_part_open (NULL, NULL, &o, &why, &error);
  g_assert_no_error (error);
  g_assert_nonnull (why);
  g_assert_nonnull (strstr (why->message, "'opencl:99'"));
  g_clear_error (&why);
  g_assert_cmpstr (nnp_part_get_device (p), ==, "cpu");
  nnp_part_free (p);

  o.fallback = FALSE;
  p = nnp_part_open (NULL, NULL, &o, &why, &error);
  g_assert_null (p);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_clear_error (&error);

  g_unlink (plan_path);
  g_rmdir (dir);
}

/* nnstage's device-index / device-name as a device spec. */
static void
test_device_select (void)
{
  GError *error = NULL;
  int threads = -1;
  char *spec;

  spec = nnp_device_spec_select (" CPU:3 ", -1, NULL, &threads, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (spec, ==, "cpu");
  g_assert_cmpint (threads, ==, 3);
  g_free (spec);
  g_assert_null (nnp_device_spec_select ("cpu", 1, NULL, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "'cpu'"));
  g_clear_error (&error);
#ifdef NNP_TEST_OPENCL
  /* a backend that names its devices (only with the OpenCL backend built) */
  spec = nnp_device_spec_select ("opencl", 2, "", NULL, &error);
  g_assert_cmpstr (spec, ==, "opencl:2");
  g_free (spec);
  spec = nnp_device_spec_select ("opencl", 2, "H100", NULL, &error);
  g_assert_cmpstr (spec, ==, "opencl:H100"); /* the name wins */
  g_free (spec);

  g_assert_null (nnp_device_spec_select ("opencl:1", -1, "x", NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "already names one"));
  g_clear_error (&error);
#endif
  g_assert_null (nnp_device_spec_select ("gpu", -1, NULL, NULL, &error));
  g_assert_nonnull (strstr (error->message, "invalid device 'gpu'"));
  g_clear_error (&error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/part-open/fallback-policy", test_fallback_policy);
  g_test_add_func ("/part-open/model", test_open_model);
  g_test_add_func ("/part-open/plan", test_open_plan);
  g_test_add_func ("/part-open/missing", test_open_missing);
  g_test_add_func ("/part-open/device-fallback", test_open_device_fallback);
  g_test_add_func ("/part-open/device-select", test_device_select);
  return g_test_run ();
}
