/* libnnpipe: plan files: save and load, the one rule for the model path
 * in a plan file, the model digest check, a plan's specialised graph. */
#include <nnpipe/plan.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

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
  NnpPlan as_written = *plan; /* shallow: only "model" differs, nothing is freed */

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

gboolean
nnp_plan_check_model (const NnpPlan *plan, NnpModel *model, const char *plan_name, GError **error)
{
  const char *digest = nnp_model_get_digest (model);

  if (plan->digest == NULL || *plan->digest == '\0'
      || g_ascii_strcasecmp (plan->digest, digest) == 0)
    return TRUE;
  g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
               "%s was made for another model than '%s' (digest %.12s..., the model's %.12s...)",
               plan_name ? plan_name : "plan", nnp_model_get_name (model), plan->digest, digest);
  return FALSE;
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
  if (!nnp_plan_check_model (plan, model, NULL, error)) {
    nnp_model_unref (model);
    return NULL;
  }
  shapes = nnp_plan_get_input_shapes (plan, &n_shapes);
  graph = nnp_model_specialize (model, shapes, n_shapes,
                                plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT,
                                error);
  if (graph && model_out)
    *model_out = nnp_model_ref (model);
  nnp_model_unref (model);
  return graph;
}
