/* Replicated stages in the partitioner (issue 13 item 2): "DEVICE*K" in a
 * device list, "replicas" in plan JSON, and the 1/K cost of a stage of K
 * replicas steering the split: a chain with one heavy node that no split
 * can divide gets it on the replicated stage, at half the bottleneck; with
 * max_replicas the search also weighs plain threading (the whole model on
 * one stage with both items' threads) and keeps it unless a replicated or
 * split plan predicts 5 % better; with measure_whole a one-stage choice is
 * timed both ways (plain threading, whole-model replicas) on a real graph. */
#include "../lib/test-util.h"
#include "partition/partition.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"
#include "backends/device-list.h"

#include <math.h>
#include <string.h>

/* x -> n0 -> v0 -> ... -> n{n-1} -> y (Relu) */
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
test_device_list (void)
{
  static const char *bad[] = { "cpu:1*0", "cpu*x", "cpu:1*65", "cpu:1*", "cpu*2*" };
  int n = 0;
  NnpDeviceSpec *specs = nnp_device_specs_parse ("cpu:1, cpu:1*2 ,cpu:2 * 3", &n, NULL);

  g_assert_nonnull (specs);
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (specs[0].replicas, ==, 1);
  g_assert_cmpint (specs[1].replicas, ==, 2);
  g_assert_cmpint (specs[1].threads, ==, 1);
  g_assert_cmpint (specs[2].replicas, ==, 3);
  g_assert_cmpint (specs[2].threads, ==, 2);
  g_assert_cmpstr (specs[2].device, ==, "cpu");
  nnp_device_specs_free (specs, n);
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) error = NULL;
    g_autofree char *list = g_strdup_printf ("cpu,%s", bad[i]);

    g_assert_null (nnp_device_specs_parse (list, &n, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    g_assert_nonnull (strstr (error->message, "device list item 1"));
    g_assert_nonnull (strstr (error->message, "replicas"));
  }
}

static void
test_plan_json (void)
{
  NnpPlan *plan = nnp_plan_new ("m.onnx", NULL), *back;
  const char *nodes[] = { "a" };
  g_autofree char *json = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *bad = NULL;

  nnp_plan_add_stage (plan, "cpu", 1, nodes, 1);
  g_assert_cmpint (plan->stages[0].replicas, ==, 1);
  nnp_plan_add_stage (plan, "cpu", 1, nodes, 1)->replicas = 3;
  json = nnp_plan_to_json (plan);
  g_assert_nonnull (strstr (json, "\"replicas\""));
  back = nnp_plan_from_json (json, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (back->stages[0].replicas, ==, 1);
  g_assert_cmpint (back->stages[1].replicas, ==, 3);
  nnp_plan_free (back);
  back = nnp_plan_copy (plan);
  g_assert_cmpint (back->stages[1].replicas, ==, 3);
  nnp_plan_free (back);

  bad = g_strdup (
      "{\"version\": 1, \"model\": \"m.onnx\", \"stages\": [{\"device\": \"cpu\", \"replicas\": 0, \"nodes\": [\"a\"]}]}");
  g_assert_null (nnp_plan_from_json (bad, -1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "replicas"));
  nnp_plan_free (plan);
}

/* n2 takes 8 ms, the others 1: two single stages cannot do better than
 * 10 ms (n0..n2 | n3..n5); with the second stage on 2 replicas, n2..n5 there
 * cost (8 + 3) / 2 = 5.5 ms and n0, n1 2 ms before: bottleneck 5.5. */
static void
test_heavy_node (void)
{
  g_autoptr (NnpGraph) g = chain (6);
  guint nv = g->values->len;
  g_autofree double *bytes = g_new0 (double, nv);
  double ms[12], b, total[2];
  int stage_of[6];
  NnpDeviceSpec devs[2] = { { (char *) "cpu", 1, 1 }, { (char *) "cpu", 1, 2 } };
  NnpXferCost out[2] = { { 0.2, 0, 0 } }, in[2] = { { 0.1, 0, 0 } }, gin = { 0.4, 0, 0 },
              gout = { 0.6, 0, 0 };
  NnpSplitProblem p = { 0 };
  const char *method = NULL;
  g_autoptr (GError) error = NULL;

  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 6; i++)
      ms[s * 6 + i] = i == 2 ? 8.0 : 1.0;
  p.n_stages = 2;
  p.n_nodes = 6;
  p.node_ms = ms;
  p.value_bytes = bytes;
  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_cmpfloat_with_epsilon (b, 10.0, 1e-9);

  nnp_split_scale_replicas (devs, 2, 6, ms, out, in, &gin, &gout);
  /* stage 0 (one replica) untouched, stage 1 halved, and what it pays */
  g_assert_cmpfloat (ms[2], ==, 8.0);
  g_assert_cmpfloat (ms[6 + 2], ==, 4.0);
  g_assert_cmpfloat (ms[6 + 0], ==, 0.5);
  g_assert_cmpfloat (out[0].overhead_ms, ==, 0.2);
  g_assert_cmpfloat (in[0].overhead_ms, ==, 0.05);
  g_assert_cmpfloat (gin.overhead_ms, ==, 0.4);
  g_assert_cmpfloat (gout.overhead_ms, ==, 0.3);

  g_assert_true (nnp_split_solve (g, &p, stage_of, &b, &method, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat_with_epsilon (b, 5.5, 1e-9);
  for (int i = 0; i < 6; i++)
    g_assert_cmpint (stage_of[i], ==, i < 2 ? 0 : 1);
  nnp_split_evaluate (g, &p, stage_of, NULL, NULL, total, NULL);
  g_assert_cmpfloat_with_epsilon (total[0], 2.0, 1e-9);
  g_assert_cmpfloat_with_epsilon (total[1], 5.5, 1e-9);
}

/* chain(6) with node 2 heavy on cpu:1 (13 ms in all); on cpu:2 each node
 * takes t2_factor of that.  The plan nnp_plan_new_auto_replicated() picks
 * for "cpu:1,cpu:1" and max_replicas 2. */
static NnpPlan *
plan_with_threads (double t2_factor)
{
  g_autoptr (NnpGraph) g = chain (6);
  NnpCostModel *cm = nnp_cost_model_new (g, "digest", "x=4", NNP_COST_ESTIMATE);
  NnpDeviceSpec cpu1 = { (char *) "cpu", 1, 1 }, cpu2 = { (char *) "cpu", 2, 1 };
  NnpDeviceSpec list[2] = { { (char *) "cpu", 1, 1 }, { (char *) "cpu", 1, 1 } };
  NnpSplitOptions o = { 0 };
  double ms1[6], ms2[6];
  g_autoptr (GError) error = NULL;
  NnpPlan *plan;

  for (int i = 0; i < 6; i++) {
    ms1[i] = i == 2 ? 8.0 : 1.0;
    ms2[i] = ms1[i] * t2_factor;
  }
  g_assert_true (nnp_cost_model_set_node_costs (cm, &cpu1, ms1, 6, &error));
  g_assert_true (nnp_cost_model_set_node_costs (cm, &cpu2, ms2, 6, &error));
  o.devices = list;
  o.n_devices = 2;
  o.max_replicas = 2;
  plan = nnp_plan_new_auto_replicated ("chain.onnx", "digest", NULL, 0, g, &o, cm, &error);
  g_assert_no_error (error);
  g_assert_nonnull (plan);
  nnp_cost_model_free (cm);
  return plan;
}

static void
test_threads_candidate (void)
{
  NnpPlan *plan;

  /* two threads halve every node: 6.5 ms, as 2 replicas would; the split
   * cannot beat 8 ms: plain threading is kept */
  plan = plan_with_threads (0.5);
  g_assert_cmpint (plan->n_stages, ==, 1);
  g_assert_cmpint (plan->stages[0].threads, ==, 2);
  g_assert_cmpint (MAX (plan->stages[0].replicas, 1), ==, 1);
  g_assert_cmpfloat (plan->predicted_bottleneck_ms, <, 6.5 * 1.05);
  nnp_plan_free (plan);

  /* two threads buy little (9.75 ms): the whole model as 2 one-thread
   * replicas (6.5 ms) */
  plan = plan_with_threads (0.75);
  g_assert_cmpint (plan->n_stages, ==, 1);
  g_assert_cmpint (plan->stages[0].threads, ==, 1);
  g_assert_cmpint (plan->stages[0].replicas, ==, 2);
  nnp_plan_free (plan);

  /* two threads do not help at all: no plan is slower than 13 ms on
   * cpu:2, and the replicas win */
  plan = plan_with_threads (1.0);
  g_assert_cmpint (plan->stages[0].replicas, ==, 2);
  g_assert_cmpfloat (plan->predicted_bottleneck_ms, <, 13.0 * 0.95);
  nnp_plan_free (plan);
}

/* x (1x64x64x64) -> 8 Relu: some real work per frame. */
static NnpGraph *
relu_chain (void)
{
  NnpGraph *g = nnp_graph_new ("relus", 13);
  int64_t dims[4] = { 1, 64, 64, 64 };
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, dims);
  for (int i = 0; i < 8; i++) {
    g_autofree char *name = g_strdup_printf ("r%d", i);
    g_autofree char *in = i ? g_strdup_printf ("v%d", i - 1) : g_strdup ("x");
    g_autofree char *out = g_strdup_printf ("v%d", i);
    tu_add_node (g, name, "Relu", L (in), L (out));
  }
  tu_add_output (g, "v7");
  g_assert_true (nnp_graph_sort (g, &error));
  nnp_graph_update_uses (g);
  {
    /* shapes and dtypes everywhere, as a stage needs */
    NnpGraph *spec = tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);

    nnp_graph_unref (g);
    return spec;
  }
}

static void
test_measured_whole (void)
{
  g_autoptr (NnpGraph) g = relu_chain ();
  NnpCostModel *cm = nnp_cost_model_new (g, "digest", "x=1x64x64x64", NNP_COST_ESTIMATE);
  NnpDeviceSpec cpu1 = { (char *) "cpu", 1, 1 }, cpu2 = { (char *) "cpu", 2, 1 };
  NnpDeviceSpec list[2] = { { (char *) "cpu", 1, 1 }, { (char *) "cpu", 1, 1 } };
  NnpSplitOptions o = { 0 };
  g_autoptr (GError) error = NULL;
  double ms1[8], ms2[8];
  NnpPlan *plan;
  double fps;

  /* the trial itself: frames run on both shapes of the whole model */
  fps = nnp_measure_whole_fps (g, &cpu2, 1, 4, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (fps, >, 0);
  fps = nnp_measure_whole_fps (g, &cpu1, 2, 2, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (fps, >, 0);

  /* the search: costs (one heavy node no split divides, two threads
   * halving it) make the predicted choice one stage; timed, it stays one
   * stage on both items: 2 threads or 2 replicas, whichever ran faster */
  for (int i = 0; i < 8; i++) {
    ms1[i] = i == 7 ? 20.0 : 1.0;
    ms2[i] = ms1[i] / 2;
  }
  g_assert_true (nnp_cost_model_set_node_costs (cm, &cpu1, ms1, 8, &error));
  g_assert_true (nnp_cost_model_set_node_costs (cm, &cpu2, ms2, 8, &error));
  o.devices = list;
  o.n_devices = 2;
  o.max_replicas = 2;
  o.measure_whole = TRUE;
  plan = nnp_plan_new_auto_replicated ("relus.onnx", "digest", NULL, 0, g, &o, cm, &error);
  g_assert_no_error (error);
  g_assert_nonnull (plan);
  g_assert_cmpint (plan->n_stages, ==, 1);
  g_assert_cmpint (plan->stages[0].threads * MAX (plan->stages[0].replicas, 1), ==, 2);
  nnp_plan_free (plan);
  nnp_cost_model_free (cm);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/replicas/device-list", test_device_list);
  g_test_add_func ("/replicas/plan-json", test_plan_json);
  g_test_add_func ("/replicas/heavy-node", test_heavy_node);
  g_test_add_func ("/replicas/threads-candidate", test_threads_candidate);
  g_test_add_func ("/replicas/measured-whole", test_measured_whole);
  return g_test_run ();
}
