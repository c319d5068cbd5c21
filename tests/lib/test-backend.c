/* Unit tests: the backend registry (lib/backend.h) and a third backend
 * added without touching the library.
 *
 * "testmem" is a test-only device backend (testmem-backend.c): its device
 * memory is host memory it allocates itself (refcounted blocks), it runs
 * Relu only, and it counts the host copies it makes, as a device backend
 * must.  Registering it is all it takes for device specs,
 * nnp_device_open(), tensors in its memory, nnp_tensor_copy_into() and
 * nnp_stage_run() to work with it (tests/plugins/test-testmem.c: and for
 * nnstage to exchange buffers in its memory). */
#include "test-util.h"
#include "testmem-backend.h"

#include "backend.h"
#include "backends/copy-counts.h"
#include "backends/device-spec.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"
#include "exec/stage-private.h"
#include "tensor-private.h"

#include <string.h>

/* A table missing a required function (stage_run). */
static NnpBackend broken_backend;

/* ---------------------------------------------------------------- tests */

static void
test_registry (void)
{
  int n = nnp_backend_count ();

  g_assert_cmpint (n, >=, 1);
  /* the CPU is always there, first, and is the host backend */
  g_assert_cmpstr (nnp_backend_get (0)->name, ==, "cpu");
  g_assert_true (nnp_backend_host () == nnp_backend_get (0));
  g_assert_true (nnp_backend_find ("CPU") == nnp_backend_get (0));
  g_assert_null (nnp_backend_find ("nosuch"));
#ifdef NNP_TEST_OPENCL
  g_assert_nonnull (nnp_backend_find ("opencl"));
  g_assert_false (nnp_backend_find ("opencl")->host);
#endif
  for (int i = 0; i < n; i++) {
    const NnpBackend *b = nnp_backend_get (i);
    g_autoptr (GError) error = NULL;
    g_autofree char *device = NULL;

    g_assert_nonnull (b->name);
    g_assert_null (strchr (b->name, ':'));
    g_assert_true (nnp_backend_find (b->name) == b);
    g_assert_nonnull (b->open);
    g_assert_nonnull (b->supports_node);
    g_assert_nonnull (b->stage_new);
    g_assert_nonnull (b->stage_run);
    g_assert_nonnull (b->stage_free);
    if (b->host)
      g_assert_nonnull (b->run_node);
    else
      g_assert_true (b->buffer_alloc && b->buffer_ref && b->buffer_unref && b->buffer_write
                     && b->buffer_read);
    /* every backend's name is a device spec of the one grammar */
    g_assert_true (nnp_device_spec_parse (b->name, &device, NULL, &error));
    g_assert_no_error (error);
    g_assert_cmpstr (device, ==, b->name);
  }
}

static void
test_register (void)
{
  int n = nnp_backend_count ();

  broken_backend = nnp_testmem_backend;
  broken_backend.name = "broken";
  broken_backend.stage_run = NULL;
  g_assert_false (nnp_backend_register (&broken_backend));
  g_assert_true (nnp_backend_register (&nnp_testmem_backend));
  g_assert_false (nnp_backend_register (&nnp_testmem_backend)); /* the name is taken */
  g_assert_cmpint (nnp_backend_count (), ==, n + 1);
  g_assert_true (nnp_backend_find ("TestMem") == &nnp_testmem_backend);
  g_assert_null (nnp_backend_find ("broken"));
  g_assert_false (nnp_backend_host () == &nnp_testmem_backend);
}

static void
test_spec (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *device = NULL;
  int threads = -1;

  g_assert_true (nnp_device_spec_parse (" TestMem ", &device, &threads, &error));
  g_assert_cmpstr (device, ==, "testmem");
  g_assert_cmpint (threads, ==, 0);
  g_clear_pointer (&device, g_free);
  /* "NAME:ARG" names a device of a backend without threads */
  g_assert_true (nnp_device_spec_parse ("testmem:7", &device, &threads, &error));
  g_assert_cmpstr (device, ==, "testmem:7");
  g_assert_cmpint (threads, ==, 0);
  g_assert_false (nnp_device_spec_parse ("testmem:", NULL, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_clear_error (&error);
  /* an unknown backend: the message lists every registered one */
  g_assert_false (nnp_device_spec_parse ("tpu9", NULL, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "cpu:THREADS"));
  g_assert_nonnull (strstr (error->message, "testmem"));
  g_clear_error (&error);
  /* the backend's own open refuses what it does not have */
  g_assert_null (nnp_device_open ("testmem:7", &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "no device 'testmem:7'"));
}

/* The one parsed device spec: "is this the CPU?" from the backend table,
 * the remote address, the parts of a spec (issue 24). */
static void
test_spec_info (void)
{
  g_auto (NnpDeviceSpecInfo) info = { 0 };
  g_autoptr (GError) error = NULL;
  const char *host[] = { NULL, "cpu", " CPU:4 ", "cpu:1" };
  const char *not_host[] = { "testmem", "testmem:7", "remote://a:7000", "tpu9", "", "cpux" };

  for (guint i = 0; i < G_N_ELEMENTS (host); i++)
    g_assert_true (nnp_device_spec_is_host (host[i]));
  for (guint i = 0; i < G_N_ELEMENTS (not_host); i++)
    g_assert_false (nnp_device_spec_is_host (not_host[i]));
  g_assert_cmpstr (nnp_device_spec_remote_address ("remote://a:7000|b:7001"), ==, "a:7000|b:7001");
  g_assert_cmpstr (nnp_device_spec_remote_address (" REMOTE://h:1"), ==, "h:1");
  g_assert_null (nnp_device_spec_remote_address ("cpu"));
  g_assert_null (nnp_device_spec_remote_address ("testmem:remote://x"));
  g_assert_null (nnp_device_spec_remote_address (NULL));

  g_assert_true (nnp_device_spec_info_parse ("testmem:7", &info, &error));
  g_assert_cmpstr (info.spec, ==, "testmem:7");
  g_assert_cmpstr (info.backend, ==, "testmem");
  g_assert_cmpstr (info.arg, ==, "7");
  g_assert_cmpint (info.index, ==, 7);
  g_assert_false (info.is_host);
  g_assert_null (info.remote_address);
  nnp_device_spec_info_clear (&info);
  g_assert_true (nnp_device_spec_info_parse ("testmem:H100", &info, &error));
  g_assert_cmpint (info.index, ==, -1);
  g_assert_cmpstr (info.arg, ==, "H100");
  nnp_device_spec_info_clear (&info);
  g_assert_true (nnp_device_spec_info_parse ("Cpu:3", &info, &error));
  g_assert_cmpstr (info.spec, ==, "cpu");
  g_assert_cmpint (info.threads, ==, 3);
  g_assert_true (info.is_host);
  nnp_device_spec_info_clear (&info);
  g_assert_true (nnp_device_spec_info_parse ("Remote://h1:7000|[::1]:7001", &info, &error));
  g_assert_cmpstr (info.backend, ==, "remote");
  g_assert_cmpstr (info.spec, ==, "remote://h1:7000|[::1]:7001");
  g_assert_cmpstr (info.remote_address, ==, "h1:7000|[::1]:7001");
  g_assert_false (info.is_host);
  nnp_device_spec_info_clear (&info);
  /* a remote spec with a bad address is a bad value, named */
  g_assert_false (nnp_device_spec_info_parse ("remote://h1:7000|nohost", &info, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "nohost"));
  g_clear_error (&error);
  /* nnp_device_open() refuses a remote stage: it runs in nnremote */
  g_assert_null (nnp_device_open ("remote://h1:7000", &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "nnremote"));
}

static void
test_device_tensors (void)
{
  g_autoptr (GError) error = NULL;
  NnpDevice *d = nnp_device_open ("testmem", &error);
  NnpDevice *d2 = nnp_device_open ("TESTMEM", &error);
  const int64_t dims[] = { 2, 3 };
  const float values[] = { -1, 2, -3, 4, -5, 6 };
  g_autoptr (NnpTensor) host = tu_tensor_f32 (2, dims, values);
  g_autoptr (NnpTensor) back = tu_tensor_f32 (2, dims, values);
  g_autoptr (NnpTensor) dev = NULL, dev2 = NULL;
  NnpCopyCounts c0, c1;

  g_assert_no_error (error);
  g_assert_true (d == d2); /* one device object */
  nnp_device_unref (d2);
  g_assert_cmpstr (nnp_device_get_backend (d), ==, "testmem");
  g_assert_false (nnp_device_is_host (d));
  g_assert_nonnull (strstr (nnp_device_get_name (d), "posing as a device"));
  g_assert_null (nnp_device_get_native (d, "cl_context"));

  dev = nnp_tensor_new_on (d, NNP_DTYPE_FLOAT32, &host->shape, &error);
  g_assert_no_error (error);
  g_assert_false (nnp_tensor_is_host (dev));
  g_assert_true (dev->device == d);
  g_assert_null (dev->data);
  g_assert_cmpuint (dev->nbytes, ==, sizeof values);
  dev2 = nnp_tensor_new_on (d, NNP_DTYPE_FLOAT32, &host->shape, &error);

  memset (back->data, 0, back->nbytes);
  nnp_device_get_copy_counts (&c0);
  g_assert_true (nnp_tensor_copy_into (dev, host, &error));  /* up: counted */
  g_assert_true (nnp_tensor_copy_into (dev2, dev, &error));  /* same device, no copy
                                                                 * function: via the host */
  g_assert_true (nnp_tensor_copy_into (back, dev2, &error)); /* down: counted */
  g_assert_no_error (error);
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpmem (back->data, back->nbytes, values, sizeof values);
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 2);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 2);
  g_assert_cmpuint (c1.to_device_bytes - c0.to_device_bytes, ==, 2 * sizeof values);

  /* a shape mismatch is an error, not a partial copy */
  {
    const int64_t other[] = { 3, 2 };
    g_autoptr (NnpTensor) wrong = tu_tensor_f32 (2, other, values);
    g_assert_false (nnp_tensor_copy_into (dev, wrong, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  }
  g_clear_pointer (&dev, nnp_tensor_unref);
  g_clear_pointer (&dev2, nnp_tensor_unref);
  nnp_device_unref (d);
}

static NnpGraph *
relu_graph (const char *op)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("relu", 13);
  const int64_t dims[] = { 2, 3 };

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims);
  tu_add_node (g, "act", op, L ("x"), L ("y"));
  tu_add_output (g, "y");
  return tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
}

static void
test_stages (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpGraph) sg = relu_graph ("Relu");
  const int64_t dims[] = { 2, 3 };
  const float values[] = { -1, 2, -3, 4, -5, 6 }, want[] = { 0, 2, 0, 4, 0, 6 };
  g_autoptr (NnpTensor) x = tu_tensor_f32 (2, dims, values);
  g_autoptr (NnpTensor) y = tu_tensor_f32 (2, dims, values);
  g_autoptr (NnpTensor) dx = NULL, dy = NULL;
  NnpStageOptions tm = { .device = "testmem" }, cpu = { .device = "cpu" };
  NnpStage *ts = nnp_stage_new (sg, NULL, 0, &tm, &error);
  NnpStage *cs;
  NnpCopyCounts c0, c1;

  g_assert_no_error (error);
  g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (ts)), ==, "testmem");
  cs = nnp_stage_new (sg, NULL, 0, &cpu, &error);
  g_assert_no_error (error);

  /* host tensors on the testmem stage: the backend copies them (counted) */
  nnp_device_get_copy_counts (&c0);
  g_assert_true (nnp_stage_run (ts, &x, &y, &error));
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpmem (y->data, y->nbytes, want, sizeof want);
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 1);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 1);

  /* its own tensors: used in place, no copy */
  dx = nnp_tensor_new_on (nnp_stage_get_device (ts), NNP_DTYPE_FLOAT32, &x->shape, &error);
  dy = nnp_stage_new_device_output (ts, 0, &error);
  g_assert_no_error (error);
  g_assert_true (dy->device == nnp_stage_get_device (ts));
  g_assert_true (nnp_tensor_copy_into (dx, x, &error));
  nnp_device_get_copy_counts (&c0);
  g_assert_true (nnp_stage_run (ts, &dx, &dy, &error));
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 0);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 0);

  /* testmem tensors on a CPU stage: down once, up once, through the host */
  memset (y->data, 0, y->nbytes);
  nnp_device_get_copy_counts (&c0);
  g_assert_true (nnp_stage_run (cs, &dx, &dy, &error));
  g_assert_no_error (error);
  nnp_device_get_copy_counts (&c1);
  g_assert_cmpuint (c1.to_host - c0.to_host, ==, 1);
  g_assert_cmpuint (c1.to_device - c0.to_device, ==, 1);
  g_assert_true (nnp_tensor_copy_into (y, dy, &error));
  g_assert_cmpmem (y->data, y->nbytes, want, sizeof want);

  /* a wrong tensor is an error naming the value */
  {
    const int64_t other[] = { 6 };
    g_autoptr (NnpTensor) bad = tu_tensor_f32 (1, other, values);
    g_assert_false (nnp_stage_run (ts, &bad, &dy, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
    g_assert_nonnull (strstr (error->message, "input 'x'"));
    g_clear_error (&error);
  }
  nnp_stage_free (ts);
  nnp_stage_free (cs);
}

static void
test_unsupported (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpGraph) sg = relu_graph ("Sigmoid");
  NnpStageOptions tm = { .device = "testmem" };
  char *why = NULL;
  NnpDevice *d = nnp_device_open ("testmem", &error);

  g_assert_false (nnp_device_supports_node (d, sg, nnp_graph_node (sg, 0), &why));
  g_assert_cmpstr (why, ==, "Sigmoid: testmem runs Relu only");
  g_free (why);
  nnp_device_unref (d);
  g_assert_null (nnp_stage_new (sg, NULL, 0, &tm, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "testmem runs Relu only"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* in order: testmem is registered by the second */
  g_test_add_func ("/backend/registry", test_registry);
  g_test_add_func ("/backend/register", test_register);
  g_test_add_func ("/backend/spec", test_spec);
  g_test_add_func ("/backend/spec-info", test_spec_info);
  g_test_add_func ("/backend/device-tensors", test_device_tensors);
  g_test_add_func ("/backend/stages", test_stages);
  g_test_add_func ("/backend/unsupported", test_unsupported);
  return g_test_run ();
}
