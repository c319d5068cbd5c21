/* GStreamer nnpipe plugin: nnserversink
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnserversink
 * @title: nnserversink
 * @short_description: send results back to nnremote clients
 *
 * nnserversink takes the results of frames that nnserversrc (the one of the
 * same #GstNnServerSink:port, in this process) received and sends each to
 * the client that sent the frame, as a RESULT with the frame's sequence
 * number (docs/remote.md).  A result whose client has gone is dropped (the
 * client re-sends the frame to the server it reconnects to).  A buffer
 * without the GstNnServerMeta that nnserversrc attaches is an error.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 nnserversrc port=7000 ! nnstage model=m.onnx ! \
 *     nnserversink port=7000
 * ]|
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnserversrc.h"
#include "gstnnserver.h"
#include "gstnntensorcaps.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_server_sink_debug);
#define GST_CAT_DEFAULT gst_nn_server_sink_debug

#define DEFAULT_PORT 7000

enum
{
  PROP_0,
  PROP_PORT,
  PROP_RESULTS,
};

struct _GstNnServerSink
{
  GstBaseSink parent;

  guint port;    /* property (object lock) */
  gchar *caps;   /* current caps as a string (streaming thread) */
  gsize results; /* sent (atomic) */
};

G_DEFINE_TYPE (GstNnServerSink, gst_nn_server_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (nnserversink, "nnserversink", GST_RANK_NONE,
    GST_TYPE_NN_SERVER_SINK);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

static void
gst_nn_server_sink_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (object);

  switch (prop_id) {
    case PROP_PORT:
      GST_OBJECT_LOCK (self);
      self->port = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_nn_server_sink_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (object);

  switch (prop_id) {
    case PROP_PORT:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->port);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_RESULTS:
      g_value_set_uint64 (value,
          (guint64) g_atomic_pointer_get (&self->results));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static gboolean
gst_nn_server_sink_set_caps (GstBaseSink *sink, GstCaps *caps)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (sink);
  GstNnTensorsInfo info;
  GError *err = NULL;

  if (!gst_nn_tensors_info_from_caps (&info, caps, &err))
    goto bad_caps;
  g_free (self->caps);
  self->caps = gst_caps_to_string (caps);
  return TRUE;

  /* ERRORS */
bad_caps : {
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Invalid tensor caps."),
      ("%s", err->message));
  g_clear_error (&err);
  return FALSE;
}
}

static GstFlowReturn
gst_nn_server_sink_render (GstBaseSink *sink, GstBuffer *buffer)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (sink);
  GstNnServerMeta *meta = gst_buffer_get_nn_server_meta (buffer);
  guint port;

  if (meta == NULL)
    goto no_meta;
  if (self->caps == NULL)
    goto no_caps;
  GST_OBJECT_LOCK (self);
  port = self->port;
  GST_OBJECT_UNLOCK (self);
  if (gst_nn_server_send_result (port, meta, self->caps, buffer))
    g_atomic_pointer_add (&self->results, 1);
  return GST_FLOW_OK;

  /* ERRORS */
no_meta : {
  GST_ELEMENT_ERROR (self, STREAM, FAILED,
      ("A buffer that did not come from nnserversrc."),
      ("no GstNnServerMeta on %" GST_PTR_FORMAT, buffer));
  return GST_FLOW_ERROR;
}
no_caps : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before a buffer."),
      (NULL));
  return GST_FLOW_NOT_NEGOTIATED;
}
}

static gboolean
gst_nn_server_sink_stop (GstBaseSink *sink)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (sink);

  g_clear_pointer (&self->caps, g_free);
  return TRUE;
}

static void
gst_nn_server_sink_finalize (GObject *object)
{
  GstNnServerSink *self = GST_NN_SERVER_SINK (object);

  g_free (self->caps);
  G_OBJECT_CLASS (gst_nn_server_sink_parent_class)->finalize (object);
}

static void
gst_nn_server_sink_class_init (GstNnServerSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *base_class = GST_BASE_SINK_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_server_sink_debug, "nnserversink", 0,
      "nnpipe remote-stage server sink");

  gobject_class->set_property = gst_nn_server_sink_set_property;
  gobject_class->get_property = gst_nn_server_sink_get_property;
  gobject_class->finalize = gst_nn_server_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port",
          "Port of the nnserversrc whose clients get the results", 0, 65535,
          DEFAULT_PORT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_RESULTS,
      g_param_spec_uint64 ("results", "Results", "Results sent", 0, G_MAXUINT64,
          0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class,
      "nnpipe remote-stage server sink", "Sink/Network",
      "Sends results back to the nnremote client of each frame (with nnserversrc)",
      "nnpipe");

  base_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_server_sink_set_caps);
  base_class->render = GST_DEBUG_FUNCPTR (gst_nn_server_sink_render);
  base_class->stop = GST_DEBUG_FUNCPTR (gst_nn_server_sink_stop);
}

static void
gst_nn_server_sink_init (GstNnServerSink *self)
{
  self->port = DEFAULT_PORT;
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
  gst_base_sink_set_async_enabled (GST_BASE_SINK (self), FALSE);
}
