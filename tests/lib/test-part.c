/* Unit tests of NnpPart (include/nnpipe/part.h): specialisations cached by
 * shapes key (hits, LRU eviction), errors on wrong shapes, a node range
 * equal to the plan stage it describes, stages prepared once, fallback to
 * the CPU, finding model shapes from a later part's inputs, and the memo
 * of the last question (nnp_part_answer()).
 * tests/data/small.onnx: x [N,3,8,8] -> Conv, BN, Relu, Reshape, Gemm, Softmax. */
#include <nnpipe/nnpipe.h>
#include <nnpipe/part.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"
#include "pipeline/part-private.h"

#include <string.h>

static NnpModel *
small_model (void)
{
  g_autofree char *path =
      g_build_filename (g_getenv ("NNP_SOURCE_DIR"), "tests", "data", "small.onnx", NULL);
  GError *error = NULL;
  NnpModel *model = nnp_model_load (path, &error);

  g_assert_no_error (error);
  return model;
}

static NnpInputShape
batch (int64_t n)
{
  NnpInputShape s = { "x", { 4, { n, 3, 8, 8 } } };
  return s;
}

static NnpPartSpec *
reshape_batch (NnpPart *part, int64_t n)
{
  NnpInputShape s = batch (n);
  GError *error = NULL;
  NnpPartSpec *spec = nnp_part_reshape (part, &s, 1, &error);

  g_assert_no_error (error);
  g_assert_nonnull (spec);
  return spec;
}

/* The same shapes twice: one specialisation, the same object. */
static void
test_cache_hit (void)
{
  g_autoptr (NnpModel) model = small_model ();
  g_autoptr (NnpPart) part = nnp_part_new (model, NULL, NULL);
  NnpPartSpec *a, *b;

  g_assert_nonnull (part);
  g_assert_true (nnp_part_takes_model_inputs (part));
  a = reshape_batch (part, 2);
  b = reshape_batch (part, 2);
  g_assert_true (a == b);
  g_assert_cmpuint (nnp_part_get_n_specialized (part), ==, 1);
  g_assert_cmpstr (nnp_part_spec_get_key (a), ==, "x=2x3x8x8");
  g_assert_cmpint (nnp_part_spec_get_n_inputs (a), ==, 1);
  g_assert_cmpint (nnp_part_spec_get_input (a, 0)->shape.dims[0], ==, 2);
  g_assert_cmpint (nnp_part_spec_get_n_outputs (a), ==, 1);
  g_assert_cmpint (nnp_part_spec_get_output (a, 0)->shape.dims[0], ==, 2);
  nnp_part_spec_unref (a);
  nnp_part_spec_unref (b);
}

/* Cache of 2: the least recently used goes, a used one stays; a spec held
 * by the caller outlives its eviction. */
static void
test_eviction (void)
{
  g_autoptr (NnpModel) model = small_model ();
  NnpPartOptions opts = { .cache_size = 2 };
  g_autoptr (NnpPart) part = nnp_part_new (model, &opts, NULL);
  NnpPartSpec *s1 = reshape_batch (part, 1), *s2, *s3, *again;
  g_auto (GStrv) keys = NULL;

  s2 = reshape_batch (part, 2);
  again = reshape_batch (part, 1); /* hit: 1 is the newest now */
  g_assert_true (again == s1);
  nnp_part_spec_unref (again);
  s3 = reshape_batch (part, 3); /* evicts 2 */
  g_assert_cmpuint (nnp_part_get_n_specialized (part), ==, 3);
  keys = nnp_part_get_keys (part);
  g_assert_cmpuint (g_strv_length (keys), ==, 2);
  g_assert_cmpstr (keys[0], ==, "x=3x3x8x8");
  g_assert_cmpstr (keys[1], ==, "x=1x3x8x8");
  again = reshape_batch (part, 2); /* a miss: made anew */
  g_assert_true (again != s2);
  g_assert_cmpuint (nnp_part_get_n_specialized (part), ==, 4);
  /* the evicted one still works for its holder */
  g_assert_cmpint (nnp_part_spec_get_input (s2, 0)->shape.dims[0], ==, 2);
  nnp_part_set_cache_size (part, 1);
  g_strfreev (keys);
  keys = nnp_part_get_keys (part);
  g_assert_cmpuint (g_strv_length (keys), ==, 1);
  g_assert_cmpstr (keys[0], ==, "x=2x3x8x8");
  nnp_part_spec_unref (again);
  nnp_part_spec_unref (s1);
  nnp_part_spec_unref (s2);
  nnp_part_spec_unref (s3);
}

/* Shapes the model cannot take, keys that are not its inputs. */
static void
test_wrong_shapes (void)
{
  g_autoptr (NnpModel) model = small_model ();
  g_autoptr (NnpPart) part = nnp_part_new (model, NULL, NULL);
  NnpInputShape s = { "x", { 4, { 1, 4, 8, 8 } } }; /* 4 channels, the conv wants 3 */
  NnpInputShape other = { "y", { 4, { 1, 3, 8, 8 } } };
  GError *error = NULL;

  g_assert_null (nnp_part_reshape (part, &s, 1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "shape inference failed for input shapes x=1x4x8x8"));
  g_clear_error (&error);
  g_assert_null (nnp_part_reshape (part, &other, 1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "no shape for input 'x'"));
  g_clear_error (&error);
  g_assert_cmpuint (nnp_part_get_n_specialized (part), ==, 0);

  for (guint i = 0; i < 5; i++) {
    const char *bad[] = { "y=1x3x8x8", "x=1x3x8x", "x=", "x=1x3x8x8,z=1", "1x3x8x8" };

    g_assert_null (nnp_part_reshape_key (part, bad[i], &error));
    g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
    g_clear_error (&error);
  }
  g_assert_cmpuint (nnp_part_get_n_specialized (part), ==, 0);
}

/* A plan of two stages cut at node 1, and the nodes of its second stage
 * given as a range: the same nodes, boundary and (bit-exact) results. */
static void
test_nodes_equal_plan_stage (void)
{
  g_autoptr (NnpModel) model = small_model ();
  g_autoptr (NnpPart) whole = nnp_part_new (model, NULL, NULL);
  NnpPartSpec *ws = reshape_batch (whole, 2), *ps, *ns;
  NnpGraph *graph = nnp_part_spec_get_graph (ws);
  NnpInputShape shape = batch (2);
  const int cuts[] = { 1 };
  NnpDeviceSpec cpu = { "cpu", 1 };
  GError *error = NULL;
  g_autoptr (NnpPlan) plan = NULL;
  g_autofree char *range = NULL;
  NnpPartOptions popts = { 0 }, nopts = { 0 };
  g_autoptr (NnpPart) by_plan = NULL, by_nodes = NULL;
  const char *const *pn, *const *nn;
  int n_pn, n_nn;
  NnpStage *pstage, *nstage;
  g_autoptr (NnpTensor) in = NULL;
  NnpTensor *mid, *pout, *nout;

  g_assert_cmpuint (graph->nodes->len, >=, 3);
  plan = nnp_plan_new_from_cuts ("small.onnx", nnp_model_get_digest (model), &shape, 1, graph, cuts,
                                 1, &cpu, 1, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (plan->n_stages, ==, 2);
  popts.plan = plan;
  popts.stage = 1;
  by_plan = nnp_part_new (model, &popts, &error);
  g_assert_no_error (error);
  g_assert_false (nnp_part_takes_model_inputs (by_plan));
  range = g_strdup_printf ("%s..%s", nnp_graph_node (graph, 1)->name,
                           nnp_graph_node (graph, graph->nodes->len - 1)->name);
  nopts.nodes = range;
  by_nodes = nnp_part_new (model, &nopts, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (nnp_part_get_name (by_nodes), "nodes \""));

  ps = reshape_batch (by_plan, 2);
  ns = reshape_batch (by_nodes, 2);
  pn = nnp_part_spec_get_nodes (ps, &n_pn);
  nn = nnp_part_spec_get_nodes (ns, &n_nn);
  g_assert_cmpint (n_pn, ==, (int) graph->nodes->len - 1);
  g_assert_cmpint (n_pn, ==, n_nn);
  for (int i = 0; i < n_pn; i++)
    g_assert_cmpstr (pn[i], ==, nn[i]);
  g_assert_cmpint (nnp_part_spec_get_n_inputs (ps), ==, nnp_part_spec_get_n_inputs (ns));
  for (int i = 0; i < nnp_part_spec_get_n_inputs (ps); i++)
    g_assert_cmpstr (nnp_part_spec_get_input (ps, i)->name, ==,
                     nnp_part_spec_get_input (ns, i)->name);
  g_assert_cmpstr (nnp_part_spec_get_output (ps, 0)->name, ==,
                   nnp_part_spec_get_output (ns, 0)->name);

  /* the output of node 0 (the whole model's stage 0) into both */
  {
    NnpPartOptions first = { .plan = plan, .stage = 0 };
    g_autoptr (NnpPart) p0 = nnp_part_new (model, &first, &error);
    NnpPartSpec *s0 = reshape_batch (p0, 2);
    NnpStage *st0 = nnp_part_prepare (p0, s0, NULL, &error);

    g_assert_no_error (error);
    in = nnp_tensor_new (NNP_DTYPE_FLOAT32, &shape.shape, &error);
    nnp_tensor_fill_pattern (in, 7);
    mid = nnp_stage_new_output (st0, 0, &error);
    g_assert_true (nnp_stage_run (st0, &in, &mid, &error));
    g_assert_no_error (error);
    nnp_part_spec_unref (s0);
    pstage = nnp_part_prepare (by_plan, ps, NULL, &error);
    g_assert_no_error (error);
    nstage = nnp_part_prepare (by_nodes, ns, NULL, &error);
    g_assert_no_error (error);
    pout = nnp_stage_new_output (pstage, 0, &error);
    nout = nnp_stage_new_output (nstage, 0, &error);
    g_assert_true (nnp_stage_run (pstage, &mid, &pout, &error));
    g_assert_true (nnp_stage_run (nstage, &mid, &nout, &error));
    g_assert_no_error (error);
    g_assert_cmpmem (pout->data, pout->nbytes, nout->data, nout->nbytes);
    nnp_tensor_unref (mid);
    nnp_tensor_unref (pout);
    nnp_tensor_unref (nout);
  }
  nnp_part_spec_unref (ps);
  nnp_part_spec_unref (ns);
  nnp_part_spec_unref (ws);
}

/* A node list that is not convex, or names an unknown node, fails at the
 * first reshape (N is dynamic: nothing to check at creation). */
static void
test_bad_nodes (void)
{
  g_autoptr (NnpModel) model = small_model ();
  NnpPartSpec *ws;
  g_autoptr (NnpPart) whole = nnp_part_new (model, NULL, NULL);
  NnpPartOptions opts = { 0 };
  g_autoptr (NnpPart) part = NULL;
  NnpGraph *graph;
  g_autofree char *list = NULL;
  NnpInputShape s = batch (1);
  GError *error = NULL;

  ws = reshape_batch (whole, 1);
  graph = nnp_part_spec_get_graph (ws);
  list =
      g_strdup_printf ("%s,%s", nnp_graph_node (graph, 0)->name, nnp_graph_node (graph, 2)->name);
  opts.nodes = list;
  part = nnp_part_new (model, &opts, &error); /* N is dynamic: checked later */
  g_assert_no_error (error);
  g_assert_null (nnp_part_reshape (part, &s, 1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "not convex"));
  g_clear_error (&error);
  opts.nodes = "nope";
  g_clear_pointer (&part, nnp_part_free);
  part = nnp_part_new (model, &opts, &error);
  g_assert_null (nnp_part_reshape (part, &s, 1, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "unknown node 'nope'"));
  g_clear_error (&error);
  nnp_part_spec_unref (ws);
}

/* A stage is prepared once per specialisation; a device that is not there
 * fails, or with fallback runs on the CPU and says why. */
static void
test_prepare_and_fallback (void)
{
  g_autoptr (NnpModel) model = small_model ();
  NnpPartOptions opts = { .device = "opencl:99" };
  g_autoptr (NnpPart) cpu = nnp_part_new (model, NULL, NULL);
  g_autoptr (NnpPart) gone = NULL, fb = NULL;
  NnpPartSpec *spec = reshape_batch (cpu, 1);
  GError *error = NULL, *why = NULL;
  NnpStage *a, *b;

  a = nnp_part_prepare (cpu, spec, &why, &error);
  g_assert_no_error (error);
  g_assert_null (why);
  b = nnp_part_prepare (cpu, spec, &why, &error);
  g_assert_true (a == b);
  g_assert_cmpuint (nnp_part_get_n_stages_built (cpu), ==, 1);
  g_assert_false (nnp_part_spec_fell_back (spec));
  nnp_part_spec_unref (spec);

  gone = nnp_part_new (model, &opts, &error);
  g_assert_no_error (error);
  spec = reshape_batch (gone, 1);
  g_assert_null (nnp_part_prepare (gone, spec, &why, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_DEVICE);
  g_assert_null (why);
  g_clear_error (&error);
  nnp_part_spec_unref (spec);

  opts.fallback = TRUE;
  fb = nnp_part_new (model, &opts, &error);
  spec = reshape_batch (fb, 1);
  a = nnp_part_prepare (fb, spec, &why, &error);
  g_assert_no_error (error);
  g_assert_nonnull (a);
  g_assert_error (why, NNP_ERROR, NNP_ERROR_DEVICE);
  g_clear_error (&why);
  g_assert_true (nnp_part_spec_fell_back (spec));
  g_assert_cmpstr (nnp_device_get_backend (nnp_stage_get_device (a)), ==, "cpu");
  nnp_part_spec_unref (spec);
}

static gboolean
fits_batch (const NnpValue *const *inputs, int n, gpointer data)
{
  return n == 1 && inputs[0]->shape.rank >= 1 && inputs[0]->shape.dims[0] == GPOINTER_TO_INT (data);
}

/* A later part finds the model shapes whose stage inputs are the caller's:
 * wrong candidates are tried and not kept; none fitting names them all. */
static void
test_find (void)
{
  g_autoptr (NnpModel) model = small_model ();
  g_autoptr (NnpPart) whole = nnp_part_new (model, NULL, NULL);
  NnpPartSpec *ws = reshape_batch (whole, 3), *found;
  NnpGraph *graph = nnp_part_spec_get_graph (ws);
  g_autofree char *range = g_strdup_printf ("%s..%s", nnp_graph_node (graph, 1)->name,
                                            nnp_graph_node (graph, graph->nodes->len - 1)->name);
  NnpPartOptions opts = { .nodes = range };
  g_autoptr (NnpPart) part = nnp_part_new (model, &opts, NULL);
  const char *const cands[] = { "x=1x3x8x8", "x=2x3x8x8", "x=3x3x8x8", NULL };
  const char *const srcs[] = { "a", "b", "c", NULL };
  GError *error = NULL;
  g_auto (GStrv) keys = NULL;

  found = nnp_part_find (part, cands, srcs, fits_batch, GINT_TO_POINTER (3), "T", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (nnp_part_spec_get_key (found), ==, "x=3x3x8x8");
  keys = nnp_part_get_keys (part);
  g_assert_cmpuint (g_strv_length (keys), ==, 1); /* the others were not kept */
  nnp_part_spec_unref (found);

  found = nnp_part_find (part, cands, srcs, fits_batch, GINT_TO_POINTER (7), "T", &error);
  g_assert_null (found);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_assert_nonnull (strstr (error->message, "input T does not fit the stage"));
  g_assert_nonnull (strstr (error->message, "at model input shapes x=2x3x8x8 (from b)"));
  g_assert_nonnull (strstr (error->message, "the stage's 1 inputs are"));
  g_clear_error (&error);

  found = nnp_part_find (part, NULL, NULL, fits_batch, GINT_TO_POINTER (3), "T", &error);
  g_assert_no_error (error); /* from the cache ("last caps") */
  g_assert_cmpstr (nnp_part_spec_get_key (found), ==, "x=3x3x8x8");
  nnp_part_spec_unref (found);
  nnp_part_spec_unref (ws);
}

/* nnp_part_answer()'s answer: x 2x3x8x8 ("2"), or 1x4x8x8 ("bad": the
 * conv wants 3 channels); counts its calls. */
typedef struct {
  int calls;
  gboolean bad;
} Asked;

static NnpPartSpec *
answer_batch (NnpPart *part, gpointer data, GError **error)
{
  Asked *asked = data;
  NnpInputShape good = batch (2), bad = { "x", { 4, { 1, 4, 8, 8 } } };

  asked->calls++;
  return nnp_part_reshape (part, asked->bad ? &bad : &good, 1, error);
}

/* The memo: the last question is answered again without answer() (the
 * same spec, or a copy of the same error), another question calls it,
 * and a spec it holds outlives the cache's eviction. */
static void
test_answer_memo (void)
{
  g_autoptr (NnpModel) model = small_model ();
  NnpPartOptions opts = { .cache_size = 1 };
  g_autoptr (NnpPart) part = nnp_part_new (model, &opts, NULL);
  Asked asked = { 0, FALSE };
  GError *error = NULL;
  NnpPartSpec *a, *b, *c;

  g_assert_false (nnp_part_knows (part, "2"));
  a = nnp_part_answer (part, "2", answer_batch, &asked, &error);
  g_assert_no_error (error);
  g_assert_nonnull (a);
  g_assert_true (nnp_part_knows (part, "2"));
  b = nnp_part_answer (part, "2", answer_batch, &asked, &error);
  g_assert_true (a == b);
  g_assert_cmpint (asked.calls, ==, 1);
  g_assert_cmpstr (nnp_part_spec_get_key (b), ==, "x=2x3x8x8");
  nnp_part_spec_unref (b);

  /* evict "x=2x3x8x8" from the 1-entry cache: the memo's ref keeps a */
  nnp_part_spec_unref (reshape_batch (part, 3));
  b = nnp_part_answer (part, "2", answer_batch, &asked, &error);
  g_assert_true (a == b);
  g_assert_cmpint (asked.calls, ==, 1);
  nnp_part_spec_unref (b);

  /* another question: answered, and its error remembered */
  asked.bad = TRUE;
  c = nnp_part_answer (part, "bad", answer_batch, &asked, &error);
  g_assert_null (c);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (nnp_part_knows (part, "2"));
  c = nnp_part_answer (part, "bad", answer_batch, &asked, &error);
  g_assert_null (c);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_cmpint (asked.calls, ==, 2);
  nnp_part_spec_unref (a);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/part/cache-hit", test_cache_hit);
  g_test_add_func ("/part/eviction", test_eviction);
  g_test_add_func ("/part/wrong-shapes", test_wrong_shapes);
  g_test_add_func ("/part/nodes-equal-plan-stage", test_nodes_equal_plan_stage);
  g_test_add_func ("/part/bad-nodes", test_bad_nodes);
  g_test_add_func ("/part/prepare-and-fallback", test_prepare_and_fallback);
  g_test_add_func ("/part/find", test_find);
  g_test_add_func ("/part/answer-memo", test_answer_memo);
  return g_test_run ();
}
