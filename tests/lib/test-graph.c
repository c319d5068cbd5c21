/* Unit tests: graph construction, topological sort, cycle and missing-input detection. */
#include "test-util.h"
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"
#include "specialize/specialize.h"

#include <string.h>

static const int64_t dims_1x4[] = { 1, 4 };

static void
test_sort_reorders (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("reversed", 13);
  g_autoptr (GError) error = NULL;
  NnpNode *n;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  /* consumers first: c <- b <- a <- x */
  tu_add_node (g, "c", "Relu", L ("b_out"), L ("y"));
  tu_add_node (g, "b", "Sigmoid", L ("a_out"), L ("b_out"));
  tu_add_node (g, "a", "Tanh", L ("x"), L ("a_out"));
  tu_add_output (g, "y");

  g_assert_true (nnp_graph_sort (g, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (nnp_graph_node (g, 0)->name, ==, "a");
  g_assert_cmpstr (nnp_graph_node (g, 1)->name, ==, "b");
  g_assert_cmpstr (nnp_graph_node (g, 2)->name, ==, "c");
  for (guint i = 0; i < g->nodes->len; i++)
    g_assert_cmpint (nnp_graph_node (g, i)->index, ==, (int) i);

  n = nnp_graph_find_node (g, "b");
  g_assert_nonnull (n);
  g_assert_cmpint (nnp_graph_find_value (g, "b_out")->producer, ==, n->index);
  g_assert_cmpint (nnp_graph_find_value (g, "a_out")->n_consumers, ==, 1);
  g_assert_cmpint (nnp_graph_find_value (g, "a_out")->consumers[0], ==, n->index);
  g_assert_cmpint (nnp_graph_find_value (g, "x")->producer, ==, -1);
}

static void
test_sort_is_stable (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("diamond", 13);
  g_autoptr (GError) error = NULL;
  const char *order[] = { "top", "left", "right", "join" };

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_node (g, "top", "Relu", L ("x"), L ("t"));
  tu_add_node (g, "left", "Sigmoid", L ("t"), L ("l"));
  tu_add_node (g, "right", "Tanh", L ("t"), L ("r"));
  tu_add_node (g, "join", "Add", L ("l", "r"), L ("y"));
  tu_add_output (g, "y");

  g_assert_true (nnp_graph_sort (g, &error));
  for (int i = 0; i < 4; i++)
    g_assert_cmpstr (nnp_graph_node (g, i)->name, ==, order[i]);
  g_assert_cmpint (nnp_graph_find_value (g, "t")->n_consumers, ==, 2);
}

static void
test_cycle (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("cycle", 13);
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_node (g, "loop_a", "Add", L ("x", "b"), L ("a"));
  tu_add_node (g, "loop_b", "Relu", L ("a"), L ("b"));
  tu_add_node (g, "tail", "Relu", L ("a"), L ("y"));
  tu_add_output (g, "y");

  g_assert_false (nnp_graph_sort (g, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_test_message ("cycle: %s", error->message);
  g_assert_true (strstr (error->message, "loop_a") != NULL
                 || strstr (error->message, "loop_b") != NULL);
  g_assert_null (strchr (error->message, '\n'));
}

static void
test_missing_input (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("missing", 13);
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_node (g, "mul", "Mul", L ("x", "weight_nobody_makes"), L ("y"));
  tu_add_output (g, "y");

  g_assert_false (nnp_graph_sort (g, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "weight_nobody_makes"));
  g_assert_nonnull (strstr (error->message, "mul"));
}

static void
test_double_producer (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("twice", 13);
  g_autoptr (GError) error = NULL;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_node (g, "first", "Relu", L ("x"), L ("y"));
  tu_add_node (g, "second", "Tanh", L ("x"), L ("y"));
  tu_add_output (g, "y");

  g_assert_false (nnp_graph_sort (g, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "'y'"));
}

static void
test_unique_names_and_copy (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("names", 13);
  g_autoptr (NnpGraph) copy = NULL;
  NnpNode *a, *b, *c;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  a = tu_add_node (g, "same", "Relu", L ("x"), L ("p"));
  b = tu_add_node (g, "same", "Relu", L ("p"), L ("q"));
  c = tu_add_node (g, NULL, "Relu", L ("q"), L ("y"));
  tu_add_output (g, "y");
  g_assert_cmpstr (a->name, !=, b->name);
  g_assert_cmpstr (c->name, !=, "");
  g_assert_true (nnp_graph_find_node (g, b->name) == b);
  g_assert_cmpint (nnp_op_from_onnx ("Relu"), ==, a->op);
  g_assert_cmpstr (nnp_op_name (a->op), ==, "Relu");
  g_assert_cmpint (nnp_op_from_onnx ("NoSuchOp"), ==, NNP_OP_UNKNOWN);

  copy = nnp_graph_copy (g);
  g_assert_cmpuint (copy->nodes->len, ==, 3);
  g_assert_cmpuint (copy->values->len, ==, g->values->len);
  g_assert_true (nnp_graph_node (copy, 0) != a);
  g_assert_cmpstr (nnp_graph_node (copy, 1)->name, ==, b->name);
}

/* The one shapes key: format, and parsed back to the same shapes. */
static void
test_shapes_key (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("two-inputs", 13);
  g_autoptr (GError) error = NULL;
  NnpInputShape in[2], back[4];
  NnpSpecializeFlags flags = NNP_SPECIALIZE_DEFAULT;
  int n = -1;
  char *key;

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_input (g, "img", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  tu_add_node (g, "a", "Add", L ("x", "img"), L ("y"));
  tu_add_output (g, "y");
  in[0].name = "img";
  nnp_shape_set (&in[0].shape, 4, (const int64_t[]){ 1, 3, 48, 160 });
  in[1].name = "x";
  nnp_shape_set (&in[1].shape, 0, NULL);

  key = nnp_shapes_key (in, 2, NNP_SPECIALIZE_NO_FUSION);
  g_assert_cmpstr (key, ==, "img=1x3x48x160,x=scalar-nofusion");
  g_assert_true (nnp_shapes_from_key (g, key, back, 4, &n, &flags, &error));
  g_assert_no_error (error);
  g_assert_cmpint (n, ==, 2);
  g_assert_cmpint (flags, ==, NNP_SPECIALIZE_NO_FUSION);
  g_assert_cmpstr (back[0].name, ==, "img");
  g_assert_true (nnp_shape_equal (&back[0].shape, &in[0].shape));
  g_assert_cmpstr (back[1].name, ==, "x");
  g_assert_cmpint (back[1].shape.rank, ==, 0);
  g_free (key);

  key = nnp_shapes_key (NULL, 0, NNP_SPECIALIZE_DEFAULT);
  g_assert_cmpstr (key, ==, "static");
  g_assert_true (nnp_shapes_from_key (g, key, back, 4, &n, NULL, &error));
  g_assert_cmpint (n, ==, 0);
  g_free (key);

  /* not an input, a bad dimension, too many items: errors naming the key */
  g_assert_false (nnp_shapes_from_key (g, "y=1x4", back, 4, &n, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "'y=1x4'"));
  g_clear_error (&error);
  g_assert_false (nnp_shapes_from_key (g, "x=1x-4", back, 4, &n, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_false (nnp_shapes_from_key (g, "x=1x4,img=1x4", back, 1, &n, NULL, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_INVALID);
}

/* The one reader of node lists (nnstage nodes=, remote parts, COST). */
static void
test_select_nodes (void)
{
  g_autoptr (NnpGraph) g = nnp_graph_new ("chain", 13);
  const char *names[] = { "n0", "n1", "n2", "n3", "n4" };
  gboolean sel[5];
  GError *error = NULL;
  struct {
    const char *nodes;
    const char *want; /* marked nodes as '1'/'0', or NULL: an error containing `why` */
    const char *why;
  } cases[] = {
    { "n1,n3", "01010", NULL },
    { " n3 , n1 ", "01010", NULL },
    { "n1..n3", "01110", NULL },
    { "1..n2", "01100", NULL },
    { "4", "00001", NULL },
    { "n3..n1", NULL, "'n3' (node 3) comes after 'n1' (node 1)" },
    { "n1,,n2", NULL, "empty node name" },
    { "n1,7", NULL, "node index 7 out of range" },
    { "n1,x,y", NULL, "unknown nodes 'x', 'y' (not in the graph)" },
    { "x..n2", NULL, "unknown node 'x' (not in the graph)" },
    { "a,b,c,d,e,f,g,h,i", NULL, "'g', 'h', ..." },
  };

  tu_add_input (g, "x", NNP_DTYPE_FLOAT32, 2, dims_1x4);
  for (int i = 0; i < 5; i++) {
    g_autofree char *in = i ? g_strdup_printf ("v%d", i - 1) : g_strdup ("x");
    g_autofree char *out = g_strdup_printf ("v%d", i);
    tu_add_node (g, names[i], "Relu", L (in), L (out));
  }
  tu_add_output (g, "v4");
  g_assert_true (nnp_graph_sort (g, NULL));
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++) {
    gboolean ok;

    memset (sel, 0, sizeof sel);
    ok = nnp_graph_select_nodes (g, cases[c].nodes, sel, &error);
    if (cases[c].want) {
      g_assert_no_error (error);
      g_assert_true (ok);
      for (int i = 0; i < 5; i++)
        g_assert_cmpint (sel[i], ==, cases[c].want[i] == '1');
    } else {
      g_assert_false (ok);
      g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
      if (strstr (error->message, cases[c].why) == NULL)
        g_error ("'%s': '%s' does not say '%s'", cases[c].nodes, error->message, cases[c].why);
      g_clear_error (&error);
    }
  }
  /* only names are checked without sel: an index counts a specialised graph's nodes */
  g_assert_true (nnp_graph_select_nodes (g, "n1,70", NULL, NULL));
  g_assert_true (nnp_graph_select_nodes (g, "n3..n1", NULL, NULL));
  g_assert_false (nnp_graph_select_nodes (g, "n1,nope", NULL, &error));
  g_assert_nonnull (strstr (error->message, "unknown node 'nope'"));
  g_clear_error (&error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/graph/sort-reorders", test_sort_reorders);
  g_test_add_func ("/graph/sort-is-stable", test_sort_is_stable);
  g_test_add_func ("/graph/cycle", test_cycle);
  g_test_add_func ("/graph/missing-input", test_missing_input);
  g_test_add_func ("/graph/double-producer", test_double_producer);
  g_test_add_func ("/graph/unique-names-and-copy", test_unique_names_and_copy);
  g_test_add_func ("/graph/shapes-key", test_shapes_key);
  g_test_add_func ("/graph/select-nodes", test_select_nodes);
  return g_test_run ();
}
