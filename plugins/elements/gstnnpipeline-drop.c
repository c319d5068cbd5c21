/* GStreamer nnpipe plugin: nnpipeline, the drop policy at its inputs
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* Late frames of live input (gstnndrop.h, properties drop and
 * max-lateness) are dropped where they enter the element, before any stage
 * or the streams' FIFO saw them: a probe on each sink ghost pad (the static
 * sink and every sink_N, each stream with its own state: its segment,
 * liveness and QoS), the QoS events coming up its src pad and the LATENCY
 * queries answered through it.  The stages inside never drop (an nnstage
 * in nnpipeline resolves drop=auto to off), so every frame that entered
 * comes out. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"

#define GST_CAT_DEFAULT gst_nn_pipeline_debug

struct _GstNnPipelineDrop
{
  GstNnPipeline *self; /* not owned: the element owns this */
  gint index;          /* the stream (sink_N), -1 for the static sink */
  GstNnDrop drop;
};

static GstPadProbeReturn
sink_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  GstNnPipelineDrop *pd = user_data;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    return gst_nn_drop_check (&pd->drop, GST_ELEMENT (pd->self), pad,
               GST_PAD_PROBE_INFO_BUFFER (info))
        ? GST_PAD_PROBE_DROP
        : GST_PAD_PROBE_OK;
  if (GST_IS_EVENT (info->data))
    gst_nn_drop_event (&pd->drop, GST_PAD_PROBE_INFO_EVENT (info));
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
src_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  GstNnPipelineDrop *pd = user_data;

  if (GST_IS_EVENT (info->data)) {
    gst_nn_drop_event (&pd->drop, GST_PAD_PROBE_INFO_EVENT (info));
  } else if (GST_IS_QUERY (info->data)
      && GST_QUERY_TYPE (GST_PAD_PROBE_INFO_QUERY (info))
          == GST_QUERY_LATENCY) {
    /* answered (the probe's pull side): what the inputs may have waited */
    gst_nn_drop_add_latency (&pd->drop, GST_OBJECT (pd->self),
        GST_PAD_PROBE_INFO_QUERY (info));
  }
  return GST_PAD_PROBE_OK;
}

void
gst_nn_pipeline_drop_attach (GstNnPipeline *self, gint index, GstPad *sink,
    GstPad *src)
{
  GstNnPipelineDrop *pd = g_new0 (GstNnPipelineDrop, 1);

  pd->self = self;
  pd->index = index;
  gst_nn_drop_init (&pd->drop);
  GST_OBJECT_LOCK (self);
  gst_nn_drop_copy_settings (&pd->drop, &self->drop_settings);
  g_ptr_array_add (self->drops, pd);
  GST_OBJECT_UNLOCK (self);
  gst_pad_add_probe (sink,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM
          | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      sink_probe, pd, NULL);
  gst_pad_add_probe (src,
      GST_PAD_PROBE_TYPE_EVENT_UPSTREAM | GST_PAD_PROBE_TYPE_QUERY_UPSTREAM
          | GST_PAD_PROBE_TYPE_PULL,
      src_probe, pd, NULL);
}

void
gst_nn_pipeline_drop_update (GstNnPipeline *self)
{
  GST_OBJECT_LOCK (self);
  for (guint i = 0; i < self->drops->len; i++) {
    GstNnPipelineDrop *pd = g_ptr_array_index (self->drops, i);

    gst_nn_drop_copy_settings (&pd->drop, &self->drop_settings);
  }
  GST_OBJECT_UNLOCK (self);
}

void
gst_nn_pipeline_drop_reset (GstNnPipeline *self)
{
  GST_OBJECT_LOCK (self);
  for (guint i = 0; i < self->drops->len; i++) {
    GstNnPipelineDrop *pd = g_ptr_array_index (self->drops, i);

    gst_nn_drop_reset (&pd->drop, TRUE);
  }
  GST_OBJECT_UNLOCK (self);
}

guint64
gst_nn_pipeline_drop_dropped (GstNnPipeline *self, gint index)
{
  guint64 n = 0;

  GST_OBJECT_LOCK (self);
  for (guint i = 0; i < self->drops->len; i++) {
    GstNnPipelineDrop *pd = g_ptr_array_index (self->drops, i);

    if (index < 0 || pd->index == index)
      n += gst_nn_drop_get_dropped (&pd->drop);
  }
  GST_OBJECT_UNLOCK (self);
  return n;
}

static void
drop_free (gpointer data)
{
  GstNnPipelineDrop *pd = data;

  gst_nn_drop_clear (&pd->drop);
  g_free (pd);
}

void
gst_nn_pipeline_drop_init (GstNnPipeline *self)
{
  gst_nn_drop_init (&self->drop_settings);
  /* an entry lives as long as the element (its probes may still run on a
   * released pad) */
  self->drops = g_ptr_array_new_with_free_func (drop_free);
}

void
gst_nn_pipeline_drop_finalize (GstNnPipeline *self)
{
  g_ptr_array_unref (self->drops);
  gst_nn_drop_clear (&self->drop_settings);
}
