/* Unit tests of the link-aware partitioner (issue 12 item 5,
 * docs/partition.md "Remote stages: the link"): link strings, the transfer
 * lines a link adds to the cuts onto and off a remote device, node costs
 * given for a device this process cannot open, and the split: with a slow
 * link the cut moves to where few bytes cross, with a fast one it is the
 * compute-balanced cut. */
#include "../lib/test-util.h"
#include "partition/partition.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"

#include <glib/gstdio.h>

#include <math.h>
#include <string.h>

#define REMOTE "remote://sim-host:7000"

static void
test_link_parse (void)
{
  static const struct {
    const char *text;
    double bytes_per_s, rtt_ms;
    int window;
  } good[] = {
    { "100mbit/20ms/4", 12.5e6, 20, 4 }, { "1GB/0.1ms", 1e9, 0.1, 1 },
    { "8Mbit/500us/1", 1e6, 0.5, 1 },    { "125MB/0.02s/16", 125e6, 20, 16 },
    { "2.5kB/0ms", 2500, 0, 1 },
  };
  static const struct {
    const char *text, *says;
  } bad[] = {
    { "", "expected BANDWIDTH/RTT" },
    { "100mbit", "expected BANDWIDTH/RTT" },
    { "100/20ms", "bandwidth '100'" },
    { "100mb/20ms", "bandwidth '100mb'" }, /* millibytes? no: B is bytes, b is not a unit */
    { "0mbit/20ms", "bandwidth '0mbit'" },
    { "-5MB/1ms", "bandwidth '-5MB'" },
    { "10MB/20", "round-trip time '20'" },
    { "10MB/-1ms", "round-trip time '-1ms'" },
    { "10MB/1ms/0", "window '0'" },
    { "10MB/1ms/two", "window 'two'" },
    { "10MB/1ms/4/5", "expected BANDWIDTH/RTT" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
    NnpLink l;
    g_autoptr (GError) error = NULL;
    g_autofree char *s = NULL;
    g_assert_true (nnp_link_parse (good[i].text, &l, &error));
    g_assert_no_error (error);
    g_assert_cmpfloat_with_epsilon (l.bytes_per_s, good[i].bytes_per_s, 1e-6 * l.bytes_per_s);
    g_assert_cmpfloat_with_epsilon (l.rtt_ms, good[i].rtt_ms, 1e-9);
    g_assert_cmpint (l.window, ==, good[i].window);
    s = nnp_link_to_string (&l);
    g_assert_nonnull (strstr (s, "Mbit/s"));
  }
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    NnpLink l = { 1, 2, 3 };
    g_autoptr (GError) error = NULL;
    g_assert_false (nnp_link_parse (bad[i].text, &l, &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
    if (strstr (error->message, bad[i].says) == NULL)
      g_error ("link '%s': message '%s' lacks '%s'", bad[i].text, error->message, bad[i].says);
    g_assert_cmpfloat (l.bytes_per_s, ==, 1); /* untouched on error */
  }
}

/* x [1,64,64,64] -> a0 (Conv 1x1 64->64) -> s0 (Conv 1x1 64->1: a 16 KiB
 * tensor) -> e0 (1->64) -> a1 -> a2 -> a3 -> y (Conv 64->1).  Four heavy
 * convolutions (~1 ms each at the estimate) and three light ones: the
 * balanced 2-stage cut is after a1 (2 | 2 heavy, 1 MiB crosses), the cut
 * after s0 (1 | 3 heavy) carries 16 KiB. */
static NnpGraph *
squeeze_chain (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("squeeze", 13);
  int64_t xd[4] = { 1, 64, 64, 64 };
  static const struct {
    const char *name, *in, *out;
    int cin, cout;
  } convs[] = {
    { "a0", "x", "t0", 64, 64 },  { "s0", "t0", "t1", 64, 1 },  { "e0", "t1", "t2", 1, 64 },
    { "a1", "t2", "t3", 64, 64 }, { "a2", "t3", "t4", 64, 64 }, { "a3", "t4", "t5", 64, 64 },
    { "s1", "t5", "y", 64, 1 },
  };

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, xd);
  for (guint i = 0; i < G_N_ELEMENTS (convs); i++) {
    int64_t wd[4] = { convs[i].cout, convs[i].cin, 1, 1 };
    g_autoptr (NnpTensor) w = tu_tensor_f32 (4, wd, NULL);
    g_autofree char *wname = g_strdup_printf ("w_%s", convs[i].name);
    nnp_tensor_fill_pattern (w, (int) i + 1);
    tu_add_constant (g, wname, w);
    tu_add_node (g, convs[i].name, "Conv", L (convs[i].in, wname), L (convs[i].out));
  }
  tu_add_output (g, "y");
  return tu_specialize (g, NNP_SPECIALIZE_NO_FUSION);
}

/* The split problem of cm on devices devs[0..1] the way the planner poses
 * it (node times of each stage's device, the cut's transfer lines, the
 * graph input / output lines), solved with both solvers; returns the index
 * of the first node of stage 1 and the bottleneck. */
static int
split2 (NnpGraph *g, NnpCostModel *cm, const NnpDeviceSpec *devs, double *bottleneck)
{
  int n = g->nodes->len, first = -1;
  guint nv = g->values->len;
  g_autofree double *ms = g_new (double, 2 * n);
  g_autofree double *bytes = g_new0 (double, nv);
  g_autofree int *stage_of = g_new (int, n);
  NnpXferCost out[1], in[1], gin, gout, unused;
  NnpSplitProblem p = { 0 };
  const char *method = NULL;
  double b_topo;
  g_autoptr (GError) error = NULL;

  for (int k = 0; k < 2; k++)
    for (int i = 0; i < n; i++)
      ms[k * n + i] = nnp_cost_model_node_ms (cm, &devs[k], i);
  for (guint id = 0; id < nv; id++) {
    const NnpValue *v = nnp_graph_value (g, id);
    bytes[id] = (double) nnp_shape_numel (&v->shape) * nnp_dtype_size (v->dtype);
  }
  nnp_cost_model_xfer_params (cm, &devs[0], &devs[1], &out[0], &in[0]);
  nnp_cost_model_graph_xfer_params (cm, &devs[0], &gin, &unused);
  nnp_cost_model_graph_xfer_params (cm, &devs[1], &unused, &gout);
  p.n_stages = 2;
  p.n_nodes = n;
  p.node_ms = ms;
  p.value_bytes = bytes;
  p.xfer_out = out;
  p.xfer_in = in;
  p.xfer_graph_in = &gin;
  p.xfer_graph_out = &gout;
  g_assert_true (nnp_split_solve (g, &p, stage_of, bottleneck, &method, &error));
  g_assert_no_error (error);
  for (int i = 0; i < n && first < 0; i++)
    if (stage_of[i] == 1)
      first = i;
  /* the topological-order DP agrees on a chain */
  g_assert_true (nnp_split_solve_topo (g, &p, stage_of, &b_topo, &error));
  g_assert_cmpfloat_with_epsilon (b_topo, *bottleneck, 1e-9 * *bottleneck);
  return first;
}

static int
node_index (NnpGraph *g, const char *name)
{
  for (guint i = 0; i < g->nodes->len; i++)
    if (strcmp (nnp_graph_node (g, i)->name, name) == 0)
      return (int) i;
  g_error ("no node %s", name);
  return -1;
}

static void
test_link_moves_cut (void)
{
  g_autoptr (NnpGraph) g = squeeze_chain ();
  g_autofree char *dir = g_dir_make_tmp ("nnp-link-XXXXXX", NULL);
  NnpCostModel *cm;
  NnpDeviceSpec devs[2] = { { (char *) "cpu", 1 }, { (char *) REMOTE, 1 } };
  g_autofree double *remote_ms = NULL;
  int n = g->nodes->len;
  double b, b_fast;
  NnpLink fast = { 1.25e9, 0.1, 4 }, slow = { 1e6, 20, 4 }, one = { 1e6, 20, 1 };
  NnpXferCost out, in, base_out, base_in;
  g_autoptr (GError) error = NULL;

  g_setenv ("NNP_PROFILE_DIR", dir, TRUE);
  cm = nnp_cost_model_new (g, NULL, NULL, NNP_COST_ESTIMATE);
  /* without its server's answer a remote device is planned as this host's
   * CPU; the costs a server answered (here: the local CPU's + 1 ms for the
   * first node, to see them used) replace that */
  g_assert_true (nnp_cost_model_prepare (cm, &devs[1], &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (nnp_cost_model_node_ms (cm, &devs[1], 0), ==,
                     nnp_cost_model_node_ms (cm, &devs[0], 0));
  remote_ms = g_new (double, n);
  for (int i = 0; i < n; i++)
    remote_ms[i] = nnp_cost_model_node_ms (cm, &devs[0], i);
  g_assert_false (nnp_cost_model_set_node_costs (cm, &devs[1], remote_ms, n - 1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_clear_error (&error);
  remote_ms[2] = NAN;
  g_assert_false (nnp_cost_model_set_node_costs (cm, &devs[1], remote_ms, n, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "e0"));
  g_clear_error (&error);
  remote_ms[2] = nnp_cost_model_node_ms (cm, &devs[0], 2);
  remote_ms[0] += 1.0;
  g_assert_true (nnp_cost_model_set_node_costs (cm, &devs[1], remote_ms, n, &error));
  g_assert_no_error (error);
  g_assert_true (nnp_cost_model_prepare (cm, &devs[1], &error));
  g_assert_cmpstr (nnp_cost_model_source (cm, &devs[1]), ==, "profile");
  for (int i = 0; i < n; i++)
    g_assert_cmpfloat (nnp_cost_model_node_ms (cm, &devs[1], i), ==, remote_ms[i]);

  /* no link: the balanced cut, after a1 (stage 1 = a2, a3, s1) */
  g_assert_cmpint (split2 (g, cm, devs, &b), ==, node_index (g, "a2"));
  nnp_cost_model_xfer_params (cm, &devs[0], &devs[1], &base_out, &base_in);

  /* a fast link (10 Gbit/s, 0.1 ms): still the balanced cut, a little dearer */
  nnp_cost_model_set_link (cm, REMOTE, &fast);
  g_assert_nonnull (nnp_cost_model_get_link (cm, "REMOTE://sim-host:7000"));
  g_assert_null (nnp_cost_model_get_link (cm, "cpu"));
  g_assert_cmpint (split2 (g, cm, devs, &b_fast), ==, node_index (g, "a2"));
  g_assert_cmpfloat (b_fast, >, b);
  /* the lines: onto the remote stage bytes / B + RTT / W, the sender's unchanged */
  nnp_cost_model_xfer_params (cm, &devs[0], &devs[1], &out, &in);
  g_assert_cmpfloat_with_epsilon (in.ms_per_byte - base_in.ms_per_byte, 1e3 / fast.bytes_per_s,
                                  1e-15);
  g_assert_cmpfloat_with_epsilon (in.overhead_ms - base_in.overhead_ms, 0.1 / 4, 1e-12);
  g_assert_cmpfloat (out.ms_per_byte, ==, base_out.ms_per_byte);
  /* back off the remote device: bytes / B on the sender (the remote stage) only */
  nnp_cost_model_xfer_params (cm, &devs[1], &devs[0], &out, &in);
  g_assert_cmpfloat_with_epsilon (out.ms_per_byte - base_out.ms_per_byte, 1e3 / fast.bytes_per_s,
                                  1e-15);
  g_assert_cmpfloat (in.overhead_ms, ==, 0.0);

  /* a slow link (8 Mbit/s, 20 ms, 4 in flight): the cut moves to the squeeze
   * (16 KiB cross instead of 1 MiB); the remote stage's cost is its compute
   * + 16 KiB / B + y's 16 KiB / B + 20 / 4 ms */
  nnp_cost_model_set_link (cm, REMOTE, &slow);
  g_assert_cmpint (split2 (g, cm, devs, &b), ==, node_index (g, "e0"));
  {
    double compute = 0, kib16 = 64 * 64 * 4;
    for (int i = node_index (g, "e0"); i < n; i++)
      compute += remote_ms[i];
    g_assert_cmpfloat_with_epsilon (b,
                                    compute + 2 * kib16 * 1e3 / slow.bytes_per_s + 20.0 / 4
                                        + base_in.overhead_ms + base_in.per_tensor_ms,
                                    1e-6 * b);
  }
  /* stop-and-wait (window 1) pays the whole RTT: 15 ms more */
  nnp_cost_model_set_link (cm, REMOTE, &one);
  {
    double b1;
    g_assert_cmpint (split2 (g, cm, devs, &b1), ==, node_index (g, "e0"));
    g_assert_cmpfloat_with_epsilon (b1 - b, 15.0, 1e-6);
  }

  /* the remote device first: the graph input (1 MiB) crosses the link too */
  {
    NnpDeviceSpec rev[2] = { devs[1], devs[0] };
    NnpXferCost gin, gout;
    nnp_cost_model_graph_xfer_params (cm, &rev[0], &gin, &gout);
    g_assert_cmpfloat_with_epsilon (gin.ms_per_byte, 1e3 / one.bytes_per_s, 1e-15);
    g_assert_cmpfloat_with_epsilon (gin.overhead_ms, 20.0, 1e-12);
    g_assert_cmpfloat_with_epsilon (gout.ms_per_byte, 1e3 / one.bytes_per_s, 1e-15);
    /* the split keeps the remote stage as small as the input allows: a0 s0 */
    g_assert_cmpint (split2 (g, cm, rev, &b), ==, node_index (g, "e0"));
  }

  /* local again */
  nnp_cost_model_set_link (cm, REMOTE, NULL);
  g_assert_null (nnp_cost_model_get_link (cm, REMOTE));
  g_assert_cmpint (split2 (g, cm, devs, &b), ==, node_index (g, "a2"));

  nnp_cost_model_free (cm);
  g_unsetenv ("NNP_PROFILE_DIR");
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/link/parse", test_link_parse);
  g_test_add_func ("/link/moves-cut", test_link_moves_cut);
  return g_test_run ();
}
