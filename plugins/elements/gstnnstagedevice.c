/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* nnstage: its properties as one device spec and as the part they name
 * (nnp_part_open(): which device runs it, and the fallback to the CPU, are
 * the library's), memory:OpenCL caps.
 * start() shares an OpenCL device through GstContext. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstagedevice.h"
#include "gstnnclmemory.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_nn_stage_debug

gboolean
gst_nn_stage_spec_is_opencl (const gchar * spec)
{
  return spec != NULL && g_ascii_strncasecmp (spec, "opencl", 6) == 0
      && (spec[6] == '\0' || spec[6] == ':');
}

gchar *
gst_nn_stage_device_spec_locked (GstNnStage * self, gint * threads_out,
    GError ** error)
{
  gboolean named = (self->device_name && *self->device_name)
      || self->device_index >= 0;
  GError *err = NULL;
  gchar *spec;

  /* one grammar for every element, the CLI and plans (device.h) */
  spec = nnp_device_spec_select (self->device ? self->device : "cpu",
      self->device_index, self->device_name, threads_out, &err);
  if (spec == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "invalid value \"%s\" "
        "for property 'device'%s: %s", self->device, named ? " with "
        "device-index / device-name" : "", err->message);
    g_error_free (err);
  }
  return spec;
}

/* The memory features the stage offers on either pad (takes caps, returns
 * new caps): on OpenCL every structure in device memory first, then the
 * same in system memory; on the CPU system memory only. */
GstCaps *
gst_nn_stage_offer_features (GstNnStage * self, GstCaps * caps)
{
  GstCaps *cl, *sys;

  if (gst_caps_is_any (caps))
    return caps;
  cl = gst_caps_new_empty ();
  sys = gst_caps_new_empty ();
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);

    if (self->use_cl)
      cl = gst_caps_merge_structure_full (cl, gst_structure_copy (s),
          gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_OPENCL, NULL));
    sys = gst_caps_merge_structure (sys, gst_structure_copy (s));
  }
  gst_caps_unref (caps);
  return gst_caps_merge (cl, sys);
}

/* The part the properties name (nnp_part_open(): plan, model, digest,
 * stage or nodes, device and its fallback), on device when not NULL (the
 * one start() chose: a property write while running remakes the part on
 * it).  why (may be NULL) gets the library's fallback reason. */
NnpPart *
gst_nn_stage_open_part (GstNnStage * self, const gchar * device, GError ** why,
    GError ** error)
{
  NnpPartOptions o = { 0 };
  gchar *path, *plan_path, *nodes, *cpus_str, *spec;
  gint spec_threads = 0, *cpus = NULL, n_cpus = 0;
  NnpPlan *plan = NULL;
  NnpPart *part;

  GST_OBJECT_LOCK (self);
  spec = device ? g_strdup (device) :
      gst_nn_stage_device_spec_locked (self, &spec_threads, NULL);
  o.threads = spec_threads > 0 ? spec_threads : self->threads;
  o.stage = self->stage_index;
  o.fallback = self->fallback;
  o.cache_size = self->shape_cache;
  path = g_strdup (self->model_path);
  plan_path = g_strdup (self->plan_path);
  nodes = g_strdup (self->nodes);
  cpus_str = g_strdup (self->cpus);
  if (self->plan_object)
    plan = nnp_plan_copy (self->plan_object);
  self->part_gen = self->props_gen;
  GST_OBJECT_UNLOCK (self);

  nnp_cpus_parse (cpus_str, &cpus, &n_cpus, NULL);      /* checked at start */
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
