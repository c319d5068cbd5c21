/* Unit tests of the partitioner: optimal splits against brute force on
 * random DAGs (per-device costs, unsupported nodes, transfers), placement
 * respecting op support, transfer costs steering the cut, plan JSON round
 * trip, rejected plans and manual splits, stages of a plan run in sequence
 * == the whole graph; with an OpenCL device: heterogeneous cpu + opencl
 * splits run against the whole graph on the CPU. */
#include "../lib/test-util.h"
#include "partition/partition.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "backends/device-list.h"
#include "graph/graph-edit.h"

#include <math.h>
#include <string.h>

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
    g_autofree double *ms = g_new (double, (gsize) k *n);
    g_autofree double *bytes = g_new (double, nv);
    g_autofree NnpXferCost *out = g_new0 (NnpXferCost, k);
    g_autofree NnpXferCost *in = g_new0 (NnpXferCost, k);
    g_autofree int *stage_of = g_new (int, n), *assign = g_new (int, n);
    NnpSplitProblem p = { 0 };
    NnpXferCost gin = { 0.1, 0.02, 0.001 }, gout = { 0.0, 0.05, 0.003 };
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
      out[c] = (NnpXferCost){ 0.05, 0.01, g_rand_double_range (r, 0, 0.004) };
      in[c] = (NnpXferCost){ 0.02, 0.0, g_rand_double_range (r, 0, 0.002) };
    }
    p.n_stages = k;
    p.n_nodes = n;
    p.node_ms = ms;
    p.value_bytes = bytes;
    p.xfer_out = out;
    p.xfer_in = in;
    if (t % 2) { /* a device first / last stage: graph input / output copies */
      p.xfer_graph_in = &gin;
      p.xfer_graph_out = &gout;
    }

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

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims);
  tu_add_node (g, "A", "Relu", L ("x"), L ("a"));
  tu_add_node (g, "B", "Neg", L ("x"), L ("b"));
  tu_add_node (g, "C", "Exp", L ("a"), L ("c"));
  tu_add_node (g, "D", "Abs", L ("b"), L ("d"));
  tu_add_node (g, "E", "Sum", L ("c", "d", "x"), L ("y"));
  tu_add_output (g, "y");
  return tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
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
  expect_rejected (g,
                   HEAD "{\"nodes\":[\"A\",\"D\"]},{\"nodes\":[\"B\",\"C\"]},{\"nodes\":[\"E\"]}]}",
                   "cycle between stages");
  expect_rejected (g, HEAD "{\"nodes\":[\"A\",\"C\",\"E\"]},{\"nodes\":[\"B\",\"D\"]}]}",
                   "stages out of order");
  expect_rejected (
      g, HEAD "{\"nodes\":[\"A\",\"C\"],\"outputs\":[\"x\"]},{\"nodes\":[\"B\",\"D\",\"E\"]}]}",
      "stage 0: missing output 'c'");
  expect_rejected (
      g, HEAD "{\"nodes\":[\"A\",\"C\"]},{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"c\"]}]}",
      "stage 1: missing input 'x'");
  expect_rejected (
      g,
      HEAD
      "{\"nodes\":[\"A\",\"C\"]},{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"x\",\"c\",\"q\"]}]}",
      "stage 1: unknown value 'q' in inputs");
  expect_rejected (
      g,
      HEAD
      "{\"nodes\":[\"A\",\"C\"]},{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"x\",\"c\",\"a\"]}]}",
      "'a' in inputs does not cross");
  expect_rejected (
      g,
      HEAD
      "{\"nodes\":[\"A\",\"C\"],\"outputs\":[\"x\",\"c\"]},{\"nodes\":[\"B\",\"D\",\"E\"],\"inputs\":[\"c\",\"x\"]}]}",
      "stage 1: inputs are not stage 0's outputs in the same order");
  expect_rejected (g, "{\"model\":\"m\",\"shapes\":{\"x\":[1,-2]},\"stages\":[{\"nodes\":[]}]}",
                   "dims must be integers in 0..");

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
    /* a device list (nnpipeline devices=, nnpipe split --devices) gives the
     * single spec parser's verdict on each item (tests/plugins/test-errors.c
     * checks that parser): an absent OpenCL device is NNP_ERROR_DEVICE, not a
     * malformed item; an unknown kind is a device error, a known one written
     * wrong (and an empty list) a plan error */
    const char *good[] = { "cpu",      "CPU",      " cpu:2 ",     "cpu:1024",       "opencl",
                           "opencl:0", "opencl:1", "OpenCL:H100", "opencl:portable" };
    const int good_threads[] = { 0, 0, 2, 1024, 0, 0, 0, 0, 0 };
    const char *bad[] = { "",         "gpu",    "cpu:",    "cpu:0", "cpu:-1",
                          "cpu:1025", "cpu:2x", "opencl:", "cpux",  "cuda:0" };
    int n = 0;

    for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
      char *dev = NULL;
      int threads = -1;
      NnpDeviceSpec *specs;

      /* a kind this build lacks (OpenCL in the ThreadSanitizer build) is a
       * device error for both parsers */
      if (!nnp_device_spec_parse (good[i], &dev, &threads, &error)) {
        g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
        g_clear_error (&error);
        g_assert_null (nnp_device_specs_parse (good[i], &n, &error));
        g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
        g_clear_error (&error);
        continue;
      }
      g_assert_cmpint (threads, ==, good_threads[i]);
      g_free (dev);
      specs = nnp_device_specs_parse (good[i], &n, &error);
      if (specs) {
        g_assert_cmpint (n, ==, 1);
        g_assert_cmpint (specs[0].threads, ==, MAX (good_threads[i], 1));
        nnp_device_specs_free (specs, n);
      } else {
        g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
        g_clear_error (&error);
      }
    }
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
      /* the single parser's verdict: an unknown kind is a device error
       * (which kinds are known depends on the build), a known one written
       * wrong an invalid value; in a list (and an empty list) the latter
       * is a plan error */
      gboolean empty = *bad[i] == '\0';
      int code;

      g_assert_false (nnp_device_spec_parse (bad[i], NULL, NULL, &error));
      code = (!empty && g_error_matches (error, NNP_ERROR, NNP_ERROR_DEVICE)) ? NNP_ERROR_DEVICE
                                                                              : NNP_ERROR_PLAN;
      g_clear_error (&error);
      g_assert_null (nnp_device_specs_parse (bad[i], &n, &error));
      g_assert_error (error, NNP_ERROR, code);
      g_clear_error (&error);
    }
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
  g_assert_cmpstr (plan->stages[0].outputs[0], ==, "x"); /* graph input first */
  g_assert_cmpstr (plan->stages[0].outputs[1], ==, "c");
  nnp_plan_free (plan);
}

/* F1 (issue 14): a length-delimited buffer is read within its length only;
 * the copy sits at the very end of a heap block so AddressSanitizer sees
 * any byte read past it.  The message stays one printable line. */
static void
expect_malformed_buffer (const char *text, gsize len, const char *near)
{
  g_autoptr (GError) error = NULL;
  char *block = g_malloc (len + 8);
  char *buf = block + 8;
  NnpPlan *plan;

  memcpy (buf, text, len); /* no NUL after it */
  plan = nnp_plan_from_json (buf, (gssize) len, &error);
  g_assert_null (plan);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "malformed JSON"));
  if (strstr (error->message, near) == NULL)
    g_error ("'%.*s': expected '%s' in '%s'", (int) len, text, near, error->message);
  g_assert_null (strchr (error->message, '\n'));
  g_free (block);
}

static void
test_plan_json_buffers (void)
{
  expect_malformed_buffer ("", 0, "near '<end of input>'");
  expect_malformed_buffer ("{", 1, "malformed JSON");
  expect_malformed_buffer ("{\"model\": ", 10, "malformed JSON");
  expect_malformed_buffer ("{\"model\": ", 9, "malformed JSON");
  expect_malformed_buffer ("{\"model\":\"m.onnx", 16, "malformed JSON");
  expect_malformed_buffer ("{\"model\" ] 0123456789012345678901234567890", 41,
                           "] 012345678901234567'");
  /* control bytes in the snippet do not break the one-line message */
  expect_malformed_buffer ("{\n\n\x01\x02 x", 7, "malformed JSON");
  /* a NUL inside the length ends the text the snippet shows */
  expect_malformed_buffer ("{\"a\" x\0yyyy", 11, "x'");
  /* a valid plan in a buffer without a NUL */
  {
    static const char ok[] = HEAD "{\"nodes\":[\"A\"]}]}";
    g_autoptr (GError) error = NULL;
    char *buf = g_malloc (sizeof ok - 1);
    NnpPlan *plan;
    memcpy (buf, ok, sizeof ok - 1);
    plan = nnp_plan_from_json (buf, sizeof ok - 1, &error);
    g_assert_no_error (error);
    g_assert_cmpint (plan->n_stages, ==, 1);
    nnp_plan_free (plan);
    g_free (buf);
  }
}

/* F3 (issue 14): plan numbers are checked as doubles before they become
 * integers; 1e13 or 1e400 (inf) is an error naming the field, not UB. */
static void
test_plan_numbers (void)
{
  g_autoptr (NnpGraph) g = diamond ();
  static const char *const bad[][2] = {
    { HEAD "{\"threads\":1e13,\"nodes\":[\"A\"]}]}",
      "stage 0: \"threads\" must be an integer in 1..1024" },
    { HEAD "{\"threads\":-1e13,\"nodes\":[\"A\"]}]}", "\"threads\" must be an integer" },
    { HEAD "{\"threads\":1e400,\"nodes\":[\"A\"]}]}", "\"threads\" must be an integer" },
    { HEAD "{\"threads\":2.5,\"nodes\":[\"A\"]}]}", "\"threads\" must be an integer" },
    { HEAD "{\"threads\":\"4\",\"nodes\":[\"A\"]}]}", "\"threads\" must be an integer" },
    { HEAD "{\"threads\":0,\"nodes\":[\"A\"]}]}", "\"threads\" must be an integer in 1..1024" },
    { HEAD "{\"nodes\":[\"A\"]}],\"bottleneck_stage\":1e13}",
      "plan: \"bottleneck_stage\" must be an integer" },
    { HEAD "{\"nodes\":[\"A\"]}],\"bottleneck_stage\":-1e400}",
      "\"bottleneck_stage\" must be an integer" },
    { HEAD "{\"nodes\":[\"A\"],\"out_bytes\":1e300}]}",
      "stage 0: \"out_bytes\" must be an integer" },
    { HEAD "{\"nodes\":[\"A\"],\"cpus\":[1e13]}]}", "stage 0: bad cpu number" },
    { HEAD "{\"nodes\":[\"A\"],\"cut_ms\":1e999}]}",
      "stage 0: \"cut_ms\" must be a finite number" },
    { HEAD "{\"nodes\":[\"A\"]}],\"predicted_bottleneck_ms\":-1e999}",
      "plan: \"predicted_bottleneck_ms\" must be a finite" },
    { HEAD "{\"nodes\":[\"A\"],\"cpus\":[-1]}]}", "stage 0: bad cpu number" },
    { "{\"model\":\"m\",\"shapes\":{\"x\":[1,1e300]},\"stages\":[{\"nodes\":[]}]}",
      "shape of 'x': dims must be integers" },
    { "{\"model\":\"m\",\"shapes\":{\"x\":[1e400]},\"stages\":[{\"nodes\":[]}]}",
      "shape of 'x': dims must be integers" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    expect_rejected (g, bad[i][0], bad[i][1]);
  /* names go into one-line messages: no control characters (found by fuzz-plan-json) */
  expect_rejected (g, HEAD "{\"nodes\":[\"A\\n\"]}]}", "holds a control character (near 'A?')");
  expect_rejected (g, "{\"model\":\"m\",\"shapes\":{\"x\\u0001\":[1]},\"stages\":[{\"nodes\":[]}]}",
                   "holds a control character");
  /* in range they still load */
  {
    NnpPlan *plan = plan_of (
        HEAD
        "{\"threads\":1024,\"cpus\":[0,3],\"out_bytes\":4096,\"nodes\":[\"A\"]}],\"bottleneck_stage\":0}");
    g_assert_cmpint (plan->stages[0].threads, ==, 1024);
    g_assert_cmpint (plan->stages[0].n_cpus, ==, 2);
    g_assert_cmpint (plan->stages[0].cpus[1], ==, 3);
    g_assert_cmpint (plan->stages[0].out_bytes, ==, 4096);
    g_assert_cmpint (plan->bottleneck_stage, ==, 0);
    nnp_plan_free (plan);
  }
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

/* The whole graph as one CPU stage (*ref) and the plan's stages in sequence
 * (*got), both on pattern inputs (seed = input index; the graph has n_in
 * inputs), host tensors on every device (nnp_stage_run).  Each stage must be
 * on the plan's device. */
static void
run_plan_and_whole (NnpGraph *g, NnpPlan *plan, int n_in, GPtrArray **ref, GPtrArray **got)
{
  g_autoptr (GError) error = NULL;
  NnpStage *whole = nnp_stage_new (g, NULL, 0, NULL, &error);
  g_autofree NnpTensor **in = g_new0 (NnpTensor *, n_in);
  GPtrArray *cur = NULL;

  g_assert_no_error (error);
  g_assert_cmpint (nnp_stage_get_n_inputs (whole), ==, n_in);
  for (int i = 0; i < n_in; i++) {
    const NnpValue *v = nnp_stage_get_input (whole, i);
    in[i] = nnp_tensor_new (v->dtype, &v->shape, &error);
    nnp_tensor_fill_pattern (in[i], (guint32) i);
  }
  *ref = tu_run_stage (whole, in);
  for (int k = 0; k < plan->n_stages; k++) {
    NnpStage *st = nnp_plan_stage_new (plan, k, g, &error);
    GPtrArray *next;
    g_assert_no_error (error);
    if (plan->stages[k].device)
      g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (st)), ==,
                       strcmp (plan->stages[k].device, "cpu") == 0 ? "cpu" : "opencl");
    next = tu_run_stage (st, k == 0 ? in : (NnpTensor *const *) cur->pdata);
    if (cur)
      g_ptr_array_unref (cur);
    cur = next;
    nnp_stage_free (st);
  }
  g_assert_cmpuint (cur->len, ==, (*ref)->len);
  *got = cur;
  for (int i = 0; i < n_in; i++)
    nnp_tensor_unref (in[i]);
  nnp_stage_free (whole);
}

/* run the stages of a plan in sequence; compare with the whole graph */
static void
check_plan_runs (NnpGraph *g, NnpPlan *plan)
{
  GPtrArray *ref, *cur;

  run_plan_and_whole (g, plan, 1, &ref, &cur);
  for (guint i = 0; i < ref->len; i++) {
    NnpTensor *x = g_ptr_array_index (cur, i), *y = g_ptr_array_index (ref, i);
    g_assert_cmpuint (x->nbytes, ==, y->nbytes);
    g_assert_true (memcmp (x->data, y->data, x->nbytes) == 0);
  }
  g_ptr_array_unref (cur);
  g_ptr_array_unref (ref);
}

static void
test_pass_through (void)
{
  g_autoptr (NnpGraph) g = diamond ();
  g_autoptr (GError) error = NULL;
  /* x passes through stage 1 untouched (read by B in stage 2 and by E) */
  NnpPlan *plan =
      plan_of (HEAD "{\"nodes\":[\"A\"]},{\"nodes\":[\"C\"]},{\"nodes\":[\"B\",\"D\",\"E\"]}]}");

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

/* ------------------------------------------------------------ placement, transfers */

/* x -> n0 -> v0 -> n1 -> v1 -> ... -> n{n-1} -> y (a chain of Relu) */
static NnpGraph *
chain (int n)
{
  NnpGraph *g = nnp_graph_new ("chain", 13);
  int64_t dims[1] = { 4 };
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 1, dims);
  for (int i = 0; i < n; i++) {
    g_autofree char *name = g_strdup_printf ("n%d", i);
    g_autofree char *in = i ? g_strdup_printf ("v%d", i - 1) : g_strdup ("x");
    g_autofree char *out = g_strdup_printf ("v%d", i);
    tu_add_node (g, name, "Relu", L (in), L (out));
  }
  {
    g_autofree char *last = g_strdup_printf ("v%d", n - 1);
    tu_add_output (g, last);
  }
  g_assert_true (nnp_graph_sort (g, &error));
  nnp_graph_update_uses (g);
  return g;
}

static void
test_unsupported_never_placed (void)
{
  GRand *r = g_rand_new_with_seed (99);

  for (int t = 0; t < 40; t++) {
    int n = g_rand_int_range (r, 6, 14), k = g_rand_int_range (r, 2, 4);
    g_autoptr (NnpGraph) g = random_dag (r, n);
    guint nv = g->values->len;
    g_autofree double *ms = g_new (double, (gsize) k *n);
    g_autofree double *bytes = g_new0 (double, nv);
    g_autofree int *stage_of = g_new (int, n);
    g_autofree gboolean *bad = g_new0 (gboolean, n);
    NnpSplitProblem p = { 0 };
    double b;
    const char *method = NULL;
    g_autoptr (GError) error = NULL;

    n = g->nodes->len;
    /* device B (odd stages) is 10x faster but cannot run ~1/4 of the nodes:
     * without the support check those nodes would all land there */
    for (int i = 0; i < n; i++)
      bad[i] = g_rand_int_range (r, 0, 4) == 0;
    for (int s = 0; s < k; s++)
      for (int i = 0; i < n; i++)
        ms[(gsize) s * n + i] = s % 2 ? (bad[i] ? INFINITY : 0.1) : 1.0;
    p.n_stages = k;
    p.n_nodes = n;
    p.node_ms = ms;
    p.value_bytes = bytes;
    if (!nnp_split_solve (g, &p, stage_of, &b, &method, &error)) {
      g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
      continue;
    }
    g_assert_true (isfinite (b));
    for (int i = 0; i < n; i++)
      if (bad[i])
        g_assert_cmpint (stage_of[i] % 2, ==, 0);
    if (nnp_split_solve_topo (g, &p, stage_of, &b, NULL))
      for (int i = 0; i < n; i++)
        if (bad[i])
          g_assert_cmpint (stage_of[i] % 2, ==, 0);
  }
  g_rand_free (r);

  /* a node no stage device can run: NNP_ERROR_PLAN naming it */
  {
    g_autoptr (NnpGraph) g = chain (4);
    double ms[8] = { 1, 1, INFINITY, 1, 1, 1, INFINITY, 1 }, bytes[8] = { 0 }, b;
    int stage_of[4];
    NnpSplitProblem p = { 2, 4, ms, bytes };
    const char *method = NULL;
    g_autoptr (GError) error = NULL;

    g_assert_false (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_assert_nonnull (strstr (error->message, "node 'n2' (Relu)"));
  }
}

/* A constant load on a stage (other work on its core) moves nodes off it:
 * 8 nodes of 1 ms in a chain, 2 stages: 4 | 4 without load; with 2 ms on
 * the last stage 5 | 3 (5 ms and 3 + 2 ms), both solvers; the evaluation
 * counts the load. */
static void
test_stage_load (void)
{
  g_autoptr (NnpGraph) g = chain (8);
  guint nv = g->values->len;
  g_autofree double *bytes = g_new0 (double, nv);
  double ms[16], load[2] = { 0, 2 }, b, total[2];
  int stage_of[8];
  NnpSplitProblem p = { 0 };
  const char *method = NULL;
  g_autoptr (GError) error = NULL;
  gboolean too_many = FALSE;

  for (int i = 0; i < 16; i++)
    ms[i] = 1.0;
  p.n_stages = 2;
  p.n_nodes = 8;
  p.node_ms = ms;
  p.value_bytes = bytes;
  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_cmpint (stage_of[3], ==, 0);
  g_assert_cmpint (stage_of[4], ==, 1);
  g_assert_cmpfloat_with_epsilon (b, 4.0, 1e-9);

  p.stage_load_ms = load;
  g_assert_true (nnp_split_solve_ideals (g, &p, stage_of, &b, &too_many, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 8; i++)
    g_assert_cmpint (stage_of[i], ==, i < 5 ? 0 : 1);
  g_assert_cmpfloat_with_epsilon (b, 5.0, 1e-9);
  g_assert_true (nnp_split_solve_topo (g, &p, stage_of, &b, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 8; i++)
    g_assert_cmpint (stage_of[i], ==, i < 5 ? 0 : 1);
  nnp_split_evaluate (g, &p, stage_of, NULL, NULL, total, NULL);
  g_assert_cmpfloat_with_epsilon (total[0], 5.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (total[1], 5.0, 1e-9);
}

static void
test_transfer_steers_cut (void)
{
  g_autoptr (NnpGraph) g = chain (6);
  guint nv = g->values->len;
  g_autofree double *bytes = g_new (double, nv);
  double ms[12], b;
  int stage_of[6];
  NnpXferCost out[1] = { { 0.03, 0.003, 0.0 } }, in[1] = { { 0, 0.02, 0.0 } };
  NnpSplitProblem p = { 0 };
  const char *method = NULL;
  g_autoptr (GError) error = NULL;

  for (int i = 0; i < 12; i++)
    ms[i] = 1.0;
  /* every activation is 1 MB except v1 (the output of n1): 16 bytes */
  for (guint id = 0; id < nv; id++)
    bytes[id] = strcmp (nnp_graph_value (g, id)->name, "v1") == 0 ? 16.0 : 1e6;
  p.n_stages = 2;
  p.n_nodes = 6;
  p.node_ms = ms;
  p.value_bytes = bytes;
  p.xfer_out = out;
  p.xfer_in = in;

  /* free bytes: the balanced cut 3 | 3 */
  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_cmpint (stage_of[2], ==, 0);
  g_assert_cmpint (stage_of[3], ==, 1);
  /* 5 ms per MB on the receiving device: cut where the tensor is small (2 | 4) */
  in[0].ms_per_byte = 5e-6;
  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_no_error (error);
  for (int i = 0; i < 6; i++)
    g_assert_cmpint (stage_of[i], ==, i < 2 ? 0 : 1);
  g_assert_cmpfloat (b, <, 4.1);
  g_assert_true (nnp_split_solve_topo (g, &p, stage_of, &b, &error));
  g_assert_cmpint (stage_of[1], ==, 0);
  g_assert_cmpint (stage_of[2], ==, 1);
  /* the same through the sender's line */
  in[0].ms_per_byte = 0;
  out[0].ms_per_byte = 5e-6;
  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_cmpint (stage_of[1], ==, 0);
  g_assert_cmpint (stage_of[2], ==, 1);
}

/* ------------------------------------------------------------ OpenCL */
#ifdef NNP_TEST_OPENCL

/* x [1,3,12,12] -> Conv(3x3, 8) -> Clip(min = lo, a graph input: bounds computed at
 * run time, CPU only) -> Conv(1x1, 8) -> Sigmoid -> Add(clip) -> GlobalAveragePool -> y */
static NnpGraph *
small_cnn (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("cnn", 13);
  int64_t xd[4] = { 1, 3, 12, 12 }, w1d[4] = { 8, 3, 3, 3 }, w2d[4] = { 8, 8, 1, 1 };
  int64_t bd[1] = { 8 };
  g_autoptr (NnpTensor) w1 = tu_tensor_f32 (4, w1d, NULL);
  g_autoptr (NnpTensor) w2 = tu_tensor_f32 (4, w2d, NULL);
  g_autoptr (NnpTensor) b1 = tu_tensor_f32 (1, bd, NULL);

  nnp_tensor_fill_pattern (w1, 11);
  nnp_tensor_fill_pattern (w2, 12);
  nnp_tensor_fill_pattern (b1, 13);
  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, xd);
  tu_add_input (g, "lo", NNP_DTYPE_FLOAT32, 0, NULL);
  tu_add_constant (g, "w1", w1);
  tu_add_constant (g, "b1", b1);
  tu_add_constant (g, "w2", w2);
  tu_add_node (g, "conv1", "Conv", L ("x", "w1", "b1"), L ("c1"));
  tu_add_node (g, "clip", "Clip", L ("c1", "lo"), L ("r"));
  tu_add_node (g, "conv2", "Conv", L ("r", "w2"), L ("c2"));
  tu_add_node (g, "sig", "Sigmoid", L ("c2"), L ("s"));
  tu_add_node (g, "add", "Add", L ("s", "r"), L ("a"));
  tu_add_node (g, "pool", "GlobalAveragePool", L ("a"), L ("y"));
  tu_add_output (g, "y");
  return tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
}

/* run the plan's stages with host tensors (nnp_stage_run on every device);
 * compare with the whole graph on the CPU: max |d| <= 1e-4 max |ref| */
static void
check_plan_close (NnpGraph *g, NnpPlan *plan)
{
  GPtrArray *ref, *cur;

  run_plan_and_whole (g, plan, 2, &ref, &cur);
  for (guint i = 0; i < ref->len; i++) {
    NnpTensor *x = g_ptr_array_index (cur, i), *y = g_ptr_array_index (ref, i);
    const float *a = x->data, *b = y->data;
    double num = 0, den = 0;
    g_assert_cmpuint (x->nbytes, ==, y->nbytes);
    for (gsize e = 0; e < x->nbytes / 4; e++) {
      num = MAX (num, fabs ((double) a[e] - b[e]));
      den = MAX (den, fabs ((double) b[e]));
    }
    g_assert_cmpfloat (num, <=, 1e-4 * MAX (den, 1e-30));
  }
  g_ptr_array_unref (cur);
  g_ptr_array_unref (ref);
}

static void
test_opencl_split (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpDevice) dev = nnp_device_open ("opencl", &error);
  g_autoptr (NnpGraph) g = NULL;
  NnpDeviceSpec cpu = { (char *) "cpu", 1 }, ocl = { (char *) "opencl", 1 };
  NnpCostModel *cm;
  int clip, n_specs = 0;
  NnpDeviceSpec *specs;

  if (dev == NULL) {
    g_test_fail_printf ("no OpenCL device (install the Debian package pocl-opencl-icd): %s",
                        error->message);
    return;
  }
  g = small_cnn ();
  clip = nnp_graph_find_node (g, "clip")->index;
  cm = nnp_cost_model_new (g, NULL, NULL, NNP_COST_PROFILE);

  /* parsing: "opencl" is a device, "cpu:2" a thread count */
  specs = nnp_device_specs_parse ("cpu:2, opencl ,cpu", &n_specs, &error);
  g_assert_no_error (error);
  g_assert_cmpint (n_specs, ==, 3);
  g_assert_cmpstr (specs[1].device, ==, "opencl");
  g_assert_cmpint (specs[0].threads, ==, 2);
  nnp_device_specs_free (specs, n_specs);

  /* support and costs */
  {
    g_autofree char *why = NULL;
    g_assert_false (nnp_device_spec_supports ("opencl", g, nnp_graph_node (g, clip), &why));
    g_assert_nonnull (strstr (why, "run time"));
    g_assert_true (isinf (nnp_cost_model_node_ms (cm, &ocl, clip)));
    g_assert_true (isfinite (nnp_cost_model_node_ms (cm, &cpu, clip)));
    g_assert_nonnull (nnp_cost_model_why (cm, &ocl, clip));
    g_assert_true (isfinite (nnp_cost_model_node_ms (cm, &ocl, 0)));
    g_assert_cmpstr (nnp_cost_model_source (cm, &ocl), ==, "profile");
    /* same device: no copy, only the queue hand-off; across: one copy per tensor */
    g_assert_cmpfloat (nnp_cost_model_transfer_ms (cm, &ocl, &ocl, 1, 4e6), <, 0.05);
    g_assert_cmpfloat (nnp_cost_model_transfer_ms (cm, &cpu, &ocl, 1, 4e6), >,
                       nnp_cost_model_transfer_ms (cm, &ocl, &ocl, 1, 4e6));
    g_assert_cmpfloat (nnp_cost_model_transfer_ms (cm, &ocl, &cpu, 1, 4e6), >,
                       nnp_cost_model_transfer_ms (cm, &ocl, &ocl, 1, 4e6));
  }

  /* automatic splits over cpu,opencl / opencl,cpu / cpu,opencl,cpu: the
   * clip never on OpenCL, the stages run == the whole graph on the CPU */
  {
    const NnpDeviceSpec lists[3][3] = { { cpu, ocl }, { ocl, cpu }, { cpu, ocl, cpu } };
    const int counts[3] = { 2, 2, 3 };
    for (int l = 0; l < 3; l++) {
      NnpSplitOptions o = { lists[l], counts[l], counts[l], 0, 0 };
      NnpPlan *plan = nnp_plan_new_auto ("cnn.onnx", NULL, NULL, 0, g, &o, cm, &error);
      g_autofree char *a = NULL, *b = NULL, *table = NULL;
      NnpPlan *back;
      int ocl_stages = 0;

      g_assert_no_error (error);
      g_assert_cmpint (plan->n_stages, ==, counts[l]);
      for (int k = 0; k < plan->n_stages; k++) {
        const NnpPlanStage *st = &plan->stages[k];
        g_assert_cmpstr (st->device, ==, lists[l][k].device);
        ocl_stages += strcmp (st->device, "opencl") == 0;
        for (int i = 0; i < st->n_nodes; i++)
          if (strcmp (st->device, "opencl") == 0)
            g_assert_cmpstr (st->nodes[i], !=, "clip");
        if (k + 1 < plan->n_stages)
          g_assert_cmpfloat (st->cut_ms, >, 0);
      }
      g_assert_cmpint (ocl_stages, ==, 1);
      table = nnp_plan_to_table (plan);
      g_test_message ("%s", table);
      check_plan_close (g, plan);
      /* JSON round trip keeps the devices */
      a = nnp_plan_to_json (plan);
      g_assert_nonnull (strstr (a, "\"opencl\""));
      back = nnp_plan_from_json (a, -1, &error);
      g_assert_no_error (error);
      b = nnp_plan_to_json (back);
      g_assert_cmpstr (a, ==, b);
      g_assert_true (nnp_plan_validate (back, g, &error));
      g_assert_no_error (error);
      nnp_plan_free (back);
      nnp_plan_free (plan);
    }
  }

  /* a stage putting the clip on OpenCL is rejected, saying why */
  {
    NnpPlan *plan = plan_of (
        HEAD
        "{\"device\":\"cpu\",\"nodes\":[\"conv1\"]},{\"device\":\"opencl\",\"nodes\":[\"clip\",\"conv2\",\"sig\",\"add\",\"pool\"]}]}");
    g_assert_false (nnp_plan_validate (plan, g, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_assert_nonnull (strstr (
        error->message,
        "stage 1: node 'clip' (Clip) is not supported on device 'opencl': Clip: bounds computed at run time"));
    g_clear_error (&error);
    nnp_plan_free (plan);
  }
  /* only OpenCL listed: the clip can run nowhere */
  {
    NnpSplitOptions o = { &ocl, 1, 0, 0, 0 };
    NnpPlan *plan = nnp_plan_new_auto ("cnn.onnx", NULL, NULL, 0, g, &o, cm, &error);
    g_assert_null (plan);
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_assert_nonnull (strstr (
        error->message,
        "node 'clip' (Clip) cannot run on any of the devices (opencl: Clip: bounds computed at run time)"));
    g_clear_error (&error);
  }
  nnp_cost_model_free (cm);
}
#endif

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/partition/dp-vs-brute-force", test_dp_vs_brute_force);
  g_test_add_func ("/partition/malformed-plans", test_malformed_plans);
  g_test_add_func ("/partition/json-round-trip", test_json_round_trip);
  g_test_add_func ("/partition/plan-json-buffers", test_plan_json_buffers);
  g_test_add_func ("/partition/plan-numbers", test_plan_numbers);
  g_test_add_func ("/partition/pass-through", test_pass_through);
  g_test_add_func ("/partition/unsupported-never-placed", test_unsupported_never_placed);
  g_test_add_func ("/partition/transfer-steers-cut", test_transfer_steers_cut);
  g_test_add_func ("/partition/stage-load", test_stage_load);
#ifdef NNP_TEST_OPENCL
  g_test_add_func ("/partition/opencl-split", test_opencl_split);
#endif
  return g_test_run ();
}
