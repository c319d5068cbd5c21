/* GStreamer nnpipe plugin: GstNnDecoder, the base class of the decoders
 * (gstnndecoder.h says what it does and what a subclass writes).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndecoder.h"
#include "gstnnmeta.h"
#include "gstnnresults.h"
#include "gstnnskip.h"
#include "gstnntensormap.h"

#include <math.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_decoder_debug);
#define GST_CAT_DEFAULT gst_nn_decoder_debug

#define DEFAULT_LOCATION NULL

enum
{
  PROP_0,
  PROP_LOCATION,
};

typedef struct
{
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  gchar *location;

  /* streaming state */
  gboolean negotiated;
  GstNnTensorsInfo info;     /* of the sink caps */
  FILE *results_file;        /* owned unless stdout */
  GstNnFrameCollect collect; /* region mode: the frame being assembled */
  GstNnFrameOut out;
} GstNnDecoderPrivate;

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_NN_FRAME_CAPS_TEMPLATE));

G_DEFINE_ABSTRACT_TYPE_WITH_PRIVATE (GstNnDecoder, gst_nn_decoder,
    GST_TYPE_ELEMENT);

#define PRIV(d) \
  ((GstNnDecoderPrivate *) gst_nn_decoder_get_instance_private (d))

gboolean
gst_nn_decoder_expect_one_float32 (GstNnDecoder *decoder,
    const GstNnTensorsInfo *info, gint min_rank, gint max_rank,
    const gchar *expected)
{
  const NnpShape *shape = &info->tensors[0].shape;
  gchar *got;

  if (info->n_tensors == 1 && info->tensors[0].dtype == NNP_DTYPE_FLOAT32
      && shape->rank >= min_rank && shape->rank <= max_rank) {
    gboolean ok = TRUE;

    for (gint i = 0; i < shape->rank - min_rank; i++)
      ok = ok && shape->dims[i] == 1;
    if (ok)
      return TRUE;
  }
  got = gst_nn_tensors_info_to_string (info);
  GST_ELEMENT_ERROR (decoder, CORE, NEGOTIATION, (NULL),
      ("expected %s, got %s", expected, got));
  g_free (got);
  return FALSE;
}

FILE *
gst_nn_decoder_get_results_file (GstNnDecoder *decoder)
{
  return PRIV (decoder)->results_file;
}

void
gst_nn_decoder_write_results (GstNnDecoder *decoder, const gchar *text)
{
  FILE *f = PRIV (decoder)->results_file;

  if (f && text && *text) {
    fputs (text, f);
    fflush (f);
  }
}

void
gst_nn_decoder_post (GstNnDecoder *decoder, GstStructure *s)
{
  gst_element_post_message (GST_ELEMENT (decoder),
      gst_message_new_element (GST_OBJECT (decoder), s));
}

void
gst_nn_frame_mapping_init (GstNnFrameMapping *m, const GstNnDecoderFrame *frame,
    gint map_width, gint map_height)
{
  GstNnTransformMeta *tm = gst_buffer_get_nn_transform_meta (frame->tensors);
  gint W = map_width, H = map_height;

  m->frame_width = GST_VIDEO_INFO_WIDTH (&frame->info);
  m->frame_height = GST_VIDEO_INFO_HEIGHT (&frame->info);
  m->offset_x = m->offset_y = 0;
  m->content_width = W;
  m->content_height = H;
  if (tm && tm->scale_x > 0 && tm->scale_y > 0) {
    /* the meta is in tensor pixels; the map may have another size */
    gdouble rx = (gdouble) W / MAX (tm->tensor_width, 1);
    gdouble ry = (gdouble) H / MAX (tm->tensor_height, 1);

    m->scale_x = tm->scale_x * rx;
    m->scale_y = tm->scale_y * ry;
    m->offset_x = tm->offset_x * rx;
    m->offset_y = tm->offset_y * ry;
    m->content_width = (gint) ceil (tm->content_width * rx);
    m->content_height = (gint) ceil (tm->content_height * ry);
  } else {
    m->scale_x = (gdouble) W / MAX (m->frame_width, 1);
    m->scale_y = (gdouble) H / MAX (m->frame_height, 1);
  }
}

void
gst_nn_frame_mapping_to_frame (const GstNnFrameMapping *m, gdouble *x,
    gdouble *y)
{
  *x = CLAMP ((*x - m->offset_x) / m->scale_x, 0, m->frame_width);
  *y = CLAMP ((*y - m->offset_y) / m->scale_y, 0, m->frame_height);
}

/* Push the frame being assembled from regions (if any). */
static GstFlowReturn
flush_regions (GstNnDecoder *self)
{
  GstNnDecoderPrivate *priv = PRIV (self);
  GstNnDecoderClass *klass = GST_NN_DECODER_GET_CLASS (self);
  GstBuffer *frame;

  frame = gst_nn_frame_collect_take (&priv->collect, GST_CAT_DEFAULT,
      GST_OBJECT (self));
  if (frame == NULL)
    return GST_FLOW_OK;
  if (klass->finish)
    klass->finish (self, frame, FALSE);
  return gst_nn_frame_out_push (&priv->out, frame, &priv->collect.info);
}

static gboolean
gst_nn_decoder_set_caps (GstElement *element, GstCaps *caps)
{
  GstNnDecoder *self = GST_NN_DECODER (element);
  GstNnDecoderPrivate *priv = PRIV (self);
  GstNnDecoderClass *klass = GST_NN_DECODER_GET_CLASS (self);
  GstNnTensorsInfo info;
  GError *err = NULL;

  if (!gst_nn_tensors_info_from_caps (&info, caps, &err)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("invalid tensor caps: %s", err->message));
    g_clear_error (&err);
    return FALSE;
  }
  if (!klass->set_info (self, &info))
    return FALSE;
  priv->info = info;
  priv->negotiated = TRUE;
  return TRUE;
}

static gboolean
gst_nn_decoder_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnDecoder *self = GST_NN_DECODER (parent);
  GstNnDecoderPrivate *priv = PRIV (self);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      flush_regions (self);
      break;
    case GST_EVENT_FLUSH_STOP:
      gst_nn_frame_collect_clear (&priv->collect);
      break;
    default:
      break;
  }
  return gst_nn_results_sink_event (&priv->out, pad, parent, event,
      gst_nn_decoder_set_caps);
}

/* Map the tensors and call decode(); takes @buf. */
static GstFlowReturn
decode_buffer (GstNnDecoder *self, GstNnDecoderFrame *f, GstBuffer *buf)
{
  GstNnDecoderPrivate *priv = PRIV (self);
  GstNnTensorsMap tm;
  GError *err = NULL;
  GstFlowReturn ret;

  if (!gst_nn_tensors_map (&tm, buf, &priv->info, NULL, GST_MAP_READ, &err)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The input buffer does not hold the caps' tensors."),
        ("%s", err->message));
    g_clear_error (&err);
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  f->tensors = buf;
  f->tensors_info = &priv->info;
  for (guint i = 0; i < priv->info.n_tensors; i++)
    f->data[i] = tm.data[i];
  ret = GST_NN_DECODER_GET_CLASS (self)->decode (self, f);
  gst_nn_tensors_unmap (&tm);
  gst_buffer_unref (buf);
  return ret;
}

static GstFlowReturn
gst_nn_decoder_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnDecoder *self = GST_NN_DECODER (parent);
  GstNnDecoderPrivate *priv = PRIV (self);
  GstNnDecoderClass *klass = GST_NN_DECODER_GET_CLASS (self);
  GstNnDecoderFrame f = { 0 };
  GstNnFrameMeta *fm;
  GstFlowReturn ret = GST_FLOW_OK;

  if (!priv->negotiated)
    goto not_negotiated;
  fm = gst_buffer_get_nn_frame_meta (buf);
  if (fm == NULL || fm->frame == NULL)
    goto no_frame;

  /* a new frame: the previous one is complete (or lost regions) */
  if (priv->collect.frame && gst_nn_frame_collect_is_new (&priv->collect, fm)) {
    ret = flush_regions (self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buf);
      return ret;
    }
  }

  f.info = fm->info;
  f.roi_id = fm->roi_id;
  f.roi_index = fm->roi_index;
  f.n_rois = fm->n_rois;
  f.whole = fm->n_rois < 0;

  if (f.whole) {
    /* the frame goes on with this buffer's timing */
    f.frame = gst_buffer_make_writable (gst_buffer_ref (fm->frame));
    GST_BUFFER_PTS (f.frame) = GST_BUFFER_PTS (buf);
    GST_BUFFER_DTS (f.frame) = GST_BUFFER_DTS (buf);
    GST_BUFFER_DURATION (f.frame) = GST_BUFFER_DURATION (buf);
    if (gst_nn_skip_is_skipped (buf)) {
      /* inference-interval: the frame goes on without new results */
      gst_buffer_add_nn_skipped_meta (f.frame);
      gst_buffer_unref (buf);
    } else {
      ret = decode_buffer (self, &f, buf);
      if (ret != GST_FLOW_OK) {
        gst_buffer_unref (f.frame);
        return ret;
      }
    }
    if (klass->finish)
      klass->finish (self, f.frame, TRUE);
    return gst_nn_frame_out_push (&priv->out, f.frame, &f.info);
  }

  if (priv->collect.frame == NULL)
    gst_nn_frame_collect_start (&priv->collect, fm);
  if (fm->n_rois == 0) {
    /* placeholder of a frame without regions */
    gst_buffer_unref (buf);
    return flush_regions (self);
  }
  f.frame = priv->collect.frame;
  f.roi = f.roi_id >= 0 ? gst_nn_find_roi (f.frame, f.roi_id) : NULL;
  ret = decode_buffer (self, &f, buf);
  if (ret != GST_FLOW_OK)
    return ret;
  GST_LOG_OBJECT (self, "region %d of %d", fm->roi_index, fm->n_rois);
  if (gst_nn_frame_collect_add (&priv->collect))
    ret = flush_regions (self);
  return ret;

  /* ERRORS */
not_negotiated:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("buffer before caps"));
  return GST_FLOW_NOT_NEGOTIATED;
no_frame:
  gst_buffer_unref (buf);
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("The tensors carry no video frame."),
      ("no GstNnFrameMeta on the input: run nnconvert with keep-frame=true (or feed nncrop's regions)"));
  return GST_FLOW_ERROR;
}

static GstStateChangeReturn
gst_nn_decoder_change_state (GstElement *element, GstStateChange transition)
{
  GstNnDecoder *self = GST_NN_DECODER (element);
  GstNnDecoderPrivate *priv = PRIV (self);
  GstNnDecoderClass *klass = GST_NN_DECODER_GET_CLASS (self);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gchar *location;
    gboolean ok;

    GST_OBJECT_LOCK (self);
    location = g_strdup (priv->location);
    GST_OBJECT_UNLOCK (self);
    ok = gst_nn_results_open_file (element, location, &priv->results_file);
    g_free (location);
    if (ok && klass->start && !klass->start (self)) {
      gst_nn_results_close_file (&priv->results_file);
      ok = FALSE;
    }
    if (!ok)
      return GST_STATE_CHANGE_FAILURE;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_decoder_parent_class)
            ->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    gst_nn_frame_collect_clear (&priv->collect);
    gst_nn_frame_out_reset (&priv->out);
    priv->negotiated = FALSE;
    gst_nn_results_close_file (&priv->results_file);
    if (klass->stop)
      klass->stop (self);
  }
  return ret;
}

static void
gst_nn_decoder_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnDecoderPrivate *priv = PRIV (GST_NN_DECODER (object));

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (priv->location);
      priv->location = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

static void
gst_nn_decoder_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnDecoderPrivate *priv = PRIV (GST_NN_DECODER (object));

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, priv->location);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

static void
gst_nn_decoder_finalize (GObject *object)
{
  GstNnDecoderPrivate *priv = PRIV (GST_NN_DECODER (object));

  g_free (priv->location);
  gst_nn_frame_collect_clear (&priv->collect);
  gst_nn_frame_out_reset (&priv->out);
  gst_nn_results_close_file (&priv->results_file);
  G_OBJECT_CLASS (gst_nn_decoder_parent_class)->finalize (object);
}

static void
gst_nn_decoder_class_init (GstNnDecoderClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_decoder_debug, "nndecoder", 0,
      "nnpipe decoder base class");

  /* register the metas up front (tests look them up by name) */
  (void) GST_NN_FRAME_META_INFO;
  (void) GST_NN_TRANSFORM_META_INFO;

  gobject_class->set_property = gst_nn_decoder_set_property;
  gobject_class->get_property = gst_nn_decoder_get_property;
  gobject_class->finalize = gst_nn_decoder_finalize;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Also write the results to this file ('-': standard output), one line per result (the element's description gives the format)",
          DEFAULT_LOCATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_nn_decoder_change_state);
}

static void
gst_nn_decoder_init (GstNnDecoder *self)
{
  GstNnDecoderPrivate *priv = PRIV (self);

  priv->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_decoder_chain));
  gst_pad_set_event_function (priv->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_decoder_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), priv->sinkpad);

  priv->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_element_add_pad (GST_ELEMENT (self), priv->srcpad);

  priv->location = g_strdup (DEFAULT_LOCATION);
  gst_nn_frame_out_init (&priv->out, priv->srcpad);
}
