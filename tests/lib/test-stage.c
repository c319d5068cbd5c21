/* Unit tests: executing hand-built graphs (broadcasting, memory plan reuse,
 * a graph split into stages run in sequence). */
#include "test-util.h"
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"

#include <math.h>
#include <string.h>

static NnpStage *
new_stage (NnpGraph *sg, const int *nodes, int n_nodes, int threads)
{
  g_autoptr (GError) error = NULL;
  NnpStageOptions opts = { .device = "cpu", .threads = threads };
  NnpStage *stage = nnp_stage_new (sg, nodes, n_nodes, &opts, &error);

  g_assert_no_error (error);
  g_assert_nonnull (stage);
  return stage;
}

/* ------------------------------------------------------------ broadcasting */

static void
check_binary (const char *op, int ra, const int64_t *da, int rb, const int64_t *db, int ry,
              const int64_t *dy, float (*fn) (float, float))
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("bcast", 13);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) outs = NULL;
  NnpTensor *a, *b, *ins[2];
  const NnpTensor *y;
  NnpStage *stage;
  int64_t sa[NNP_MAX_RANK], sb[NNP_MAX_RANK], idx[NNP_MAX_RANK];
  int64_t n;

  tu_add_input (g, "a", NNP_DTYPE_FLOAT32, ra, da);
  tu_add_input (g, "b", NNP_DTYPE_FLOAT32, rb, db);
  tu_add_node (g, "op", op, L ("a", "b"), L ("y"));
  tu_add_output (g, "y");
  sg = tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
  stage = new_stage (sg, NULL, 0, 1);

  a = tu_tensor_f32 (ra, da, NULL);
  b = tu_tensor_f32 (rb, db, NULL);
  nnp_tensor_fill_pattern (a, 1);
  nnp_tensor_fill_pattern (b, 2);
  g_assert_cmpint (nnp_stage_get_n_inputs (stage), ==, 2);
  ins[0] = g_strcmp0 (nnp_stage_get_input (stage, 0)->name, "a") == 0 ? a : b;
  ins[1] = ins[0] == a ? b : a;
  outs = tu_run_stage (stage, ins);
  y = g_ptr_array_index (outs, 0);
  g_assert_cmpint (y->shape.rank, ==, ry);
  for (int d = 0; d < ry; d++)
    g_assert_cmpint (y->shape.dims[d], ==, dy[d]);

  /* reference: numpy broadcasting, right-aligned dims */
  for (int d = ra - 1, s = 1; d >= 0; d--) {
    sa[d] = s;
    s *= (int) da[d];
  }
  for (int d = rb - 1, s = 1; d >= 0; d--) {
    sb[d] = s;
    s *= (int) db[d];
  }
  n = nnp_tensor_numel (y);
  for (int64_t i = 0; i < n; i++) {
    int64_t rest = i, oa = 0, ob = 0;
    float want, got;

    for (int d = ry - 1; d >= 0; d--) {
      idx[d] = rest % dy[d];
      rest /= dy[d];
    }
    for (int d = 0; d < ra; d++)
      oa += (da[d] == 1 ? 0 : idx[d + ry - ra]) * sa[d];
    for (int d = 0; d < rb; d++)
      ob += (db[d] == 1 ? 0 : idx[d + ry - rb]) * sb[d];
    want = fn (((float *) a->data)[oa], ((float *) b->data)[ob]);
    got = ((float *) y->data)[i];
    if (fabsf (got - want) > 1e-6f * (1 + fabsf (want)))
      g_error ("%s: element %" G_GINT64_FORMAT ": got %g, expected %g", op, i, got, want);
  }
  nnp_stage_free (stage);
  nnp_tensor_unref (a);
  nnp_tensor_unref (b);
}

static float
f_add (float x, float y)
{
  return x + y;
}
static float
f_sub (float x, float y)
{
  return x - y;
}
static float
f_mul (float x, float y)
{
  return x * y;
}

static void
test_broadcast (void)
{
  const int64_t a1[] = { 2, 1, 3 }, b1[] = { 4, 1 }, y1[] = { 2, 4, 3 };
  const int64_t a2[] = { 1, 8, 5, 5 }, b2[] = { 1, 8, 1, 1 }, y2[] = { 1, 8, 5, 5 };
  const int64_t a3[] = { 3, 4 }, b3[] = { 1 }, y3[] = { 3, 4 };
  const int64_t a4[] = { 5 }, b4[] = { 2, 3, 1 }, y4[] = { 2, 3, 5 };
  const int64_t a5[] = { 2, 3, 4, 5 }, y5[] = { 2, 3, 4, 5 };

  check_binary ("Add", 3, a1, 2, b1, 3, y1, f_add);
  check_binary ("Mul", 4, a2, 4, b2, 4, y2, f_mul);
  check_binary ("Sub", 2, a3, 1, b3, 2, y3, f_sub);
  check_binary ("Sub", 1, a4, 3, b4, 3, y4, f_sub);
  check_binary ("Add", 4, a5, 4, a5, 4, y5, f_add);
}

/* ------------------------------------------------------------ memory plan */

static void
test_memplan_reuse (void)
{
  const int64_t dims[] = { 1, 16, 32, 32 };
  const char *ops[] = { "Relu", "Sigmoid", "Tanh", "Relu", "Sigmoid", "Tanh", "Relu", "Sigmoid" };
  const int n_ops = G_N_ELEMENTS (ops);
  g_autoptr (NnpGraph) g = nnp_graph_new ("chain", 13);
  g_autoptr (NnpGraph) sg = NULL;
  gsize act_bytes = sizeof (float) * 16 * 32 * 32, sum = 0, arena;
  NnpStage *stage;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, dims);
  for (int i = 0; i < n_ops; i++) {
    g_autofree char *in = i ? g_strdup_printf ("v%d", i - 1) : g_strdup ("x");
    g_autofree char *out = i < n_ops - 1 ? g_strdup_printf ("v%d", i) : g_strdup ("y");
    g_autofree char *name = g_strdup_printf ("n%d", i);
    tu_add_node (g, name, ops[i], L (in), L (out));
  }
  tu_add_output (g, "y");
  sg = tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
  stage = new_stage (sg, NULL, 0, 1);

  sum = act_bytes * (n_ops - 1); /* intermediates only */
  arena = nnp_stage_get_arena_bytes (stage);
  g_test_message ("chain of %d: arena %" G_GSIZE_FORMAT " bytes, intermediates %" G_GSIZE_FORMAT,
                  n_ops, arena, sum);
  g_assert_cmpuint (arena, <, sum);

  /* and the result is right */
  {
    NnpTensor *x = tu_tensor_f32 (4, dims, NULL);
    g_autoptr (GPtrArray) outs = NULL;
    const float *yv;

    nnp_tensor_fill_pattern (x, 7);
    outs = tu_run_stage (stage, &x);
    yv = ((NnpTensor *) g_ptr_array_index (outs, 0))->data;
    for (int64_t i = 0; i < nnp_tensor_numel (x); i++) {
      double v = ((float *) x->data)[i];
      for (int k = 0; k < n_ops; k++) {
        if (strcmp (ops[k], "Relu") == 0)
          v = v > 0 ? v : 0;
        else if (strcmp (ops[k], "Sigmoid") == 0)
          v = 1 / (1 + exp (-v));
        else
          v = tanh (v);
      }
      if (fabs (yv[i] - v) > 1e-5)
        g_error ("chain: element %" G_GINT64_FORMAT ": got %g, expected %g", i, yv[i], v);
    }
    nnp_tensor_unref (x);
  }
  nnp_stage_free (stage);
}

/* ------------------------------------------------------------ stage subsets */

static void
test_split_stages (void)
{
  const int64_t dims[] = { 1, 4, 9, 7 };
  g_autoptr (NnpGraph) g = nnp_graph_new ("split", 13);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) whole_out = NULL, a_out = NULL, b_out = NULL;
  NnpStage *whole, *sa, *sb;
  NnpTensor *x;
  int first[2], second[1];

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, dims);
  tu_add_node (g, "s0", "Sigmoid", L ("x"), L ("t0"));
  tu_add_node (g, "s1", "Tanh", L ("t0"), L ("t1"));
  tu_add_node (g, "s2", "Exp", L ("t1"), L ("y"));
  tu_add_output (g, "y");
  sg = tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
  g_assert_cmpuint (sg->nodes->len, ==, 3);

  first[0] = nnp_graph_find_node (sg, "s0")->index;
  first[1] = nnp_graph_find_node (sg, "s1")->index;
  second[0] = nnp_graph_find_node (sg, "s2")->index;

  x = tu_tensor_f32 (4, dims, NULL);
  nnp_tensor_fill_pattern (x, 0);

  whole = new_stage (sg, NULL, 0, 1);
  whole_out = tu_run_stage (whole, &x);

  sa = new_stage (sg, first, 2, 1);
  sb = new_stage (sg, second, 1, 2);
  g_assert_cmpint (nnp_stage_get_n_inputs (sa), ==, 1);
  g_assert_cmpstr (nnp_stage_get_input (sa, 0)->name, ==, "x");
  g_assert_cmpint (nnp_stage_get_n_outputs (sa), ==, 1);
  g_assert_cmpstr (nnp_stage_get_output (sa, 0)->name, ==, "t1");
  g_assert_cmpint (nnp_stage_get_n_inputs (sb), ==, 1);
  g_assert_cmpstr (nnp_stage_get_input (sb, 0)->name, ==, "t1");
  g_assert_cmpint (nnp_stage_get_n_outputs (sb), ==, 1);
  g_assert_cmpstr (nnp_stage_get_output (sb, 0)->name, ==, "y");

  a_out = tu_run_stage (sa, &x);
  b_out = tu_run_stage (sb, (NnpTensor *const *) a_out->pdata);
  {
    const NnpTensor *w = g_ptr_array_index (whole_out, 0);
    const NnpTensor *s = g_ptr_array_index (b_out, 0);
    g_assert_true (nnp_shape_equal (&w->shape, &s->shape));
    g_assert_cmpmem (w->data, w->nbytes, s->data, s->nbytes);
  }

  /* a bad node list is refused, not a crash */
  {
    g_autoptr (GError) error = NULL;
    NnpStageOptions opts = { .device = "cpu" };
    int bad[] = { 7 };
    g_assert_null (nnp_stage_new (sg, bad, 1, &opts, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
    g_clear_error (&error);
    opts.device = "no-such-device";
    g_assert_null (nnp_stage_new (sg, NULL, 0, &opts, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  }

  nnp_stage_free (whole);
  nnp_stage_free (sa);
  nnp_stage_free (sb);
  nnp_tensor_unref (x);
}

/* ------------------------------------------------ data-dependent shapes */

static int
output_index (NnpStage *stage, const char *name)
{
  for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++)
    if (strcmp (nnp_stage_get_output (stage, i)->name, name) == 0)
      return i;
  g_assert_not_reached ();
  return -1;
}

/* x -> Relu -> r (a static output) -> Greater 0 -> NonZero -> nz: NonZero
 * reads a computed mask, so nz's shape is known only at run time. */
static void
test_data_dependent_tail (void)
{
  const int64_t d6[] = { 6 };
  const float xs[2][6] = { { -1, 2, 0, 3, -4, 5 }, { 1, 1, 1, 1, 1, 1 } };
  const int64_t want_n[2] = { 3, 6 };
  const int64_t want[2][6] = { { 1, 3, 5 }, { 0, 1, 2, 3, 4, 5 } };
  g_autoptr (NnpGraph) g = nnp_graph_new ("tail", 13);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpTensor) zero = NULL;
  NnpTensor *outs[2] = { NULL, NULL };
  NnpStage *stage;
  const int node0[] = { 0 };
  int i_nz, i_r;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 1, d6);
  zero = tu_tensor_f32 (0, NULL, (const float[]){ 0 });
  tu_add_constant (g, "zero", zero);
  tu_add_node (g, "relu", "Relu", L ("x"), L ("r"));
  tu_add_node (g, "gt", "Greater", L ("r", "zero"), L ("m"));
  tu_add_node (g, "nonzero", "NonZero", L ("m"), L ("nz"));
  tu_add_output (g, "nz");
  tu_add_output (g, "r");
  g_assert_true (nnp_graph_sort (g, &error));

  /* without the flag: refused as before, naming the node */
  g_assert_null (nnp_graph_specialize (g, NULL, 0, NNP_SPECIALIZE_DEFAULT, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "node 'nonzero' (NonZero)"));
  g_clear_error (&error);

  sg = tu_specialize (g, NNP_SPECIALIZE_DYNAMIC_TAIL);
  g_assert_nonnull (sg->tail);
  stage = new_stage (sg, NULL, 0, 1);
  i_nz = output_index (stage, "nz");
  i_r = output_index (stage, "r");
  g_assert_true (nnp_stage_output_is_dynamic (stage, i_nz));
  g_assert_false (nnp_stage_output_is_dynamic (stage, i_r));
  g_assert_cmpint (nnp_stage_get_output (stage, i_nz)->shape.rank, ==, -1);

  /* what needs a fixed shape refuses the dynamic output by name */
  g_assert_null (nnp_stage_new_output (stage, i_nz, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "output 'nz'"));
  g_assert_nonnull (strstr (error->message, "nnp_stage_run_alloc"));
  g_clear_error (&error);
  {
    g_autoptr (NnpTensor) x = tu_tensor_f32 (1, d6, xs[0]);
    g_autoptr (NnpTensor) r = nnp_stage_new_output (stage, i_r, NULL);
    g_autoptr (NnpTensor) fake = nnp_tensor_new (NNP_DTYPE_INT64, &(NnpShape){ 2, { 1, 3 } }, NULL);
    NnpTensor *o[2];

    o[i_r] = r;
    o[i_nz] = fake;
    g_assert_false (nnp_stage_run (stage, &x, o, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED);
    g_clear_error (&error);
  }
  /* run twice with data giving different shapes: the tail follows */
  for (int run = 0; run < 2; run++) {
    g_autoptr (NnpTensor) x = tu_tensor_f32 (1, d6, xs[run]);
    const int64_t *nz;
    const float *r;

    g_assert_true (nnp_stage_run_alloc (stage, &x, outs, &error));
    g_assert_no_error (error);
    g_assert_cmpint (outs[i_nz]->dtype, ==, NNP_DTYPE_INT64);
    g_assert_cmpint (outs[i_nz]->shape.rank, ==, 2);
    g_assert_cmpint (outs[i_nz]->shape.dims[0], ==, 1);
    g_assert_cmpint (outs[i_nz]->shape.dims[1], ==, want_n[run]);
    nz = outs[i_nz]->data;
    for (int k = 0; k < want_n[run]; k++)
      g_assert_cmpint (nz[k], ==, want[run][k]);
    r = outs[i_r]->data;
    for (int k = 0; k < 6; k++)
      g_assert_cmpfloat (r[k], ==, MAX (xs[run][k], 0.0f));
    g_clear_pointer (&outs[0], nnp_tensor_unref);
    g_clear_pointer (&outs[1], nnp_tensor_unref);
  }
  nnp_stage_free (stage);

  /* a stage of part of its nodes is refused */
  {
    NnpStageOptions opts = { .device = "cpu" };
    g_assert_null (nnp_stage_new (sg, node0, 1, &opts, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED);
    g_assert_nonnull (strstr (error->message, "NonZero"));
  }
}

/* ------------------------------------------- one thread or the pool, measured */

/* A stage of two or more threads measures its first runs with every node
 * on the pool, then on one thread, then the mix, and again from run 100
 * (cpu-exec.c): every run, during and after, gives the same bytes as a
 * one-thread stage. */
static void
test_threads_measured (void)
{
  const int64_t da[] = { 64, 96 }, dw[] = { 96, 80 }, db[] = { 80 };
  g_autoptr (NnpGraph) g = nnp_graph_new ("measured", 13);
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) want = NULL;
  NnpTensor *a = tu_tensor_f32 (2, da, NULL), *w = tu_tensor_f32 (2, dw, NULL);
  NnpTensor *b = tu_tensor_f32 (1, db, NULL);
  NnpStage *one, *two;

  nnp_tensor_fill_pattern (w, 2);
  nnp_tensor_fill_pattern (b, 3);
  tu_add_input (g, "a", NNP_DTYPE_FLOAT32, 2, da);
  tu_add_constant (g, "w", w);
  tu_add_constant (g, "b", b);
  tu_add_node (g, "mm", "MatMul", L ("a", "w"), L ("m"));
  tu_add_node (g, "add", "Add", L ("m", "b"), L ("s"));
  tu_add_node (g, "relu", "Relu", L ("s"), L ("r"));
  tu_add_node (g, "soft", "Softmax", L ("r"), L ("y"));
  tu_add_output (g, "y");
  sg = tu_specialize (g, 0);
  one = new_stage (sg, NULL, 0, 1);
  two = new_stage (sg, NULL, 0, 2);
  nnp_tensor_fill_pattern (a, 1);
  want = tu_run_stage (one, &a);
  for (int run = 0; run < 120; run++) {
    g_autoptr (GPtrArray) got = tu_run_stage (two, &a);
    const NnpTensor *x = g_ptr_array_index (want, 0), *y = g_ptr_array_index (got, 0);

    g_assert_cmpuint (y->nbytes, ==, x->nbytes);
    if (memcmp (x->data, y->data, x->nbytes) != 0)
      g_error ("run %d on two threads differs from one thread", run);
  }
  nnp_stage_free (one);
  nnp_stage_free (two);
  nnp_tensor_unref (a);
  nnp_tensor_unref (w);
  nnp_tensor_unref (b);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stage/broadcast", test_broadcast);
  g_test_add_func ("/stage/memplan-reuse", test_memplan_reuse);
  g_test_add_func ("/stage/split-stages", test_split_stages);
  g_test_add_func ("/stage/data-dependent-tail", test_data_dependent_tail);
  g_test_add_func ("/stage/threads-measured", test_threads_measured);
  return g_test_run ();
}
