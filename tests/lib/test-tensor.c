/* Unit tests: dtypes, shapes, tensors, the test pattern, TensorProto reading. */
#include <nnpipe/nnpipe.h>

#include "onnx/model-private.h"
#include "tensor-private.h"

#include <string.h>

static void
test_dtype_names (void)
{
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_FLOAT32), ==, 4);
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_INT64), ==, 8);
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_BOOL), ==, 1);
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_FLOAT16), ==, 2);
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_STRING), ==, 0);
  g_assert_cmpuint (nnp_dtype_size (NNP_DTYPE_UNDEFINED), ==, 0);
  for (int d = NNP_DTYPE_FLOAT32; d <= NNP_DTYPE_UINT64; d++) {
    if (d == NNP_DTYPE_STRING)
      continue;
    g_assert_cmpint (nnp_dtype_from_name (nnp_dtype_name ((NnpDType) d)), ==, d);
  }
  g_assert_cmpstr (nnp_dtype_name (NNP_DTYPE_FLOAT32), ==, "float32");
  g_assert_cmpint (nnp_dtype_from_name ("no-such-type"), ==, NNP_DTYPE_UNDEFINED);
}

static void
test_shape (void)
{
  int64_t dims[] = { 1, 3, 640, 480 };
  int64_t too_many[NNP_MAX_RANK + 1] = { 0 };
  NnpShape s, t, scalar;
  char *str;

  g_assert_true (nnp_shape_set (&s, 4, dims));
  g_assert_cmpint (nnp_shape_numel (&s), ==, 3 * 640 * 480);
  g_assert_true (nnp_shape_is_static (&s));
  str = nnp_shape_to_string (&s);
  g_assert_cmpstr (str, ==, "1x3x640x480");
  g_free (str);

  t = s;
  g_assert_true (nnp_shape_equal (&s, &t));
  t.dims[2] = -1;
  g_assert_false (nnp_shape_equal (&s, &t));
  g_assert_false (nnp_shape_is_static (&t));
  g_assert_cmpint (nnp_shape_numel (&t), ==, -1);
  str = nnp_shape_to_string (&t);
  g_assert_cmpstr (str, ==, "1x3x?x480");
  g_free (str);

  g_assert_true (nnp_shape_set (&scalar, 0, NULL));
  g_assert_cmpint (nnp_shape_numel (&scalar), ==, 1);
  str = nnp_shape_to_string (&scalar);
  g_assert_cmpstr (str, ==, "scalar");
  g_free (str);

  g_assert_false (nnp_shape_set (&t, NNP_MAX_RANK + 1, too_many));

  t.rank = -1;
  g_assert_false (nnp_shape_is_static (&t));
  g_assert_cmpint (nnp_shape_numel (&t), ==, -1);

  /* a zero dim is a valid, empty shape */
  dims[1] = 0;
  g_assert_true (nnp_shape_set (&s, 4, dims));
  g_assert_cmpint (nnp_shape_numel (&s), ==, 0);
}

static int release_calls;

static void
count_release (gpointer data)
{
  release_calls++;
  g_free (data);
}

static void
test_tensor_lifecycle (void)
{
  int64_t dims[] = { 2, 3, 5 };
  g_autoptr (GError) error = NULL;
  NnpShape s, dyn;
  NnpTensor *t, *copy, *w;
  float *buf;

  nnp_shape_set (&s, 3, dims);
  t = nnp_tensor_new (NNP_DTYPE_FLOAT32, &s, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (t->nbytes, ==, 30 * sizeof (float));
  g_assert_cmpint (nnp_tensor_numel (t), ==, 30);
  g_assert_cmpuint ((guintptr) t->data % 64, ==, 0);
  for (int i = 0; i < 30; i++)
    g_assert_cmpfloat (((float *) t->data)[i], ==, 0.0f);
  ((float *) t->data)[7] = 42.0f;

  copy = nnp_tensor_copy (t);
  g_assert_true (copy->data != t->data);
  g_assert_cmpfloat (((float *) copy->data)[7], ==, 42.0f);
  g_assert_true (nnp_shape_equal (&copy->shape, &t->shape));
  nnp_tensor_unref (copy);

  g_assert_true (nnp_tensor_ref (t) == t);
  nnp_tensor_unref (t);
  nnp_tensor_unref (t);

  /* wrapped memory: release runs once, on the last unref */
  buf = g_new0 (float, 30);
  release_calls = 0;
  w = nnp_tensor_new_wrapped (NNP_DTYPE_FLOAT32, &s, buf, count_release, buf);
  g_assert_true (w->data == buf);
  nnp_tensor_ref (w);
  nnp_tensor_unref (w);
  g_assert_cmpint (release_calls, ==, 0);
  nnp_tensor_unref (w);
  g_assert_cmpint (release_calls, ==, 1);

  /* non-static shapes and sizeless dtypes are refused */
  dyn = s;
  dyn.dims[0] = -1;
  g_assert_null (nnp_tensor_new (NNP_DTYPE_FLOAT32, &dyn, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_null (nnp_tensor_new (NNP_DTYPE_STRING, &s, &error));
  g_assert_nonnull (error);
}

/* The documented pattern formula (tensor.h), recomputed here. */
static float
pattern_f32 (guint32 i, guint32 seed)
{
  guint32 h = i * 0x9E3779B1u + (seed + 1) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return (float) ((double) (h >> 8) * (2.0 / 16777216.0) - 1.0);
}

static void
test_fill_pattern (void)
{
  int64_t dims[] = { 4, 100 };
  NnpShape s;
  NnpTensor *a, *b, *c, *ints;
  gboolean differs = FALSE;

  nnp_shape_set (&s, 2, dims);
  a = nnp_tensor_new (NNP_DTYPE_FLOAT32, &s, NULL);
  b = nnp_tensor_new (NNP_DTYPE_FLOAT32, &s, NULL);
  c = nnp_tensor_new (NNP_DTYPE_FLOAT32, &s, NULL);
  nnp_tensor_fill_pattern (a, 0);
  nnp_tensor_fill_pattern (b, 0);
  nnp_tensor_fill_pattern (c, 1);
  g_assert_cmpmem (a->data, a->nbytes, b->data, b->nbytes);
  for (int i = 0; i < 400; i++) {
    float v = ((float *) a->data)[i];
    g_assert_cmpfloat (v, >=, -1.0f);
    g_assert_cmpfloat (v, <, 1.0f);
    g_assert_cmpfloat (v, ==, pattern_f32 ((guint32) i, 0));
    differs |= v != ((float *) c->data)[i];
  }
  g_assert_true (differs);

  ints = nnp_tensor_new (NNP_DTYPE_INT64, &s, NULL);
  nnp_tensor_fill_pattern (ints, 3);
  for (int i = 0; i < 400; i++) {
    int64_t v = ((int64_t *) ints->data)[i];
    g_assert_cmpint (v, >=, 0);
    g_assert_cmpint (v, <, 16);
  }
  nnp_tensor_unref (a);
  nnp_tensor_unref (b);
  nnp_tensor_unref (c);
  nnp_tensor_unref (ints);
}

/* A TensorProto written by hand: dims 2,3 (unpacked), FLOAT, name "t", raw_data. */
static void
test_tensor_proto (void)
{
  guint8 buf[64];
  gsize n = 0;
  float values[6] = { 1, -2, 3.5f, 0, 1e-3f, -7 };
  g_autoptr (GError) error = NULL;
  g_autofree char *name = NULL;
  NnpTensor *t;

  buf[n++] = 0x08;
  buf[n++] = 2; /* dims: 2 */
  buf[n++] = 0x08;
  buf[n++] = 3; /* dims: 3 */
  buf[n++] = 0x10;
  buf[n++] = 1; /* data_type: FLOAT */
  buf[n++] = 0x42;
  buf[n++] = 1;
  buf[n++] = 't'; /* name */
  buf[n++] = 0x4a;
  buf[n++] = sizeof values; /* raw_data */
  memcpy (buf + n, values, sizeof values);
  n += sizeof values;

  t = nnp_tensor_from_onnx_bytes (buf, n, &name, &error);
  g_assert_no_error (error);
  g_assert_nonnull (t);
  g_assert_cmpstr (name, ==, "t");
  g_assert_cmpint (t->dtype, ==, NNP_DTYPE_FLOAT32);
  g_assert_cmpint (t->shape.rank, ==, 2);
  g_assert_cmpint (t->shape.dims[0], ==, 2);
  g_assert_cmpint (t->shape.dims[1], ==, 3);
  g_assert_cmpmem (t->data, t->nbytes, values, sizeof values);
  nnp_tensor_unref (t);

  /* raw_data shorter than the dims say: a parse error, no crash */
  buf[10] = 8;
  t = nnp_tensor_from_onnx_bytes (buf, 11 + 8, NULL, &error);
  g_assert_null (t);
  g_assert_nonnull (error);
  g_clear_error (&error);

  /* truncated in the middle of a field */
  t = nnp_tensor_from_onnx_bytes (buf, 8, NULL, &error);
  g_assert_null (t);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PARSE);
}

/* The error domain's name is API (GError users match it); first asked
 * from several threads at once, every thread gets the same quark. */
static gpointer
ask_domain (gpointer data)
{
  return GUINT_TO_POINTER (NNP_ERROR);
}

static void
test_error_domain (void)
{
  GThread *threads[4];

  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("domain", ask_domain, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_assert_cmpuint (GPOINTER_TO_UINT (g_thread_join (threads[i])), ==, NNP_ERROR);
  g_assert_cmpstr (g_quark_to_string (NNP_ERROR), ==, "nnp-error-quark");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/tensor/error-domain", test_error_domain);
  g_test_add_func ("/tensor/dtype-names", test_dtype_names);
  g_test_add_func ("/tensor/shape", test_shape);
  g_test_add_func ("/tensor/lifecycle", test_tensor_lifecycle);
  g_test_add_func ("/tensor/fill-pattern", test_fill_pattern);
  g_test_add_func ("/tensor/tensor-proto", test_tensor_proto);
  return g_test_run ();
}
