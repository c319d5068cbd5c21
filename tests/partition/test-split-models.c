/* test-split-models MODEL NAME=D0,D1,... [...]: split the model into 2, 3
 * and 4 stages (manual: evenly spaced cuts; automatic: estimated costs, and
 * for 2 stages the ideal lattice capped low to force the topological-order
 * DP), run the stages in sequence with nnp_stage_run and check every graph
 * output is bit-identical to the whole-model run.  Exit 0 when all match. */
#include <nnpipe/nnpipe.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gboolean
run_seq (NnpGraph *g, NnpPlan *plan, NnpTensor **in, NnpTensor **ref, int n_ref, GError **error)
{
  GPtrArray *cur = NULL;
  gboolean ok = FALSE;

  for (int k = 0; k < plan->n_stages; k++) {
    NnpStage *st = nnp_plan_stage_new (plan, k, g, error);
    GPtrArray *next;
    if (st == NULL)
      goto out;
    next = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
    for (int i = 0; i < nnp_stage_get_n_outputs (st); i++)
      g_ptr_array_add (next, nnp_stage_new_output (st, i, NULL));
    if (!nnp_stage_run (st, k == 0 ? in : (NnpTensor *const *) cur->pdata,
                        (NnpTensor *const *) next->pdata, error)) {
      nnp_stage_free (st);
      g_ptr_array_unref (next);
      goto out;
    }
    nnp_stage_free (st);
    if (cur)
      g_ptr_array_unref (cur);
    cur = next;
  }
  if ((int) cur->len != n_ref) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "%u outputs, expected %d", cur->len, n_ref);
    goto out;
  }
  for (int i = 0; i < n_ref; i++) {
    NnpTensor *a = g_ptr_array_index (cur, i);
    if (a->nbytes != ref[i]->nbytes || memcmp (a->data, ref[i]->data, a->nbytes) != 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "output %d differs", i);
      goto out;
    }
  }
  ok = TRUE;
out:
  if (cur)
    g_ptr_array_unref (cur);
  return ok;
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  NnpModel *model;
  NnpGraph *g;
  NnpStage *whole;
  NnpInputShape shapes[8];
  char *names[8];
  int n_shapes = 0, n_in, n_ref, failures = 0, n, runs = 0;
  NnpTensor **in, **ref;
  NnpCostModel *cm;
  NnpDeviceSpec dev = { (char *) "cpu", 1 };

  if (argc < 2) {
    fprintf (stderr, "usage: test-split-models MODEL [NAME=D0,D1,...]...\n");
    return 2;
  }
  for (int a = 2; a < argc && n_shapes < 8; a++) {
    char *eq = strchr (argv[a], '=');
    g_auto (GStrv) dims = NULL;
    if (eq == NULL)
      return 2;
    names[n_shapes] = g_strndup (argv[a], eq - argv[a]);
    dims = g_strsplit (eq + 1, ",", -1);
    shapes[n_shapes].name = names[n_shapes];
    shapes[n_shapes].shape.rank = g_strv_length (dims);
    for (int d = 0; dims[d]; d++)
      shapes[n_shapes].shape.dims[d] = g_ascii_strtoll (dims[d], NULL, 10);
    n_shapes++;
  }
  model = nnp_model_load (argv[1], &error);
  if (model == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 1;
  }
  g = nnp_model_specialize (model, shapes, n_shapes, NNP_SPECIALIZE_DEFAULT, &error);
  if (g == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 1;
  }
  n = g->nodes->len;
  whole = nnp_stage_new (g, NULL, 0, NULL, &error);
  g_assert_no_error (error);
  n_in = nnp_stage_get_n_inputs (whole);
  n_ref = nnp_stage_get_n_outputs (whole);
  in = g_new0 (NnpTensor *, MAX (n_in, 1));
  ref = g_new0 (NnpTensor *, MAX (n_ref, 1));
  for (int i = 0; i < n_in; i++) {
    const NnpValue *v = nnp_stage_get_input (whole, i);
    in[i] = nnp_tensor_new (v->dtype, &v->shape, NULL);
    nnp_tensor_fill_pattern (in[i], (guint32) i);
  }
  for (int i = 0; i < n_ref; i++)
    ref[i] = nnp_stage_new_output (whole, i, NULL);
  if (!nnp_stage_run (whole, in, ref, &error)) {
    fprintf (stderr, "whole model: %s\n", error->message);
    return 1;
  }
  cm = nnp_cost_model_new (g, nnp_model_get_digest (model), NULL, NNP_COST_ESTIMATE);
  for (int k = 2; k <= 4 && k <= n; k++) {
    int cuts[3];
    NnpPlan *plan;
    for (int c = 0; c < k - 1; c++)
      cuts[c] = (int) ((gint64) n * (c + 1) / k);
    for (int mode = 0; mode < 3; mode++) {
      const char *what = mode == 0 ? "manual" : mode == 1 ? "auto" : "auto-topo";
      if (mode == 0) {
        plan = nnp_plan_new_from_cuts (argv[1], NULL, shapes, n_shapes, g, cuts, k - 1, &dev, 1, cm,
                                       &error);
      } else {
        NnpSplitOptions o = { &dev, 1, k, 0, mode == 2 ? 2 : 0 };
        plan = nnp_plan_new_auto (argv[1], NULL, shapes, n_shapes, g, &o, cm, &error);
      }
      runs++;
      if (plan == NULL || !run_seq (g, plan, in, ref, n_ref, &error)) {
        fprintf (stderr, "FAIL %s: %d stages %s: %s\n", argv[1], k, what, error->message);
        g_clear_error (&error);
        failures++;
      } else {
        printf ("ok %s: %d stages %s (%s), bottleneck %.3f ms, bit-exact\n", argv[1], k, what,
                plan->method, plan->predicted_bottleneck_ms);
      }
      nnp_plan_free (plan);
    }
  }
  printf ("%s: %d nodes, %d splits, %d failures\n", argv[1], n, runs, failures);
  for (int i = 0; i < n_in; i++)
    nnp_tensor_unref (in[i]);
  for (int i = 0; i < n_ref; i++)
    nnp_tensor_unref (ref[i]);
  g_free (in);
  g_free (ref);
  nnp_cost_model_free (cm);
  nnp_stage_free (whole);
  nnp_graph_unref (g);
  nnp_model_unref (model);
  for (int i = 0; i < n_shapes; i++)
    g_free (names[i]);
  return failures ? 1 : 0;
}
