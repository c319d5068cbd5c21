/* libnnpipe: stage plans (include/nnpipe/plan.h): data, JSON, validation,
 * manual and automatic construction, prediction, printing. */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>

#include "partition/partition.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CAT "nnp-partition"

/* ------------------------------------------------------------ data */

NnpPlan *
nnp_plan_new (const char *model_path, const char *digest)
{
  NnpPlan *plan = g_new0 (NnpPlan, 1);

  plan->model = g_strdup (model_path);
  plan->digest = g_strdup (digest);
  plan->shape_names = g_new0 (char *, 1);
  plan->predicted_bottleneck_ms = -1.0;
  plan->bottleneck_stage = -1;
  return plan;
}

static void
stage_clear (NnpPlanStage *s)
{
  g_free (s->device);
  g_free (s->cpus);
  g_strfreev (s->nodes);
  g_strfreev (s->inputs);
  g_strfreev (s->outputs);
}

void
nnp_plan_free (NnpPlan *plan)
{
  if (plan == NULL)
    return;
  for (int k = 0; k < plan->n_stages; k++)
    stage_clear (&plan->stages[k]);
  g_free (plan->stages);
  g_free (plan->model);
  g_free (plan->digest);
  g_strfreev (plan->shape_names);
  g_free (plan->shapes);
  g_free (plan->method);
  g_free (plan->cost);
  g_free (plan);
}

static char **
strv_copy_n (const char *const *v, int n)
{
  char **out = g_new0 (char *, n + 1);
  for (int i = 0; i < n; i++)
    out[i] = g_strdup (v[i]);
  return out;
}

NnpPlanStage *
nnp_plan_add_stage (NnpPlan *plan, const char *device, int threads, const char *const *nodes,
                    int n_nodes)
{
  NnpPlanStage *s;

  g_return_val_if_fail (plan != NULL && n_nodes >= 0, NULL);
  plan->stages = g_renew (NnpPlanStage, plan->stages, plan->n_stages + 1);
  s = &plan->stages[plan->n_stages++];
  memset (s, 0, sizeof (*s));
  s->device = g_strdup (device ? device : "cpu");
  s->threads = MAX (threads, 1);
  s->nodes = strv_copy_n (nodes, n_nodes);
  s->n_nodes = n_nodes;
  s->predicted_ms = s->compute_ms = s->transfer_ms = -1.0;
  s->out_bytes = -1;
  s->cut_ms = -1.0;
  return s;
}

void
nnp_plan_set_shape (NnpPlan *plan, const char *input, const NnpShape *shape)
{
  g_return_if_fail (plan != NULL && input != NULL && shape != NULL);
  for (int i = 0; i < plan->n_shapes; i++) {
    if (strcmp (plan->shape_names[i], input) == 0) {
      plan->shapes[i] = *shape;
      return;
    }
  }
  plan->shape_names = g_renew (char *, plan->shape_names, plan->n_shapes + 2);
  plan->shape_names[plan->n_shapes] = g_strdup (input);
  plan->shape_names[plan->n_shapes + 1] = NULL;
  plan->shapes = g_renew (NnpShape, plan->shapes, plan->n_shapes + 1);
  plan->shapes[plan->n_shapes++] = *shape;
}

NnpInputShape *
nnp_plan_get_input_shapes (const NnpPlan *plan, int *n_shapes)
{
  NnpInputShape *s;

  g_return_val_if_fail (plan != NULL && n_shapes != NULL, NULL);
  s = g_new0 (NnpInputShape, MAX (plan->n_shapes, 1));
  for (int i = 0; i < plan->n_shapes; i++) {
    s[i].name = plan->shape_names[i];
    s[i].shape = plan->shapes[i];
  }
  *n_shapes = plan->n_shapes;
  return s;
}

NnpPlan *
nnp_plan_copy (const NnpPlan *plan)
{
  g_autofree char *json = NULL;

  g_return_val_if_fail (plan != NULL, NULL);
  json = nnp_plan_to_json (plan);
  return nnp_plan_from_json (json, -1, NULL);
}

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
  cJSON_ArrayForEach (it, a) {
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
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s\"%s\" must be a finite number", what,
                 key);
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
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%s\"%s\" must be an integer in %"
                 G_GINT64_FORMAT "..%" G_GINT64_FORMAT, what, key, lo, hi);
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
    root = NULL;                    /* cJSON reads a byte of an empty buffer */
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
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: a string or key holds a control "
                 "character (near '%s')", near);
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
  cJSON_ArrayForEach (it, shapes) {
    NnpShape s = { 0 };
    const cJSON *d;
    if (!cJSON_IsArray (it) || cJSON_GetArraySize (it) > NNP_MAX_RANK) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "plan: shape of '%s' must be an array of at most %d dims", it->string,
                   NNP_MAX_RANK);
      goto fail;
    }
    cJSON_ArrayForEach (d, it) {
      /* checked as a double first: 1e300 or inf must not reach int64_t */
      if (!cJSON_IsNumber (d) || !(d->valuedouble >= 0 && d->valuedouble <= (double) G_MAXINT32)
          || d->valuedouble != floor (d->valuedouble)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "plan: shape of '%s': dims must be integers in 0..%d", it->string,
                     G_MAXINT32);
        goto fail;
      }
      s.dims[s.rank++] = (int64_t) d->valuedouble;
    }
    nnp_plan_set_shape (plan, it->string, &s);
  }

  stages = cJSON_GetObjectItemCaseSensitive (root, "stages");
  if (!cJSON_IsArray (stages) || cJSON_GetArraySize (stages) == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "plan: missing \"stages\" (a non-empty array)");
    goto fail;
  }
  cJSON_ArrayForEach (it, stages) {
    NnpPlanStage *s;
    const cJSON *dev, *nodes;
    g_autofree char *what = NULL;

    if (!cJSON_IsObject (it)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d is not an object", k);
      goto fail;
    }
    dev = cJSON_GetObjectItemCaseSensitive (it, "device");
    if (dev && !cJSON_IsString (dev)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d: \"device\" must be a "
                   "string", k);
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
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d: \"device\" '%s' and "
                     "\"threads\" %d disagree", k, dev->valuestring, want);
        goto fail;
      }
      s = nnp_plan_add_stage (plan, device, threads > 0 ? threads : want, NULL, 0);
    }
    v = cJSON_GetObjectItemCaseSensitive (it, "cpus");
    if (v) {
      const cJSON *c;
      if (!cJSON_IsArray (v)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d: \"cpus\" must be an "
                     "array of cpu numbers", k);
        goto fail;
      }
      s->cpus = g_new0 (int, MAX (cJSON_GetArraySize (v), 1));
      cJSON_ArrayForEach (c, v) {
        if (!cJSON_IsNumber (c) || !(c->valuedouble >= 0 && c->valuedouble <= 65535)
            || c->valuedouble != floor (c->valuedouble)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan: stage %d: bad cpu number (an "
                       "integer in 0..65535)", k);
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

/* ------------------------------------------------------------ model paths
 *
 * The one rule (plan.h): in a plan file, a relative "model" is relative to
 * the plan file's directory; absolute paths are kept as they are.  In
 * memory, plan->model is a path for this process (absolute, or relative to
 * the current directory). */

/* path made absolute against the current directory, "." and ".." removed
 * lexically. */
static char *
absolute_path (const char *path)
{
  g_autofree char *cwd = g_get_current_dir ();
  return g_canonicalize_filename (path, cwd);
}

/* The relative path from directory `from` to `to`, both absolute and
 * canonical ("a/b" from "/x" to "/x/a/b", "../y" from "/x/z" to "/x/y"). */
static char *
relative_path (const char *from, const char *to)
{
  g_auto (GStrv) f = g_strsplit (from, G_DIR_SEPARATOR_S, -1);
  g_auto (GStrv) t = g_strsplit (to, G_DIR_SEPARATOR_S, -1);
  GString *s = g_string_new (NULL);
  int i = 0;

  while (f[i] && t[i] && strcmp (f[i], t[i]) == 0)
    i++;
  for (int j = i; f[j]; j++)
    if (*f[j])
      g_string_append (s, ".." G_DIR_SEPARATOR_S);
  for (int j = i; t[j]; j++) {
    if (!*t[j])
      continue;
    g_string_append (s, t[j]);
    if (t[j + 1])
      g_string_append_c (s, G_DIR_SEPARATOR);
  }
  return g_string_free (s, FALSE);
}

/* Do a and b name the same existing file? */
static gboolean
same_file (const char *a, const char *b)
{
  GStatBuf sa, sb;
  return g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0 && sa.st_dev == sb.st_dev
      && sa.st_ino == sb.st_ino;
}

/* plan->model as written into the plan file `plan_path` (newly allocated). */
static char *
model_path_for_file (const char *model, const char *plan_path)
{
  g_autofree char *abs_model = NULL, *plan_dir = NULL, *abs_dir = NULL, *rel = NULL;
  g_autofree char *check = NULL, *real_model = NULL, *real_dir = NULL;

  if (g_path_is_absolute (model))
    return g_strdup (model);
  abs_model = absolute_path (model);
  plan_dir = g_path_get_dirname (plan_path);
  abs_dir = absolute_path (plan_dir);
  rel = relative_path (abs_dir, abs_model);
  /* ".." in the result is followed physically: when a symbolic link in the
   * plan's directory makes the lexical answer wrong, relate the real paths */
  check = g_build_filename (plan_dir, rel, NULL);
  if (same_file (check, model) || !g_file_test (model, G_FILE_TEST_EXISTS))
    return g_steal_pointer (&rel);
  real_model = realpath (model, NULL);
  real_dir = realpath (plan_dir, NULL);
  if (real_model == NULL || real_dir == NULL)
    return g_steal_pointer (&abs_model);
  return relative_path (real_dir, real_model);
}

/* A plan file's "model" as this process opens it (newly allocated). */
static char *
model_path_from_file (const char *model, const char *plan_path)
{
  g_autofree char *plan_dir = NULL;

  if (g_path_is_absolute (model))
    return g_strdup (model);
  plan_dir = g_path_get_dirname (plan_path);
  if (strcmp (plan_dir, ".") == 0)
    return g_strdup (model);
  return g_build_filename (plan_dir, model, NULL);
}

gboolean
nnp_plan_save (const NnpPlan *plan, const char *path, GError **error)
{
  g_autofree char *model = NULL, *json = NULL;
  NnpPlan as_written = *plan;   /* shallow: only "model" differs, nothing is freed */

  if (plan->model && *plan->model) {
    model = model_path_for_file (plan->model, path);
    as_written.model = model;
  }
  json = nnp_plan_to_json (&as_written);
  return g_file_set_contents (path, json, -1, error);
}

NnpPlan *
nnp_plan_load (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *err = NULL;
  NnpPlan *plan;

  if (!g_file_get_contents (path, &text, &len, &err)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "plan '%s': %s", path, err->message);
    g_error_free (err);
    return NULL;
  }
  plan = nnp_plan_from_json (text, len, &err);
  if (plan == NULL) {
    g_set_error (error, NNP_ERROR, err->code, "%s: %s", path, err->message);
    g_error_free (err);
  } else if (plan->model && *plan->model) {
    char *model = model_path_from_file (plan->model, path);
    g_free (plan->model);
    plan->model = model;
  }
  return plan;
}

NnpGraph *
nnp_plan_specialize (const NnpPlan *plan, const char *base_dir, NnpModel **model_out,
                     GError **error)
{
  NnpModel *model = NULL;
  NnpGraph *graph;
  g_autofree NnpInputShape *shapes = NULL;
  int n_shapes = 0;

  g_return_val_if_fail (plan != NULL && plan->model != NULL, NULL);
  if (base_dir && !g_path_is_absolute (plan->model)) {
    g_autofree char *p = g_build_filename (base_dir, plan->model, NULL);
    model = nnp_model_load (p, error);
  } else {
    model = nnp_model_load (plan->model, error);
  }
  if (model == NULL)
    return NULL;
  if (plan->digest && *plan->digest
      && g_ascii_strcasecmp (plan->digest, nnp_model_get_digest (model)) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "plan: model '%s' has digest %.12s..., the plan was made for %.12s...",
                 plan->model, nnp_model_get_digest (model), plan->digest);
    nnp_model_unref (model);
    return NULL;
  }
  shapes = nnp_plan_get_input_shapes (plan, &n_shapes);
  graph = nnp_model_specialize (model, shapes, n_shapes,
                                plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION
                                                : NNP_SPECIALIZE_DEFAULT, error);
  if (graph && model_out)
    *model_out = nnp_model_ref (model);
  nnp_model_unref (model);
  return graph;
}

/* ------------------------------------------------------------ boundaries */

/* Ids flagged in `flag`, canonical order (see plan.h); returns the count. */
static int
canonical_order (const NnpGraph *graph, const gboolean *flag, int *list)
{
  guint nv = graph->values->len;
  g_autofree gboolean *taken = g_new0 (gboolean, MAX (nv, 1));
  int n = 0;

  for (guint i = 0; i < graph->inputs->len; i++) {
    int id = g_array_index (graph->inputs, int, i);
    if (flag[id] && !taken[id]) {
      taken[id] = TRUE;
      list[n++] = id;
    }
  }
  for (guint i = 0; i < graph->outputs->len; i++) {
    int id = g_array_index (graph->outputs, int, i);
    if (flag[id] && !taken[id]) {
      taken[id] = TRUE;
      list[n++] = id;
    }
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_outputs; q++) {
      int id = node->outputs[q];
      if (id >= 0 && flag[id] && !taken[id]) {
        taken[id] = TRUE;
        list[n++] = id;
      }
    }
  }
  return n;
}

/* Canonical ids of C_k (k = -1: graph inputs; k = n_stages - 1: graph outputs). */
static int
cut_ids (const NnpGraph *graph, const int *stage_of, int k, int *list)
{
  guint nv = graph->values->len;
  g_autofree gboolean *flag = g_new0 (gboolean, MAX (nv, 1));

  for (guint id = 0; id < nv; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    if (k < 0)
      flag[id] = v->is_input && !v->constant;
    else
      flag[id] = nnp_split_value_crosses (graph, v, stage_of, k);
  }
  return canonical_order (graph, flag, list);
}

static char **
names_of (const NnpGraph *graph, const int *ids, int n)
{
  char **v = g_new0 (char *, n + 1);
  for (int i = 0; i < n; i++)
    v[i] = g_strdup (nnp_graph_value (graph, ids[i])->name);
  return v;
}

/* Check one boundary list against the derived ids. */
static gboolean
check_boundary (const NnpGraph *graph, int k, const char *what, char **names, const int *ids,
                int n, GError **error)
{
  guint nv = graph->values->len;
  g_autofree int *pos = g_new (int, MAX (nv, 1));
  g_autofree gboolean *seen = g_new0 (gboolean, MAX (nv, 1));

  for (guint id = 0; id < nv; id++)
    pos[id] = -1;
  for (int i = 0; i < n; i++)
    pos[ids[i]] = i;
  for (int i = 0; names[i]; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, names[i]);
    if (v == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown value '%s' in %s", k,
                   names[i], what);
      return FALSE;
    }
    if (seen[v->id]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: value '%s' is listed twice in "
                   "%s", k, names[i], what);
      return FALSE;
    }
    seen[v->id] = TRUE;
    if (pos[v->id] < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: value '%s' in %s does not "
                   "cross that boundary", k, names[i], what);
      return FALSE;
    }
  }
  for (int i = 0; i < n; i++) {
    if (!seen[ids[i]]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: missing %s '%s'", k,
                   strcmp (what, "inputs") == 0 ? "input" : "output",
                   nnp_graph_value (graph, ids[i])->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
strv_equal_n (char **a, char **b)
{
  int i;
  for (i = 0; a[i] && b[i]; i++)
    if (strcmp (a[i], b[i]) != 0)
      return FALSE;
  return a[i] == NULL && b[i] == NULL;
}

/* Everything nnp_plan_validate checks; *stage_of_out (n nodes) on success. */
static gboolean
check_plan (const NnpPlan *plan, const NnpGraph *graph, int **stage_of_out, GError **error)
{
  int n = graph->nodes->len, ns = plan->n_stages;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));
  g_autofree int *ids = g_new (int, MAX (graph->values->len, 1));

  if (ns < 1) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan has no stages");
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    stage_of[i] = -1;
  for (int k = 0; k < ns; k++) {
    const NnpPlanStage *s = &plan->stages[k];
    g_autoptr (GError) derr = NULL;
    if (s->device == NULL || nnp_partition_open_device (s->device, &derr) == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "stage %d: device '%s' is not available: %s",
                   k, s->device ? s->device : "(null)", derr ? derr->message : "no device");
      return FALSE;
    }
    if (s->threads < 1) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: threads must be >= 1", k);
      return FALSE;
    }
    if (s->nodes == NULL || s->nodes[0] == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d has no nodes", k);
      return FALSE;
    }
    for (int i = 0; s->nodes[i]; i++) {
      NnpNode *node = nnp_graph_find_node (graph, s->nodes[i]);
      if (node == NULL) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown node '%s'", k,
                     s->nodes[i]);
        return FALSE;
      }
      if (stage_of[node->index] >= 0) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "node '%s' is listed twice (stage %d "
                     "and stage %d)", node->name, stage_of[node->index], k);
        return FALSE;
      }
      {
        g_autofree char *why = NULL;
        if (!nnp_device_spec_supports (s->device, graph, node, &why)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: node '%s' (%s) is not "
                       "supported on device '%s': %s", k, node->name, node->op_type, s->device,
                       why ? why : "no kernel");
          return FALSE;
        }
      }
      stage_of[node->index] = k;
    }
  }
  for (int i = 0; i < n; i++) {
    if (stage_of[i] < 0) {
      const NnpNode *node = nnp_graph_node (graph, i);
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "node '%s' (%s, index %d) is in no stage",
                   node->name, node->op_type, i);
      return FALSE;
    }
  }

  /* convexity: from each stage, walk outside it; coming back = not convex */
  {
    g_autofree int *mark = g_new (int, MAX (n, 1));
    g_autofree int *from = g_new (int, MAX (n, 1));
    g_autofree int *queue = g_new (int, MAX (n, 1));
    for (int k = 0; k < ns; k++) {
      int head = 0, tail = 0;
      for (int i = 0; i < n; i++)
        mark[i] = 0;
      /* seed: nodes outside k fed by k */
      for (int i = 0; i < n; i++) {
        const NnpNode *node = nnp_graph_node (graph, i);
        if (stage_of[i] != k)
          continue;
        for (int q = 0; q < node->n_outputs; q++) {
          NnpValue *v = nnp_node_output (graph, node, q);
          for (int c = 0; v && c < v->n_consumers; c++) {
            int w = v->consumers[c];
            if (stage_of[w] != k && !mark[w]) {
              mark[w] = 1;
              from[w] = i;
              queue[tail++] = w;
            }
          }
        }
      }
      while (head < tail) {
        int u = queue[head++];
        const NnpNode *node = nnp_graph_node (graph, u);
        for (int q = 0; q < node->n_outputs; q++) {
          NnpValue *v = nnp_node_output (graph, node, q);
          for (int c = 0; v && c < v->n_consumers; c++) {
            int w = v->consumers[c];
            if (stage_of[w] == k) {
              g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                           "stage %d is not convex: a path leaves it at node '%s', goes "
                           "through node '%s' (stage %d) and comes back to node '%s'", k,
                           nnp_graph_node (graph, from[u])->name, node->name, stage_of[u],
                           nnp_graph_node (graph, w)->name);
              return FALSE;
            }
            if (!mark[w]) {
              mark[w] = 1;
              from[w] = from[u];
              queue[tail++] = w;
            }
          }
        }
      }
    }
  }

  /* order: an edge back to an earlier stage is a cycle between stages when
   * the stages also feed forward, else the stages are just out of order */
  for (int i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_inputs; q++) {
      NnpValue *v = nnp_node_input (graph, node, q);
      int a, b;
      gboolean forward = FALSE;
      if (v == NULL || v->constant || v->producer < 0)
        continue;
      a = stage_of[v->producer];
      b = stage_of[i];
      if (a <= b)
        continue;
      /* does stage b reach stage a?  (stage DAG edges b -> ... -> a) */
      {
        g_autofree gboolean *reach = g_new0 (gboolean, ns);
        gboolean changed = TRUE;
        reach[b] = TRUE;
        while (changed) {
          changed = FALSE;
          for (int x = 0; x < n; x++) {
            const NnpNode *nx = nnp_graph_node (graph, x);
            for (int r = 0; r < nx->n_inputs; r++) {
              NnpValue *u = nnp_node_input (graph, nx, r);
              if (u && !u->constant && u->producer >= 0 && reach[stage_of[u->producer]]
                  && !reach[stage_of[x]]) {
                reach[stage_of[x]] = TRUE;
                changed = TRUE;
              }
            }
          }
        }
        forward = reach[a];
      }
      if (forward)
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "cycle between stages %d and %d: node '%s' (stage %d) feeds node '%s' "
                     "(stage %d), and stage %d also feeds stage %d", b, a,
                     nnp_graph_node (graph, v->producer)->name, a, node->name, b, b, a);
      else
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "stages out of order: node '%s' in stage %d reads '%s' produced by node "
                     "'%s' in the later stage %d", node->name, b, v->name,
                     nnp_graph_node (graph, v->producer)->name, a);
      return FALSE;
    }
  }

  /* boundaries */
  for (int k = 0; k < ns; k++) {
    const NnpPlanStage *s = &plan->stages[k];
    int m;
    if (s->inputs) {
      m = cut_ids (graph, stage_of, k - 1, ids);
      if (!check_boundary (graph, k, "inputs", s->inputs, ids, m, error))
        return FALSE;
      if (k == 0) {
        g_auto (GStrv) canon = names_of (graph, ids, m);
        if (!strv_equal_n (canon, s->inputs)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage 0: inputs must be the graph "
                       "inputs in graph order");
          return FALSE;
        }
      }
    }
    if (s->outputs) {
      m = cut_ids (graph, stage_of, k, ids);
      if (!check_boundary (graph, k, "outputs", s->outputs, ids, m, error))
        return FALSE;
      if (k == ns - 1) {
        g_auto (GStrv) canon = names_of (graph, ids, m);
        if (!strv_equal_n (canon, s->outputs)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: outputs must be the graph "
                       "outputs in graph order", k);
          return FALSE;
        }
      }
    }
    if (k > 0 && s->inputs && plan->stages[k - 1].outputs
        && !strv_equal_n (s->inputs, plan->stages[k - 1].outputs)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: inputs are not stage %d's "
                   "outputs in the same order", k, k - 1);
      return FALSE;
    }
  }
  if (stage_of_out)
    *stage_of_out = g_steal_pointer (&stage_of);
  return TRUE;
}

gboolean
nnp_plan_validate (const NnpPlan *plan, const NnpGraph *graph, GError **error)
{
  g_return_val_if_fail (plan != NULL && graph != NULL, FALSE);
  return check_plan (plan, graph, NULL, error);
}

gboolean
nnp_plan_resolve (NnpPlan *plan, const NnpGraph *graph, GError **error)
{
  g_autofree int *stage_of = NULL;
  g_autofree int *ids = NULL;

  g_return_val_if_fail (plan != NULL && graph != NULL, FALSE);
  if (!check_plan (plan, graph, &stage_of, error))
    return FALSE;
  ids = g_new (int, MAX (graph->values->len, 1));
  for (int k = 0; k < plan->n_stages; k++) {
    NnpPlanStage *s = &plan->stages[k];
    int m;
    /* put nodes in topological order */
    int j = 0;
    for (guint i = 0; i < graph->nodes->len; i++) {
      if (stage_of[i] == k) {
        g_free (s->nodes[j]);
        s->nodes[j++] = g_strdup (nnp_graph_node (graph, i)->name);
      }
    }
    if (s->inputs == NULL) {
      m = cut_ids (graph, stage_of, k - 1, ids);
      s->inputs = names_of (graph, ids, m);
      s->n_inputs = m;
    }
    if (s->outputs == NULL) {
      m = cut_ids (graph, stage_of, k, ids);
      s->outputs = names_of (graph, ids, m);
      s->n_outputs = m;
    }
  }
  return TRUE;
}

/* Ids of the named values (all known: the plan is resolved); newly allocated. */
static int *
value_ids_of (const NnpGraph *graph, char **names, int n)
{
  int *ids = g_new (int, MAX (n, 1));

  for (int i = 0; i < n; i++)
    ids[i] = nnp_graph_find_value (graph, names[i])->id;
  return ids;
}

NnpStage *
nnp_plan_stage_new (const NnpPlan *plan, int k, NnpGraph *graph, GError **error)
{
  const NnpPlanStage *s;
  g_autofree int *nodes = NULL, *in = NULL, *out = NULL;
  NnpStageOptions opts = { 0 };
  NnpPlan *resolved = NULL;
  NnpStage *stage;

  g_return_val_if_fail (plan != NULL && graph != NULL, NULL);
  if (k < 0 || k >= plan->n_stages) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan has no stage %d (it has %d)", k,
                 plan->n_stages);
    return NULL;
  }
  /* validate the whole plan; derive missing boundaries on a copy */
  resolved = nnp_plan_copy (plan);
  if (resolved == NULL || !nnp_plan_resolve (resolved, graph, error)) {
    if (resolved == NULL)
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan cannot be copied");
    nnp_plan_free (resolved);
    return NULL;
  }
  s = &resolved->stages[k];
  nodes = g_new (int, MAX (s->n_nodes, 1));
  for (int i = 0; i < s->n_nodes; i++)
    nodes[i] = nnp_graph_find_node (graph, s->nodes[i])->index;
  in = value_ids_of (graph, s->inputs, s->n_inputs);
  out = value_ids_of (graph, s->outputs, s->n_outputs);
  opts.device = s->device;
  opts.threads = s->threads;
  opts.cpus = s->cpus;
  opts.n_cpus = s->n_cpus;
  opts.inputs = in;
  opts.n_inputs = s->n_inputs;
  opts.outputs = out;
  opts.n_outputs = s->n_outputs;
  stage = nnp_stage_new (graph, nodes, s->n_nodes, &opts, error);
  if (stage == NULL && error && *error)
    g_prefix_error (error, "stage %d: ", k);
  nnp_plan_free (resolved);
  return stage;
}

double *
nnp_stage_load_parse (const char *text, int *n, GError **error)
{
  g_auto (GStrv) items = NULL;
  double *load;
  guint count;

  g_return_val_if_fail (text != NULL && n != NULL, NULL);
  items = g_strsplit (text, ",", -1);
  count = g_strv_length (items);
  load = g_new0 (double, MAX (count, 1));
  for (guint i = 0; i < count; i++) {
    const char *item = g_strstrip (items[i]);
    char *end = NULL;
    double v = g_ascii_strtod (item, &end);

    if (*item == '\0' || end == NULL || *end != '\0' || !(v >= 0 && v <= 1000)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "invalid stage-load item '%s' in \"%s\": want a comma-separated list of "
                   "numbers >= 0 (fractions of the model's time)", item, text);
      g_free (load);
      return NULL;
    }
    load[i] = v;
  }
  if (count == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "empty stage-load list");
    g_free (load);
    return NULL;
  }
  *n = (int) count;
  return load;
}

/* ------------------------------------------------------------ costs of a plan */

static const NnpDeviceSpec *
device_of (const NnpDeviceSpec *devices, int n_devices, int k)
{
  return &devices[MIN (k, n_devices - 1)];
}

typedef struct {
  NnpSplitProblem p;
  double *node_ms, *value_bytes, *node_mem;
  NnpXferCost *out, *in;
  NnpXferCost graph_in, graph_out;
} Problem;

static void
problem_clear (Problem *pb)
{
  g_free (pb->node_ms);
  g_free (pb->value_bytes);
  g_free (pb->node_mem);
  g_free (pb->out);
  g_free (pb->in);
}

static void
problem_init (Problem *pb, const NnpGraph *graph, NnpCostModel *cm, const NnpDeviceSpec *devs,
              int n_stages)
{
  int n = graph->nodes->len;
  guint nv = graph->values->len;

  memset (pb, 0, sizeof (*pb));
  pb->node_ms = g_new (double, (gsize) n_stages * MAX (n, 1));
  pb->value_bytes = g_new0 (double, MAX (nv, 1));
  pb->node_mem = g_new0 (double, MAX (n, 1));
  pb->out = g_new0 (NnpXferCost, MAX (n_stages, 1));
  pb->in = g_new0 (NnpXferCost, MAX (n_stages, 1));
  for (int k = 0; k < n_stages; k++)
    for (int i = 0; i < n; i++)
      pb->node_ms[(gsize) k * n + i] = cm ? nnp_cost_model_node_ms (cm, &devs[k], i) : 1.0;
  for (guint id = 0; id < nv; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    int64_t e = nnp_shape_numel (&v->shape);
    pb->value_bytes[id] = e > 0 ? (double) e * nnp_dtype_size (v->dtype) : 0.0;
  }
  for (int i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_inputs; q++) {
      NnpValue *v = nnp_node_input (graph, node, q);
      if (v && v->constant)
        pb->node_mem[i] += v->constant->nbytes;
    }
    for (int q = 0; q < node->n_outputs; q++)
      if (node->outputs[q] >= 0)
        pb->node_mem[i] += pb->value_bytes[node->outputs[q]];
  }
  for (int k = 0; cm && k + 1 < n_stages; k++)
    nnp_cost_model_xfer_params (cm, &devs[k], &devs[k + 1], &pb->out[k], &pb->in[k]);
  if (cm) {
    NnpXferCost unused;
    nnp_cost_model_graph_xfer_params (cm, &devs[0], &pb->graph_in, &unused);
    nnp_cost_model_graph_xfer_params (cm, &devs[n_stages - 1], &unused, &pb->graph_out);
  }
  pb->p.n_stages = n_stages;
  pb->p.n_nodes = n;
  pb->p.node_ms = pb->node_ms;
  pb->p.value_bytes = pb->value_bytes;
  pb->p.node_mem = pb->node_mem;
  pb->p.xfer_out = pb->out;
  pb->p.xfer_in = pb->in;   /* cpu -> cpu: the receiver pays nothing */
  pb->p.xfer_graph_in = &pb->graph_in;
  pb->p.xfer_graph_out = &pb->graph_out;
}

void
nnp_plan_predict (NnpPlan *plan, const NnpGraph *graph, NnpCostModel *cm)
{
  int n = graph->nodes->len, ns;
  g_autofree int *stage_of = NULL;
  g_autofree NnpDeviceSpec *devs = NULL;
  g_autofree double *comp = NULL, *xfer = NULL, *total = NULL;
  Problem pb;
  gboolean profiled = TRUE;

  g_return_if_fail (plan != NULL && graph != NULL && cm != NULL);
  if (!check_plan (plan, graph, &stage_of, NULL))
    return;
  ns = plan->n_stages;
  devs = g_new0 (NnpDeviceSpec, ns);
  for (int k = 0; k < ns; k++) {
    devs[k].device = plan->stages[k].device;
    devs[k].threads = plan->stages[k].threads;
    profiled &= strcmp (nnp_cost_model_source (cm, &devs[k]), "profile") == 0;
  }
  problem_init (&pb, graph, cm, devs, ns);
  comp = g_new (double, ns);
  xfer = g_new (double, ns);
  total = g_new (double, ns);
  plan->predicted_bottleneck_ms = nnp_split_evaluate (graph, &pb.p, stage_of, comp, xfer, total,
                                                      &plan->bottleneck_stage);
  for (int k = 0; k < ns; k++) {
    NnpPlanStage *s = &plan->stages[k];
    double b = 0;
    int count = 0;
    s->compute_ms = comp[k];
    s->transfer_ms = xfer[k];
    s->predicted_ms = total[k];
    if (k + 1 < ns)
      for (guint id = 0; id < graph->values->len; id++)
        if (nnp_split_value_crosses (graph, nnp_graph_value (graph, id), stage_of, k)) {
          b += pb.value_bytes[id];
          count++;
        }
    s->out_bytes = (gint64) b;
    s->cut_ms = k + 1 < ns ? nnp_cost_model_transfer_ms (cm, &devs[k], &devs[k + 1], count, b)
                           : -1.0;
  }
  g_free (plan->cost);
  plan->cost = g_strdup (profiled ? "profile" : "estimate");
  (void) n;
  problem_clear (&pb);
}

/* ------------------------------------------------------------ construction */

static NnpPlan *
plan_from_stage_of (const char *model_path, const char *digest, const NnpInputShape *shapes,
                    int n_shapes, NnpGraph *graph, const int *stage_of, int ns,
                    const NnpDeviceSpec *devices, int n_devices, const char *method,
                    NnpCostModel *cm, GError **error)
{
  NnpPlan *plan = nnp_plan_new (model_path, digest);
  int n = graph->nodes->len;
  g_autofree const char **names = g_new (const char *, MAX (n, 1));
  static const NnpDeviceSpec cpu1 = { (char *) "cpu", 1 };

  for (int i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  plan->method = g_strdup (method);
  for (int k = 0; k < ns; k++) {
    const NnpDeviceSpec *d = devices && n_devices > 0 ? device_of (devices, n_devices, k) : &cpu1;
    int m = 0;
    for (int i = 0; i < n; i++)
      if (stage_of[i] == k)
        names[m++] = nnp_graph_node (graph, i)->name;
    nnp_plan_add_stage (plan, d->device, d->threads, names, m);
  }
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  if (cm)
    nnp_plan_predict (plan, graph, cm);
  return plan;
}

NnpPlan *
nnp_plan_new_from_cuts (const char *model_path, const char *digest, const NnpInputShape *shapes,
                        int n_shapes, NnpGraph *graph, const int *cuts, int n_cuts,
                        const NnpDeviceSpec *devices, int n_devices, NnpCostModel *cm,
                        GError **error)
{
  int n = graph->nodes->len;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));

  g_return_val_if_fail (graph != NULL && n_cuts >= 0, NULL);
  for (int c = 0; c < n_cuts; c++) {
    int lo = c > 0 ? cuts[c - 1] : 0;
    if (cuts[c] <= lo || cuts[c] >= n) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "cut %d: index %d must be in %d..%d (increasing, inside the %d nodes)", c,
                   cuts[c], lo + 1, n - 1, n);
      return NULL;
    }
  }
  for (int i = 0, k = 0; i < n; i++) {
    while (k < n_cuts && i >= cuts[k])
      k++;
    stage_of[i] = k;
  }
  NNP_DEBUG (CAT, "manual split at %d cuts of %d nodes", n_cuts, n);
  return plan_from_stage_of (model_path, digest, shapes, n_shapes, graph, stage_of, n_cuts + 1,
                             devices, n_devices, "manual", cm, error);
}

NnpPlan *
nnp_plan_new_from_cut_names (const char *model_path, const char *digest,
                             const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                             const char *const *names, int n_names,
                             const NnpDeviceSpec *devices, int n_devices, NnpCostModel *cm,
                             GError **error)
{
  g_autofree int *cuts = g_new (int, MAX (n_names, 1));

  for (int i = 0; i < n_names; i++) {
    NnpNode *node = nnp_graph_find_node (graph, names[i]);
    if (node == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "cut %d: unknown node '%s'", i, names[i]);
      return NULL;
    }
    cuts[i] = node->index;
  }
  return nnp_plan_new_from_cuts (model_path, digest, shapes, n_shapes, graph, cuts, n_names,
                                 devices, n_devices, cm, error);
}

NnpPlan *
nnp_plan_new_auto (const char *model_path, const char *digest, const NnpInputShape *shapes,
                   int n_shapes, NnpGraph *graph, const NnpSplitOptions *options,
                   NnpCostModel *cm, GError **error)
{
  int n = graph->nodes->len, kmin, kmax, best_k = -1;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));
  g_autofree int *best = g_new (int, MAX (n, 1));
  g_autofree double *bott = NULL;
  const char *best_method = NULL;
  NnpDeviceSpec cpu1 = { (char *) "cpu", 1 };
  const NnpDeviceSpec *devices;
  int n_devices;
  double best_b = INFINITY;

  g_return_val_if_fail (graph != NULL && options != NULL && cm != NULL, NULL);
  devices = options->n_devices > 0 ? options->devices : &cpu1;
  n_devices = MAX (options->n_devices, 1);
  if (options->n_stages > 0) {
    kmin = kmax = options->n_stages;
  } else {
    kmin = 1;
    kmax = n_devices > 1 ? n_devices : 8;
  }
  kmax = MIN (kmax, n);
  if (kmin > n) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "cannot split %d nodes into %d non-empty stages", n, kmin);
    return NULL;
  }
  /* a node no listed device can run: say which and why, before any search */
  for (int j = 0; j < n_devices; j++)
    if (!nnp_cost_model_prepare (cm, &devices[j], error))
      return NULL;
  for (int i = 0; i < n; i++) {
    gboolean somewhere = FALSE;
    for (int j = 0; j < MIN (n_devices, kmax) && !somewhere; j++)
      somewhere = isfinite (nnp_cost_model_node_ms (cm, &devices[j], i));
    if (!somewhere) {
      const NnpNode *node = nnp_graph_node (graph, i);
      GString *why = g_string_new (NULL);
      for (int j = 0; j < MIN (n_devices, kmax); j++) {
        const char *w = nnp_cost_model_why (cm, &devices[j], i);
        g_string_append_printf (why, "%s%s: %s", j ? "; " : "", devices[j].device,
                                w ? w : "not supported");
      }
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "node '%s' (%s) cannot run on any of the devices (%s)", node->name,
                   node->op_type, why->str);
      g_string_free (why, TRUE);
      return NULL;
    }
  }
  bott = g_new (double, kmax + 1);
  for (int k = kmin; k <= kmax; k++) {
    g_autofree NnpDeviceSpec *devs = g_new0 (NnpDeviceSpec, k);
    const char *method = NULL;
    Problem pb;
    GError *err = NULL;
    gboolean ok;
    double *load = NULL;

    for (int j = 0; j < k; j++) {
      devs[j] = *device_of (devices, n_devices, j);
      if (!nnp_cost_model_prepare (cm, &devs[j], error))
        return NULL;
    }
    problem_init (&pb, graph, cm, devs, k);
    pb.p.mem_limit = (double) options->memory_limit;
    pb.p.max_ideals = options->max_ideals;
    if (options->stage_load && options->n_stage_load > 0) {
      load = g_new0 (double, k);
      for (int j = 0; j < MIN (k, options->n_stage_load); j++) {
        double whole = 0.0;
        for (int i = 0; i < n; i++) {
          double ms = pb.node_ms[(gsize) j * n + i];
          whole += isfinite (ms) ? ms : 0.0;
        }
        load[j] = MAX (options->stage_load[j], 0.0) * whole;
        NNP_INFO (CAT, "%d stages: stage %d carries a load of %.3f ms (%.2f of %.3f ms)", k, j,
                  load[j], options->stage_load[j], whole);
      }
      pb.p.stage_load_ms = load;
    }
    ok = nnp_split_solve (graph, &pb.p, stage_of, &bott[k], &method, &err);
    problem_clear (&pb);
    g_clear_pointer (&load, g_free);
    if (!ok) {
      if (kmin == kmax) {
        if (n_devices > 1 && strstr (err->message, "op support")) {
          GString *list = g_string_new (NULL);
          for (int j = 0; j < k; j++)
            g_string_append_printf (list, "%s%s", j ? "," : "", devs[j].device);
          g_prefix_error (&err, "stage devices %s (in this order): ", list->str);
          g_string_free (list, TRUE);
        }
        g_propagate_error (error, err);
        return NULL;
      }
      NNP_DEBUG (CAT, "%d stages: %s", k, err->message);
      g_error_free (err);
      bott[k] = INFINITY;
      continue;
    }
    NNP_INFO (CAT, "%d stages: predicted bottleneck %.3f ms (%s)", k, bott[k], method);
    /* auto: fewest stages within 5% of the best seen so far */
    if (bott[k] < best_b * (kmin == kmax ? 1.0 : 0.95)) {
      best_b = bott[k];
      best_k = k;
      best_method = method;
      memcpy (best, stage_of, sizeof (int) * n);
    }
  }
  if (best_k < 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "no feasible split into %d..%d stages",
                 kmin, kmax);
    return NULL;
  }
  if (kmin != kmax)
    NNP_INFO (CAT, "auto: chose %d stages (bottleneck %.3f ms)", best_k, best_b);
  return plan_from_stage_of (model_path, digest, shapes, n_shapes, graph, best, best_k, devices,
                             n_devices, best_method, cm, error);
}

/* ------------------------------------------------------------ printing */

static char *
human_bytes (gint64 b)
{
  if (b < 0)
    return g_strdup ("?");
  if (b >= 1 << 20)
    return g_strdup_printf ("%.2f MiB", b / 1048576.0);
  if (b >= 1 << 10)
    return g_strdup_printf ("%.1f KiB", b / 1024.0);
  return g_strdup_printf ("%" G_GINT64_FORMAT " B", b);
}

char *
nnp_plan_to_table (const NnpPlan *plan)
{
  GString *s = g_string_new (NULL);
  int w = 6;

  g_return_val_if_fail (plan != NULL, NULL);
  for (int k = 0; k < plan->n_stages; k++)
    w = MAX (w, (int) strlen (plan->stages[k].device ? plan->stages[k].device : "cpu"));
  g_string_append_printf (s, "plan: %s, %d stage%s, method %s, costs %s\n", plan->model,
                          plan->n_stages, plan->n_stages == 1 ? "" : "s",
                          plan->method ? plan->method : "?", plan->cost ? plan->cost : "?");
  g_string_append_printf (s, "%-5s %-*s %-7s %6s  %-48s %11s %11s %11s %12s %7s\n", "stage", w,
                          "device", "threads", "nodes", "first .. last node", "compute ms",
                          "xfer ms", "predict ms", "out bytes", "out #");
  for (int k = 0; k < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k];
    g_autofree char *range = NULL, *ob = human_bytes (k + 1 < plan->n_stages ? st->out_bytes : 0);
    const char *first = st->n_nodes > 0 ? st->nodes[0] : "-";
    const char *last = st->n_nodes > 0 ? st->nodes[st->n_nodes - 1] : "-";
    range = g_strdup_printf ("%.22s .. %.22s", first, last);
    g_string_append_printf (s, "%-5d %-*s %-7d %6d  %-48s %11.3f %11.3f %11.3f %12s %7d%s\n", k,
                            w, st->device, st->threads, st->n_nodes, range, st->compute_ms,
                            st->transfer_ms, st->predicted_ms, ob,
                            k + 1 < plan->n_stages ? st->n_outputs : 0,
                            k == plan->bottleneck_stage ? "  <- bottleneck" : "");
  }
  for (int k = 0; k + 1 < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k], *nx = &plan->stages[k + 1];
    g_autofree char *ob = human_bytes (st->out_bytes);
    g_string_append_printf (s, "cut %d: stage %d (%s) -> stage %d (%s): %d tensor%s, %s",
                            k, k, st->device, k + 1, nx->device, st->n_outputs,
                            st->n_outputs == 1 ? "" : "s", ob);
    if (st->cut_ms >= 0)
      g_string_append_printf (s, ", predicted transfer %.3f ms", st->cut_ms);
    g_string_append_c (s, '\n');
  }
  if (plan->predicted_bottleneck_ms >= 0)
    g_string_append_printf (s, "predicted bottleneck: %.3f ms (stage %d) = %.1f frames/s\n",
                            plan->predicted_bottleneck_ms, plan->bottleneck_stage,
                            plan->predicted_bottleneck_ms > 0
                            ? 1000.0 / plan->predicted_bottleneck_ms : 0.0);
  return g_string_free (s, FALSE);
}

char *
nnp_plan_to_gst_launch (const NnpPlan *plan, const char *plan_path)
{
  GString *s = g_string_new (NULL);

  g_return_val_if_fail (plan != NULL, NULL);
  for (int k = 0; k < plan->n_stages; k++) {
    if (k)
      g_string_append (s, " ! queue ! ");
    g_string_append_printf (s, "nnstage model=%s plan=%s stage=%d", plan->model,
                            plan_path ? plan_path : "plan.json", k);
  }
  return g_string_free (s, FALSE);
}

char *
nnp_plan_to_gst_launch_bin (const NnpPlan *plan, const char *plan_path)
{
  g_return_val_if_fail (plan != NULL, NULL);
  return g_strdup_printf ("nnpipeline model=%s plan=%s", plan->model,
                          plan_path ? plan_path : "plan.json");
}
