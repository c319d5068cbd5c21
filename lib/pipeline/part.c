/* nnpipe: a part of a model at some shapes (include/nnpipe/part.h).
 *
 * What a part is (the whole model, stage k of a plan, a node list) is fixed
 * at nnp_part_new(); a set of model input shapes makes a specialisation
 * (the model specialised there, the part resolved as a plan stage on it),
 * cached by nnp_shapes_key() in an LRU list; its stage is prepared on
 * first use, on the part's device or, with fallback, on the CPU.  The
 * fallback policy (nnp_fallback_applies()) is here, once; nnp_part_open()
 * is the whole of what an element does to get its part from its
 * properties (files, digest, device). */
#include "part-private.h"
#include "backends/device-list.h"
#include "partition/partition.h"
#include "pipeline/part-private.h"
#include "specialize/specialize.h"
#include "specialize/tail.h"
#include <nnpipe/device.h>
#include <nnpipe/log.h>
#include <nnpipe/specialize.h>

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Model inputs */

int
nnp_model_real_inputs (NnpModel *model, const NnpValue **inputs, int max)
{
  NnpGraph *graph = nnp_model_get_graph (model);
  int n = 0;

  for (guint i = 0; i < graph->inputs->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));

    if (v == NULL || v->constant != NULL)
      continue;
    if (inputs && n < max)
      inputs[n] = v;
    n++;
  }
  return n;
}

/* The part's plan resolved on graph.  A plan stage on an OpenCL device
 * this machine cannot open is resolved as "cpu" (nnp_plan_resolve()
 * refuses it; node sets and boundaries do not depend on the device): the
 * caller reports that device, or falls back. */
static NnpPlan *
part_plan (NnpPart *part, NnpGraph *graph, const NnpInputShape *shapes, int n_shapes, int *k,
           GError **error)
{
  NnpPlan *plan;

  if (part->plan == NULL)
    return nnp_part_nodes_plan (part, graph, shapes, n_shapes, k, error);
  plan = nnp_plan_copy (part->plan);
  for (int i = 0; i < plan->n_stages; i++) {
    NnpPlanStage *st = &plan->stages[i];

    if (!nnp_device_spec_is_host (st->device) && !nnp_device_available (st->device)) {
      g_free (st->device);
      st->device = g_strdup ("cpu");
    }
  }
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  *k = part->stage;
  return plan;
}

/* ------------------------------------------------------------------------ */
/* Specialisations */

NnpPartSpec *
nnp_part_spec_ref (NnpPartSpec *spec)
{
  g_return_val_if_fail (spec != NULL, NULL);
  g_atomic_int_inc (&spec->ref_count);
  return spec;
}

void
nnp_part_spec_unref (NnpPartSpec *spec)
{
  if (spec == NULL || !g_atomic_int_dec_and_test (&spec->ref_count))
    return;
  g_clear_pointer (&spec->stage, nnp_stage_free);
  g_ptr_array_unref (spec->inputs);
  g_ptr_array_unref (spec->outputs);
  g_clear_pointer (&spec->plan, nnp_plan_free);
  nnp_graph_unref (spec->graph);
  g_free (spec->key);
  g_free (spec);
}

static void
add_values (GPtrArray *to, NnpGraph *graph, char **names, int n)
{
  for (int i = 0; i < n; i++)
    g_ptr_array_add (to, (gpointer) nnp_graph_find_value (graph, names[i]));
}

/* A new specialisation (not cached).  Call with the lock held. */
static NnpPartSpec *
spec_new_locked (NnpPart *part, const NnpInputShape *shapes, int n_shapes, const char *key,
                 GError **error)
{
  g_autoptr (GError) err = NULL;
  NnpPartSpec *spec;
  NnpGraph *graph;
  NnpPlan *plan = NULL;
  int k = 0;

  /* with the tail flag, a data-dependent output is named below rather than
   * the node's input that is not a constant */
  graph = nnp_model_specialize (part->model, shapes, n_shapes,
                                part->flags | NNP_SPECIALIZE_DYNAMIC_TAIL, &err);
  if (graph == NULL) {
    g_set_error (error, NNP_ERROR, err->code == NNP_ERROR_PLAN ? NNP_ERROR_PLAN : NNP_ERROR_INVALID,
                 "model %s: shape inference failed for input shapes %s: %s", part->model_name, key,
                 err->message);
    return NULL;
  }
  if (!nnp_graph_refuse_tail (graph, part->model_name, error)) {
    nnp_graph_unref (graph);
    return NULL;
  }
  if ((part->plan || part->nodes)
      && (plan = part_plan (part, graph, shapes, n_shapes, &k, error)) == NULL) {
    nnp_graph_unref (graph);
    return NULL;
  }
  spec = g_new0 (NnpPartSpec, 1);
  spec->ref_count = 1;
  spec->key = g_strdup (key);
  spec->graph = graph;
  spec->plan = plan;
  spec->k = k;
  spec->inputs = g_ptr_array_new ();
  spec->outputs = g_ptr_array_new ();
  if (plan) {
    const NnpPlanStage *st = &plan->stages[k];

    add_values (spec->inputs, graph, st->inputs, st->n_inputs);
    add_values (spec->outputs, graph, st->outputs, st->n_outputs);
  } else {
    for (guint i = 0; i < graph->inputs->len; i++) {
      const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));

      if (v && v->constant == NULL)
        g_ptr_array_add (spec->inputs, (gpointer) v);
    }
    for (guint i = 0; i < graph->outputs->len; i++)
      g_ptr_array_add (spec->outputs,
                       (gpointer) nnp_graph_value (graph, g_array_index (graph->outputs, int, i)));
  }
  part->n_specialized++;
  return spec;
}

/* Drop the least recently used beyond the cache size.  Lock held. */
static void
trim_locked (NnpPart *part)
{
  if (part->cache->len > (guint) part->cache_size)
    g_ptr_array_set_size (part->cache, part->cache_size);
}

/* Move spec to the front of the cache, adding it when new.  Lock held. */
static void
use_locked (NnpPart *part, NnpPartSpec *spec)
{
  guint i;

  if (g_ptr_array_find (part->cache, spec, &i)) {
    g_ptr_array_steal_index (part->cache, i);
    g_ptr_array_insert (part->cache, 0, spec);
    return;
  }
  g_ptr_array_insert (part->cache, 0, nnp_part_spec_ref (spec));
  trim_locked (part);
}

/* The cached specialisation for key, or a new one; kept in the cache (as
 * the most recently used) when keep.  New ref.  Lock held. */
static NnpPartSpec *
reshape_locked (NnpPart *part, const NnpInputShape *shapes, int n_shapes, const char *key,
                gboolean keep, GError **error)
{
  NnpPartSpec *spec = NULL;

  for (guint i = 0; i < part->cache->len && spec == NULL; i++)
    if (strcmp (((NnpPartSpec *) g_ptr_array_index (part->cache, i))->key, key) == 0)
      spec = nnp_part_spec_ref (g_ptr_array_index (part->cache, i));
  if (spec == NULL)
    spec = spec_new_locked (part, shapes, n_shapes, key, error);
  if (spec && keep)
    use_locked (part, spec);
  return spec;
}

/* The model's real inputs in model order with the shapes given (by name);
 * NNP_ERROR_INVALID when one is missing or unknown.  sorted has room for
 * every real input. */
static gboolean
sort_shapes (NnpPart *part, const NnpInputShape *shapes, int n_shapes, NnpInputShape *sorted, int n,
             GError **error)
{
  const NnpValue **inputs = g_newa (const NnpValue *, MAX (n, 1));

  nnp_model_real_inputs (part->model, inputs, n);
  for (int i = 0; i < n; i++) {
    int j = 0;

    while (j < n_shapes && g_strcmp0 (shapes[j].name, inputs[i]->name) != 0)
      j++;
    if (j == n_shapes) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "model %s: no shape for input '%s'",
                   part->model_name, inputs[i]->name);
      return FALSE;
    }
    sorted[i].name = inputs[i]->name;
    sorted[i].shape = shapes[j].shape;
  }
  if (n_shapes != n) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "model %s: %d input shapes given, the model has %d inputs", part->model_name,
                 n_shapes, n);
    return FALSE;
  }
  return TRUE;
}

static NnpPartSpec *
reshape (NnpPart *part, const NnpInputShape *shapes, int n_shapes, gboolean keep, GError **error)
{
  int n;
  NnpInputShape *sorted;
  g_autofree char *key = NULL;
  NnpPartSpec *spec;

  g_return_val_if_fail (part != NULL && (shapes != NULL || n_shapes == 0), NULL);
  n = nnp_model_real_inputs (part->model, NULL, 0);
  sorted = g_newa (NnpInputShape, MAX (n, 1));
  if (!sort_shapes (part, shapes, n_shapes, sorted, n, error))
    return NULL;
  key = nnp_shapes_key (sorted, n, part->flags);
  g_mutex_lock (&part->lock);
  spec = reshape_locked (part, sorted, n, key, keep, error);
  g_mutex_unlock (&part->lock);
  return spec;
}

NnpPartSpec *
nnp_part_reshape (NnpPart *part, const NnpInputShape *shapes, int n_shapes, GError **error)
{
  return reshape (part, shapes, n_shapes, TRUE, error);
}

static NnpPartSpec *
reshape_key (NnpPart *part, const char *key, gboolean keep, GError **error)
{
  int n = 0, max;
  NnpInputShape *shapes;

  g_return_val_if_fail (part != NULL && key != NULL, NULL);
  max = nnp_model_real_inputs (part->model, NULL, 0);
  shapes = g_newa (NnpInputShape, MAX (max, 1));
  if (!nnp_shapes_from_key (nnp_model_get_graph (part->model), key, shapes, max, &n, NULL, error))
    return NULL;
  return reshape (part, shapes, n, keep, error);
}

NnpPartSpec *
nnp_part_reshape_key (NnpPart *part, const char *key, GError **error)
{
  return reshape_key (part, key, TRUE, error);
}

/* Add key (taken) to the candidates unless there. */
static void
add_candidate (GPtrArray *keys, GPtrArray *sources, char *key, const char *source)
{
  for (guint i = 0; i < keys->len; i++) {
    if (strcmp (g_ptr_array_index (keys, i), key) == 0) {
      g_free (key);
      return;
    }
  }
  g_ptr_array_add (keys, key);
  g_ptr_array_add (sources, (gpointer) source);
}

/* The plan's shapes for every real input, else the model's static ones, as
 * a key (NULL when some input has neither).  from_plan: which. */
static char *
known_shapes_key (NnpPart *part, gboolean from_plan)
{
  int n = nnp_model_real_inputs (part->model, NULL, 0);
  const NnpValue **inputs = g_newa (const NnpValue *, MAX (n, 1));
  NnpInputShape *shapes = g_newa (NnpInputShape, MAX (n, 1));

  nnp_model_real_inputs (part->model, inputs, n);
  for (int i = 0; i < n; i++) {
    gboolean found = FALSE;

    shapes[i].name = inputs[i]->name;
    shapes[i].shape = inputs[i]->shape;
    for (int j = 0; from_plan && part->plan && j < part->plan->n_shapes && !found; j++) {
      if (g_strcmp0 (part->plan->shape_names[j], inputs[i]->name) == 0) {
        shapes[i].shape = part->plan->shapes[j];
        found = TRUE;
      }
    }
    if (from_plan ? !found : !nnp_shape_is_static (&inputs[i]->shape))
      return NULL;
  }
  if (from_plan && part->plan == NULL)
    return NULL;
  return nnp_shapes_key (shapes, n, part->flags);
}

/* "the stage's 2 inputs are 'x' float32 1x3x8x8, ..." */
static char *
describe_inputs (NnpPartSpec *spec)
{
  GString *s = g_string_new (NULL);

  g_string_append_printf (s, "the stage's %u inputs are ", spec->inputs->len);
  for (guint i = 0; i < spec->inputs->len; i++) {
    const NnpValue *v = g_ptr_array_index (spec->inputs, i);
    g_autofree char *d = nnp_shape_to_string (&v->shape);

    g_string_append_printf (s, "%s'%s' %s %s", i ? ", " : "", v->name, nnp_dtype_name (v->dtype),
                            d);
  }
  return g_string_free (s, FALSE);
}

NnpPartSpec *
nnp_part_find (NnpPart *part, const char *const *candidates, const char *const *sources,
               NnpPartInputsFunc fits, gpointer user_data, const char *got, GError **error)
{
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) from = g_ptr_array_new ();
  g_autoptr (GString) why = g_string_new (NULL);
  NnpPartSpec *ret = NULL;
  char *key;

  g_return_val_if_fail (part != NULL && fits != NULL, NULL);
  for (int i = 0; candidates && candidates[i]; i++) {
    int max = nnp_model_real_inputs (part->model, NULL, 0), n = 0;
    NnpInputShape *shapes = g_newa (NnpInputShape, MAX (max, 1));

    /* in the part's own form, so that the same shapes are tried once */
    key = nnp_shapes_from_key (nnp_model_get_graph (part->model), candidates[i], shapes, max, &n,
                               NULL, NULL)
              ? nnp_shapes_key (shapes, n, part->flags)
              : g_strdup (candidates[i]);
    add_candidate (keys, from, key, sources && sources[i] ? sources[i] : "the caller");
  }
  if ((key = known_shapes_key (part, TRUE)))
    add_candidate (keys, from, key, "the plan");
  if ((key = known_shapes_key (part, FALSE)))
    add_candidate (keys, from, key, "the model");
  g_mutex_lock (&part->lock);
  for (guint i = 0; i < part->cache->len; i++)
    add_candidate (keys, from, g_strdup (((NnpPartSpec *) g_ptr_array_index (part->cache, i))->key),
                   "last caps");
  g_mutex_unlock (&part->lock);

  for (guint c = 0; c < keys->len && ret == NULL; c++) {
    const char *k = g_ptr_array_index (keys, c);
    g_autoptr (GError) err = NULL;
    /* only the one that fits is kept: the others would push useful ones out */
    NnpPartSpec *spec = reshape_key (part, k, FALSE, &err);
    g_autofree char *reason = NULL;

    if (spec
        && fits ((const NnpValue *const *) spec->inputs->pdata, (int) spec->inputs->len,
                 user_data)) {
      g_mutex_lock (&part->lock);
      use_locked (part, spec);
      g_mutex_unlock (&part->lock);
      ret = spec;
      break;
    }
    if (spec)
      reason = describe_inputs (spec);
    g_string_append_printf (why, "%sat model input shapes %s (from %s): %s", why->len ? "; " : "",
                            k, (const char *) g_ptr_array_index (from, c),
                            err ? err->message : reason);
    nnp_part_spec_unref (spec);
  }
  if (ret == NULL && keys->len == 0)
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_PLAN,
        "model %s, %s: cannot tell the model's input shapes for input %s (the caps are not the model's inputs, no stage upstream answered, "
        "and the model's inputs are not static): use a plan with shapes",
        part->model_name, part->name, got ? got : "");
  else if (ret == NULL)
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "model %s, %s: input %s does not fit the stage: %s", part->model_name, part->name,
                 got ? got : "", why->str);
  return ret;
}

char **
nnp_part_get_keys (NnpPart *part)
{
  GPtrArray *keys = g_ptr_array_new ();

  g_return_val_if_fail (part != NULL, NULL);
  g_mutex_lock (&part->lock);
  for (guint i = 0; i < part->cache->len; i++)
    g_ptr_array_add (keys, g_strdup (((NnpPartSpec *) g_ptr_array_index (part->cache, i))->key));
  g_mutex_unlock (&part->lock);
  g_ptr_array_add (keys, NULL);
  return (char **) g_ptr_array_free (keys, FALSE);
}

/* ------------------------------------------------------------------------ */
/* The memo of the last question */

gboolean
nnp_part_knows (NnpPart *part, const char *question)
{
  gboolean ret;

  g_return_val_if_fail (part != NULL && question != NULL, FALSE);
  g_mutex_lock (&part->lock);
  ret = g_strcmp0 (part->memo_question, question) == 0;
  g_mutex_unlock (&part->lock);
  return ret;
}

NnpPartSpec *
nnp_part_answer (NnpPart *part, const char *question, NnpPartAnswerFunc answer, gpointer user_data,
                 GError **error)
{
  NnpPartSpec *spec = NULL;
  GError *err = NULL;

  g_return_val_if_fail (part != NULL && question != NULL && answer != NULL, NULL);
  g_mutex_lock (&part->lock);
  if (g_strcmp0 (part->memo_question, question) == 0) {
    spec = part->memo_spec ? nnp_part_spec_ref (part->memo_spec) : NULL;
    err = spec ? NULL : g_error_copy (part->memo_error);
    g_mutex_unlock (&part->lock);
    goto done;
  }
  g_mutex_unlock (&part->lock);

  /* answered without the lock: answer() calls the part (reshape, find) */
  spec = answer (part, user_data, &err);
  if (spec == NULL && err == NULL)
    g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED, "no answer for %s", question);
  NNP_DEBUG ("nnp-exec", "model %s, %s: %s -> %s", part->model_name, part->name, question,
             spec ? spec->key : err->message);
  g_mutex_lock (&part->lock);
  g_free (part->memo_question);
  part->memo_question = g_strdup (question);
  g_clear_pointer (&part->memo_spec, nnp_part_spec_unref);
  g_clear_error (&part->memo_error);
  part->memo_spec = spec ? nnp_part_spec_ref (spec) : NULL;
  part->memo_error = err ? g_error_copy (err) : NULL;
  g_mutex_unlock (&part->lock);

done:
  if (err)
    g_propagate_error (error, err);
  return spec;
}

const char *
nnp_part_spec_get_key (NnpPartSpec *spec)
{
  return spec->key;
}

NnpGraph *
nnp_part_spec_get_graph (NnpPartSpec *spec)
{
  return spec->graph;
}

int
nnp_part_spec_get_n_inputs (NnpPartSpec *spec)
{
  return (int) spec->inputs->len;
}

const NnpValue *
nnp_part_spec_get_input (NnpPartSpec *spec, int i)
{
  g_return_val_if_fail (i >= 0 && (guint) i < spec->inputs->len, NULL);
  return g_ptr_array_index (spec->inputs, i);
}

int
nnp_part_spec_get_n_outputs (NnpPartSpec *spec)
{
  return (int) spec->outputs->len;
}

const NnpValue *
nnp_part_spec_get_output (NnpPartSpec *spec, int i)
{
  g_return_val_if_fail (i >= 0 && (guint) i < spec->outputs->len, NULL);
  return g_ptr_array_index (spec->outputs, i);
}

const char *const *
nnp_part_spec_get_nodes (NnpPartSpec *spec, int *n_nodes)
{
  if (n_nodes)
    *n_nodes = spec->plan ? spec->plan->stages[spec->k].n_nodes : 0;
  return spec->plan ? (const char *const *) spec->plan->stages[spec->k].nodes : NULL;
}

gboolean
nnp_part_spec_fell_back (NnpPartSpec *spec)
{
  return spec->fell_back;
}

/* ------------------------------------------------------------------------ */
/* Stages and the fallback policy */


static NnpStage *
stage_new (NnpPart *part, NnpPartSpec *spec, const char *device, GError **error)
{
  NnpStageOptions opts = { 0 };

  if (spec->plan)
    return nnp_plan_stage_new_on (spec->plan, spec->k, spec->graph, device, error);
  opts.device = device;
  opts.threads = part->threads;
  opts.cpus = part->cpus;
  opts.n_cpus = part->n_cpus;
  return nnp_stage_new (spec->graph, NULL, 0, &opts, error);
}

NnpStage *
nnp_part_prepare (NnpPart *part, NnpPartSpec *spec, GError **fallback_reason, GError **error)
{
  GError *err = NULL;
  NnpStage *stage;
  gint64 t0;

  g_return_val_if_fail (part != NULL && spec != NULL, NULL);
  g_mutex_lock (&part->lock);
  if (spec->stage) {
    g_mutex_unlock (&part->lock);
    return spec->stage;
  }
  t0 = g_get_monotonic_time ();
  stage = stage_new (part, spec, part->device, &err);
  if (stage == NULL && nnp_fallback_applies (part->device, part->fallback, err)) {
    g_set_error (fallback_reason, err->domain, err->code,
                 "device '%s'%s%s%s cannot run the stage, running it on the CPU instead: %s",
                 part->device, part->dev ? " (" : "",
                 part->dev ? nnp_device_get_name (part->dev) : "", part->dev ? ")" : "",
                 err->message);
    g_clear_error (&err);
    stage = stage_new (part, spec, "cpu", &err);
    spec->fell_back = stage != NULL;
  }
  if (stage) {
    int n_nodes = 0;
    const char *const *nodes = nnp_part_spec_get_nodes (spec, &n_nodes);

    spec->stage = stage;
    part->n_built++;
    NNP_INFO (
        "nnp-exec",
        "model %s, %s: stage for model input shapes %s on %s, arena %zu bytes, built in %.1f ms",
        part->model_name, part->name, spec->key, nnp_device_get_name (nnp_stage_get_device (stage)),
        nnp_stage_get_arena_bytes (stage), (g_get_monotonic_time () - t0) / 1000.0);
    if (n_nodes > 0)
      NNP_INFO ("nnp-exec", "%s: %d nodes, '%s' .. '%s'", part->name, n_nodes, nodes[0],
                nodes[n_nodes - 1]);
  } else {
    g_propagate_error (error, err);
  }
  g_mutex_unlock (&part->lock);
  return stage;
}

/* ------------------------------------------------------------------------ */
/* The part */

/* A plan stage that exists, or nodes, or neither. */
static gboolean
check_choice (const NnpPlan *plan, const char *plan_name, int stage, const char *nodes,
              GError **error)
{
  if (plan && nodes) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "both a plan and nodes are set");
    return FALSE;
  }
  if (plan && (stage < 0 || stage >= plan->n_stages)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s has %d stages, there is no stage %d",
                 plan_name ? plan_name : "the plan", plan->n_stages, stage);
    return FALSE;
  }
  return TRUE;
}

NnpPart *
nnp_part_new (NnpModel *model, const NnpPartOptions *options, GError **error)
{
  NnpPartOptions defaults = { 0 };
  const NnpPartOptions *o = options ? options : &defaults;
  g_autofree char *key = NULL;
  NnpPart *part;

  g_return_val_if_fail (model != NULL, NULL);
  if (!check_choice (o->plan, o->plan_name, o->stage, o->nodes, error))
    return NULL;
  part = g_new0 (NnpPart, 1);
  g_mutex_init (&part->lock);
  part->model = nnp_model_ref (model);
  part->model_name = g_path_get_basename (nnp_model_get_name (model));
  part->plan = o->plan ? nnp_plan_copy (o->plan) : NULL;
  part->stage = o->stage;
  part->nodes = g_strdup (o->nodes);
  if (o->name)
    part->name = g_strdup (o->name);
  else if (o->plan)
    part->name =
        g_strdup_printf ("stage %d of %s", o->stage, o->plan_name ? o->plan_name : "the plan");
  else if (o->nodes)
    part->name = g_strdup_printf ("nodes \"%s\"", o->nodes);
  else
    part->name = g_strdup ("the whole model");
  if (o->device)
    part->device = g_strdup (o->device);
  else if (o->plan && o->plan->stages[o->stage].device)
    part->device = g_strdup (o->plan->stages[o->stage].device);
  else
    part->device = g_strdup ("cpu");
  part->threads = MAX (o->threads, 1);
  if (o->n_cpus > 0) {
    part->cpus = g_memdup2 (o->cpus, o->n_cpus * sizeof (int));
    part->n_cpus = o->n_cpus;
  }
  part->fallback = o->fallback;
  part->flags = o->plan ? (o->plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : 0) : o->flags;
  part->cache_size = o->cache_size > 0 ? o->cache_size : NNP_PART_DEFAULT_CACHE_SIZE;
  part->cache = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_part_spec_unref);
  part->first = o->plan ? o->stage == 0 : o->nodes == NULL;

  /* check the part where its shapes are known: a bad plan or node list
   * fails now */
  if ((part->plan || part->nodes)
      && ((key = known_shapes_key (part, TRUE)) || (key = known_shapes_key (part, FALSE)))) {
    NnpPartSpec *spec = reshape_key (part, key, FALSE, error);

    if (spec == NULL) {
      nnp_part_free (part);
      return NULL;
    }
    if (part->nodes)
      part->first = spec->k == 0;
    nnp_part_spec_unref (spec);
  }
  return part;
}

void
nnp_part_free (NnpPart *part)
{
  if (part == NULL)
    return;
  g_free (part->memo_question);
  g_clear_pointer (&part->memo_spec, nnp_part_spec_unref);
  g_clear_error (&part->memo_error);
  g_ptr_array_unref (part->cache);
  nnp_model_unref (part->model);
  nnp_plan_free (part->plan);
  g_free (part->model_name);
  g_free (part->name);
  g_free (part->nodes);
  g_free (part->device);
  g_clear_pointer (&part->dev, nnp_device_unref);
  g_free (part->cpus);
  g_mutex_clear (&part->lock);
  g_free (part);
}

NnpModel *
nnp_part_get_model (NnpPart *part)
{
  return part->model;
}

const char *
nnp_part_get_name (NnpPart *part)
{
  return part->name;
}

const char *
nnp_part_get_device (NnpPart *part)
{
  return part->device;
}

gboolean
nnp_part_is_whole (NnpPart *part)
{
  return part->plan == NULL && part->nodes == NULL;
}

gboolean
nnp_part_takes_model_inputs (NnpPart *part)
{
  return part->first;
}

int
nnp_part_get_cache_size (NnpPart *part)
{
  return part->cache_size;
}

void
nnp_part_set_cache_size (NnpPart *part, int size)
{
  g_mutex_lock (&part->lock);
  part->cache_size = size > 0 ? size : NNP_PART_DEFAULT_CACHE_SIZE;
  trim_locked (part);
  g_mutex_unlock (&part->lock);
}

guint
nnp_part_get_n_specialized (NnpPart *part)
{
  return part->n_specialized;
}

guint
nnp_part_get_n_stages_built (NnpPart *part)
{
  return part->n_built;
}

/* ------------------------------------------------------------------------ */
/* The part from an element's properties */

/* The plan (owned) of options or plan_path, or NULL with *error unset for
 * none; *name gets how messages call it. */
static NnpPlan *
open_plan (const NnpPartOptions *o, const char *plan_path, char **name, GError **error)
{
  NnpPlan *plan;

  if (o->plan) {
    *name = g_strdup (o->plan_name ? o->plan_name : "the plan");
    return nnp_plan_copy (o->plan);
  }
  if (plan_path == NULL || *plan_path == '\0')
    return NULL;
  *name = o->plan_name ? g_strdup (o->plan_name) : g_path_get_basename (plan_path);
  plan = nnp_plan_load (plan_path, error);
  if (plan == NULL)
    g_prefix_error (error, "invalid plan \"%s\": ", plan_path);
  return plan;
}

void
nnp_part_request_clear (NnpPartRequest *req)
{
  if (req == NULL)
    return;
  g_clear_pointer (&req->plan, nnp_plan_free);
  g_clear_pointer (&req->plan_name, g_free);
  g_clear_pointer (&req->model, nnp_model_unref);
  g_clear_pointer (&req->digest, g_free);
  g_clear_pointer (&req->nodes, g_free);
  req->stage = 0;
}

gboolean
nnp_part_request_resolve (const char *model_path, const char *plan_path,
                          const NnpPartOptions *options, gboolean need_model, NnpPartRequest *req,
                          GError **error)
{
  NnpPartOptions o = options ? *options : (NnpPartOptions){ 0 };
  GError *err = NULL;

  memset (req, 0, sizeof (*req));
  req->plan = open_plan (&o, plan_path, &req->plan_name, &err);
  if (err) {
    g_propagate_error (error, err);
    goto fail;
  }
  if (model_path && *model_path == '\0')
    model_path = NULL;
  /* the plan's model (nnp_plan_load() resolved it against the file's
   * folder) when the model is needed here; a remote client names it by
   * digest */
  if (model_path == NULL && req->plan && need_model)
    model_path = req->plan->model;
  if (model_path == NULL && need_model) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "no model file given (neither a model path nor a plan naming one)");
    goto fail;
  }
  if (model_path) {
    req->model = nnp_model_load (model_path, &err);
    if (req->model == NULL) {
      g_propagate_prefixed_error (error, err, "could not %s model \"%s\": ",
                                  err->code == NNP_ERROR_IO ? "read" : "load", model_path);
      goto fail;
    }
  }
  if (req->plan && req->model
      && !nnp_plan_check_model (req->plan, req->model, req->plan_name, error))
    goto fail;
  if (o.nodes && *o.nodes == '\0')
    o.nodes = NULL;
  if (!check_choice (req->plan, req->plan_name, o.stage, o.nodes, error))
    goto fail;
  req->digest = g_strdup (req->model  ? nnp_model_get_digest (req->model)
                          : req->plan ? req->plan->digest
                                      : NULL);
  req->nodes = o.nodes && *o.nodes ? g_strdup (o.nodes) : NULL;
  req->stage = req->plan ? o.stage : 0;
  return TRUE;

fail:
  nnp_part_request_clear (req);
  return FALSE;
}

NnpPart *
nnp_part_open (const char *model_path, const char *plan_path, const NnpPartOptions *options,
               GError **fallback_reason, GError **error)
{
  NnpPartOptions o = options ? *options : (NnpPartOptions){ 0 };
  g_auto (NnpPartRequest) req = { 0 };
  GError *err = NULL;
  NnpDevice *dev = NULL;
  NnpPart *part;

  if (!nnp_part_request_resolve (model_path, plan_path, options, TRUE, &req, error))
    return NULL;
  o.plan = req.plan;
  o.plan_name = req.plan_name;
  o.nodes = req.nodes;
  if (req.plan && req.plan->stages[req.stage].device)
    o.device = req.plan->stages[req.stage].device;
  if (!nnp_device_spec_is_host (o.device) && (dev = nnp_device_open (o.device, &err)) == NULL) {
    if (!nnp_fallback_applies (o.device, o.fallback, err)) {
      g_propagate_prefixed_error (error, err, "device '%s' is not available: ", o.device);
      return NULL;
    }
    g_propagate_prefixed_error (
        fallback_reason, err,
        "device '%s' is not available, running on the CPU instead: ", o.device);
    o.device = "cpu";
  }
  part = nnp_part_new (req.model, &o, error);
  if (part)
    part->dev = dev;
  else if (dev)
    nnp_device_unref (dev);
  return part;
}
