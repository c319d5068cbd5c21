/* Unit tests: the derived-data cache (lib/graph/derived.h).  Specialisations
 * of one model share what depends only on its weights (folded and packed
 * weights), compute the same outputs bit for bit as a fresh build, and keep
 * working when the graphs they came from are gone; data derived from tensors
 * that are not the model's is not cached. */
#include "test-util.h"

#include "graph/derived.h"
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-conv.h"
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"
#include "tensor-private.h"

#include <string.h>

#define C_IN 3
#define C_MID 8
#define C_OUT 16
#define N_CLS 5
#define H 6

static NnpTensor *
weights (int rank, const int64_t *dims, guint32 seed)
{
  NnpTensor *t = tu_tensor_f32 (rank, dims, NULL);

  nnp_tensor_fill_pattern (t, seed);
  return t;
}

static void
add_weights (NnpGraph *g, const char *name, int rank, const int64_t *dims, guint32 seed)
{
  g_autoptr (NnpTensor) t = weights (rank, dims, seed);

  tu_add_constant (g, name, t);
}

/* x [1, 3, 6, W] (W symbolic) -> Conv 3x3 -> BatchNormalization -> Mul (per
 * channel) -> Relu -> Conv 1x1 -> Transpose to NHWC -> MatMul [16, 5]:
 * fusion folds the BN and the Mul into the first Conv's weights; both Convs
 * and the MatMul pack their weights. */
static NnpGraph *
make_model (void)
{
  NnpGraph *g = nnp_graph_new ("derived", 13);
  const int64_t xd[4] = { 1, C_IN, H, -1 };
  const int64_t w1[4] = { C_MID, C_IN, 3, 3 }, c8[1] = { C_MID };
  const int64_t mul[4] = { 1, C_MID, 1, 1 }, w2[4] = { C_OUT, C_MID, 1, 1 };
  const int64_t wm[2] = { C_OUT, N_CLS };
  NnpNode *tr;
  NnpAttr a = { 0 };

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 4, xd);
  add_weights (g, "w1", 4, w1, 11);
  add_weights (g, "b1", 1, c8, 12);
  add_weights (g, "scale", 1, c8, 13);
  add_weights (g, "shift", 1, c8, 14);
  add_weights (g, "mean", 1, c8, 15);
  {
    /* variances must be positive */
    g_autoptr (NnpTensor) var = weights (1, c8, 16);
    float *v = var->data;
    for (int i = 0; i < C_MID; i++)
      v[i] = 0.5f + v[i] * v[i];
    tu_add_constant (g, "var", var);
  }
  add_weights (g, "k", 4, mul, 17);
  add_weights (g, "w2", 4, w2, 18);
  add_weights (g, "wm", 2, wm, 19);
  tu_add_node (g, "conv1", "Conv", L ("x", "w1", "b1"), L ("c1"));
  tu_add_node (g, "bn", "BatchNormalization", L ("c1", "scale", "shift", "mean", "var"), L ("n1"));
  tu_add_node (g, "mul", "Mul", L ("n1", "k"), L ("m1"));
  tu_add_node (g, "relu", "Relu", L ("m1"), L ("r1"));
  tu_add_node (g, "conv2", "Conv", L ("r1", "w2"), L ("c2"));
  tr = tu_add_node (g, "nhwc", "Transpose", L ("c2"), L ("t2"));
  a.name = g_strdup ("perm");
  a.type = NNP_ATTR_INTS;
  a.n = 4;
  a.ints = g_new (int64_t, 4);
  a.ints[0] = 0;
  a.ints[1] = 2;
  a.ints[2] = 3;
  a.ints[3] = 1;
  nnp_node_take_attr (tr, &a);
  tu_add_node (g, "cls", "MatMul", L ("t2", "wm"), L ("y"));
  tu_add_output (g, "y");
  return g;
}

static NnpGraph *
specialize_width (const NnpGraph *g, int64_t w)
{
  g_autoptr (GError) error = NULL;
  NnpInputShape s = { .name = "x", .shape = { .rank = 4, .dims = { 1, C_IN, H, w } } };
  NnpGraph *sg = nnp_graph_specialize (g, &s, 1, NNP_SPECIALIZE_DEFAULT, &error);

  g_assert_no_error (error);
  g_assert_nonnull (sg);
  return sg;
}

static NnpStage *
new_stage (NnpGraph *sg)
{
  g_autoptr (GError) error = NULL;
  NnpStage *stage = nnp_stage_new (sg, NULL, 0, NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (stage);
  return stage;
}

/* Run a whole-graph stage on the pattern input of width w; returns y. */
static NnpTensor *
run_width (NnpStage *stage, int64_t w)
{
  const int64_t xd[4] = { 1, C_IN, H, w };
  g_autoptr (NnpTensor) x = tu_tensor_f32 (4, xd, NULL);
  g_autoptr (GPtrArray) outs = NULL;
  NnpTensor *ins[1] = { x };

  nnp_tensor_fill_pattern (x, 7);
  outs = tu_run_stage (stage, ins);
  g_assert_cmpuint (outs->len, ==, 1);
  return nnp_tensor_ref (g_ptr_array_index (outs, 0));
}

static NnpNode *
only_conv_with_act (NnpGraph *sg)
{
  NnpNode *found = NULL;

  for (guint i = 0; i < sg->nodes->len; i++) {
    NnpNode *n = nnp_graph_node (sg, i);
    if (n->op == NNP_OP_CONV && g_strcmp0 (n->name, "conv1") == 0)
      found = n;
  }
  g_assert_nonnull (found);
  return found;
}

/* Two widths of one model: the folded weights are one tensor, the packed
 * weights one buffer; the second specialisation makes nothing new. */
static void
test_shared (void)
{
  g_autoptr (NnpGraph) g = make_model ();
  g_autoptr (NnpGraph) a = NULL, b = NULL;
  NnpDerivedCache *cache;
  const NnpCpuKernel *conv = nnp_cpu_kernel (NNP_OP_CONV);
  NnpNode *ca, *cb;
  ConvState *sa, *sb;
  guint made_a, made_b, hits_a, hits_b;
  NnpStage *stage_a, *stage_b;

  a = specialize_width (g, 20);
  cache = nnp_graph_get_derived (g);
  g_assert_true (nnp_graph_get_derived (a) == cache);
  stage_a = new_stage (a);
  nnp_derived_cache_get_counts (cache, &made_a, &hits_a);
  /* BN and Mul folds into conv1, conv1 and conv2 packed, the MatMul's B */
  g_assert_cmpuint (made_a, ==, 5);

  b = specialize_width (g, 36);
  g_assert_true (nnp_graph_get_derived (b) == cache);
  stage_b = new_stage (b);
  nnp_derived_cache_get_counts (cache, &made_b, &hits_b);
  g_assert_cmpuint (made_b, ==, made_a);
  g_assert_cmpuint (hits_b, >=, hits_a + 5);

  /* fusion happened (BN and Mul are gone) and shares the folded weights */
  ca = only_conv_with_act (a);
  cb = only_conv_with_act (b);
  g_assert_cmpint (a->nodes->len, ==, 4);
  g_assert_cmpint (ca->act, ==, NNP_ACT_RELU);
  g_assert_true (nnp_node_input (a, ca, 1)->constant == nnp_node_input (b, cb, 1)->constant);
  g_assert_true (nnp_node_input (a, ca, 2)->constant == nnp_node_input (b, cb, 2)->constant);

  /* the packed weights: one buffer, borrowed by both states */
  g_assert_cmpint (((const NnpConvParams *) ca->params)->in_dims[2], ==, 20);
  g_assert_cmpint (((const NnpConvParams *) cb->params)->in_dims[2], ==, 36);
  sa = conv->prepare (a, ca, NULL);
  sb = conv->prepare (b, cb, NULL);
  g_assert_nonnull (sa);
  g_assert_nonnull (sb);
  g_assert_true (sa->packed == sb->packed);
  g_assert_null (sa->own_packed);
  g_assert_null (sb->own_packed);
  conv->free_state (sa);
  conv->free_state (sb);

  nnp_stage_free (stage_a);
  nnp_stage_free (stage_b);
}

/* Outputs of a specialisation that found everything in the cache equal, bit
 * for bit, those of a fresh build of the model at that width (its own
 * cache); and a stage keeps working when the model's graph and the other
 * specialisations are gone (the cache lives with its last graph). */
static void
test_bit_exact (void)
{
  NnpGraph *g = make_model ();
  NnpGraph *warm_a = specialize_width (g, 24);
  NnpGraph *warm = specialize_width (g, 44);
  NnpStage *stage_a = new_stage (warm_a), *stage;
  g_autoptr (NnpGraph) fresh_model = make_model ();
  g_autoptr (NnpGraph) fresh = specialize_width (fresh_model, 44);
  NnpStage *fresh_stage = new_stage (fresh);
  g_autoptr (NnpTensor) want = NULL, got = NULL, again = NULL;
  guint made, hits;

  g_assert_true (nnp_graph_get_derived (fresh) != nnp_graph_get_derived (warm));
  stage = new_stage (warm);
  nnp_derived_cache_get_counts (nnp_graph_get_derived (warm), &made, &hits);
  g_assert_cmpuint (hits, >=, 5);
  want = run_width (fresh_stage, 44);
  got = run_width (stage, 44);
  g_assert_cmpint (got->shape.rank, ==, 4);
  g_assert_cmpint (got->shape.dims[2], ==, 42);
  g_assert_cmpint (got->shape.dims[3], ==, N_CLS);
  g_assert_cmpuint (got->nbytes, ==, want->nbytes);
  g_assert_true (memcmp (got->data, want->data, want->nbytes) == 0);

  /* drop everything but `warm` and its stage */
  nnp_stage_free (stage_a);
  nnp_graph_unref (warm_a);
  nnp_graph_unref (g);
  nnp_graph_unref (warm);
  again = run_width (stage, 44);
  g_assert_true (memcmp (again->data, want->data, want->nbytes) == 0);
  nnp_stage_free (stage);
  nnp_stage_free (fresh_stage);
}

static int n_make_calls;

static gpointer
make_copy (gpointer data)
{
  g_atomic_int_inc (&n_make_calls);
  g_usleep (2000); /* let racing threads overlap */
  return g_strdup (data);
}

/* Only stable sources are cached; the key is kind + sources + params. */
static void
test_stable_only (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("keys", 13);
  NnpDerivedCache *cache = nnp_graph_get_derived (g);
  const int64_t d[1] = { 4 };
  g_autoptr (NnpTensor) t = weights (1, d, 1);
  g_autoptr (NnpTensor) u = weights (1, d, 1); /* equal contents, another tensor */
  NnpTensor *src[1] = { t };
  int p1 = 1, p2 = 2;
  gchar *v1, *v2;
  guint made, hits;

  n_make_calls = 0;
  g_assert_false (nnp_derived_cache_is_stable (cache, t));
  g_assert_null (nnp_derived_get (cache, "k", src, 1, &p1, sizeof p1, make_copy, "one", g_free));
  g_assert_cmpint (n_make_calls, ==, 0);

  nnp_derived_cache_add_stable (cache, t);
  v1 = nnp_derived_get (cache, "k", src, 1, &p1, sizeof p1, make_copy, "one", g_free);
  g_assert_cmpstr (v1, ==, "one");
  g_assert_true (nnp_derived_get (cache, "k", src, 1, &p1, sizeof p1, make_copy, "x", g_free)
                 == v1);
  v2 = nnp_derived_get (cache, "k", src, 1, &p2, sizeof p2, make_copy, "two", g_free);
  g_assert_cmpstr (v2, ==, "two");
  g_assert_cmpstr (
      nnp_derived_get (cache, "other", src, 1, &p1, sizeof p1, make_copy, "three", g_free), ==,
      "three");
  /* identity, not contents: u is not stable */
  src[0] = u;
  g_assert_null (nnp_derived_get (cache, "k", src, 1, &p1, sizeof p1, make_copy, "four", g_free));
  nnp_derived_cache_get_counts (cache, &made, &hits);
  g_assert_cmpuint (made, ==, 3);
  g_assert_cmpuint (hits, ==, 1);
  g_assert_cmpint (n_make_calls, ==, 3);

  /* a graph that is not specialised has no stable weights: the kernels pack
   * their own copy */
  {
    g_autoptr (NnpGraph) m = make_model ();
    g_autoptr (NnpGraph) sm = specialize_width (m, 12);
    g_autoptr (NnpGraph) copy = nnp_graph_copy (sm);
    g_autoptr (NnpGraph) loose = nnp_graph_new ("loose", 13);
    NnpNode *cv = only_conv_with_act (copy);
    const NnpCpuKernel *conv = nnp_cpu_kernel (NNP_OP_CONV);
    ConvState *st;

    /* a weight swapped for a new tensor in the copy is not stable */
    {
      NnpValue *wv = nnp_node_input (copy, cv, 1);
      NnpTensor *nw = nnp_tensor_copy (wv->constant);
      nnp_tensor_unref (wv->constant);
      wv->constant = nw;
    }
    st = conv->prepare (copy, cv, NULL);
    g_assert_nonnull (st);
    g_assert_nonnull (st->own_packed);
    g_assert_true (st->packed == st->own_packed);
    conv->free_state (st);
    g_assert_true (nnp_graph_get_derived (loose) != nnp_graph_get_derived (m));
  }
}

typedef struct {
  NnpDerivedCache *cache;
  NnpTensor *src;
  gpointer got;
} RaceArgs;

static gpointer
race_thread (gpointer data)
{
  RaceArgs *r = data;
  int p = 9;

  r->got = nnp_derived_get (r->cache, "race", &r->src, 1, &p, sizeof p, make_copy, "raced", g_free);
  return NULL;
}

/* Threads asking for the same entry at once all get the one kept. */
static void
test_threads (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("race", 13);
  NnpDerivedCache *cache = nnp_graph_get_derived (g);
  const int64_t d[1] = { 2 };
  g_autoptr (NnpTensor) t = weights (1, d, 3);
  RaceArgs args[6];
  GThread *th[6];
  guint made, hits;

  nnp_derived_cache_add_stable (cache, t);
  for (int i = 0; i < 6; i++) {
    args[i].cache = cache;
    args[i].src = t;
    args[i].got = NULL;
    th[i] = g_thread_new ("race", race_thread, &args[i]);
  }
  for (int i = 0; i < 6; i++)
    g_thread_join (th[i]);
  for (int i = 1; i < 6; i++)
    g_assert_true (args[i].got == args[0].got);
  g_assert_cmpstr (args[0].got, ==, "raced");
  nnp_derived_cache_get_counts (cache, &made, &hits);
  g_assert_cmpuint (made, ==, 1);
  g_assert_cmpuint (hits, ==, 5);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/derived/shared", test_shared);
  g_test_add_func ("/derived/bit-exact", test_bit_exact);
  g_test_add_func ("/derived/stable-only", test_stable_only);
  g_test_add_func ("/derived/threads", test_threads);
  return g_test_run ();
}
