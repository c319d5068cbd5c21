/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnstage
 * @title: nnstage
 * @short_description: run an ONNX model on tensor buffers
 *
 * nnstage runs an ONNX model with libnnpipe on `other/tensors` buffers
 * (NNStreamer's caps, see docs/tensor-caps.md): each input buffer holds
 * one GstMemory per model input, in the model's input order, and each
 * output buffer one GstMemory per model output.
 *
 * The output caps come from shape inference on the input caps, so models
 * with dynamic sizes (text detectors, recognisers) run at whatever size is
 * negotiated, and a caps change builds a new stage.  The stages of the last
 * #GstNnStage:shape-cache (4) distinct input shapes are kept prepared (each
 * with its own arena) and reused when those shapes come back
 * (#GstNnStage:stages-built counts the stages built).  The element is
 * thin: caps -> model input shapes -> NnpPart (include/nnpipe/part.h:
 * the part of the model it runs, specialised and prepared per shape set)
 * -> NnpStage, and a buffer is mapped and run.  Caps queries offer
 * only what the model's inputs accept; a CAPS event that does not fit the
 * model fails with an error naming what the model expects and what it got.
 *
 * The model file is loaded once per process (#GstNnStage:model) and shared
 * by every nnstage that names it.  #GstNnStage:threads sets the stage's
 * intra-op threads and #GstNnStage:cpus pins them to cores.
 * #GstNnStage:plan with #GstNnStage:stage, or #GstNnStage:nodes, run one
 * part of the model (docs/pipeline.md); #GstNnStage:device runs the stage
 * on the CPU or an OpenCL device (#GstNnStage:device-index,
 * #GstNnStage:device-name, #GstNnStage:fallback; docs/opencl.md).  These
 * properties select the part the same way in nnremote: they are installed
 * and documented once, in plugins/common/gstnnpartprops.c.
 * Timestamps and metas pass through; LATENCY queries add the measured
 * processing time (median of the last buffers).
 *
 * On live input (a camera, RTSP, `videotestsrc is-live=true`: the LATENCY
 * query upstream says live) a stage that cannot keep up drops the frames
 * that waited too long instead of running them late
 * (#GstNnStage:drop, gstnndrop.h): a frame more than
 * #GstNnStage:max-lateness behind the clock when it arrives, or one a QoS
 * event from downstream said is late, is dropped before it runs and counted
 * (#GstNnStage:dropped, a QoS message on the bus), so the lag stays bounded
 * however slow the model is; the LATENCY answer then includes
 * max-lateness.  Files are never dropped from (every frame runs), nor are
 * crops of a frame (after nncrop), nor the stages inside nnpipeline or a
 * replica (nnpipeline drops at its own inputs).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=in.f32 blocksize=110592 ! \
 *     other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1,framerate=0/1 ! \
 *     nnstage model=.cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx ! filesink location=stage-out.f32
 * ]| runs the text direction classifier on raw 1x3x48x192 float32 tensors
 * (110592 bytes each) read from a file and writes their 1x2 outputs
 * (pipelines/stage.sh).
 * |[
 * ... ! nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
 *     keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_det_infer.onnx device=opencl ! nndbdecode ! \
 *     nncrop channel-order=bgr ! nnstage model=.cache/models/ch_PP-OCRv4_rec_infer.onnx device=cpu ! ...
 * ]| runs the text detector on an OpenCL device and the recogniser on the
 * CPU (pipelines/ocr-opencl.sh; pipelines/ocr.sh is the same on the CPU).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstage-private.h"
#include "gstnndevicememory.h"
#include "gstnntensormap.h"
#include "gstnnskip.h"

#include <nnpipe/stage.h>

/* The element: properties, start/stop, the per-buffer path and queries.
 * What part of the model runs, where and at which shapes, is an NnpPart of
 * libnnpipe, made in one call (nnp_part_open(), which also chooses the
 * device and applies the CPU fallback); negotiation (caps -> shapes ->
 * part -> stage) is gstnnstagecaps.c, caps <-> model inputs the shared
 * gstnnmodelcaps.c, the properties that name the part (and the part they
 * name) the shared gstnnpartprops.c.  The instance struct is in
 * gstnnstage-private.h. */

GST_DEBUG_CATEGORY (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

#define DEFAULT_SHAPE_CACHE NNP_PART_DEFAULT_CACHE_SIZE

/* after the part's properties (gstnnpartprops.h) and the run statistics'
 * (trace, busy-time, frames, debug-slowdown: gstnnrunstats.h) */
#define PROP_STATS GST_NN_PART_PROP_LAST
enum
{
  PROP_STAGES_BUILT = PROP_STATS + GST_NN_RUN_STATS_N_PROPS,
  PROP_SHAPE_CACHE,
  PROP_INFERENCE_INTERVAL,
  PROP_DROP, /* .. + GST_NN_DROP_N_PROPS - 1: gstnndrop.h's */
};

/* device memory first: a stage on a device with memory of its own prefers
 * it (see transform_caps); which feature is the device's backend's
 * (gstnndevicememory.h), so the templates take any and transform_caps and
 * accept_caps narrow it to the stage's own */
#define DEVICE_TENSORS_CAPS \
  "other/tensors(ANY), format = (string) static, " \
  "num_tensors = (int) [ 1, 16 ], framerate = (fraction) [ 0/1, MAX ]"

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (
            DEVICE_TENSORS_CAPS "; " GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (DEVICE_TENSORS_CAPS "; " GST_NN_TENSORS_CAPS_TEMPLATE));

G_DEFINE_TYPE (GstNnStage, gst_nn_stage, GST_TYPE_BASE_TRANSFORM);

GST_ELEMENT_REGISTER_DEFINE (nnstage, "nnstage", GST_RANK_NONE,
    GST_TYPE_NN_STAGE);

/* Device memory is used in place, the rest mapped and wrapped: one call
 * per side, then one run. */
static GstFlowReturn
gst_nn_stage_transform (GstBaseTransform *trans, GstBuffer *inbuf,
    GstBuffer *outbuf)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstNnTensorsMap in_map, out_map;
  GError *err = NULL;
  const gchar *what;
  gboolean ok;
  gint64 t0, t1; /* monotonic us */

  if (gst_nn_skip_is_skipped (outbuf))
    return GST_FLOW_OK; /* inference-interval: no run on this frame */
  if (G_UNLIKELY (self->stage == NULL))
    goto not_negotiated;
  if (!gst_nn_tensors_map_stage (&in_map, inbuf, &self->in_info, self->stage,
          FALSE, self->stage_on_device, GST_MAP_READ, &err))
    goto bad_input;
  if (!gst_nn_tensors_map_stage (&out_map, outbuf, &self->out_info, self->stage,
          TRUE, self->stage_on_device, GST_MAP_WRITE, &err)) {
    gst_nn_tensors_unmap (&in_map);
    what = "invalid output buffer";
    goto failed;
  }

  t0 = gst_nn_run_stats_begin (&self->stats);
  ok = nnp_stage_run (self->stage, in_map.tensors, out_map.tensors, &err);
  t1 = gst_nn_run_stats_end (&self->stats, GST_ELEMENT (self), t0, ok);
  GST_LOG_OBJECT (self,
      "ran %" GST_TIME_FORMAT " in %.2f ms (%u tensors in device memory)",
      GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)), (t1 - t0) / 1000.0,
      in_map.n_device + out_map.n_device);
  gst_nn_tensors_unmap (&out_map);
  gst_nn_tensors_unmap (&in_map);
  what = "inference failed";
  if (!ok)
    goto failed;
  return GST_FLOW_OK;

  /* ERRORS */
not_negotiated : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
      ("no stage: caps were not negotiated"));
  return GST_FLOW_NOT_NEGOTIATED;
}
bad_input : {
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("model %s: invalid input buffer", self->model_name),
      ("%s", err->message));
  g_clear_error (&err);
  return GST_FLOW_ERROR;
}
failed : {
  GST_ELEMENT_ERROR (self, STREAM, FAILED,
      ("model %s: %s", self->model_name, what), ("%s", err->message));
  g_clear_error (&err);
  return GST_FLOW_ERROR;
}
}

/* inference-interval (gstnnskip.h): a skipped frame's buffer, or the
 * base class's */
static GstFlowReturn
gst_nn_stage_prepare_output_buffer (GstBaseTransform *trans, GstBuffer *inbuf,
    GstBuffer **outbuf)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  guint interval;

  GST_OBJECT_LOCK (self);
  interval = self->inference_interval;
  GST_OBJECT_UNLOCK (self);
  if (gst_nn_skip_prepare_output (trans, interval, &self->frames_seen, inbuf,
          outbuf))
    return GST_FLOW_OK;
  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)
      ->prepare_output_buffer (trans, inbuf, outbuf);
}

static gboolean
gst_nn_stage_query (GstBaseTransform *trans, GstPadDirection direction,
    GstQuery *query)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  gboolean ret;

  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT) {
    /* from any thread, start() and stop() may be changing the device */
    NnpDevice *device = gst_nn_stage_memory_device (self);
    gchar *spec;
    gboolean answered;

    GST_OBJECT_LOCK (self);
    spec = g_strdup (self->dev_spec);
    GST_OBJECT_UNLOCK (self);
    answered = gst_nn_device_handle_context_query (GST_ELEMENT (self), query,
        device, spec);
    g_free (spec);
    g_clear_pointer (&device, nnp_device_unref);
    if (answered)
      return TRUE;
  }

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM
      && gst_nn_stage_answer_shapes_query (self, query))
    return TRUE;

  ret = GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)
            ->query (trans, direction, query);

  /* upstream picks the first caps it can give: this stage's own memory */
  if (ret && direction == GST_PAD_SINK
      && GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    NnpDevice *device = gst_nn_stage_memory_device (self);
    GstCaps *caps;

    gst_query_parse_caps_result (query, &caps);
    if (caps && device) {
      caps = gst_nn_caps_device_memory_first (gst_caps_ref (caps), device);
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
    }
    g_clear_pointer (&device, nnp_device_unref);
  }

  if (ret && direction == GST_PAD_SRC
      && GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gst_nn_run_stats_add_latency (&self->stats, GST_OBJECT (self), query);
    gst_nn_drop_add_latency (&self->drop, GST_OBJECT (self), query);
  }
  return ret;
}

/* The drop policy (gstnndrop.h) before the frame runs. */
static GstFlowReturn
gst_nn_stage_submit_input_buffer (GstBaseTransform *trans, gboolean is_discont,
    GstBuffer *input)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  if (gst_nn_drop_check (&self->drop, GST_ELEMENT (self), trans->sinkpad,
          input)) {
    gst_buffer_unref (input);
    return GST_BASE_TRANSFORM_FLOW_DROPPED;
  }
  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)
      ->submit_input_buffer (trans, is_discont, input);
}

static gboolean
gst_nn_stage_src_event (GstBaseTransform *trans, GstEvent *event)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_QOS)
    gst_nn_drop_event (&self->drop, event);
  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)
      ->src_event (trans, event);
}

/* Inside nnpipeline or a replica the container drops (at its inputs,
 * where no frame is in flight yet): auto is off here. */
static gboolean
is_contained (GstNnStage *self)
{
  GType pipeline = g_type_from_name ("GstNnPipeline");
  GType replicas = g_type_from_name ("GstNnReplicas");
  GstObject *p = gst_object_get_parent (GST_OBJECT (self));
  gboolean found = FALSE;

  while (p && !found) {
    GstObject *next;

    found = (pipeline && G_TYPE_CHECK_INSTANCE_TYPE (p, pipeline))
        || (replicas && G_TYPE_CHECK_INSTANCE_TYPE (p, replicas));
    next = gst_object_get_parent (p);
    gst_object_unref (p);
    p = next;
  }
  if (p)
    gst_object_unref (p);
  return found;
}

/* The properties are checked first (a bad value fails naming it), then
 * the library makes the part and chooses its device (falling back to the
 * CPU when told to: the element posts the library's reason), and an
 * device with memory of its own (OpenCL) is shared with the neighbours
 * through GstContext. */
static gboolean
gst_nn_stage_start (GstBaseTransform *trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpPart *part = NULL;
  NnpModel *model;
  gint stage_index, cache_size;
  GError *err = NULL, *why = NULL;

  GST_OBJECT_LOCK (self);
  self->stages_built = 0;
  cache_size = self->shape_cache;
  GST_OBJECT_UNLOCK (self);
  gst_nn_drop_reset (&self->drop, TRUE);
  gst_nn_drop_set_never (&self->drop, is_contained (self));
  if (!gst_nn_part_props_check (GST_OBJECT (self), &self->props, &err))
    goto bad_property;
  part = gst_nn_part_props_open (GST_OBJECT (self), &self->props, NULL,
      cache_size, &self->part_gen, &why, &err);
  if (part == NULL)
    goto open_failed;
  if (why) {
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND, ("%s", why->message),
        ("fallback=true"));
    g_clear_error (&why);
  }

  model = nnp_part_get_model (part);
  g_mutex_lock (&self->lock);
  gst_nn_stage_set_part_locked (self, part);
  g_mutex_unlock (&self->lock);

  /* set_context (answering our NEED_CONTEXT) reads dev_spec */
  GST_OBJECT_LOCK (self);
  g_free (self->dev_spec);
  self->dev_spec = g_strdup (nnp_part_get_device (part));
  GST_OBJECT_UNLOCK (self);
  self->use_device_memory = gst_nn_device_spec_has_memory (self->dev_spec);
  if (!self->use_device_memory)
    g_clear_pointer (&self->device, nnp_device_unref);
  else if (!gst_nn_ensure_element_device (GST_ELEMENT (self), self->dev_spec,
               &self->device, &err))
    goto no_device;
  /* published to the queries of other threads */
  g_mutex_lock (&self->lock);
  g_clear_pointer (&self->memory_device, nnp_device_unref);
  if (self->use_device_memory && self->device)
    self->memory_device = nnp_device_ref (self->device);
  g_mutex_unlock (&self->lock);

  GST_INFO_OBJECT (self, "model %s loaded (digest %s), %s on %s",
      nnp_model_get_name (model), nnp_model_get_digest (model),
      nnp_part_get_name (part), self->dev_spec);
  GST_OBJECT_LOCK (self);
  stage_index = self->props.stage;
  GST_OBJECT_UNLOCK (self);
  if (!gst_nn_run_stats_open_trace (&self->stats, GST_OBJECT (self),
          self->dev_spec, stage_index, &err))
    goto trace_failed;
  return TRUE;

  /* ERRORS */
bad_property : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message), (NULL));
  g_clear_error (&err);
  return FALSE;
}
open_failed : {
  gst_nn_part_props_post_error (GST_ELEMENT (self), err);
  g_clear_error (&err);
  return FALSE;
}
no_device : {
  GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
      ("device '%s' is not available: %s", self->dev_spec, err->message),
      (NULL));
  goto fail;
}
trace_failed : {
  GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("%s", err->message),
      ("property 'trace' or NNP_TRACE"));
  goto fail;
}
fail : {
  g_clear_error (&err);
  g_mutex_lock (&self->lock);
  gst_nn_stage_set_part_locked (self, NULL); /* the element stays in READY */
  g_mutex_unlock (&self->lock);
  return FALSE;
}
}

/* Forget all stream state (stop(), finalize()). */
static void
forget_state (GstNnStage *self)
{
  self->stage = NULL;
  g_clear_pointer (&self->spec, nnp_part_spec_unref);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
  gst_caps_replace (&self->refused_caps, NULL);
  self->stage_on_device = self->out_device = self->use_device_memory = FALSE;
  GST_OBJECT_LOCK (self);
  g_clear_pointer (&self->dev_spec, g_free);
  GST_OBJECT_UNLOCK (self);
  g_clear_pointer (&self->device, nnp_device_unref);
  g_mutex_lock (&self->lock);
  g_clear_pointer (&self->memory_device, nnp_device_unref);
  gst_nn_stage_set_part_locked (self, NULL);
  g_mutex_unlock (&self->lock);
}


static gboolean
gst_nn_stage_stop (GstBaseTransform *trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GError *err = NULL;

  if (!gst_nn_run_stats_reset (&self->stats, GST_OBJECT (self), &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err->message), (NULL));
    g_clear_error (&err);
  }
  forget_state (self);
  self->frames_seen = 0;
  return TRUE;
}

static void
gst_nn_stage_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnStage *self = GST_NN_STAGE (object);

  /* the drop policy has its own lock */
  if (gst_nn_drop_set_property (&self->drop, PROP_DROP, prop_id, value))
    return;
  GST_OBJECT_LOCK (self);
  /* the part's properties bump props.gen: set_caps makes a new part */
  if (prop_id == PROP_SHAPE_CACHE)
    self->shape_cache = g_value_get_int (value);
  else if (prop_id == PROP_INFERENCE_INTERVAL)
    self->inference_interval = g_value_get_uint (value);
  else if (!gst_nn_part_props_set (&self->props, prop_id, value)
      && !gst_nn_run_stats_set_property (&self->stats, PROP_STATS, prop_id,
          value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);

  /* shape-cache resizes the running part's cache: its stages stay */
  g_mutex_lock (&self->lock);
  if (prop_id == PROP_SHAPE_CACHE && self->part)
    nnp_part_set_cache_size (self->part, g_value_get_int (value));
  g_mutex_unlock (&self->lock);
}

static void
gst_nn_stage_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnStage *self = GST_NN_STAGE (object);

  if (gst_nn_drop_get_property (&self->drop, PROP_DROP, prop_id, value))
    return;
  GST_OBJECT_LOCK (self);
  if (prop_id == PROP_STAGES_BUILT)
    g_value_set_uint (value, self->stages_built);
  else if (prop_id == PROP_SHAPE_CACHE)
    g_value_set_int (value, self->shape_cache);
  else if (prop_id == PROP_INFERENCE_INTERVAL)
    g_value_set_uint (value, self->inference_interval);
  else if (!gst_nn_part_props_get (&self->props, prop_id, value)
      && !gst_nn_run_stats_get_property (&self->stats, PROP_STATS, prop_id,
          value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_stage_finalize (GObject *object)
{
  GstNnStage *self = GST_NN_STAGE (object);

  forget_state (self);
  gst_nn_part_props_clear (&self->props);
  g_mutex_clear (&self->lock);
  gst_nn_run_stats_clear (&self->stats);
  gst_nn_drop_clear (&self->drop);

  G_OBJECT_CLASS (gst_nn_stage_parent_class)->finalize (object);
}

/* A device shared by the application or another element. */
static void
gst_nn_stage_set_context (GstElement *element, GstContext *context)
{
  GstNnStage *self = GST_NN_STAGE (element);
  gchar *spec;

  GST_OBJECT_LOCK (self);
  spec = self->dev_spec
      ? g_strdup (self->dev_spec)
      : gst_nn_part_props_device_spec (&self->props, NULL, NULL);
  GST_OBJECT_UNLOCK (self);
  if (gst_nn_device_spec_has_memory (spec))
    gst_nn_device_handle_set_context (element, context, spec, &self->device);
  g_free (spec);

  GST_ELEMENT_CLASS (gst_nn_stage_parent_class)->set_context (element, context);
}

static void
gst_nn_stage_class_init (GstNnStageClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_stage_debug, "nnstage", 0,
      "nnpipe model stage");

  gobject_class->set_property = gst_nn_stage_set_property;
  gobject_class->get_property = gst_nn_stage_get_property;
  gobject_class->finalize = gst_nn_stage_finalize;

  gst_nn_part_props_install (gobject_class,
      GST_NN_PART_PROPS_PART | GST_NN_PART_PROPS_DEVICE, NULL);

  gst_nn_run_stats_install (gobject_class, PROP_STATS);

  /**
   * GstNnStage:stages-built:
   *
   * Stages prepared (model specialised, kernels and weights packed) since
   * the element last started: one per distinct input shape while those
   * stay among the last #GstNnStage:shape-cache negotiated (a debugging aid).
   */
  g_object_class_install_property (gobject_class, PROP_STAGES_BUILT,
      g_param_spec_uint ("stages-built", "Stages built",
          "Stages prepared since the element last started", 0, G_MAXUINT, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstNnStage:shape-cache:
   *
   * How many input shape sets keep their specialised model and prepared
   * stage (least recently used dropped first; each stage has its own
   * arena).  A dynamic model whose sizes change every buffer (a text
   * recogniser after nncrop) rebuilds no stage while its sizes stay among
   * the last shape-cache ones.  May be changed while running.
   */
  g_object_class_install_property (gobject_class, PROP_SHAPE_CACHE,
      g_param_spec_int ("shape-cache", "Shape cache",
          "Input shape sets whose prepared stages are kept (LRU)", 1, 256,
          DEFAULT_SHAPE_CACHE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnStage:inference-interval:
   *
   * Run the model on the first of every N buffers only (DL Streamer's
   * inference-interval); the others leave as empty GAP buffers with the
   * input's metas and a GstNnSkippedMeta (gstnnskip.h), which stages
   * further down pass on, decoders turn into their frame without new
   * results and nntrack fills with its tracks' predicted boxes.
   */
  g_object_class_install_property (gobject_class, PROP_INFERENCE_INTERVAL,
      g_param_spec_uint ("inference-interval", "Inference interval",
          "Run the model on one buffer in N; pass the others on as skipped frames",
          1, G_MAXINT, 1,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnStage:drop:
   *
   * The drop policy of late frames (gstnndrop.h): auto drops the frames of
   * live input that arrive more than #GstNnStage:max-lateness late (or
   * that a QoS event said are late) instead of running them, and none of
   * files; on drops late frames of any input, off none.  Also
   * #GstNnStage:max-lateness (ns, -1: QoS only) and #GstNnStage:dropped.
   */
  gst_nn_drop_install (gobject_class, PROP_DROP, "before they ran");

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Neural network stage",
      "Filter/Tensor",
      "Runs an ONNX model (or a stage of one) on tensor buffers with libnnpipe",
      "nnpipe developers");

  element_class->set_context = GST_DEBUG_FUNCPTR (gst_nn_stage_set_context);

  trans_class->start = GST_DEBUG_FUNCPTR (gst_nn_stage_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_stage_stop);
  gst_nn_stage_caps_class_init (trans_class); /* negotiation */
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_nn_stage_transform);
  trans_class->prepare_output_buffer =
      GST_DEBUG_FUNCPTR (gst_nn_stage_prepare_output_buffer);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_nn_stage_query);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR (gst_nn_stage_submit_input_buffer);
  trans_class->src_event = GST_DEBUG_FUNCPTR (gst_nn_stage_src_event);
  trans_class->passthrough_on_same_caps = FALSE;
}

static void
gst_nn_stage_init (GstNnStage *self)
{
  g_mutex_init (&self->lock);
  gst_nn_part_props_init (&self->props);
  self->shape_cache = DEFAULT_SHAPE_CACHE;
  self->inference_interval = 1;
  gst_nn_run_stats_init (&self->stats);
  gst_nn_drop_init (&self->drop);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
}
