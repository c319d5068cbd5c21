/* Unit tests: the prelude every OpenCL program starts with (embed-cl.py).
 *
 *   - /prelude/codes: a probe program built from nnp_ocl_prelude writes the
 *     value of every NnpActivation enumerator and every ocl-codes.h number as
 *     the OpenCL compiler sees them; each equals the host's.
 *   - /prelude/activations: nnp_act_apply (lib/backends/act-scalar.h) on the
 *     device and on the host, every activation over a grid of inputs (zeros,
 *     infinities, NaN included): the compare-and-select ones (Relu, Clip,
 *     LeakyRelu) bit-exact, the others within 4 ulp or 1e-6 (1 + |x|) (the
 *     device may fuse alpha * x + beta into one rounding, and its exp differs
 *     from expf).
 *   - /prelude/table: ops without an OpenCL kernel (Constant, the CPU-only
 *     ops of ocl-cpu-only.c such as Cos) give NULL from nnp_ocl_kernel(),
 *     every other op of op-list.h a kernel with prepare/run.
 * Without an OpenCL device only /prelude/table runs (as the other OpenCL
 * tests, a machine without one does not fail). */
#include "backends/opencl/ocl-ops.h"
#include "backends/act-scalar.h"

#include <math.h>
#include <string.h>

static const char *device_spec = "opencl";

/* clang-format off */
#define CODES(X) \
  X (NNP_ACT_NONE) X (NNP_ACT_RELU) X (NNP_ACT_CLIP) X (NNP_ACT_LEAKY_RELU) \
  X (NNP_ACT_HARD_SIGMOID) X (NNP_ACT_HARD_SWISH) X (NNP_ACT_SIGMOID) \
  X (NNP_ACT_HARD_SWISH_AFFINE) X (NNP_ACT_SILU) X (NNP_ACT_GELU) \
  X (NNP_OCL_MAX_RANK) X (NNP_OCL_TILE) X (NNP_OCL_TILE_LOCAL) \
  X (NNP_OCL_UN_COPY) X (NNP_OCL_UN_RELU) X (NNP_OCL_UN_CLIP) X (NNP_OCL_UN_SIGMOID) \
  X (NNP_OCL_UN_CEIL) X (NNP_OCL_BIN_ADD) X (NNP_OCL_BIN_FIRST) X (NNP_OCL_BIN_GREATER) \
  X (NNP_OCL_RED_SUM) X (NNP_OCL_RED_MIN) X (NNP_OCL_PAD_CONSTANT) X (NNP_OCL_PAD_WRAP)
/* clang-format on */

#define AS_VALUE(c) (int) (c),
#define AS_NAME(c) #c,
static const int host_codes[] = { CODES (AS_VALUE) };
static const char *const code_names[] = { CODES (AS_NAME) };

static const char probe_acts[] =
    "__kernel void acts (__global const float *x, __global float *y, int n, int act,\n"
    "                    float alpha, float beta)\n"
    "{\n"
    "  int i = get_global_id (0);\n"
    "  if (i < n)\n"
    "    y[i] = nnp_act_apply (x[i], act, alpha, beta);\n"
    "}\n";

typedef struct {
  NnpOclDevice *dev;
  cl_program program;
} Probe;

/* The prelude + the codes kernel (generated from CODES) + the acts kernel. */
static void
probe_build (Probe *p)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) src = g_string_new ("__kernel void codes (__global int *out)\n{\n");
  const char *texts[3];
  cl_int err = CL_SUCCESS;

  p->dev = nnp_ocl_device_open (device_spec, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (code_names); i++)
    g_string_append_printf (src, "  out[%u] = %s;\n", i, code_names[i]);
  g_string_append (src, "}\n");
  texts[0] = nnp_ocl_prelude;
  texts[1] = src->str;
  texts[2] = probe_acts;
  p->program = clCreateProgramWithSource (p->dev->context, 3, texts, NULL, &err);
  g_assert_cmpint (err, ==, CL_SUCCESS);
  err = clBuildProgram (p->program, 1, &p->dev->device, "-cl-std=CL1.2", NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[4096] = "";
    clGetProgramBuildInfo (p->program, p->dev->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                           NULL);
    g_error ("the prelude does not build: %s", log);
  }
}

static void
probe_clear (Probe *p)
{
  clReleaseProgram (p->program);
  nnp_ocl_device_unref (p->dev);
}

/* Run kernel `name` of the probe with a buffer of n_out 4-byte words as
 * argument 0 (and x, n, act, alpha, beta for "acts"); returns the words. */
static void
probe_run (Probe *p, const char *name, const float *x, int n, int act, float alpha, float beta,
           void *out, gsize n_out)
{
  g_autoptr (GError) error = NULL;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel (p->program, name, &err);
  cl_mem in = NULL, res;
  size_t global = MAX (n_out, 1);

  g_assert_cmpint (err, ==, CL_SUCCESS);
  res = nnp_ocl_alloc (p->dev, n_out * 4, "probe output", &error);
  g_assert_no_error (error);
  if (x) {
    in = nnp_ocl_alloc (p->dev, (gsize) n * 4, "probe input", &error);
    g_assert_no_error (error);
    g_assert_true (nnp_ocl_write (p->dev, in, 0, x, (gsize) n * 4, FALSE, &error));
    err |= clSetKernelArg (k, 0, sizeof in, &in);
    err |= clSetKernelArg (k, 1, sizeof res, &res);
    err |= clSetKernelArg (k, 2, sizeof (cl_int), &n);
    err |= clSetKernelArg (k, 3, sizeof (cl_int), &act);
    err |= clSetKernelArg (k, 4, sizeof (cl_float), &alpha);
    err |= clSetKernelArg (k, 5, sizeof (cl_float), &beta);
  } else {
    err |= clSetKernelArg (k, 0, sizeof res, &res);
    global = 1;
  }
  g_assert_cmpint (err, ==, CL_SUCCESS);
  err = clEnqueueNDRangeKernel (p->dev->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
  g_assert_cmpint (err, ==, CL_SUCCESS);
  g_assert_true (nnp_ocl_read (p->dev, res, 0, out, n_out * 4, FALSE, &error));
  g_assert_no_error (error);
  clReleaseMemObject (res);
  if (in)
    clReleaseMemObject (in);
  clReleaseKernel (k);
}

static void
test_codes (void)
{
  Probe p;
  int dev_codes[G_N_ELEMENTS (host_codes)];

  probe_build (&p);
  memset (dev_codes, 0xff, sizeof dev_codes);
  probe_run (&p, "codes", NULL, 0, 0, 0.f, 0.f, dev_codes, G_N_ELEMENTS (dev_codes));
  for (guint i = 0; i < G_N_ELEMENTS (host_codes); i++) {
    if (dev_codes[i] != host_codes[i])
      g_error ("%s: %d on the device, %d on the host", code_names[i], dev_codes[i], host_codes[i]);
  }
  /* the enum really is graph.h's: the last activation is the 10th */
  g_assert_cmpint (NNP_ACT_GELU, ==, 9);
  probe_clear (&p);
}

/* Distance in units in the last place between two floats of one sign. */
static guint32
ulp_distance (float a, float b)
{
  gint32 ia, ib;

  memcpy (&ia, &a, 4);
  memcpy (&ib, &b, 4);
  if (ia < 0)
    ia = G_MININT32 - ia;
  if (ib < 0)
    ib = G_MININT32 - ib;
  return ia > ib ? (guint32) ia - (guint32) ib : (guint32) ib - (guint32) ia;
}

static void
test_activations (void)
{
  static const struct {
    NnpActivation act;
    float alpha, beta;
    guint32 max_ulp;
  } cases[] = {
    { NNP_ACT_NONE, 0.f, 0.f, 0 },
    { NNP_ACT_RELU, 0.f, 0.f, 0 },
    { NNP_ACT_CLIP, -1.5f, 2.25f, 0 },
    { NNP_ACT_LEAKY_RELU, 0.01f, 0.f, 0 },
    { NNP_ACT_HARD_SIGMOID, 0.2f, 0.5f, 4 },
    { NNP_ACT_HARD_SWISH, 0.f, 0.f, 4 },
    { NNP_ACT_HARD_SWISH_AFFINE, 0.75f, -0.125f, 4 },
    { NNP_ACT_SIGMOID, 0.f, 0.f, 4 },
    { NNP_ACT_SILU, 0.f, 0.f, 6 },
    { NNP_ACT_GELU, 0.f, 0.f, 8 },
  };
  Probe p;
  GArray *xs = g_array_new (FALSE, FALSE, sizeof (float));
  const float specials[] = { 0.f,  -0.f,   INFINITY, -INFINITY, NAN,   3.f,   -3.f,  6.f,
                             -6.f, 1e-30f, -1e-30f,  88.f,      -88.f, 1e30f, -1e30f };
  float *dev_y;

  probe_build (&p);
  g_array_append_vals (xs, specials, G_N_ELEMENTS (specials));
  for (int i = -4000; i <= 4000; i++) {
    float v = (float) i / 256.f;
    g_array_append_val (xs, v);
  }
  dev_y = g_new (float, xs->len);
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    probe_run (&p, "acts", (const float *) xs->data, (int) xs->len, cases[c].act, cases[c].alpha,
               cases[c].beta, dev_y, xs->len);
    for (guint i = 0; i < xs->len; i++) {
      float x = g_array_index (xs, float, i);
      float want = nnp_act_apply (x, cases[c].act, cases[c].alpha, cases[c].beta);
      float got = dev_y[i];
      gboolean ok;

      if (isnan (want) || isnan (got))
        ok = isnan (want) && isnan (got);
      else if (want == got)
        ok = TRUE;
      else if (cases[c].max_ulp == 0)
        ok = FALSE;
      else /* near a cancellation (alpha * x + beta ~ 0) ulps mean little */
        ok = (signbit (want) == signbit (got) && ulp_distance (want, got) <= cases[c].max_ulp)
             || fabsf (want - got) <= 1e-6f * (1.f + fabsf (x));
      if (!ok)
        g_error ("activation %d (alpha %g, beta %g) of %.9g: host %.9g, device %.9g", cases[c].act,
                 cases[c].alpha, cases[c].beta, x, want, got);
    }
  }
  g_free (dev_y);
  g_array_free (xs, TRUE);
  probe_clear (&p);
}

static void
test_table (void)
{
  for (int op = 0; op < NNP_OP_COUNT; op++) {
    const NnpOclKernel *k = nnp_ocl_kernel ((NnpOpType) op);
    if (op == NNP_OP_CONSTANT || op == NNP_OP_COS) {
      g_assert_null (k);
    } else if (k != NULL) {
      g_assert_nonnull (k);
      g_assert_nonnull (k->prepare);
      g_assert_nonnull (k->run);
      g_assert_nonnull (k->free_state);
    }
  }
  g_assert_true (nnp_ocl_kernel (NNP_OP_CONV) == &nnp_ocl_kernel_conv);
  g_assert_true (nnp_ocl_kernel (NNP_OP_HARD_SIGMOID) == &nnp_ocl_kernel_hard_sigmoid);
  g_assert_null (nnp_ocl_kernel ((NnpOpType) NNP_OP_COUNT));
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  NnpOclDevice *dev;

  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("NNP_TEST_OPENCL_DEVICE"))
    device_spec = g_getenv ("NNP_TEST_OPENCL_DEVICE");
  g_test_add_func ("/prelude/table", test_table);
  dev = nnp_ocl_device_open (device_spec, &error);
  if (dev == NULL) {
    g_print ("# no OpenCL device: %s\n", error->message);
    return g_test_run ();
  }
  nnp_ocl_device_unref (dev);
  g_test_add_func ("/prelude/codes", test_codes);
  g_test_add_func ("/prelude/activations", test_activations);
  return g_test_run ();
}
