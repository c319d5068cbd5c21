/* Shared by the fuzz harnesses and tests/lib/fuzz-loader.c; see fuzz-common.h. */
#include "fuzz-common.h"
#include <nnpipe/ops.h>
#include <nnpipe/specialize.h>

#include <stdlib.h>
#include <string.h>

gboolean
nnp_fuzz_check_error (const char *where, int iteration, gboolean ok, const GError *error,
                      NnpFuzzCounts *c)
{
  if (ok && error != NULL) {
    g_print ("iteration %d: %s succeeded but set an error: %s\n", iteration, where, error->message);
    c->violations++;
    return FALSE;
  }
  if (!ok && error == NULL) {
    g_print ("iteration %d: %s failed without an error\n", iteration, where);
    c->violations++;
    return FALSE;
  }
  if (!ok && (error->message[0] == '\0' || strchr (error->message, '\n') != NULL)) {
    g_print ("iteration %d: %s: error message is not one line: '%s'\n", iteration, where,
             error->message);
    c->violations++;
    return FALSE;
  }
  return TRUE;
}

void
nnp_fuzz_try_run (NnpModel *model, int iteration, double max_elements, double max_flops,
                  NnpFuzzCounts *c)
{
  NnpGraph *graph = nnp_model_get_graph (model);
  g_autofree NnpInputShape *shapes = g_new0 (NnpInputShape, MAX (graph->inputs->len, 1));
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) ins = NULL, outs = NULL;
  NnpStageOptions opts = { .device = "cpu", .threads = 1 };
  NnpStage *stage;
  double total = 0, flops = 0;
  gboolean ok;

  for (guint i = 0; i < graph->inputs->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    if (v->shape.rank < 0 || v->shape.rank > 4)
      return;
    shapes[i].name = v->name;
    shapes[i].shape = v->shape;
    for (int d = 0; d < v->shape.rank; d++) {
      if (shapes[i].shape.dims[d] < 0)
        shapes[i].shape.dims[d] = d == 0 ? 1 : 8;
      if (shapes[i].shape.dims[d] > 64)
        return;
    }
  }
  sg = nnp_model_specialize (model, shapes, graph->inputs->len, NNP_SPECIALIZE_DEFAULT, &error);
  if (!nnp_fuzz_check_error ("specialize", iteration, sg != NULL, error, c) || sg == NULL)
    return;
  c->specialized++;
  for (guint i = 0; i < sg->values->len; i++) {
    const NnpValue *v = nnp_graph_value (sg, i);
    int64_t n = nnp_shape_numel (&v->shape);
    if (v->constant == NULL && n > 0)
      total += (double) n;
  }
  for (guint i = 0; i < sg->nodes->len; i++)
    flops += nnp_node_flops (sg, nnp_graph_node (sg, i));
  if (total > max_elements || !(flops <= max_flops) || sg->nodes->len == 0)
    return;
  stage = nnp_stage_new (sg, NULL, 0, &opts, &error);
  if (!nnp_fuzz_check_error ("stage_new", iteration, stage != NULL, error, c) || stage == NULL)
    return;

  ins = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  outs = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  for (int i = 0; i < nnp_stage_get_n_inputs (stage); i++) {
    const NnpValue *v = nnp_stage_get_input (stage, i);
    NnpTensor *t = nnp_tensor_new (v->dtype, &v->shape, &error);
    if (!nnp_fuzz_check_error ("input tensor", iteration, t != NULL, error, c) || t == NULL)
      goto out;
    nnp_tensor_fill_pattern (t, (guint32) i);
    g_ptr_array_add (ins, t);
  }
  for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++) {
    NnpTensor *t = nnp_stage_new_output (stage, i, &error);
    if (!nnp_fuzz_check_error ("output tensor", iteration, t != NULL, error, c) || t == NULL)
      goto out;
    g_ptr_array_add (outs, t);
  }
  ok = nnp_stage_run (stage, (NnpTensor *const *) ins->pdata, (NnpTensor *const *) outs->pdata,
                      &error);
  if (nnp_fuzz_check_error ("run", iteration, ok, error, c)) {
    if (ok)
      c->ran++;
    else
      c->run_failed++;
  }
out:
  nnp_stage_free (stage);
}

void
nnp_fuzz_log_handler (const gchar *domain, GLogLevelFlags level, const gchar *message,
                      gpointer data)
{
  if ((level & G_LOG_LEVEL_CRITICAL)
      || ((level & G_LOG_LEVEL_WARNING) && g_strcmp0 (domain, "GStreamer") != 0)) {
    g_printerr ("%s: %s\n", domain ? domain : "", message);
    abort ();
  }
}
