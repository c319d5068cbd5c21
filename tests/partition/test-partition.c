/* Unit tests of the partitioner: optimal splits against brute force on
 * random DAGs, plan JSON round trip, rejected plans and manual splits,
 * stages of a plan run in sequence == the whole graph. */
#include "../lib/test-util.h"
#include "partition/partition.h"

#include <math.h>
#include <string.h>

#define L(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* ------------------------------------------------------------ random DAGs */

/* n Relu/Sum nodes: node i reads 1..3 earlier values (graph input x or node
 * outputs); the last node and a few random ones are graph outputs. */
static NnpGraph *
random_dag (GRand *r, int n)
{
  NnpGraph *g = nnp_graph_new ("random", 13);
  int64_t dims[1] = { 4 };
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 1, dims);
  for (int i = 0; i < n; i++) {
    int n_in = g_rand_int_range (r, 1, i == 0 ? 2 : 4);
    const char *ins[4] = { NULL };
    g_autofree char *name = g_strdup_printf ("n%d", i);
    g_autofree char *out = g_strdup_printf ("v%d", i);
    char *in_names[3] = { NULL };
    const char *outs[2] = { out, NULL };

    for (int q = 0; q < n_in; q++) {
      int src = g_rand_int_range (r, -1, i);
      /* prefer recent values (more chain-like, like real networks) */
      if (g_rand_boolean (r) && i > 0)
        src = i - 1;
      in_names[q] = src < 0 ? g_strdup ("x") : g_strdup_printf ("v%d", src);
      ins[q] = in_names[q];
    }
    tu_add_node (g, name, n_in == 1 ? "Relu" : "Sum", ins, outs);
    for (int q = 0; q < n_in; q++)
      g_free (in_names[q]);
    if (i == n - 1 || g_rand_int_range (r, 0, 8) == 0)
      tu_add_output (g, out);
  }
  g_assert_true (nnp_graph_sort (g, &error));
  g_assert_no_error (error);
  nnp_graph_update_uses (g);
  return g;
}

typedef struct {
  const NnpGraph *g;
  const NnpSplitProblem *p;
  int *assign;
  double best;
  int n;
} Brute;

/* every assignment with stage(u) <= stage(v) on edges and no empty stage */
static void
brute_rec (Brute *b, int i)
{
  int k = b->p->n_stages;

  if (i == b->n) {
    g_autofree int *used = g_new0 (int, k);
    double v;
    for (int x = 0; x < b->n; x++)
      used[b->assign[x]] = 1;
    for (int s = 0; s < k; s++)
      if (!used[s])
        return;
    for (int x = 0; x < b->n; x++)
      if (!isfinite (b->p->node_ms[(gsize) b->assign[x] * b->n + x]))
        return;
    v = nnp_split_evaluate (b->g, b->p, b->assign, NULL, NULL, NULL, NULL);
    b->best = MIN (b->best, v);
    return;
  }
  for (int s = 0; s < k; s++) {
    const NnpNode *node = nnp_graph_node (b->g, i);
    gboolean ok = TRUE;
    for (int q = 0; q < node->n_inputs && ok; q++) {
      NnpValue *v = nnp_node_input (b->g, node, q);
      if (v && v->producer >= 0 && b->assign[v->producer] > s)
        ok = FALSE;
    }
    if (!ok)
      continue;
    b->assign[i] = s;
    brute_rec (b, i + 1);
  }
}

static void
test_dp_vs_brute_force (void)
{
  GRand *r = g_rand_new_with_seed (1234);
  int trials = 0, topo_worse = 0;

  for (int t = 0; t < 60; t++) {
    int n = g_rand_int_range (r, 4, t < 30 ? 11 : 9);
    int k = g_rand_int_range (r, 2, t < 30 ? 4 : 5);
    g_autoptr (NnpGraph) g = random_dag (r, n);
    guint nv = g->values->len;
    g_autofree double *ms = g_new (double, (gsize) k * n);
    g_autofree double *bytes = g_new (double, nv);
    g_autofree NnpXferCost *out = g_new0 (NnpXferCost, k);
    g_autofree NnpXferCost *in = g_new0 (NnpXferCost, k);
    g_autofree int *stage_of = g_new (int, n), *assign = g_new (int, n);
    NnpSplitProblem p = { 0 };
    Brute b = { 0 };
    g_autoptr (GError) error = NULL;
    double dp = -1, topo = -1;
    gboolean too_many = FALSE, ok;

    n = g->nodes->len;
    if (k > n)
      continue;
    for (int s = 0; s < k; s++)
      for (int i = 0; i < n; i++) {
        ms[(gsize) s * n + i] = g_rand_double_range (r, 0.1, 10.0) * (s % 2 ? 1.7 : 1.0);
        /* device 2 cannot run some nodes */
        if (s == 2 && g_rand_int_range (r, 0, 6) == 0)
          ms[(gsize) s * n + i] = INFINITY;
      }
    for (guint id = 0; id < nv; id++)
      bytes[id] = g_rand_double_range (r, 0, 1000.0);
    for (int c = 0; c + 1 < k; c++) {
      out[c] = (NnpXferCost) { 0.05, 0.01, g_rand_double_range (r, 0, 0.004) };
      in[c] = (NnpXferCost) { 0.02, 0.0, g_rand_double_range (r, 0, 0.002) };
    }
    p.n_stages = k;
    p.n_nodes = n;
    p.node_ms = ms;
    p.value_bytes = bytes;
    p.xfer_out = out;
    p.xfer_in = in;

    b.g = g;
    b.p = &p;
    b.assign = assign;
    b.best = INFINITY;
    b.n = n;
    brute_rec (&b, 0);

    ok = nnp_split_solve_ideals (g, &p, stage_of, &dp, &too_many, &error);
    if (!isfinite (b.best)) {
      g_assert_false (ok);
      g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
      continue;
    }
    g_assert_no_error (error);
    g_assert_true (ok);
    g_assert_cmpfloat_with_epsilon (dp, b.best, 1e-9 * b.best);
    /* the returned assignment is valid and achieves it */
    g_assert_cmpfloat_with_epsilon (nnp_split_evaluate (g, &p, stage_of, NULL, NULL, NULL, NULL),
                                    b.best, 1e-9 * b.best);
    for (int i = 0; i < n; i++) {
      const NnpNode *node = nnp_graph_node (g, i);
      for (int q = 0; q < node->n_inputs; q++) {
        NnpValue *v = nnp_node_input (g, node, q);
        if (v && v->producer >= 0)
          g_assert_cmpint (stage_of[v->producer], <=, stage_of[i]);
      }
    }
    /* the topological-order DP is optimal for its order only */
    if (nnp_split_solve_topo (g, &p, stage_of, &topo, NULL)) {
      g_assert_cmpfloat (topo, >=, b.best * (1 - 1e-9));
      topo_worse += topo > b.best * (1 + 1e-9);
    }
    trials++;
  }
  g_test_message ("%d random DAGs: ideal DP == brute force; topo DP worse on %d", trials,
                  topo_worse);
  g_assert_cmpint (trials, >=, 30);
  g_rand_free (r);
}

/* ------------------------------------------------------------ a small model */

/* x -> A -> a -> C -> c ;  x -> B -> b -> D -> d ;  Sum(c, d) -> E -> y */
static NnpGraph *
diamond (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("diamond", 13);
  int64_t dims[2] = { 2, 3 };
  g_autoptr (GError) error = NULL;
  NnpGraph *sg;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims);
  tu_add_node (g, "A", "Relu", L ("x"), L ("a"));
  tu_add_node (g, "B", "Neg", L ("x"), L ("b"));
  tu_add_node (g, "C", "Exp", L ("a"), L ("c"));
  tu_add_node (g, "D", "Abs", L ("b"), L ("d"));
  tu_add_node (g, "E", "Sum", L ("c", "d", "x"), L ("y"));
  tu_add_output (g, "y");
  g_assert_true (nnp_graph_sort (g, &error));
  sg = nnp_graph_specialize (g, NULL, 0, NNP_SPECIALIZE_NO_FUSION, &error);
  g_assert_no_error (error);
  return sg;
}

static NnpPlan *
plan_of (const char *json)
{
  g_autoptr (GError) error = NULL;
  NnpPlan *plan = nnp_plan_from_json (json, -1, &error);
  g_assert_no_error (error);
  return plan;
}

static void
expect_rejected (NnpGraph *g, const char *json, const char *message)
{
  g_autoptr (GError) error = NULL;
  NnpPlan *plan = nnp_plan_from_json (json, -1, &error);

  if (plan) {
    g_assert_false (nnp_plan_validate (plan, g, &error));
    nnp_plan_free (plan);
  }
  g_assert_nonnull (error);
  if (strstr (error->message, message) == NULL)
    g_error ("plan %s: expected '%s' in '%s'", json, message, error->message);
}

#define HEAD "{\"model\":\"m.onnx\",\"stages\":["

static void
test_malformed_plans (void)
{
  g_autoptr (NnpGraph) g = diamond ();
  g_autoptr (GError) error = NULL;
  NnpPlan *plan;

  expect_rejected (g, "{\"model\": ", "malformed JSON");
  expect_rejected (g, "[1,2]", "expected a JSON object");
  expect_rejected (g, "{\"stages\":[]}", "missing \"model\"");
  expect_rejected (g, HEAD "]}", "missing \"stages\"");
  expect_rejected (g, HEAD "{\"nodes\":\"A\"}]}", "\"nodes\": expected an array");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"B\",\"C\",\"D\",\"E\",\"Z\"]}]}",
                   "stage 0: unknown node 'Z'");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"B\",\"C\",\"D\"]}]}",
                   "node 'E' (Sum, index 4) is in no stage");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"B\",\"C\"]},{\"nodes\":[\"C\",\"D\",\"E\"]}]}",
                   "node 'C' is listed twice (stage 0 and stage 1)");
  expect_rejected (g, HEAD "{\"nodes\":[]},{\"nodes\":[\"A\",\"B\",\"C\",\"D\",\"E\"]}]}",
                   "stage 0 has no nodes");
  expect_rejected (g, HEAD "{\"device\":\"tpu9\",\"nodes\":[\"A\",\"B\",\"C\",\"D\",\"E\"]}]}",
                   "stage 0: device 'tpu9' is not available");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"B\",\"E\"]},{\"nodes\":[\"C\",\"D\"]}]}",
                   "stage 0 is not convex");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"D\"]},{\"nodes\":[\"B\",\"C\"]},"
                   "{\"nodes\":[\"E\"]}]}", "cycle between stages");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\",\"E\"]},{\"nodes\":[\"B\",\"D\"]}]}",
                   "stages out of order");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\"],\"outputs\":[\"x\"]},"
                   "{\"nodes\":[\"B\",\"D\",\"E\"]}]}", "stage 0: missing output 'c'");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\"]},"
                   "{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"c\"]}]}",
                   "stage 1: missing input 'x'");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\"]},"
                   "{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"x\",\"c\",\"q\"]}]}",
                   "stage 1: unknown value 'q' in inputs");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\"]},"
                   "{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"x\",\"c\",\"a\"]}]}",
                   "'a' in inputs does not cross");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\"],\"outputs\":[\"x\",\"c\"]},"
                   "{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"c\",\"x\"]}]}",
                   "stage 1: inputs are not stage 0's outputs in the same order");
  expect_rejected (g, "{\"model\":\"m\",\"shapes\":{\"x\":[1,-2]},\"stages\":[{\"nodes\":[]}]}",
                   "dims must be non-negative integers");

  /* manual splits */
  {
    int bad[2] = { 3, 2 };
    plan = nnp_plan_new_from_cuts ("m", NULL, NULL, 0, g, bad, 2, NULL, 0, NULL, &error);
    g_assert_null (plan);
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_assert_nonnull (strstr (error->message, "cut 1: index 2"));
    g_clear_error (&error);
    plan = nnp_plan_new_from_cut_names ("m", NULL, NULL, 0, g, L ("C", "nope"), 2, NULL, 0, NULL,
                                        &error);
    g_assert_null (plan);
    g_assert_nonnull (strstr (error->message, "cut 1: unknown node 'nope'"));
    g_clear_error (&error);
  }
  /* devices */
  {
    int n = 0;
    g_assert_null (nnp_device_specs_parse ("cpu:1,tpu9", &n, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
    g_clear_error (&error);
    g_assert_null (nnp_device_specs_parse ("cpu:0", &n, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_clear_error (&error);
  }
  /* a valid plan without boundary lists resolves */
  plan = plan_of (HEAD "{\"nodes\":[\"C\",\"A\"]},{\"nodes\":[\"B\",\"D\",\"E\"]}]}");
  g_assert_true (nnp_plan_resolve (plan, g, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (plan->stages[0].nodes[0], ==, "A");
  g_assert_cmpint (plan->stages[0].n_outputs, ==, 2);
  g_assert_cmpstr (plan->stages[0].outputs[0], ==, "x");   /* graph input first */
  g_assert_cmpstr (plan->stages[0].outputs[1], ==, "c");
  nnp_plan_free (plan);
}

static void
test_json_round_trip (void)
{
  g_autoptr (NnpGraph) g = diamond ();
  g_autoptr (GError) error = NULL;
  NnpShape s = { 2, { 2, 3 } };
  int cuts[2] = { 2, 4 };
  NnpInputShape shapes[1] = { { "x", s } };
  NnpDeviceSpec devs[2] = { { (char *) "cpu", 1 }, { (char *) "cpu", 2 } };
  NnpCostModel *cm = nnp_cost_model_new (g, NULL, "x=2x3", NNP_COST_ESTIMATE);
  NnpPlan *plan, *back;
  g_autofree char *a = NULL, *b = NULL;

  plan = nnp_plan_new_from_cuts ("m.onnx", "abc", shapes, 1, g, cuts, 2, devs, 2, cm, &error);
  g_assert_no_error (error);
  g_assert_cmpint (plan->n_stages, ==, 3);
  g_assert_cmpint (plan->stages[2].threads, ==, 2);
  g_assert_cmpfloat (plan->predicted_bottleneck_ms, >, 0);
  plan->stages[1].cpus = g_new (int, 2);
  plan->stages[1].cpus[0] = 0;
  plan->stages[1].cpus[1] = 1;
  plan->stages[1].n_cpus = 2;
  a = nnp_plan_to_json (plan);
  back = nnp_plan_from_json (a, -1, &error);
  g_assert_no_error (error);
  b = nnp_plan_to_json (back);
  g_assert_cmpstr (a, ==, b);
  g_assert_true (nnp_plan_validate (back, g, &error));
  g_assert_no_error (error);
  g_assert_cmpint (back->n_shapes, ==, 1);
  g_assert_cmpint (back->shapes[0].dims[1], ==, 3);
  g_assert_cmpint (back->stages[1].n_cpus, ==, 2);
  nnp_plan_free (plan);
  nnp_plan_free (back);
  nnp_cost_model_free (cm);
}

/* run the stages of a plan in sequence; compare with the whole graph */
static void
check_plan_runs (NnpGraph *g, NnpPlan *plan)
{
  g_autoptr (GError) error = NULL;
  NnpStage *whole = nnp_stage_new (g, NULL, 0, NULL, &error);
  NnpTensor *in[1];
  GPtrArray *ref, *cur = NULL;

  g_assert_no_error (error);
  {
    const NnpValue *v = nnp_stage_get_input (whole, 0);
    in[0] = nnp_tensor_new (v->dtype, &v->shape, &error);
    nnp_tensor_fill_pattern (in[0], 0);
  }
  ref = tu_run_stage (whole, in);
  for (int k = 0; k < plan->n_stages; k++) {
    NnpStage *st = nnp_plan_stage_new (plan, k, g, &error);
    GPtrArray *next;
    g_assert_no_error (error);
    next = tu_run_stage (st, k == 0 ? in : (NnpTensor *const *) cur->pdata);
    if (cur)
      g_ptr_array_unref (cur);
    cur = next;
    nnp_stage_free (st);
  }
  g_assert_cmpuint (cur->len, ==, ref->len);
  for (guint i = 0; i < ref->len; i++) {
    NnpTensor *x = g_ptr_array_index (cur, i), *y = g_ptr_array_index (ref, i);
    g_assert_cmpuint (x->nbytes, ==, y->nbytes);
    g_assert_true (memcmp (x->data, y->data, x->nbytes) == 0);
  }
  g_ptr_array_unref (cur);
  g_ptr_array_unref (ref);
  nnp_tensor_unref (in[0]);
  nnp_stage_free (whole);
}

static void
test_pass_through (void)
{
  g_autoptr (NnpGraph) g = diamond ();
  g_autoptr (GError) error = NULL;
  /* x passes through stage 1 untouched (read by B in stage 2 and by E) */
  NnpPlan *plan = plan_of (HEAD "{\"nodes\":[\"A\"]},{\"nodes\":[\"C\"]},"
                           "{\"nodes\":[\"B\",\"D\",\"E\"]}]}");

  g_assert_true (nnp_plan_resolve (plan, g, &error));
  g_assert_no_error (error);
  g_assert_cmpint (plan->stages[1].n_inputs, ==, 2);
  g_assert_cmpstr (plan->stages[1].outputs[0], ==, "x");
  check_plan_runs (g, plan);
  nnp_plan_free (plan);

  /* every automatic split of the diamond runs */
  for (int k = 1; k <= 5; k++) {
    NnpCostModel *cm = nnp_cost_model_new (g, NULL, NULL, NNP_COST_ESTIMATE);
    NnpDeviceSpec dev = { (char *) "cpu", 1 };
    NnpSplitOptions o = { &dev, 1, k, 0, 0 };
    plan = nnp_plan_new_auto ("m", NULL, NULL, 0, g, &o, cm, &error);
    g_assert_no_error (error);
    g_assert_cmpint (plan->n_stages, ==, k);
    check_plan_runs (g, plan);
    nnp_plan_free (plan);
    nnp_cost_model_free (cm);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/partition/dp-vs-brute-force", test_dp_vs_brute_force);
  g_test_add_func ("/partition/malformed-plans", test_malformed_plans);
  g_test_add_func ("/partition/json-round-trip", test_json_round_trip);
  g_test_add_func ("/partition/pass-through", test_pass_through);
  return g_test_run ();
}
