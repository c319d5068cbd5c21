/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* nnstage: the device it runs on (an OpenCL device shared through
 * GstContext, or the CPU), memory:OpenCL caps, the fallback to the CPU
 * when the device is missing, device memory used in place. */

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
  gchar *device = NULL, *spec;
  gint threads = 0;
  gboolean named;
  GError *err = NULL;

  /* one parser for every element, the CLI and plans (device.h) */
  if (!nnp_device_spec_parse (self->device ? self->device : "cpu", &device,
          &threads, &err)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
        "invalid value \"%s\" for property 'device': %s", self->device,
        err->message);
    g_error_free (err);
    return NULL;
  }
  named = (self->device_name && *self->device_name) || self->device_index >= 0;
  if (named && strcmp (device, "opencl") != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
        "device-index / device-name choose among OpenCL devices, but "
        "device=\"%s\"%s", self->device, gst_nn_stage_spec_is_opencl (device) ?
        " already names one" : "");
    g_free (device);
    return NULL;
  }
  if (self->device_name && *self->device_name)
    spec = g_strdup_printf ("opencl:%s", self->device_name);
  else if (self->device_index >= 0)
    spec = g_strdup_printf ("opencl:%d", self->device_index);
  else
    spec = g_strdup (device);
  g_free (device);
  if (threads_out)
    *threads_out = threads;
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

/* Device tensors for the memories of buffer that are OpenCL memory the
 * stage can use as they are: on an OpenCL stage those of its device, on a
 * CPU stage (fallback) any (the library copies them, once each).  Others
 * stay NULL and are mapped. */
guint
gst_nn_stage_device_tensors (GstNnStage * self, GstBuffer * buffer, gboolean output,
    NnpTensor ** tensors, gboolean * mask)
{
  guint n = output ? self->out_info.n_tensors : self->in_info.n_tensors;
  NnpDevice *dev = nnp_stage_get_device (self->stage);
  guint found = 0;

  memset (mask, 0, n * sizeof (gboolean));
  if (gst_buffer_n_memory (buffer) != n)
    return 0;
  for (guint i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);
    const NnpValue *v = output ? nnp_stage_get_output (self->stage, (int) i) :
        nnp_stage_get_input (self->stage, (int) i);

    if (!gst_is_nn_cl_memory (mem))
      continue;
    if (self->stage_on_cl && gst_nn_cl_memory_get_device (mem) != dev)
      continue;
    tensors[i] = gst_nn_cl_memory_get_tensor (mem, v->dtype, &v->shape,
        output);
    if (tensors[i]) {
      mask[i] = TRUE;
      found++;
    }
  }
  return found;
}

/* The device of the stage: the plan stage's, else the properties'.  An
 * OpenCL device is found or opened and shared through GstContext; when it
 * is missing, #GstNnStage:fallback runs the stage on the CPU with a
 * warning, else the element fails with an error naming the device. */
gboolean
gst_nn_stage_open_device (GstNnStage * self, gint stage_index)
{
  gchar *spec;
  gboolean fallback;
  GError *err = NULL;

  GST_OBJECT_LOCK (self);
  if (self->plan && stage_index < self->plan->n_stages
      && self->plan->stages[stage_index].device)
    spec = g_strdup (self->plan->stages[stage_index].device);
  else
    spec = gst_nn_stage_device_spec_locked (self, NULL, &err);
  fallback = self->fallback;
  GST_OBJECT_UNLOCK (self);
  if (spec == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
        (NULL));
    g_clear_error (&err);
    return FALSE;
  }

  self->use_cl = FALSE;
  if (!gst_nn_stage_spec_is_opencl (spec)) {
    g_clear_pointer (&self->cl_device, nnp_device_unref);
    g_free (self->dev_spec);
    self->dev_spec = spec;
    return TRUE;
  }

  /* set_context (answering our NEED_CONTEXT) reads it */
  g_free (self->dev_spec);
  self->dev_spec = g_strdup (spec);
  if (gst_nn_cl_ensure_element_device (GST_ELEMENT (self), spec,
          &self->cl_device, &err)) {
    self->use_cl = TRUE;
    g_free (self->dev_spec);
    self->dev_spec = spec;
    GST_INFO_OBJECT (self, "running on %s",
        nnp_device_get_name (self->cl_device));
    return TRUE;
  }

  if (fallback) {
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
        ("OpenCL device '%s' is not available, running on the CPU instead: "
            "%s", spec, err->message), ("fallback=true"));
    g_clear_error (&err);
    g_free (spec);
    g_free (self->dev_spec);
    self->dev_spec = g_strdup ("cpu");
    return TRUE;
  }
  GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
      ("OpenCL device '%s' is not available: %s", spec, err->message),
      ("set fallback=true to run on the CPU instead"));
  g_clear_error (&err);
  g_free (spec);
  return FALSE;
}
