/* GStreamer nnpipe plugin: nnpipeline's request pads sink_%u / src_%u
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Several streams through the same stages: the mux, FIFO and demux are in
 * gstnnstreams.c; here is what ties them to the element: the pads, a
 * stream's caps building the stages (or checked against the model), caps
 * queries before the stages exist, and the statistics probes on the
 * chain's two ends.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"
#include "gstnnbatch.h"
#include "gstnnstage.h"

#include <stdio.h>

#define GST_CAT_DEFAULT gst_nn_pipeline_debug

/* A stream's caps: the first ones build the stages; every stream's must
 * fit the model (a stream whose caps do not is refused alone). */
static gboolean
streams_accept_caps (gpointer user_data, GstCaps *caps, GError **stream_error)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  GstNnTensorsInfo info;
  guint n_shapes = 0;
  GError *err = NULL;
  gboolean ok;

  g_mutex_lock (&self->build_lock);
  if (self->model == NULL) {
    g_set_error (stream_error, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    ok = FALSE;
  } else if (!gst_nn_tensors_info_from_caps (&info, caps, stream_error)
      || !gst_nn_stage_match_model_inputs (self->model, &info, shapes,
          &n_shapes, stream_error)) {
    ok = FALSE;
  } else if (self->plan == NULL) {
    ok = gst_nn_pipeline_build_locked (self, &info, TRUE, &err)
        && gst_nn_pipeline_rebalance_built (self, &err);
  } else {
    ok = TRUE;
  }
  g_mutex_unlock (&self->build_lock);
  if (err)
    goto build_failed;
  return ok;

  /* ERRORS */
build_failed : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
      ("input caps %" GST_PTR_FORMAT, caps));
  g_clear_error (&err);
  return FALSE;
}
}

static GstCaps *
streams_query_caps (gpointer user_data, GstCaps *filter)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  GstCaps *caps = NULL;

  g_mutex_lock (&self->build_lock);
  if (self->model)
    caps = gst_nn_stage_model_sink_caps_filtered (self->model, filter);
  g_mutex_unlock (&self->build_lock);
  return caps;
}

/* batch-size and batch-timeout to the streams.  build_lock held, model
 * loaded. */
static void
streams_set_batching_locked (GstNnPipeline *self)
{
  gint ranks[GST_NN_TENSORS_MAX];
  guint n = gst_nn_batch_model_ranks (self->model, ranks);
  guint batch_size;
  guint64 batch_timeout;

  GST_OBJECT_LOCK (self);
  batch_size = self->batch_size;
  batch_timeout = self->batch_timeout;
  GST_OBJECT_UNLOCK (self);
  gst_nn_streams_set_batching (self->streams, batch_size, batch_timeout, ranks,
      n);
}

gboolean
gst_nn_pipeline_streams_start_locked (GstNnPipeline *self, GError **error)
{
  guint batch_size;

  GST_OBJECT_LOCK (self);
  batch_size = self->batch_size;
  GST_OBJECT_UNLOCK (self);
  if (!gst_nn_batch_check_model (self->model, batch_size, error))
    return FALSE;
  if (self->streams)
    streams_set_batching_locked (self);
  return TRUE;
}

GstPad *
gst_nn_pipeline_request_new_pad (GstElement *element, GstPadTemplate *templ,
    const gchar *name, const GstCaps *caps)
{
  GstNnPipeline *self = GST_NN_PIPELINE (element);
  GstPadTemplate *src_templ;
  GstPad *pad;
  guint index = 0;

  g_mutex_lock (&self->build_lock);
  if (self->streams == NULL) {
    static const GstNnStreamsHooks hooks = { streams_accept_caps,
      streams_query_caps };

    if (self->plan) {
      /* the stages are linked to sink/src: streams need them rebuilt */
      g_mutex_unlock (&self->build_lock);
      GST_WARNING_OBJECT (self,
          "request pads must be asked for before the stages are built (in NULL or READY)");
      return NULL;
    }
    self->streams = gst_nn_streams_new (GST_BIN (self), &hooks, self);
    /* asked for in PAUSED, before caps: the start's batch settings */
    if (self->model)
      streams_set_batching_locked (self);
    gst_pad_add_probe (gst_nn_streams_chain_in (self->streams),
        GST_PAD_PROBE_TYPE_BUFFER, gst_nn_pipeline_stats_sink_probe, self,
        NULL);
    gst_pad_add_probe (gst_nn_streams_chain_out (self->streams),
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM
            | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
        gst_nn_pipeline_stats_src_probe, self, NULL);
    /* rebalance=true switches the shared stages between frames there */
    gst_nn_pipeline_rebalance_watch (self,
        gst_nn_streams_chain_in (self->streams),
        gst_nn_streams_chain_out (self->streams));
  }
  if (name == NULL || sscanf (name, "sink_%u", &index) != 1) {
    /* the lowest free number */
    for (index = 0; index < G_MAXUINT; index++) {
      gchar *n = g_strdup_printf ("sink_%u", index);
      GstPad *p = gst_element_get_static_pad (element, n);

      g_free (n);
      if (p == NULL)
        break;
      gst_object_unref (p);
    }
  }
  src_templ =
      gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (element),
          "src_%u");
  pad = gst_nn_streams_request (self->streams, index, templ, src_templ);
  g_mutex_unlock (&self->build_lock);
  if (pad == NULL) {
    GST_WARNING_OBJECT (self, "pad %s exists already", name);
    return NULL;
  }
  {
    /* late frames of a live stream are dropped before its FIFO */
    gchar *src_name = g_strdup_printf ("src_%u", index);
    GstPad *src = gst_element_get_static_pad (element, src_name);

    gst_nn_pipeline_drop_attach (self, (gint) index, pad, src);
    gst_object_unref (src);
    g_free (src_name);
  }
  return pad;
}

void
gst_nn_pipeline_release_pad (GstElement *element, GstPad *pad)
{
  GstNnPipeline *self = GST_NN_PIPELINE (element);

  if (self->streams)
    gst_nn_streams_release (self->streams, pad);
}
