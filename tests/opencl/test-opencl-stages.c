/* Unit tests: stages on an OpenCL device.
 *
 * A hand-built DAG  x -> Conv 3x3 -> Relu (r) -> Conv 1x1 (c) -> Add (r, c) -> Sigmoid -> y
 * is cut after the second Conv, so two tensors (r and c) cross the cut.
 * The backend's copy counters (nnp_device_get_copy_counts) prove:
 *   - OpenCL -> OpenCL with device tensors: no copy between the stages (only
 *     x going up and y coming back);
 *   - CPU -> OpenCL with host tensors: exactly one copy per crossing tensor;
 *   - OpenCL -> CPU with device tensors: one download per crossing tensor.
 * Every split equals the whole model on the CPU within 1e-5.
 * A Gather with run-time indices: in range (negative ones too) it equals the
 * CPU; out of range both backends fail the run with the same error naming
 * the node and the index (constant indices: OpenCL fails at prepare).
 * Fails, naming pocl-opencl-icd, when there is no OpenCL device. */
#include "../lib/test-util.h"
#include "graph/graph-edit.h"
#include "exec/stage-private.h"

#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include <math.h>
#include <string.h>

static const char *device_spec = "opencl";

typedef struct {
  NnpGraph *sg;
  int first[3], second[2]; /* node indices of both halves */
  NnpTensor *x;
  NnpTensor *want; /* whole model on the CPU */
} Fixture;

static NnpTensor *
pattern (int rank, const int64_t *dims, guint32 seed)
{
  NnpTensor *t = tu_tensor_f32 (rank, dims, NULL);
  nnp_tensor_fill_pattern (t, seed);
  return t;
}

static void
fixture_init (Fixture *f)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("dag", 13);
  g_autoptr (GError) error = NULL;
  const int64_t xd[] = { 1, 3, 16, 16 }, w1d[] = { 4, 3, 3, 3 }, w2d[] = { 4, 4, 1, 1 };
  const int64_t bd[] = { 4 };
  g_autoptr (NnpTensor) w1 = pattern (4, w1d, 1), w2 = pattern (4, w2d, 2), b1 = pattern (1, bd, 3);
  NnpStageOptions cpu = { .device = "cpu" };
  NnpStage *whole;
  GPtrArray *outs;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, xd);
  tu_add_constant (g, "w1", w1);
  tu_add_constant (g, "b1", b1);
  tu_add_constant (g, "w2", w2);
  tu_add_node (g, "conv1", "Conv", L ("x", "w1", "b1"), L ("c1"));
  tu_add_node (g, "relu", "Relu", L ("c1"), L ("r"));
  tu_add_node (g, "conv2", "Conv", L ("r", "w2"), L ("c"));
  tu_add_node (g, "add", "Add", L ("r", "c"), L ("a"));
  tu_add_node (g, "sig", "Sigmoid", L ("a"), L ("y"));
  tu_add_output (g, "y");
  /* no fusion: keep five nodes so the cut is where we say */
  f->sg = tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
  g_assert_cmpuint (f->sg->nodes->len, ==, 5);
  for (int i = 0; i < 3; i++)
    f->first[i] = i;
  f->second[0] = 3;
  f->second[1] = 4;
  f->x = pattern (4, xd, 7);

  whole = nnp_stage_new (f->sg, NULL, 0, &cpu, &error);
  g_assert_no_error (error);
  outs = tu_run_stage (whole, &f->x);
  f->want = nnp_tensor_ref (g_ptr_array_index (outs, 0));
  g_ptr_array_unref (outs);
  nnp_stage_free (whole);
}

static void
fixture_clear (Fixture *f)
{
  nnp_tensor_unref (f->x);
  nnp_tensor_unref (f->want);
  nnp_graph_unref (f->sg);
}

static void
check_close (const NnpTensor *got, const NnpTensor *want)
{
  const float *a = got->data, *b = want->data;

  g_assert_true (nnp_shape_equal (&got->shape, &want->shape));
  for (int64_t i = 0; i < nnp_tensor_numel (want); i++)
    g_assert_cmpfloat (fabsf (a[i] - b[i]), <=, 1e-5f + 1e-4f * fabsf (b[i]));
}

static NnpStage *
stage_on (Fixture *f, const int *nodes, int n, const char *device)
{
  g_autoptr (GError) error = NULL;
  NnpStageOptions opts = { .device = device };
  NnpStage *stage = nnp_stage_new (f->sg, nodes, n, &opts, &error);

  g_assert_no_error (error);
  g_assert_nonnull (stage);
  return stage;
}

static void
test_whole_model (void)
{
  Fixture f;
  NnpStage *s;
  GPtrArray *outs;
  NnpCopyCounts c0, c1;

  fixture_init (&f);
  s = stage_on (&f, NULL, 0, device_spec);
  g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (s)), ==, "opencl");
  nnp_device_get_copy_counts (&c0);
  outs = tu_run_stage (s, &f.x);
  nnp_device_get_copy_counts (&c1);
  check_close (g_ptr_array_index (outs, 0), f.want);
  /* host input up once, host output back once */
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 1);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 1);
  g_ptr_array_unref (outs);
  nnp_stage_free (s);
  fixture_clear (&f);
}

static void
test_opencl_to_opencl (void)
{
  Fixture f;
  g_autoptr (GError) error = NULL;
  NnpStage *a, *b;
  NnpTensor *mid[2] = { NULL, NULL };
  NnpTensor *y;
  NnpCopyCounts c0, c1;

  fixture_init (&f);
  a = stage_on (&f, f.first, 3, device_spec);
  b = stage_on (&f, f.second, 2, device_spec);
  g_assert_cmpint (nnp_stage_get_n_outputs (a), ==, 2);
  g_assert_cmpint (nnp_stage_get_n_inputs (b), ==, 2);
  for (int i = 0; i < 2; i++) {
    mid[i] = nnp_stage_new_device_output (a, i, &error);
    g_assert_no_error (error);
  }
  /* b's inputs in a's output order */
  if (nnp_stage_get_input (b, 0)->id != nnp_stage_get_output (a, 0)->id) {
    NnpTensor *t = mid[0];
    mid[0] = mid[1];
    mid[1] = t;
  }
  y = nnp_stage_new_output (b, 0, &error);

  for (int run = 0; run < 3; run++) {
    NnpTensor *a_out[2];
    /* a_out in a's order */
    a_out[0] = nnp_stage_get_output (a, 0)->id == nnp_stage_get_input (b, 0)->id ? mid[0] : mid[1];
    a_out[1] = a_out[0] == mid[0] ? mid[1] : mid[0];
    nnp_device_get_copy_counts (&c0);
    g_assert_true (nnp_stage_run (a, &f.x, a_out, &error));
    g_assert_no_error (error);
    nnp_device_get_copy_counts (&c1);
    g_assert_cmpuint (c1.to_device - c0.to_device, ==, 1); /* x */
    g_assert_cmpuint (c1.to_host - c0.to_host, ==, 0);     /* nothing comes back */
    c0 = c1;
    g_assert_true (nnp_stage_run (b, mid, &y, &error));
    g_assert_no_error (error);
    nnp_device_get_copy_counts (&c1);
    g_assert_cmpuint (c1.to_device - c0.to_device, ==, 0); /* r and c stay on the device */
    g_assert_cmpuint (c1.to_host - c0.to_host, ==, 1);     /* y */
    check_close (y, f.want);
  }
  nnp_tensor_unref (y);
  for (int i = 0; i < 2; i++)
    nnp_tensor_unref (mid[i]);
  nnp_stage_free (a);
  nnp_stage_free (b);
  fixture_clear (&f);
}

static void
test_cpu_to_opencl (void)
{
  Fixture f;
  NnpStage *a, *b;
  GPtrArray *mid, *outs;
  NnpTensor *bin[2];
  NnpCopyCounts c0, c1;

  fixture_init (&f);
  a = stage_on (&f, f.first, 3, "cpu");
  b = stage_on (&f, f.second, 2, device_spec);
  nnp_device_get_copy_counts (&c0);
  mid = tu_run_stage (a, &f.x);
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 0);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 0);
  for (int i = 0; i < 2; i++) {
    int id = nnp_stage_get_input (b, i)->id;
    bin[i] = nnp_stage_get_output (a, 0)->id == id ? g_ptr_array_index (mid, 0)
                                                   : g_ptr_array_index (mid, 1);
  }
  c0 = c1;
  outs = tu_run_stage (b, bin);
  nnp_device_get_copy_counts (&c1);
  /* exactly one copy per crossing tensor (r, c), and y back */
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 2);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 1);
  check_close (g_ptr_array_index (outs, 0), f.want);
  g_ptr_array_unref (mid);
  g_ptr_array_unref (outs);
  nnp_stage_free (a);
  nnp_stage_free (b);
  fixture_clear (&f);
}

static void
test_opencl_to_cpu (void)
{
  Fixture f;
  g_autoptr (GError) error = NULL;
  NnpStage *a, *b;
  NnpTensor *mid[2];
  NnpTensor *bin[2];
  NnpTensor *y;
  NnpCopyCounts c0, c1;

  fixture_init (&f);
  a = stage_on (&f, f.first, 3, device_spec);
  b = stage_on (&f, f.second, 2, "cpu");
  for (int i = 0; i < 2; i++)
    mid[i] = nnp_stage_new_device_output (a, i, &error);
  g_assert_true (nnp_stage_run (a, &f.x, mid, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 2; i++)
    bin[i] = nnp_stage_get_output (a, 0)->id == nnp_stage_get_input (b, i)->id ? mid[0] : mid[1];
  y = nnp_stage_new_output (b, 0, &error);
  nnp_device_get_copy_counts (&c0);
  g_assert_true (nnp_stage_run (b, bin, &y, &error));
  g_assert_no_error (error);
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 2); /* r and c down once each */
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 0);
  check_close (y, f.want);
  nnp_tensor_unref (y);
  for (int i = 0; i < 2; i++)
    nnp_tensor_unref (mid[i]);
  nnp_stage_free (a);
  nnp_stage_free (b);
  fixture_clear (&f);
}

static void
test_device_errors (void)
{
  g_autoptr (GError) error = NULL;
  NnpDevice *d = nnp_device_open ("opencl:99", &error);
  NnpDevice *d1, *d2;

  g_assert_null (d);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "OpenCL device 'opencl:99' not found"));
  g_clear_error (&error);
  g_assert_null (nnp_device_open ("vulkan", &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_clear_error (&error);
  /* one shared object per physical device */
  d1 = nnp_device_open (device_spec, &error);
  d2 = nnp_device_open (device_spec, &error);
  g_assert_no_error (error);
  g_assert_true (d1 == d2);
  g_assert_nonnull (nnp_device_get_native (d1, "cl_command_queue"));
  nnp_device_unref (d1);
  nnp_device_unref (d2);
}

/* ---------------------------------------------------------------- Gather with run-time indices */

/* x (5 x 3 float) -> Gather g (indices idx: an input, or a constant when
 * const_idx is given) -> y.  axis 0 or 1 (on x transposed to 3 x 5 by
 * reading it with axis 1: outer 5, axis_dim 3). */
static NnpGraph *
gather_graph (NnpDType idx_dtype, int n_idx, int axis, const int64_t *const_idx)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("gather", 13);
  const int64_t xd[] = { 5, 3 }, id[] = { n_idx };
  NnpNode *node;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, xd);
  if (const_idx) {
    NnpShape shape;
    g_autoptr (NnpTensor) t = NULL;
    nnp_shape_set (&shape, 1, id);
    t = nnp_tensor_new (idx_dtype, &shape, NULL);
    for (int j = 0; j < n_idx; j++) {
      if (idx_dtype == NNP_DTYPE_INT64)
        ((int64_t *) t->data)[j] = const_idx[j];
      else
        ((int32_t *) t->data)[j] = (int32_t) const_idx[j];
    }
    tu_add_constant (g, "idx", t);
  } else {
    tu_add_input (g, "idx", idx_dtype, 1, id);
  }
  node = tu_add_node (g, "g", "Gather", L ("x", "idx"), L ("y"));
  if (axis != 0) {
    NnpAttr attr = { .name = g_strdup ("axis"), .type = NNP_ATTR_INT, .i = axis };
    nnp_node_take_attr (node, &attr);
  }
  tu_add_output (g, "y");
  return tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
}

static NnpTensor *
index_tensor (NnpDType dtype, int n, const int64_t *values)
{
  const int64_t dims[] = { n };
  NnpShape shape;
  NnpTensor *t;

  nnp_shape_set (&shape, 1, dims);
  t = nnp_tensor_new (dtype, &shape, NULL);
  for (int j = 0; j < n; j++) {
    if (dtype == NNP_DTYPE_INT64)
      ((int64_t *) t->data)[j] = values[j];
    else
      ((int32_t *) t->data)[j] = (int32_t) values[j];
  }
  return t;
}

/* Run stage on (x, idx); the output, or NULL with *error set. */
static NnpTensor *
run_gather (NnpStage *stage, NnpTensor *x, NnpTensor *idx, GError **error)
{
  NnpTensor *ins[2] = { x, idx };
  NnpTensor *y = nnp_stage_new_output (stage, 0, NULL);

  g_assert_cmpint (nnp_stage_get_n_inputs (stage), ==, 2);
  g_assert_cmpstr (nnp_stage_get_input (stage, 1)->name, ==, "idx");
  if (!nnp_stage_run (stage, ins, &y, error)) {
    nnp_tensor_unref (y);
    return NULL;
  }
  return y;
}

static void
test_gather_runtime_indices (void)
{
  const NnpDType dtypes[] = { NNP_DTYPE_INT64, NNP_DTYPE_INT32 };
  const int64_t xd[] = { 5, 3 };
  /* in range, negative ones included; axis 0 has size 5, axis 1 size 3 */
  const int64_t good[2][4] = { { 0, 4, -1, -5 }, { 2, -3, 0, -1 } };
  /* one bad index each (7; -4 below -3 on axis 1; 2^40 needs 64 bits) */
  const int64_t bad[3][4] = {
    { 1, 7, 2, 0 },
    { 0, -4, 1, 1 },
    { 0, 1, G_GINT64_CONSTANT (1) << 40, 2 },
  };
  const char *const bad_msg[3] = {
    "node 'g' (Gather): index 7 is out of range for axis 0 of size 5",
    "node 'g' (Gather): index -4 is out of range for axis 1 of size 3",
    "node 'g' (Gather): index 1099511627776 is out of range for axis 0 of size 5",
  };
  g_autoptr (NnpTensor) x = pattern (2, xd, 11);

  for (int d = 0; d < 2; d++) {
    for (int axis = 0; axis < 2; axis++) {
      g_autoptr (NnpGraph) sg = gather_graph (dtypes[d], 4, axis, NULL);
      g_autoptr (GError) error = NULL;
      NnpStageOptions cpu = { .device = "cpu" }, ocl = { .device = device_spec };
      NnpStage *cs = nnp_stage_new (sg, NULL, 0, &cpu, &error);
      NnpStage *os;

      g_assert_no_error (error);
      os = nnp_stage_new (sg, NULL, 0, &ocl, &error);
      g_assert_no_error (error);
      g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (os)), ==, "opencl");
      /* good, bad, good again: a failed run leaves nothing behind */
      for (int round = 0; round < 2; round++) {
        for (int b = 0; b < 3; b++) {
          g_autoptr (NnpTensor) gi = index_tensor (dtypes[d], 4, good[axis]);
          g_autoptr (NnpTensor) want = run_gather (cs, x, gi, &error);
          g_autoptr (NnpTensor) got = NULL;
          g_autoptr (NnpTensor) bi = NULL;
          g_autoptr (GError) cerr = NULL, oerr = NULL;

          g_assert_no_error (error);
          got = run_gather (os, x, gi, &error);
          g_assert_no_error (error);
          g_assert_cmpmem (got->data, got->nbytes, want->data, want->nbytes);

          /* 2^40 does not fit int32; axis 1 takes the -4 case only */
          if ((b == 2 && dtypes[d] == NNP_DTYPE_INT32) || (axis == 1) != (b == 1))
            continue;
          bi = index_tensor (dtypes[d], 4, bad[b]);
          g_assert_null (run_gather (cs, x, bi, &cerr));
          g_assert_error (cerr, NNP_ERROR, NNP_ERROR_INVALID);
          g_assert_cmpstr (cerr->message, ==, bad_msg[b]);
          g_assert_null (run_gather (os, x, bi, &oerr));
          g_assert_error (oerr, NNP_ERROR, NNP_ERROR_INVALID);
          g_assert_cmpstr (oerr->message, ==, bad_msg[b]);
        }
      }
      nnp_stage_free (cs);
      nnp_stage_free (os);
    }
  }
}

/* Constant indices: OpenCL validates them once when the stage is prepared;
 * the CPU fails the run with the same message. */
static void
test_gather_constant_indices (void)
{
  const int64_t xd[] = { 5, 3 }, bad[] = { 0, -6 }, good[] = { -5, 4 };
  const char *msg = "node 'g' (Gather): index -6 is out of range for axis 0 of size 5";
  g_autoptr (NnpTensor) x = pattern (2, xd, 12);
  g_autoptr (GError) error = NULL;
  NnpStageOptions cpu = { .device = "cpu" }, ocl = { .device = device_spec };
  g_autoptr (NnpGraph) bad_g = gather_graph (NNP_DTYPE_INT64, 2, 0, bad);
  g_autoptr (NnpGraph) good_g = gather_graph (NNP_DTYPE_INT64, 2, 0, good);
  NnpStage *cs, *os;
  NnpTensor *y;
  GPtrArray *want, *got;

  cs = nnp_stage_new (bad_g, NULL, 0, &cpu, &error);
  g_assert_no_error (error);
  y = nnp_stage_new_output (cs, 0, NULL);
  g_assert_false (nnp_stage_run (cs, &x, &y, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_cmpstr (error->message, ==, msg);
  g_clear_error (&error);
  nnp_tensor_unref (y);
  nnp_stage_free (cs);
  g_assert_null (nnp_stage_new (bad_g, NULL, 0, &ocl, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_cmpstr (error->message, ==, msg);
  g_clear_error (&error);

  cs = nnp_stage_new (good_g, NULL, 0, &cpu, &error);
  g_assert_no_error (error);
  os = nnp_stage_new (good_g, NULL, 0, &ocl, &error);
  g_assert_no_error (error);
  want = tu_run_stage (cs, &x);
  got = tu_run_stage (os, &x);
  g_assert_cmpmem (((NnpTensor *) got->pdata[0])->data, ((NnpTensor *) got->pdata[0])->nbytes,
                   ((NnpTensor *) want->pdata[0])->data, ((NnpTensor *) want->pdata[0])->nbytes);
  g_ptr_array_unref (want);
  g_ptr_array_unref (got);
  nnp_stage_free (cs);
  nnp_stage_free (os);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  NnpDevice *dev;

  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("NNP_TEST_OPENCL_DEVICE"))
    device_spec = g_getenv ("NNP_TEST_OPENCL_DEVICE");
  dev = nnp_device_open (device_spec, &error);
  if (dev == NULL) {
    /* PoCL is one of our packages: no device is a failure, not a skip */
    g_print ("Bail out! no OpenCL device (install the Debian package pocl-opencl-icd): %s\n",
             error->message);
    return 1;
  }
  nnp_device_unref (dev);
  g_test_add_func ("/opencl/whole-model", test_whole_model);
  g_test_add_func ("/opencl/opencl-to-opencl-no-copy", test_opencl_to_opencl);
  g_test_add_func ("/opencl/cpu-to-opencl-one-copy", test_cpu_to_opencl);
  g_test_add_func ("/opencl/opencl-to-cpu-one-copy", test_opencl_to_cpu);
  g_test_add_func ("/opencl/device-errors", test_device_errors);
  g_test_add_func ("/opencl/gather-runtime-indices", test_gather_runtime_indices);
  g_test_add_func ("/opencl/gather-constant-indices", test_gather_constant_indices);
  return g_test_run ();
}
