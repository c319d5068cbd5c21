/* One planning call (issue 11 item 4): `nnpipe split` and nnpipeline turn
 * the same request into the same plan, because both call nnp_plan_make().
 *
 * For each request (automatic splits with and without devices and stage
 * load, manual cuts by index, by name and both, threads + pin, a missing
 * OpenCL device with fallback, a plan file written by the CLI):
 * - nnpipeline's nnpipeline-plan message equals nnp_plan_make() called here
 *   with the request (device, threads, cpus, node count, first and last
 *   node, predicted ms of every stage: the same process, the same costs);
 * - the plan `nnpipe split ... -o p.json` writes equals it too: node lists
 *   element for element where the split does not depend on measured costs
 *   (cuts, plan files); for automatic splits, where each process measures
 *   its own memcpy bandwidth, the same stages and devices and a predicted
 *   bottleneck within 10 % (or the same node lists).
 * Profiles go to a fresh NNP_PROFILE_DIR, so every plan uses estimates.
 * The harness pushes from this thread, so the first stage runs on it: a
 * pinned plan ("threads and pin", and the plan file after it) must leave
 * the thread's cpus as they were (it used to leave it on one core, and the
 * next pinned stage built here failed). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "test-common.h"

#include <glib/gstdio.h>

#include <nnpipe/nnpipe.h>

#include <math.h>
#include <sched.h>
#include <string.h>

#define H 32
#define W 32

typedef struct {
  const gchar *what;
  const gchar *props; /* nnpipeline properties, k=v separated by ' ' */
  gboolean exact;     /* CLI node lists must be equal */
} Request;

/* NODE3: the name of the specialised graph's node 3; PLAN: the CLI plan of
 * the request before (a plan file). */
static const Request requests[] = {
  { "auto, 2 devices", "stages=2 devices=cpu:1,cpu:1", FALSE },
  { "3 stages, default devices", "stages=3", FALSE },
  { "stages=auto, default devices", "stages=auto", FALSE },
  { "stage load", "stages=2 stage-load=0,0.6", FALSE },
  { "cuts by index", "cuts=3,6", TRUE },
  { "cuts by name and index", "cuts=NODE3,6 stages=3", TRUE },
  { "threads and pin", "cuts=4 devices=cpu:2,cpu:1 pin=true", TRUE },
#ifdef NNP_TEST_HAVE_OPENCL
  { "missing OpenCL device, fallback", "stages=2 devices=cpu:1,opencl:99 fallback=true", FALSE },
#endif
  { "plan file from the CLI", "plan=PLAN", TRUE },
};

static gchar *tmpdir;

/* The request's properties with NODE3 and PLAN replaced (new strv). */
static gchar **
request_props (const Request *r, const gchar *node3, const gchar *plan)
{
  gchar **props = g_strsplit (r->props, " ", -1);

  for (guint i = 0; props[i]; i++) {
    gchar *p = props[i];
    GString *s = g_string_new (p);

    g_string_replace (s, "NODE3", node3, 0);
    g_string_replace (s, "PLAN", plan, 0);
    props[i] = g_string_free (s, FALSE);
    g_free (p);
  }
  return props;
}

/* nnp_plan_make() with the request written independently of the element. */
static NnpPlan *
plan_here (NnpModel *model, const gchar *path, gchar **props)
{
  NnpPlanRequest req = { 0 };
  NnpInputShape shape = { "x" };
  GError *err = NULL;
  NnpPlan *plan;

  nnp_shape_set (&shape.shape, 4, (const int64_t[]){ 1, 3, H, W });
  req.model_path = path;
  req.cost = NNP_COST_AUTO;
  for (guint i = 0; props[i]; i++) {
    const gchar *v = strchr (props[i], '=') + 1;

    if (g_str_has_prefix (props[i], "stages="))
      req.n_stages = strcmp (v, "auto") == 0 ? 0 : atoi (v);
    else if (g_str_has_prefix (props[i], "devices="))
      req.devices = v;
    else if (g_str_has_prefix (props[i], "cuts="))
      req.cuts = v;
    else if (g_str_has_prefix (props[i], "stage-load="))
      req.stage_load = v;
    else if (g_str_has_prefix (props[i], "pin="))
      req.pin = strcmp (v, "true") == 0;
    else if (g_str_has_prefix (props[i], "fallback="))
      req.fallback = strcmp (v, "true") == 0;
    else if (g_str_has_prefix (props[i], "plan="))
      req.plan_path = v;
    else
      fail ("unknown property %s", props[i]);
  }
  plan = nnp_plan_make (model, &shape, 1, &req, NULL, &err);
  fail_unless (plan != NULL, "nnp_plan_make: %s", err ? err->message : "?");
  return plan;
}

/* The same request to `nnpipe split ... -o OUT`; the loaded plan. */
static NnpPlan *
plan_cli (const gchar *path, gchar **props, const gchar *out)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  gchar *cli = g_strdup (g_getenv ("NNP_CLI"));
  gchar *std_out = NULL, *std_err = NULL;
  gint status = -1;
  GError *err = NULL;
  NnpPlan *plan;

  fail_unless (cli != NULL, "NNP_CLI is not set (the nnpipe command)");
  g_ptr_array_add (argv, cli);
  g_ptr_array_add (argv, g_strdup ("split"));
  g_ptr_array_add (argv, g_strdup (path));
  g_ptr_array_add (argv, g_strdup_printf ("--shape=x=1,3,%d,%d", H, W));
  for (guint i = 0; props[i]; i++) {
    gchar **kv = g_strsplit (props[i], "=", 2);

    if (strcmp (kv[0], "plan") == 0) {
      /* a plan file: `nnpipe split --plan P --export DIR` takes it as it is */
      g_strfreev (kv);
      g_ptr_array_unref (argv);
      return nnp_plan_load (strchr (props[i], '=') + 1, NULL);
    }
    if (strcmp (kv[1], "true") == 0)
      g_ptr_array_add (argv, g_strdup_printf ("--%s", kv[0]));
    else
      g_ptr_array_add (argv, g_strdup_printf ("--%s=%s", kv[0], kv[1]));
    g_strfreev (kv);
  }
  g_ptr_array_add (argv, g_strdup_printf ("--output=%s", out));
  g_ptr_array_add (argv, NULL);
  fail_unless (g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                             &std_out, &std_err, &status, &err),
               "%s: %s", cli, err ? err->message : "?");
  fail_unless (g_spawn_check_wait_status (status, NULL), "nnpipe split failed:\n%s", std_err);
  /* fallback: the CLI warns as the element does */
  if (g_strv_contains ((const gchar *const *) props, "fallback=true"))
    fail_unless (strstr (std_err, "'opencl:99' is not available") != NULL,
                 "no fallback warning from nnpipe split:\n%s", std_err);
  plan = nnp_plan_load (out, &err);
  fail_unless (plan != NULL, "%s: %s", out, err ? err->message : "?");
  g_free (std_out);
  g_free (std_err);
  g_ptr_array_unref (argv);
  return plan;
}

/* The first error message on the bus, "element: text (debug)", or a
 * placeholder (newly allocated). */
static gchar *
bus_error_text (GstBus *bus)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *err = NULL;
  gchar *dbg = NULL, *text;

  if (msg == NULL)
    return g_strdup ("no error message");
  gst_message_parse_error (msg, &err, &dbg);
  text = g_strdup_printf ("%s: %s (%s)", GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
  return text;
}

/* nnpipeline with the request: its nnpipeline-plan message (one frame
 * through it).  *warned: a fallback warning was posted. */
static GstStructure *
plan_element (const gchar *path, gchar **props, gboolean *warned)
{
  GstElement *e = nnp_test_make ("nnpipeline", "model", path, "stats-interval", 0, NULL);
  gchar *caps = nnp_test_tensor_caps (3, H, W);
  GstBus *bus = gst_bus_new ();
  GstStructure *plan = NULL;
  GstHarness *h;
  GstMessage *msg;
  GstFlowReturn flow;
  GstBuffer *out;

  for (guint i = 0; props[i]; i++) {
    gchar **kv = g_strsplit (props[i], "=", 2);

    gst_util_set_object_arg (G_OBJECT (e), kv[0], kv[1]);
    g_strfreev (kv);
  }
  gst_element_set_bus (e, bus);
  h = nnp_test_harness_take (e);
  gst_harness_set_src_caps_str (h, caps);
  /* the first stage runs in the push: its error is the flow return; a
   * later stage's is a missing frame (the pull gives up after 60 s) */
  flow = gst_harness_push (h, nnp_test_random_frame (3 * H * W, 1, 0));
  if (flow != GST_FLOW_OK) {
    gchar *why = bus_error_text (bus);

    fail ("nnpipeline %s: push returned %s: %s", caps, gst_flow_get_name (flow), why);
    g_free (why);
  }
  out = gst_harness_pull (h);
  if (out == NULL) {
    gchar *why = bus_error_text (bus);

    fail ("nnpipeline %s: no frame out: %s", caps, why);
    g_free (why);
  }
  gst_buffer_unref (out);
  *warned = FALSE;
  while ((msg = gst_bus_pop (bus)) != NULL) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING)
      *warned = TRUE;
    else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT
             && gst_structure_has_name (gst_message_get_structure (msg), "nnpipeline-plan"))
      plan = gst_structure_copy (gst_message_get_structure (msg));
    gst_message_unref (msg);
  }
  gst_harness_teardown (h);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (caps);
  fail_unless (plan != NULL, "no nnpipeline-plan message");
  return plan;
}

static gchar *
cpus_string (const NnpPlanStage *st)
{
  GString *s = g_string_new (NULL);

  for (gint i = 0; i < st->n_cpus; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", st->cpus[i]);
  return g_string_free (s, FALSE);
}

/* The element's message describes exactly this plan. */
static void
assert_message_is_plan (const GstStructure *msg, const NnpPlan *plan, const gchar *what)
{
  const GValue *stages = gst_structure_get_value (msg, "stages");
  gint n = 0;

  fail_unless (gst_structure_get_int (msg, "n-stages", &n));
  fail_unless (n == plan->n_stages, "%s: element %d stages, nnp_plan_make %d", what, n,
               plan->n_stages);
  for (gint k = 0; k < n; k++) {
    const GstStructure *st = gst_value_get_structure (gst_value_array_get_value (stages, k));
    const NnpPlanStage *ps = &plan->stages[k];
    gchar *cpus = cpus_string (ps);
    gchar *got = gst_structure_to_string (st);
    gint threads = 0, nodes = 0;
    gdouble ms = -1;

    fail_unless (gst_structure_get_int (st, "threads", &threads)
                 && gst_structure_get_int (st, "nodes", &nodes)
                 && gst_structure_get_double (st, "predicted-ms", &ms));
    fail_unless (
        g_strcmp0 (gst_structure_get_string (st, "device"), ps->device) == 0
            && threads == ps->threads && nodes == ps->n_nodes
            && g_strcmp0 (gst_structure_get_string (st, "cpus"), cpus) == 0
            && g_strcmp0 (gst_structure_get_string (st, "first-node"), ps->nodes[0]) == 0
            && g_strcmp0 (gst_structure_get_string (st, "last-node"), ps->nodes[ps->n_nodes - 1])
                   == 0
            && fabs (ms - ps->predicted_ms) <= 1e-9 * MAX (1.0, fabs (ms)),
        "%s: stage %d: element %s, nnp_plan_make %s x%d cpus %s, %d nodes %s .. %s, %.6f ms", what,
        k, got, ps->device, ps->threads, cpus, ps->n_nodes, ps->nodes[0],
        ps->nodes[ps->n_nodes - 1], ps->predicted_ms);
    g_free (got);
    g_free (cpus);
  }
}

static gboolean
same_nodes (const NnpPlan *a, const NnpPlan *b)
{
  if (a->n_stages != b->n_stages)
    return FALSE;
  for (gint k = 0; k < a->n_stages; k++) {
    if (a->stages[k].n_nodes != b->stages[k].n_nodes)
      return FALSE;
    for (gint i = 0; i < a->stages[k].n_nodes; i++)
      if (strcmp (a->stages[k].nodes[i], b->stages[k].nodes[i]) != 0)
        return FALSE;
  }
  return TRUE;
}

/* The CLI's plan and this process's: the same stages on the same devices;
 * the same nodes (exact) or a bottleneck within 10 %. */
static void
assert_cli_is_plan (const NnpPlan *cli, const NnpPlan *plan, gboolean exact, const gchar *what)
{
  fail_unless (cli->n_stages == plan->n_stages, "%s: CLI %d stages, nnp_plan_make %d", what,
               cli->n_stages, plan->n_stages);
  for (gint k = 0; k < cli->n_stages; k++) {
    gchar *a = cpus_string (&cli->stages[k]), *b = cpus_string (&plan->stages[k]);

    fail_unless (strcmp (cli->stages[k].device, plan->stages[k].device) == 0
                     && cli->stages[k].threads == plan->stages[k].threads && strcmp (a, b) == 0,
                 "%s: stage %d: CLI %s x%d cpus %s, nnp_plan_make %s x%d cpus %s", what, k,
                 cli->stages[k].device, cli->stages[k].threads, a, plan->stages[k].device,
                 plan->stages[k].threads, b);
    g_free (a);
    g_free (b);
  }
  if (exact || same_nodes (cli, plan)) {
    fail_unless (same_nodes (cli, plan), "%s: CLI and nnp_plan_make split the nodes differently",
                 what);
  } else {
    gdouble x = cli->predicted_bottleneck_ms, y = plan->predicted_bottleneck_ms;

    fail_unless (x > 0 && y > 0 && fabs (x - y) <= 0.1 * MAX (x, y),
                 "%s: CLI bottleneck %.6f ms, nnp_plan_make %.6f ms", what, x, y);
  }
}

GST_START_TEST (test_same_plan)
{
  gchar *path = nnp_test_model_path ("residual.onnx");
  gchar *cli_plan = g_build_filename (tmpdir, "cli.json", NULL);
  gchar *file_plan = g_build_filename (tmpdir, "file.json", NULL);
  GError *err = NULL;
  NnpModel *model = nnp_model_load (path, &err);
  NnpInputShape shape = { "x" };
  NnpGraph *g;
  gchar *node3;
  cpu_set_t cpus_before, cpus_after;

  fail_unless (model != NULL, "%s", err ? err->message : "?");
  nnp_shape_set (&shape.shape, 4, (const int64_t[]){ 1, 3, H, W });
  g = nnp_model_specialize (model, &shape, 1, NNP_SPECIALIZE_DEFAULT, &err);
  fail_unless (g != NULL && g->nodes->len >= 8, "%s", err ? err->message : "fewer than 8 nodes");
  node3 = g_strdup (nnp_graph_node (g, 3)->name);
  nnp_graph_unref (g);
  fail_unless (sched_getaffinity (0, sizeof (cpus_before), &cpus_before) == 0);

  for (guint r = 0; r < G_N_ELEMENTS (requests); r++) {
    gchar **props = request_props (&requests[r], node3, file_plan);
    NnpPlan *here = plan_here (model, path, props);
    NnpPlan *cli = plan_cli (path, props, cli_plan);
    gboolean warned = FALSE;
    GstStructure *msg = plan_element (path, props, &warned);

    fail_unless (sched_getaffinity (0, sizeof (cpus_after), &cpus_after) == 0
                     && CPU_EQUAL (&cpus_before, &cpus_after),
                 "%s: the element left this thread on %d of its %d cpus", requests[r].what,
                 CPU_COUNT (&cpus_after), CPU_COUNT (&cpus_before));
    fail_unless (cli != NULL, "%s: no CLI plan", requests[r].what);
    assert_message_is_plan (msg, here, requests[r].what);
    assert_cli_is_plan (cli, here, requests[r].exact, requests[r].what);
    fail_unless (warned == (strstr (requests[r].props, "fallback") != NULL),
                 "%s: fallback warning %s", requests[r].what, warned ? "posted" : "missing");
    /* the next request reads this one's CLI plan as a plan file */
    if (g_file_test (cli_plan, G_FILE_TEST_EXISTS))
      fail_unless (g_rename (cli_plan, file_plan) == 0);
    GST_INFO ("%s: %d stages, bottleneck %.4f ms", requests[r].what, here->n_stages,
              here->predicted_bottleneck_ms);
    gst_structure_free (msg);
    nnp_plan_free (cli);
    nnp_plan_free (here);
    g_strfreev (props);
  }
  g_free (node3);
  nnp_model_unref (model);
  g_free (cli_plan);
  g_free (file_plan);
  g_free (path);
}

GST_END_TEST;

static Suite *
plan_make_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("plan-make", 0, &tc);

  tmpdir = g_dir_make_tmp ("nnp-plan-make-XXXXXX", NULL);
  g_setenv ("NNP_PROFILE_DIR", tmpdir, TRUE);
  tcase_add_test (tc, test_same_plan);
  return s;
}

GST_CHECK_MAIN (plan_make);
