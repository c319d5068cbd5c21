/* GStreamer nnpipe plugin: the properties that select a part of a model
 * and where it runs (gstnnpartprops.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpartprops.h"

#include <string.h>

#include <nnpipe/device.h>

#define RW \
  (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

/* The properties, as nnstage documents them (docs/pipeline.md,
 * docs/opencl.md):
 *
 * model: path of the ONNX model file.  Loaded when the element starts
 *   (READY -> PAUSED), once per process for all elements naming the same
 *   file.
 * plan: path of a plan file (JSON, made by `nnpipe split` or nnpipeline):
 *   the element runs stage `stage` of it, on the plan's device, threads and
 *   cores.  Its sink caps are the stage's input tensors and its src caps
 *   its outputs, in the plan's order; stage 0 takes the model's inputs.
 *   The model is the model property or else the plan's.
 * plan-object: a plan (an NnpPlan pointer, copied) instead of a plan file:
 *   nnpipeline hands its plan to its stages this way.
 * stage: index of the plan's stage to run (with plan).
 * nodes: run only these nodes of the specialised graph: comma-separated
 *   node names, or "first..last" (names or topological indices,
 *   inclusive).  The nodes must form a convex set.  The nodes before it
 *   (in topological order, and its ancestors) are taken to run upstream,
 *   the rest downstream: the input tensors are what crosses from before,
 *   the output tensors what crosses to after, in the plan order of
 *   include/nnpipe/plan.h, so chains of ranges fit together.
 * device: the device the stage runs on, in the syntax of nnpipeline's
 *   devices, `nnpipe split --devices` and plans (nnp_device_spec_parse()):
 *   `cpu`, `cpu:THREADS` (the same as threads), `opencl` (the first GPU,
 *   else the first OpenCL device; device-index or device-name choose
 *   another), `opencl:N` or `opencl:NAME`.  A malformed value fails the
 *   start with an error naming it.  On OpenCL the stage's tensors live in
 *   device memory; its output stays there (caps feature memory:OpenCL)
 *   when downstream accepts it, and input in device memory of the same
 *   device is used in place.  A stage of a plan runs on the plan's device
 *   instead.
 * device-index: with device=opencl, the N-th OpenCL device, counting the
 *   devices of every platform in platform order (as `clinfo -l` lists
 *   them); -1 = the first GPU, else the first device.
 * device-name: with device=opencl, the first OpenCL device whose device or
 *   platform name contains this (case-insensitive), e.g. "H100" or
 *   "portable".  Takes precedence over device-index.
 * fallback: when the OpenCL device is missing or cannot run the stage (a
 *   program that does not build, an op without kernel): run on the CPU
 *   instead and post a warning naming the device and the reason.  When
 *   FALSE such a stage fails with an error naming the device.
 * threads: number of intra-op threads the stage owns.
 * cpus: cores to pin the stage's threads to, e.g. "0,1" or "0-3": thread i
 *   runs on the i-th listed core (modulo the list).  Unset: not pinned. */
static const gchar *const default_blurbs[GST_NN_PART_PROP_LAST] = {
  [GST_NN_PART_PROP_MODEL] =
      "Path of the ONNX model file (loaded once per process)",
  [GST_NN_PART_PROP_PLAN] =
      "Path of a plan file (JSON): run one stage of it (see 'stage')",
  [GST_NN_PART_PROP_PLAN_OBJECT] =
      "An NnpPlan (copied) instead of a plan file (used by nnpipeline)",
  [GST_NN_PART_PROP_STAGE] = "Index of the plan's stage to run (with 'plan')",
  [GST_NN_PART_PROP_NODES] =
      "Run only these nodes: \"name,name,...\" or \"first..last\" (names or topological indices of the specialised graph)",
  [GST_NN_PART_PROP_DEVICE] =
      "The device the stage runs on: cpu, cpu:THREADS, opencl, opencl:N or opencl:NAME",
  [GST_NN_PART_PROP_DEVICE_INDEX] =
      "With device=opencl: index of the OpenCL device (-1 = first GPU, else first device)",
  [GST_NN_PART_PROP_DEVICE_NAME] =
      "With device=opencl: a substring of the OpenCL device or platform name (overrides device-index)",
  [GST_NN_PART_PROP_FALLBACK] =
      "Run on the CPU (with a warning) when the OpenCL device is missing or cannot run the stage",
  [GST_NN_PART_PROP_THREADS] = "Number of intra-op threads the stage owns",
  [GST_NN_PART_PROP_CPUS] =
      "Cores to pin the stage's threads to (e.g. \"0,1\" or \"0-3\"; unset = not pinned)",
};

void
gst_nn_part_props_install (GObjectClass *klass, GstNnPartPropsFlags which,
    const gchar *const *blurbs)
{
  const gchar *b[GST_NN_PART_PROP_LAST];

  for (guint i = 0; i < GST_NN_PART_PROP_LAST; i++)
    b[i] = blurbs && blurbs[i] ? blurbs[i] : default_blurbs[i];

#define INSTALL(id, pspec) g_object_class_install_property (klass, id, pspec)
  if (which & GST_NN_PART_PROPS_PART) {
    INSTALL (GST_NN_PART_PROP_MODEL,
        g_param_spec_string ("model", "Model", b[GST_NN_PART_PROP_MODEL], NULL,
            RW));
    INSTALL (GST_NN_PART_PROP_PLAN,
        g_param_spec_string ("plan", "Plan", b[GST_NN_PART_PROP_PLAN], NULL,
            RW));
    INSTALL (GST_NN_PART_PROP_PLAN_OBJECT,
        g_param_spec_pointer ("plan-object", "Plan object",
            b[GST_NN_PART_PROP_PLAN_OBJECT],
            G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS
                | GST_PARAM_MUTABLE_READY));
    INSTALL (GST_NN_PART_PROP_STAGE,
        g_param_spec_int ("stage", "Stage", b[GST_NN_PART_PROP_STAGE], 0,
            G_MAXINT, GST_NN_PART_DEFAULT_STAGE, RW));
    INSTALL (GST_NN_PART_PROP_NODES,
        g_param_spec_string ("nodes", "Nodes", b[GST_NN_PART_PROP_NODES], NULL,
            RW));
  }
  if (which & GST_NN_PART_PROPS_DEVICE) {
    INSTALL (GST_NN_PART_PROP_DEVICE,
        g_param_spec_string ("device", "Device", b[GST_NN_PART_PROP_DEVICE],
            GST_NN_PART_DEFAULT_DEVICE, RW));
    INSTALL (GST_NN_PART_PROP_DEVICE_INDEX,
        g_param_spec_int ("device-index", "Device index",
            b[GST_NN_PART_PROP_DEVICE_INDEX], -1, G_MAXINT,
            GST_NN_PART_DEFAULT_DEVICE_INDEX, RW));
    INSTALL (GST_NN_PART_PROP_DEVICE_NAME,
        g_param_spec_string ("device-name", "Device name",
            b[GST_NN_PART_PROP_DEVICE_NAME], NULL, RW));
    INSTALL (GST_NN_PART_PROP_FALLBACK,
        g_param_spec_boolean ("fallback", "Fallback",
            b[GST_NN_PART_PROP_FALLBACK], GST_NN_PART_DEFAULT_FALLBACK, RW));
    INSTALL (GST_NN_PART_PROP_THREADS,
        g_param_spec_int ("threads", "Threads", b[GST_NN_PART_PROP_THREADS], 1,
            GST_NN_PART_MAX_THREADS, GST_NN_PART_DEFAULT_THREADS, RW));
    INSTALL (GST_NN_PART_PROP_CPUS,
        g_param_spec_string ("cpus", "CPUs", b[GST_NN_PART_PROP_CPUS], NULL,
            RW));
  }
#undef INSTALL
}

void
gst_nn_part_props_init (GstNnPartProps *props)
{
  memset (props, 0, sizeof (*props));
  props->stage = GST_NN_PART_DEFAULT_STAGE;
  props->device = g_strdup (GST_NN_PART_DEFAULT_DEVICE);
  props->device_index = GST_NN_PART_DEFAULT_DEVICE_INDEX;
  props->threads = GST_NN_PART_DEFAULT_THREADS;
  props->fallback = GST_NN_PART_DEFAULT_FALLBACK;
}

void
gst_nn_part_props_clear (GstNnPartProps *props)
{
  g_clear_pointer (&props->model, g_free);
  g_clear_pointer (&props->plan_path, g_free);
  g_clear_pointer (&props->nodes, g_free);
  g_clear_pointer (&props->plan, nnp_plan_free);
  g_clear_pointer (&props->device, g_free);
  g_clear_pointer (&props->device_name, g_free);
  g_clear_pointer (&props->cpus, g_free);
}

/* The string field of prop_id, or NULL. */
static gchar **
string_field (GstNnPartProps *props, guint prop_id)
{
  switch (prop_id) {
    case GST_NN_PART_PROP_MODEL:
      return &props->model;
    case GST_NN_PART_PROP_PLAN:
      return &props->plan_path;
    case GST_NN_PART_PROP_NODES:
      return &props->nodes;
    case GST_NN_PART_PROP_DEVICE:
      return &props->device;
    case GST_NN_PART_PROP_DEVICE_NAME:
      return &props->device_name;
    case GST_NN_PART_PROP_CPUS:
      return &props->cpus;
    default:
      return NULL;
  }
}

/* The int field of prop_id, or NULL. */
static gint *
int_field (GstNnPartProps *props, guint prop_id)
{
  switch (prop_id) {
    case GST_NN_PART_PROP_STAGE:
      return &props->stage;
    case GST_NN_PART_PROP_DEVICE_INDEX:
      return &props->device_index;
    case GST_NN_PART_PROP_THREADS:
      return &props->threads;
    default:
      return NULL;
  }
}

/* device and cpus are checked at start (the error there names them) */
gboolean
gst_nn_part_props_set (GstNnPartProps *props, guint prop_id,
    const GValue *value)
{
  gchar **str = string_field (props, prop_id);
  gint *num = int_field (props, prop_id);

  if (str) {
    g_free (*str);
    *str = g_value_dup_string (value);
  } else if (num) {
    *num = g_value_get_int (value);
  } else if (prop_id == GST_NN_PART_PROP_FALLBACK) {
    props->fallback = g_value_get_boolean (value);
  } else if (prop_id == GST_NN_PART_PROP_PLAN_OBJECT) {
    const NnpPlan *plan = g_value_get_pointer (value);

    g_clear_pointer (&props->plan, nnp_plan_free);
    props->plan = plan ? nnp_plan_copy (plan) : NULL;
  } else {
    return FALSE;
  }
  props->gen++;
  return TRUE;
}

gboolean
gst_nn_part_props_get (const GstNnPartProps *props, guint prop_id,
    GValue *value)
{
  GstNnPartProps *p = (GstNnPartProps *) props;
  gchar **str = string_field (p, prop_id);
  gint *num = int_field (p, prop_id);

  if (str)
    g_value_set_string (value, *str);
  else if (num)
    g_value_set_int (value, *num);
  else if (prop_id == GST_NN_PART_PROP_FALLBACK)
    g_value_set_boolean (value, props->fallback);
  else
    return FALSE; /* plan-object is write-only */
  return TRUE;
}

gchar *
gst_nn_part_props_device_spec (const GstNnPartProps *props, gint *threads_out,
    GError **error)
{
  gboolean named =
      (props->device_name && *props->device_name) || props->device_index >= 0;
  GError *err = NULL;
  gchar *spec;

  /* one grammar for every element, the CLI and plans (device.h) */
  spec = nnp_device_spec_select (props->device ? props->device : "cpu",
      props->device_index, props->device_name, threads_out, &err);
  if (spec == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
        "invalid value \"%s\" for property 'device'%s: %s", props->device,
        named ? " with device-index / device-name" : "", err->message);
    g_error_free (err);
  }
  return spec;
}

gboolean
gst_nn_part_props_check (GstObject *owner, const GstNnPartProps *props,
    GError **error)
{
  gint threads, spec_threads = 0, *cpus = NULL, n_cpus = 0;
  gchar *spec, *cpus_str;
  gboolean ok;

  GST_OBJECT_LOCK (owner);
  spec = gst_nn_part_props_device_spec (props, &spec_threads, error);
  threads = props->threads;
  cpus_str = g_strdup (props->cpus);
  GST_OBJECT_UNLOCK (owner);

  ok = spec != NULL;
  if (ok && spec_threads > 0 && threads != GST_NN_PART_DEFAULT_THREADS
      && threads != spec_threads) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "property 'device' says %d threads, property 'threads' says %d",
        spec_threads, threads);
    ok = FALSE;
  }
  if (ok && !nnp_cpus_parse (cpus_str, &cpus, &n_cpus, error)) {
    g_prefix_error (error,
        "invalid value \"%s\" for property 'cpus': ", cpus_str);
    ok = FALSE;
  }
  g_free (cpus);
  g_free (cpus_str);
  g_free (spec);
  return ok;
}

NnpPart *
gst_nn_part_props_open (GstObject *owner, GstNnPartProps *props,
    const gchar *device, gint cache_size, guint *gen_out, GError **why,
    GError **error)
{
  NnpPartOptions o = { 0 };
  gchar *path, *plan_path, *nodes, *cpus_str, *spec;
  gint spec_threads = 0, *cpus = NULL, n_cpus = 0;
  NnpPlan *plan = NULL;
  NnpPart *part;

  GST_OBJECT_LOCK (owner);
  spec = device ? g_strdup (device)
                : gst_nn_part_props_device_spec (props, &spec_threads, NULL);
  o.threads = spec_threads > 0 ? spec_threads : props->threads;
  o.stage = props->stage;
  o.fallback = props->fallback;
  o.cache_size = cache_size;
  path = g_strdup (props->model);
  plan_path = g_strdup (props->plan_path);
  nodes = g_strdup (props->nodes);
  cpus_str = g_strdup (props->cpus);
  if (props->plan)
    plan = nnp_plan_copy (props->plan);
  if (gen_out)
    *gen_out = props->gen;
  GST_OBJECT_UNLOCK (owner);

  nnp_cpus_parse (cpus_str, &cpus, &n_cpus, NULL); /* checked at start */
  o.plan = plan;
  o.plan_name = plan ? "the pipeline's plan" : NULL;
  o.nodes = nodes;
  o.device = spec;
  o.cpus = cpus;
  o.n_cpus = n_cpus;
  part = nnp_part_open (path, plan_path, &o, why, error);
  g_clear_pointer (&plan, nnp_plan_free);
  g_free (cpus);
  g_free (cpus_str);
  g_free (nodes);
  g_free (plan_path);
  g_free (path);
  g_free (spec);
  return part;
}

void
gst_nn_part_props_post_error (GstElement *element, const GError *err)
{
  if (g_error_matches (err, NNP_ERROR, NNP_ERROR_IO))
    GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ, ("%s", err->message),
        (NULL));
  else if (g_error_matches (err, NNP_ERROR, NNP_ERROR_DEVICE))
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND, ("%s", err->message),
        ("set fallback=true to run on the CPU instead"));
  else if (g_error_matches (err, NNP_ERROR, NNP_ERROR_PLAN))
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("%s", err->message),
        ("properties 'model', 'plan', 'stage', 'nodes'"));
  else
    GST_ELEMENT_ERROR (element, STREAM, DECODE, ("%s", err->message), (NULL));
}
