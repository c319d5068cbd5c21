/* libnnpipe: a plan as JSON text (nnp_plan_to_json, nnp_plan_from_json):
 * the plan file format of docs/partition.md, read strictly (every error names
 * the key and the stage); a plan copied through its JSON (nnp_plan_copy). */
#include <nnpipe/plan.h>
#include <nnpipe/device.h>

#include "partition/partition.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ JSON */

static cJSON *
strv_to_json (char **v)
{
  cJSON *a = cJSON_CreateArray ();
  for (int i = 0; v && v[i]; i++)
    cJSON_AddItemToArray (a, cJSON_CreateString (v[i]));
  return a;
}

char *
nnp_plan_to_json (const NnpPlan *plan)
{
  cJSON *root, *shapes, *stages;
  char *text, *out;

  g_return_val_if_fail (plan != NULL, NULL);
  root = cJSON_CreateObject ();
  cJSON_AddNumberToObject (root, "version", 1);
  cJSON_AddStringToObject (root, "model", plan->model ? plan->model : "");
  if (plan->digest)
    cJSON_AddStringToObject (root, "digest", plan->digest);
  cJSON_AddBoolToObject (root, "fusion", !plan->no_fusion);
  shapes = cJSON_AddObjectToObject (root, "shapes");
  for (int i = 0; i < plan->n_shapes; i++) {
    cJSON *dims = cJSON_CreateArray ();
    for (int d = 0; d < plan->shapes[i].rank; d++)
      cJSON_AddItemToArray (dims, cJSON_CreateNumber ((double) plan->shapes[i].dims[d]));
    cJSON_AddItemToObject (shapes, plan->shape_names[i], dims);
  }
  if (plan->method)
    cJSON_AddStringToObject (root, "method", plan->method);
  if (plan->cost)
    cJSON_AddStringToObject (root, "cost", plan->cost);
  if (plan->predicted_bottleneck_ms >= 0) {
    cJSON_AddNumberToObject (root, "predicted_bottleneck_ms", plan->predicted_bottleneck_ms);
    cJSON_AddNumberToObject (root, "bottleneck_stage", plan->bottleneck_stage);
  }
  stages = cJSON_AddArrayToObject (root, "stages");
  for (int k = 0; k < plan->n_stages; k++) {
    const NnpPlanStage *s = &plan->stages[k];
    cJSON *o = cJSON_CreateObject ();
    cJSON_AddStringToObject (o, "device", s->device ? s->device : "cpu");
    cJSON_AddNumberToObject (o, "threads", s->threads);
    if (s->replicas > 1)
      cJSON_AddNumberToObject (o, "replicas", s->replicas);
    if (s->n_cpus > 0)
      cJSON_AddItemToObject (o, "cpus", cJSON_CreateIntArray (s->cpus, s->n_cpus));
    cJSON_AddItemToObject (o, "nodes", strv_to_json (s->nodes));
    if (s->inputs)
      cJSON_AddItemToObject (o, "inputs", strv_to_json (s->inputs));
    if (s->outputs)
      cJSON_AddItemToObject (o, "outputs", strv_to_json (s->outputs));
    if (s->predicted_ms >= 0)
      cJSON_AddNumberToObject (o, "predicted_ms", s->predicted_ms);
    if (s->compute_ms >= 0)
      cJSON_AddNumberToObject (o, "compute_ms", s->compute_ms);
    if (s->transfer_ms >= 0)
      cJSON_AddNumberToObject (o, "transfer_ms", s->transfer_ms);
    if (s->out_bytes >= 0)
      cJSON_AddNumberToObject (o, "out_bytes", (double) s->out_bytes);
    if (s->cut_ms >= 0)
      cJSON_AddNumberToObject (o, "cut_ms", s->cut_ms);
    cJSON_AddItemToArray (stages, o);
  }
  text = cJSON_Print (root);
  cJSON_Delete (root);
  out = g_strconcat (text ? text : "{}", "\n", NULL);
  cJSON_free (text);
  return out;
}

/* Read an array of strings; *out NULL-terminated.  FALSE with an error naming `what`. */
static gboolean
json_strv (const cJSON *a, const char *what, char ***out, int *n, GError **error)
{
  int len, i = 0;
  const cJSON *it;

  if (!cJSON_IsArray (a)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s: expected an array of strings", what);
    return FALSE;
  }
  len = cJSON_GetArraySize (a);
  *out = g_new0 (char *, len + 1);
  cJSON_ArrayForEach (it, a)
  {
    if (!cJSON_IsString (it) || it->valuestring == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s[%d]: expected a string", what, i);
      return FALSE;
    }
    (*out)[i++] = g_strdup (it->valuestring);
  }
  *n = len;
  return TRUE;
}

/* The optional number `key` of o in *out (dflt when absent or not a
 * number); FALSE, error naming `what`.`key`, when it is not finite (1e400
 * parses as inf, which JSON cannot write back). */
static gboolean
json_opt_number (const cJSON *o, const char *key, double dflt, double *out, const char *what,
                 GError **error)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);

  *out = cJSON_IsNumber (v) ? v->valuedouble : dflt;
  if (!isfinite (*out)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s\"%s\" must be a finite number", what, key);
    return FALSE;
  }
  return TRUE;
}

/* The optional integer `key` of o (dflt when absent) in *out, when it is a
 * whole number in lo..hi.  The double is checked before it is converted
 * (1e13 or inf must not reach an int).  FALSE, error naming `what`.`key`. */
static gboolean
json_opt_int (const cJSON *o, const char *key, gint64 dflt, gint64 lo, gint64 hi, gint64 *out,
              const char *what, GError **error)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);
  double d;

  if (v == NULL) {
    *out = dflt;
    return TRUE;
  }
  d = cJSON_IsNumber (v) ? v->valuedouble : NAN;
  if (!(d >= (double) lo && d <= (double) hi) || d != floor (d)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "%s\"%s\" must be an integer in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, what,
                 key, lo, hi);
    return FALSE;
  }
  *out = (gint64) d;
  return TRUE;
}

/* The first key or string value in `item` (recursively) holding a control
 * character, or NULL.  Names go into one-line error messages and logs: a
 * plan cannot smuggle a newline into them. */
static const char *
json_find_control_chars (const cJSON *item)
{
  for (; item != NULL; item = item->next) {
    const char *bad = NULL;
    if (item->string != NULL)
      for (const char *c = item->string; *c && !bad; c++)
        if ((guchar) *c < 0x20 || *c == 0x7f)
          bad = item->string;
    if (!bad && cJSON_IsString (item) && item->valuestring != NULL)
      for (const char *c = item->valuestring; *c && !bad; c++)
        if ((guchar) *c < 0x20 || *c == 0x7f)
          bad = item->valuestring;
    if (!bad && item->child != NULL)
      bad = json_find_control_chars (item->child);
    if (bad)
      return bad;
  }
  return NULL;
}

/* Up to 20 bytes of text from `where` in a buffer ending at `end` (NULL: at
 * its NUL), printable ASCII only, for a one-line parse error message.  Never
 * reads past the buffer: a length-delimited buffer need not end with a NUL. */
static char *
json_error_snippet (const char *where, const char *end)
{
  GString *s = g_string_new (NULL);

  for (int i = 0; i < 20 && (end == NULL || where + i < end) && where[i] != '\0'; i++)
    g_string_append_c (s, g_ascii_isprint (where[i]) ? where[i] : '?');
  if (s->len == 0)
    g_string_append (s, "<end of input>");
  return g_string_free (s, FALSE);
}

NnpPlan *
nnp_plan_from_json (const char *json, gssize length, GError **error)
{
  cJSON *root, *it, *stages, *shapes;
  const cJSON *v;
  const char *parse_end = NULL, *bad_str;
  NnpPlan *plan = NULL;
  gint64 num;
  int k = 0;

  g_return_val_if_fail (json != NULL, NULL);
  /* the parse end comes back with this call (cJSON_GetErrorPtr () is a global) */
  if (length < 0)
    root = cJSON_ParseWithOpts (json, &parse_end, FALSE);
  else if (length > 0)
    root = cJSON_ParseWithLengthOpts (json, (size_t) length, &parse_end, FALSE);
  else
    root = NULL; /* cJSON reads a byte of an empty buffer */
  if (root == NULL) {
    const char *end = length < 0 ? NULL : json + length;
    g_autofree char *near = NULL;
    if (parse_end == NULL || parse_end < json || (end != NULL && parse_end > end))
      parse_end = end != NULL ? end : json;
    near = json_error_snippet (parse_end, end);
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: malformed JSON near '%s'", near);
    return NULL;
  }
  if (!cJSON_IsObject (root)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: expected a JSON object");
    goto fail;
  }
  if ((bad_str = json_find_control_chars (root->child)) != NULL) {
    g_autofree char *near = json_error_snippet (bad_str, NULL);
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "plan: a string or key holds a control character (near '%s')", near);
    goto fail;
  }
  v = cJSON_GetObjectItemCaseSensitive (root, "version");
  if (v && (!cJSON_IsNumber (v) || v->valueint != 1)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: unsupported version (expected 1)");
    goto fail;
  }
  v = cJSON_GetObjectItemCaseSensitive (root, "model");
  if (!cJSON_IsString (v)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: missing \"model\" (a string)");
    goto fail;
  }
  plan = nnp_plan_new (v->valuestring, NULL);
  v = cJSON_GetObjectItemCaseSensitive (root, "digest");
  if (v && !cJSON_IsString (v)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: \"digest\" must be a string");
    goto fail;
  }
  plan->digest = v ? g_strdup (v->valuestring) : NULL;
  v = cJSON_GetObjectItemCaseSensitive (root, "fusion");
  plan->no_fusion = v && cJSON_IsFalse (v);
  v = cJSON_GetObjectItemCaseSensitive (root, "method");
  plan->method = cJSON_IsString (v) ? g_strdup (v->valuestring) : NULL;
  v = cJSON_GetObjectItemCaseSensitive (root, "cost");
  plan->cost = cJSON_IsString (v) ? g_strdup (v->valuestring) : NULL;
  if (!json_opt_number (root, "predicted_bottleneck_ms", -1.0, &plan->predicted_bottleneck_ms,
                        "plan: ", error))
    goto fail;
  if (!json_opt_int (root, "bottleneck_stage", -1, -1, G_MAXINT32, &num, "plan: ", error))
    goto fail;
  plan->bottleneck_stage = (int) num;

  shapes = cJSON_GetObjectItemCaseSensitive (root, "shapes");
  if (shapes && !cJSON_IsObject (shapes)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: \"shapes\" must be an object");
    goto fail;
  }
  cJSON_ArrayForEach (it, shapes)
  {
    NnpShape s = { 0 };
    const cJSON *d;
    if (!cJSON_IsArray (it) || cJSON_GetArraySize (it) > NNP_MAX_RANK) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "plan: shape of '%s' must be an array of at most %d dims", it->string,
                   NNP_MAX_RANK);
      goto fail;
    }
    cJSON_ArrayForEach (d, it)
    {
      /* checked as a double first: 1e300 or inf must not reach int64_t */
      if (!cJSON_IsNumber (d) || !(d->valuedouble >= 0 && d->valuedouble <= (double) G_MAXINT32)
          || d->valuedouble != floor (d->valuedouble)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "plan: shape of '%s': dims must be integers in 0..%d", it->string, G_MAXINT32);
        goto fail;
      }
      s.dims[s.rank++] = (int64_t) d->valuedouble;
    }
    nnp_plan_set_shape (plan, it->string, &s);
  }

  stages = cJSON_GetObjectItemCaseSensitive (root, "stages");
  if (!cJSON_IsArray (stages) || cJSON_GetArraySize (stages) == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: missing \"stages\" (a non-empty array)");
    goto fail;
  }
  cJSON_ArrayForEach (it, stages)
  {
    NnpPlanStage *s;
    const cJSON *dev, *nodes;
    g_autofree char *what = NULL;

    if (!cJSON_IsObject (it)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d is not an object", k);
      goto fail;
    }
    dev = cJSON_GetObjectItemCaseSensitive (it, "device");
    if (dev && !cJSON_IsString (dev)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d: \"device\" must be a string",
                   k);
      goto fail;
    }
    g_free (what);
    what = g_strdup_printf ("plan: stage %d: ", k);
    if (!json_opt_int (it, "threads", 1, 1, 1024, &num, what, error))
      goto fail;
    {
      /* the device syntax of every element and the CLI (device.h):
       * "cpu:2" is the CPU with 2 threads */
      g_autofree char *device = NULL;
      GError *derr = NULL;
      int threads = 0, want = (int) num;

      if (!nnp_device_spec_parse (dev ? dev->valuestring : "cpu", &device, &threads, &derr)) {
        /* kept as written: resolving the plan says the device is not
         * available, and why (nnp_device_open()) */
        g_clear_error (&derr);
        device = g_strdup (dev->valuestring);
      }
      if (threads > 0 && cJSON_GetObjectItemCaseSensitive (it, "threads") && threads != want) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "plan: stage %d: \"device\" '%s' and \"threads\" %d disagree", k,
                     dev->valuestring, want);
        goto fail;
      }
      s = nnp_plan_add_stage (plan, device, threads > 0 ? threads : want, NULL, 0);
    }
    if (!json_opt_int (it, "replicas", 1, 1, 64, &num, what, error))
      goto fail;
    s->replicas = (int) num;
    v = cJSON_GetObjectItemCaseSensitive (it, "cpus");
    if (v) {
      const cJSON *c;
      if (!cJSON_IsArray (v)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "plan: stage %d: \"cpus\" must be an array of cpu numbers", k);
        goto fail;
      }
      s->cpus = g_new0 (int, MAX (cJSON_GetArraySize (v), 1));
      cJSON_ArrayForEach (c, v)
      {
        if (!cJSON_IsNumber (c) || !(c->valuedouble >= 0 && c->valuedouble <= 65535)
            || c->valuedouble != floor (c->valuedouble)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                       "plan: stage %d: bad cpu number (an integer in 0..65535)", k);
          goto fail;
        }
        s->cpus[s->n_cpus++] = (int) c->valuedouble;
      }
    }
    nodes = cJSON_GetObjectItemCaseSensitive (it, "nodes");
    g_strfreev (s->nodes);
    s->nodes = NULL;
    g_free (what);
    what = g_strdup_printf ("plan: stage %d: \"nodes\"", k);
    if (!json_strv (nodes, what, &s->nodes, &s->n_nodes, error))
      goto fail;
    v = cJSON_GetObjectItemCaseSensitive (it, "inputs");
    g_free (what);
    what = g_strdup_printf ("plan: stage %d: \"inputs\"", k);
    if (v && !json_strv (v, what, &s->inputs, &s->n_inputs, error))
      goto fail;
    v = cJSON_GetObjectItemCaseSensitive (it, "outputs");
    g_free (what);
    what = g_strdup_printf ("plan: stage %d: \"outputs\"", k);
    if (v && !json_strv (v, what, &s->outputs, &s->n_outputs, error))
      goto fail;
    g_free (what);
    what = g_strdup_printf ("plan: stage %d: ", k);
    if (!json_opt_number (it, "predicted_ms", -1.0, &s->predicted_ms, what, error)
        || !json_opt_number (it, "compute_ms", -1.0, &s->compute_ms, what, error)
        || !json_opt_number (it, "transfer_ms", -1.0, &s->transfer_ms, what, error)
        || !json_opt_number (it, "cut_ms", -1.0, &s->cut_ms, what, error))
      goto fail;
    if (!json_opt_int (it, "out_bytes", -1, -1, G_GINT64_CONSTANT (1) << 52, &num, what, error))
      goto fail;
    s->out_bytes = num;
    k++;
  }
  cJSON_Delete (root);
  return plan;

fail:
  cJSON_Delete (root);
  nnp_plan_free (plan);
  return NULL;
}

NnpPlan *
nnp_plan_copy (const NnpPlan *plan)
{
  g_autofree char *json = NULL;

  g_return_val_if_fail (plan != NULL, NULL);
  json = nnp_plan_to_json (plan);
  return nnp_plan_from_json (json, -1, NULL);
}
