/* Unit tests: the 16-bit floats (float16, bfloat16).  The conversions
 * (lib/half.c: every float16 and bfloat16 value round-trips, ties go to
 * even, overflow, NaN, subnormals, the F16C path equal to the scalar one),
 * TensorProto forms, and graphs of 16-bit values run on the CPU through the
 * 16-bit pass (lib/specialize/half.c): weights converted once per model, a
 * 16-bit input and output kept at the stage's edges, a Cast to float16 that
 * rounds, a 16-bit value crossing from one stage to the next. */
#include "test-util.h"

#include "graph/derived.h"
#include "graph/graph-edit.h"
#include "onnx/model-private.h"
#include "tensor-private.h"

#include <math.h>
#include <string.h>

static guint16
one_f16 (float f)
{
  guint16 h;
  nnp_f32_to_f16 (&f, &h, 1);
  return h;
}

static float
f16_one (guint16 h)
{
  float f;
  nnp_f16_to_f32 (&h, &f, 1);
  return f;
}

static guint16
one_bf16 (float f)
{
  guint16 h;
  nnp_f32_to_bf16 (&f, &h, 1);
  return h;
}

static float
bits_f32 (guint32 u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

/* ------------------------------------------------------------ conversions */

static void
test_f16_convert (void)
{
  g_autofree guint16 *all = g_new (guint16, 65536);
  g_autofree guint16 *back = g_new (guint16, 65536);
  g_autofree float *bulk = g_new (float, 65536);
  g_autofree float *rnd = g_new (float, 100003);
  g_autofree guint16 *rnd_bulk = g_new (guint16, 100003);
  g_autoptr (GRand) rand = g_rand_new_with_seed (16);

  for (guint i = 0; i < 65536; i++)
    all[i] = (guint16) i;
  /* bulk (F16C where the CPU has it) and one by one (the scalar tail) agree */
  nnp_f16_to_f32 (all, bulk, 65536);
  nnp_f32_to_f16 (bulk, back, 65536);
  for (guint i = 0; i < 65536; i++) {
    float one = f16_one ((guint16) i);
    gboolean nan = ((i >> 10) & 0x1f) == 0x1f && (i & 0x3ff) != 0;

    g_assert_cmpmem (&one, sizeof one, &bulk[i], sizeof one);
    if (nan) {
      g_assert_true (isnan (one));
      g_assert_cmphex (back[i] & 0x7e00, ==, 0x7e00); /* a quiet NaN */
      g_assert_cmphex (one_f16 (one), ==, back[i]);
    } else {
      g_assert_cmphex (back[i], ==, i); /* every value round-trips */
      g_assert_cmphex (one_f16 (one), ==, i);
    }
  }
  g_assert_cmpfloat (f16_one (0x3c00), ==, 1.0f);
  g_assert_cmpfloat (f16_one (0x0001), ==, ldexpf (1.f, -24)); /* smallest subnormal */
  g_assert_cmpfloat (f16_one (0x7bff), ==, 65504.f);

  /* round to nearest, ties to even */
  g_assert_cmphex (one_f16 (1.f + ldexpf (1.f, -11)), ==, 0x3c00);     /* tie: down to even */
  g_assert_cmphex (one_f16 (1.f + 3 * ldexpf (1.f, -11)), ==, 0x3c02); /* tie: up to even */
  g_assert_cmphex (one_f16 (1.f + ldexpf (1.f, -11) + ldexpf (1.f, -20)), ==, 0x3c01);
  g_assert_cmphex (one_f16 (65519.f), ==, 0x7bff);
  g_assert_cmphex (one_f16 (65520.f), ==, 0x7c00); /* rounds up to inf */
  g_assert_cmphex (one_f16 (-1e9f), ==, 0xfc00);
  g_assert_cmphex (one_f16 (INFINITY), ==, 0x7c00);
  g_assert_cmphex (one_f16 (-0.f), ==, 0x8000);
  g_assert_cmphex (one_f16 (ldexpf (1.f, -25)), ==, 0x0000);     /* tie: to even 0 */
  g_assert_cmphex (one_f16 (3 * ldexpf (1.f, -26)), ==, 0x0001); /* above the tie */
  g_assert_cmphex (one_f16 (3 * ldexpf (1.f, -25)), ==, 0x0002); /* tie: up to even */
  g_assert_cmphex (one_f16 (ldexpf (1.f, -14) - ldexpf (1.f, -25)), ==, 0x0400); /* to normal */
  g_assert_true ((one_f16 (NAN) & 0x7e00) == 0x7e00);

  /* random floats of every magnitude: bulk == one by one */
  for (guint i = 0; i < 100003; i++)
    rnd[i] = bits_f32 (g_rand_int (rand));
  nnp_f32_to_f16 (rnd, rnd_bulk, 100003);
  for (guint i = 0; i < 100003; i++)
    g_assert_cmphex (rnd_bulk[i], ==, one_f16 (rnd[i]));
}

static void
test_bf16_convert (void)
{
  for (guint i = 0; i < 65536; i++) {
    guint16 h = (guint16) i, back;
    float f;

    guint32 u;

    nnp_bf16_to_f32 (&h, &f, 1);
    memcpy (&u, &f, sizeof u);
    g_assert_cmphex (u, ==, (guint32) i << 16);
    nnp_f32_to_bf16 (&f, &back, 1);
    if (isnan (f))
      g_assert_true (isnan (bits_f32 ((guint32) back << 16)));
    else
      g_assert_cmphex (back, ==, i);
  }
  g_assert_cmphex (one_bf16 (bits_f32 (0x3f808000u)), ==, 0x3f80); /* tie: down to even */
  g_assert_cmphex (one_bf16 (bits_f32 (0x3f818000u)), ==, 0x3f82); /* tie: up to even */
  g_assert_cmphex (one_bf16 (bits_f32 (0x3f808001u)), ==, 0x3f81);
  g_assert_cmphex (one_bf16 (bits_f32 (0x7f7fffffu)), ==, 0x7f80); /* FLT_MAX rounds to inf */
  g_assert_cmphex (one_bf16 (bits_f32 (0xff800000u)), ==, 0xff80);
  g_assert_true ((one_bf16 (NAN) & 0x7fc0) == 0x7fc0);
  g_assert_cmpint (nnp_dtype_size (NNP_DTYPE_BFLOAT16), ==, 2);
  g_assert_cmpstr (nnp_dtype_name (NNP_DTYPE_BFLOAT16), ==, "bfloat16");
  g_assert_cmpint (nnp_dtype_from_name ("bfloat16"), ==, NNP_DTYPE_BFLOAT16);
  g_assert_true (nnp_dtype_is_half (NNP_DTYPE_FLOAT16));
  g_assert_true (nnp_dtype_is_half (NNP_DTYPE_BFLOAT16));
  g_assert_false (nnp_dtype_is_half (NNP_DTYPE_FLOAT32));
}

/* ------------------------------------------------------------ TensorProto */

/* A TensorProto of dims {n}, data_type dt and the given payload field. */
static gsize
tensor_proto (guint8 *buf, int dt, guint n, int field, const guint8 *payload, gsize len)
{
  gsize k = 0;

  buf[k++] = 0x08;
  buf[k++] = (guint8) n; /* dims */
  buf[k++] = 0x10;
  buf[k++] = (guint8) dt; /* data_type */
  buf[k++] = (guint8) ((field << 3) | 2);
  buf[k++] = (guint8) len;
  memcpy (buf + k, payload, len);
  return k + len;
}

static void
test_tensor_proto_forms (void)
{
  const int dts[] = { NNP_DTYPE_FLOAT16, NNP_DTYPE_BFLOAT16 };
  const float values[3] = { 1.5f, -2.f, 0.25f };

  for (guint d = 0; d < G_N_ELEMENTS (dts); d++) {
    guint16 bits[3];
    guint8 buf[64], packed[32];
    gsize n = 0, len;
    NnpTensor *raw, *i32;
    g_autoptr (GError) error = NULL;

    for (int i = 0; i < 3; i++)
      bits[i] = dts[d] == NNP_DTYPE_FLOAT16 ? one_f16 (values[i]) : one_bf16 (values[i]);
    /* raw_data (field 9): little-endian 16-bit words */
    len = tensor_proto (buf, dts[d], 3, 9, (const guint8 *) bits, sizeof bits);
    raw = nnp_tensor_from_onnx_bytes (buf, len, NULL, &error);
    g_assert_no_error (error);
    g_assert_cmpint (raw->dtype, ==, dts[d]);
    g_assert_cmpmem (raw->data, raw->nbytes, bits, sizeof bits);
    /* int32_data (field 5, packed varints): one 16-bit pattern per int32 */
    for (int i = 0; i < 3; i++) {
      guint v = bits[i];
      do {
        packed[n++] = (guint8) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
      } while (v);
    }
    len = tensor_proto (buf, dts[d], 3, 5, packed, n);
    i32 = nnp_tensor_from_onnx_bytes (buf, len, NULL, &error);
    g_assert_no_error (error);
    g_assert_cmpint (i32->dtype, ==, dts[d]);
    g_assert_cmpmem (i32->data, i32->nbytes, bits, sizeof bits);
    nnp_tensor_unref (raw);
    nnp_tensor_unref (i32);
  }
}

/* ------------------------------------------------------------ graphs */

static NnpTensor *
half_tensor (NnpDType dt, int rank, const int64_t *dims, const float *values)
{
  NnpShape s;
  NnpTensor *t;

  nnp_shape_set (&s, rank, dims);
  t = nnp_tensor_new (dt, &s, NULL);
  if (dt == NNP_DTYPE_FLOAT16)
    nnp_f32_to_f16 (values, t->data, (gsize) nnp_tensor_numel (t));
  else
    nnp_f32_to_bf16 (values, t->data, (gsize) nnp_tensor_numel (t));
  return t;
}

static float
half_value (NnpDType dt, const NnpTensor *t, int64_t i)
{
  float f;
  if (dt == NNP_DTYPE_FLOAT16)
    nnp_f16_to_f32 ((const guint16 *) t->data + i, &f, 1);
  else
    nnp_bf16_to_f32 ((const guint16 *) t->data + i, &f, 1);
  return f;
}

static NnpStage *
cpu_stage (NnpGraph *sg, const int *nodes, int n_nodes)
{
  g_autoptr (GError) error = NULL;
  NnpStageOptions opts = { .device = "cpu", .threads = 2 };
  NnpStage *stage = nnp_stage_new (sg, nodes, n_nodes, &opts, &error);

  g_assert_no_error (error);
  return stage;
}

/* x (16-bit 2x3) * w (16-bit weight) -> Relu -> + c (a 16-bit Constant
 * node) -> y (16-bit output); z = Cast (relu, float32). */
static NnpGraph *
half_graph (NnpDType dt, const float *w_values, float c_value)
{
  const int64_t dims[] = { 2, 3 }, one = 1;
  NnpGraph *g = nnp_graph_new ("half", 17);
  NnpNode *node;
  NnpAttr attr = { 0 };

  tu_add_input (g, "x", dt, 2, dims);
  tu_add_constant (g, "w", half_tensor (dt, 2, dims, w_values));
  nnp_tensor_unref (nnp_graph_find_value (g, "w")->constant); /* tu_add_constant took a ref */
  node = tu_add_node (g, "c", "Constant", L (NULL), L ("c"));
  attr.name = g_strdup ("value");
  attr.type = NNP_ATTR_TENSOR;
  attr.t = half_tensor (dt, 1, &one, &c_value);
  nnp_node_take_attr (node, &attr);
  tu_add_node (g, "mul", "Mul", L ("x", "w"), L ("m"));
  tu_add_node (g, "relu", "Relu", L ("m"), L ("r"));
  tu_add_node (g, "add", "Add", L ("r", "c"), L ("y"));
  node = tu_add_node (g, "cast", "Cast", L ("r"), L ("z"));
  attr.name = g_strdup ("to");
  attr.type = NNP_ATTR_INT;
  attr.i = NNP_DTYPE_FLOAT32;
  nnp_node_take_attr (node, &attr);
  tu_add_output (g, "y")->dtype = dt;
  tu_add_output (g, "z");
  return g;
}

static void
check_half_graph (NnpDType dt)
{
  const float xv[6] = { 1.5f, -2.f, 0.3f, 7.25f, -0.1f, 100.f };
  const float wv[6] = { 0.7f, 3.f, -1.f, 0.123f, 2.f, 1.001f };
  const float c = 0.01f;
  const int64_t dims[] = { 2, 3 };
  g_autoptr (NnpGraph) g = half_graph (dt, wv, c);
  g_autoptr (NnpGraph) sg = tu_specialize (g, NNP_SPECIALIZE_DEFAULT);
  g_autoptr (NnpGraph) sg2 = NULL;
  g_autoptr (GPtrArray) outs = NULL;
  NnpTensor *x = half_tensor (dt, 2, dims, xv);
  NnpStage *stage = cpu_stage (sg, NULL, 0);
  const NnpTensor *y, *z;
  NnpTensor *w32;
  guint made, hits, made2, hits2;

  /* the pads keep the model's types */
  g_assert_cmpint (nnp_stage_get_input (stage, 0)->dtype, ==, dt);
  g_assert_cmpint (nnp_stage_get_output (stage, 0)->dtype, ==, dt);
  g_assert_cmpint (nnp_stage_get_output (stage, 1)->dtype, ==, NNP_DTYPE_FLOAT32);
  /* the weight is float32 now, converted once per model */
  w32 = nnp_graph_find_value (sg, "w")->constant;
  g_assert_cmpint (w32->dtype, ==, NNP_DTYPE_FLOAT32);
  nnp_derived_cache_get_counts (nnp_graph_get_derived (sg), &made, &hits);
  sg2 = tu_specialize (g, NNP_SPECIALIZE_DEFAULT);
  g_assert_true (nnp_graph_find_value (sg2, "w")->constant == w32);
  nnp_derived_cache_get_counts (nnp_graph_get_derived (sg2), &made2, &hits2);
  g_assert_cmpuint (made2, ==, made);
  g_assert_cmpuint (hits2, >, hits);

  outs = tu_run_stage (stage, &x);
  y = g_ptr_array_index (outs, 0);
  z = g_ptr_array_index (outs, 1);
  g_assert_cmpint (y->dtype, ==, dt);
  for (int i = 0; i < 6; i++) {
    /* computed in float32 from the 16-bit inputs, rounded once at the output */
    float m = half_value (dt, x, i) * half_value (dt, nnp_graph_find_value (g, "w")->constant, i);
    float r = m > 0 ? m : 0, want_c;
    guint16 want;

    {
      NnpTensor *ct = half_tensor (dt, 1, (const int64_t[]){ 1 }, &c);
      want_c = half_value (dt, ct, 0);
      nnp_tensor_unref (ct);
    }
    {
      float yv = r + want_c;
      if (dt == NNP_DTYPE_FLOAT16)
        nnp_f32_to_f16 (&yv, &want, 1);
      else
        nnp_f32_to_bf16 (&yv, &want, 1);
    }
    g_assert_cmphex (((const guint16 *) y->data)[i], ==, want);
    g_assert_cmpfloat (((const float *) z->data)[i], ==, r);
  }
  nnp_stage_free (stage);
  nnp_tensor_unref (x);
}

static void
test_float16_graph (void)
{
  check_half_graph (NNP_DTYPE_FLOAT16);
}

static void
test_bfloat16_graph (void)
{
  check_half_graph (NNP_DTYPE_BFLOAT16);
}

/* x (float32) -> Cast float16 -> h (an output, and crossing to a second
 * stage) -> Add 0 -> y (float32): the Cast rounds, y sees the rounded
 * value; split in two stages, the 16-bit h crosses between them. */
static void
test_cast_rounds_and_crosses (void)
{
  const int64_t dims[] = { 4 };
  const float xv[4] = { 1.f + ldexpf (1.f, -12), 1.f + ldexpf (1.f, -10), 70000.f, -3.f };
  const float zero[4] = { 0 };
  g_autoptr (NnpGraph) g = nnp_graph_new ("cast", 17);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) whole = NULL, a = NULL, b = NULL;
  NnpTensor *x = tu_tensor_f32 (1, dims, xv);
  NnpNode *node;
  NnpAttr attr = { 0 };
  NnpStage *sw, *sa, *sb;
  int first[8], second[8], n_first = 0, n_second = 0;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 1, dims);
  tu_add_constant (g, "zero", tu_tensor_f32 (1, dims, zero));
  nnp_tensor_unref (nnp_graph_find_value (g, "zero")->constant);
  node = tu_add_node (g, "to_half", "Cast", L ("x"), L ("h"));
  attr.name = g_strdup ("to");
  attr.type = NNP_ATTR_INT;
  attr.i = NNP_DTYPE_FLOAT16;
  nnp_node_take_attr (node, &attr);
  tu_add_node (g, "add", "Add", L ("h", "zero"), L ("y"));
  tu_add_output (g, "h")->dtype = NNP_DTYPE_FLOAT16;
  tu_add_output (g, "y");
  sg = tu_specialize (g, NNP_SPECIALIZE_DEFAULT);

  sw = cpu_stage (sg, NULL, 0);
  whole = tu_run_stage (sw, &x);
  {
    const NnpTensor *h = g_ptr_array_index (whole, 0), *y = g_ptr_array_index (whole, 1);
    const float want[4] = { 1.f, 1.f + ldexpf (1.f, -10), INFINITY, -3.f };

    g_assert_cmpint (h->dtype, ==, NNP_DTYPE_FLOAT16);
    for (int i = 0; i < 4; i++) {
      g_assert_cmpfloat (((const float *) y->data)[i], ==, want[i]);
      g_assert_cmphex (((const guint16 *) h->data)[i], ==, one_f16 (want[i]));
    }
  }
  /* the Cast to float16 in one stage, the rest in another */
  for (guint i = 0; i < sg->nodes->len; i++) {
    if (strcmp (nnp_graph_node (sg, i)->name, "to_half") == 0)
      first[n_first++] = (int) i;
    else
      second[n_second++] = (int) i;
  }
  g_assert_cmpint (n_first, ==, 1);
  sa = cpu_stage (sg, first, n_first);
  sb = cpu_stage (sg, second, n_second);
  g_assert_cmpint (nnp_stage_get_n_inputs (sb), ==, 1);
  g_assert_cmpint (nnp_stage_get_input (sb, 0)->dtype, ==, NNP_DTYPE_FLOAT16);
  a = tu_run_stage (sa, &x);
  b = tu_run_stage (sb, (NnpTensor *const *) a->pdata);
  {
    const NnpTensor *yw = g_ptr_array_index (whole, 1), *ys = g_ptr_array_index (b, 0);
    g_assert_cmpmem (yw->data, yw->nbytes, ys->data, ys->nbytes);
  }
  nnp_stage_free (sw);
  nnp_stage_free (sa);
  nnp_stage_free (sb);
  nnp_tensor_unref (x);
}

/* a float16 weight that is also a graph output: it stays float16 there,
 * and the op reading it gets a float32 copy */
static void
test_half_constant_output (void)
{
  const int64_t dims[] = { 3 };
  const float kv[3] = { 0.5f, -1.25f, 3.f }, xv[3] = { 1.f, 2.f, -4.f };
  g_autoptr (NnpGraph) g = nnp_graph_new ("kout", 17);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) outs = NULL;
  NnpTensor *k = half_tensor (NNP_DTYPE_FLOAT16, 1, dims, kv);
  NnpTensor *x = half_tensor (NNP_DTYPE_FLOAT16, 1, dims, xv);
  NnpStage *stage;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT16, 1, dims);
  tu_add_constant (g, "k", k);
  tu_add_node (g, "add", "Add", L ("x", "k"), L ("y"));
  tu_add_output (g, "y")->dtype = NNP_DTYPE_FLOAT16;
  tu_add_output (g, "k");
  sg = tu_specialize (g, NNP_SPECIALIZE_DEFAULT);
  stage = cpu_stage (sg, NULL, 0);
  outs = tu_run_stage (stage, &x);
  for (int i = 0; i < 3; i++)
    g_assert_cmphex (((const guint16 *) ((NnpTensor *) g_ptr_array_index (outs, 0))->data)[i], ==,
                     one_f16 (xv[i] + kv[i]));
  g_assert_cmpint (nnp_graph_find_value (sg, "k")->dtype, ==, NNP_DTYPE_FLOAT16);
  nnp_stage_free (stage);
  nnp_tensor_unref (k);
  nnp_tensor_unref (x);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/half/f16-convert", test_f16_convert);
  g_test_add_func ("/half/bf16-convert", test_bf16_convert);
  g_test_add_func ("/half/tensor-proto", test_tensor_proto_forms);
  g_test_add_func ("/half/float16-graph", test_float16_graph);
  g_test_add_func ("/half/bfloat16-graph", test_bfloat16_graph);
  g_test_add_func ("/half/cast-rounds-and-crosses", test_cast_rounds_and_crosses);
  g_test_add_func ("/half/constant-output", test_half_constant_output);
  return g_test_run ();
}
