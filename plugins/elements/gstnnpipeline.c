/* GStreamer nnpipe plugin: nnpipeline
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnpipeline
 * @title: nnpipeline
 * @short_description: run an ONNX model as a pipeline of stages
 *
 * nnpipeline splits a model into stages and runs them as
 * `nnstage ! queue ! nnstage ! ...` inside itself, so that frame N+1
 * enters stage 1 while frame N is in stage 2.  From outside it looks like
 * a whole-model nnstage: the same sink caps (the model's inputs) and src
 * caps (one tensor per model output).
 *
 * The split is computed when the input caps are known (or at READY ->
 * PAUSED when the model's input shapes are static): from a plan file
 * (#GstNnPipeline:plan), from manual cuts (#GstNnPipeline:cuts, topological
 * node indices or node names of the specialised graph), or automatically
 * for #GstNnPipeline:devices, minimising the slowest stage (see
 * docs/partition.md).  Each stage runs on its device with its threads,
 * pinned to cores when the plan says so (or with #GstNnPipeline:pin).
 *
 * The chosen plan is posted as an element message `nnpipeline-plan`
 * (stage count, and per stage its device, threads, node count, first and
 * last node, predicted milliseconds and the bytes crossing to the next
 * stage) and logged.  Every #GstNnPipeline:stats-interval milliseconds an
 * `nnpipeline-stats` message gives each stage's busy percentage and frames,
 * the throughput and the fill of each queue, so the bottleneck shows; at
 * EOS a last one with `final=true` sums up the run.
 *
 * When the input caps change to other sizes, the stages re-specialise the
 * model for them and check that the plan's nodes still fit.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=30 pattern=ball ! \
 *     video/x-raw,format=RGB,width=640,height=640,framerate=30/1 ! \
 *     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
 *     nnpipeline model=.cache/models/ch_PP-OCRv4_det_infer.onnx stages=2 devices=cpu:1,cpu:1 \
 *       stats-interval=1000 ! fakesink
 * ]| runs the text detector as two single-thread stages and prints the plan
 * and stats messages (pipelines/split.sh).  `pipelines/split.sh 2 cpu,opencl`
 * runs the same line with devices=cpu,opencl: the detector split between
 * the CPU and the first OpenCL device, balanced with the partitioner's
 * OpenCL costs (add fallback=true to plan on the CPU when there is no
 * OpenCL device).
 * |[
 * gst-launch-1.0 -m filesrc location=in.f32 blocksize=4915200 ! \
 *     other/tensors,format=static,num_tensors=1,types=float32,dimensions=640:640:3:1,framerate=0/1 ! \
 *     nnpipeline model=.cache/models/ch_PP-OCRv4_det_infer.onnx stages=2 devices=cpu:1,cpu:1 \
 *       stats-interval=1000 ! fakesink
 * ]| the same on raw 1x3x640x640 float32 tensors read from a file
 * (`NNP_INPUT=in.f32 pipelines/split.sh`).  With cuts=20,40 instead of
 * stages and devices the model is cut by hand into three stages starting
 * at nodes 0, 20 and 40.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"
#include "gstnnstage.h"


GST_DEBUG_CATEGORY (gst_nn_pipeline_debug);
#define GST_CAT_DEFAULT gst_nn_pipeline_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_STAGES "auto"
#define DEFAULT_DEVICES NULL
#define DEFAULT_PLAN NULL
#define DEFAULT_QUEUE_SIZE 2
#define DEFAULT_CUTS NULL
#define DEFAULT_STATS_INTERVAL 1000
#define DEFAULT_PIN FALSE
#define DEFAULT_FALLBACK FALSE
#define DEFAULT_STAGE_LOAD NULL
#define DEFAULT_TRACE NULL
#define DEFAULT_MAX_REPLICAS 1
#define DEFAULT_BATCH_SIZE 1
#define DEFAULT_BATCH_TIMEOUT (20 * GST_MSECOND)

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_STAGES,
  PROP_DEVICES,
  PROP_PLAN,
  PROP_QUEUE_SIZE,
  PROP_CUTS,
  PROP_STATS_INTERVAL,
  PROP_PIN,
  PROP_FALLBACK,
  PROP_STAGE_LOAD,
  PROP_TRACE,
  PROP_MAX_REPLICAS,
  PROP_BATCH_SIZE,
  PROP_BATCH_TIMEOUT,
  PROP_INFERENCE_INTERVAL,
  PROP_DROP, /* .. + GST_NN_DROP_N_PROPS - 1: gstnndrop.h's */
};

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

/* several streams through the same stages (gstnnpipeline-streams.c) */
static GstStaticPadTemplate stream_sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink_%u", GST_PAD_SINK, GST_PAD_REQUEST,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate stream_src_template =
    GST_STATIC_PAD_TEMPLATE ("src_%u", GST_PAD_SRC, GST_PAD_SOMETIMES,
        GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

G_DEFINE_TYPE (GstNnPipeline, gst_nn_pipeline, GST_TYPE_BIN);
GST_ELEMENT_REGISTER_DEFINE (nnpipeline, "nnpipeline", GST_RANK_NONE,
    GST_TYPE_NN_PIPELINE);

/* ------------------------------------------------------------------------ */
/* Ghost pads */

static gboolean
gst_nn_pipeline_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnPipeline *self = GST_NN_PIPELINE (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    GstNnTensorsInfo info;
    GError *err = NULL;
    gboolean ok = TRUE;

    gst_event_parse_caps (event, &caps);
    g_mutex_lock (&self->build_lock);
    if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps)) {
      /* upstream retries the refused CAPS event with every buffer: the
       * error was posted for the first one */
      g_mutex_unlock (&self->build_lock);
      GST_DEBUG_OBJECT (self, "caps refused before: %" GST_PTR_FORMAT, caps);
      gst_event_unref (event);
      return FALSE;
    }
    if (self->model == NULL) {
      ok = FALSE;
      g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    } else if (!gst_nn_tensors_info_from_caps (&info, caps, &err)) {
      ok = FALSE;
    } else if (self->plan == NULL) {
      ok = gst_nn_pipeline_build_locked (self, &info, TRUE, &err)
          && gst_nn_pipeline_rebalance_built (self, &err);
    } else {
      gchar *s = gst_nn_tensors_info_to_string (&info);

      if (g_strcmp0 (s, self->built_key) != 0)
        GST_INFO_OBJECT (self,
            "input now %s (stages built for %s): the stages re-specialise the model",
            s, self->built_key);
      g_free (s);
    }
    if (!ok)
      gst_caps_replace (&self->refused_caps, caps);
    g_mutex_unlock (&self->build_lock);
    if (!ok) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
          ("input caps %" GST_PTR_FORMAT, caps));
      g_clear_error (&err);
      gst_event_unref (event);
      return FALSE;
    }
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    GstPad *target = gst_ghost_pad_get_target (GST_GHOST_PAD (pad));

    /* no stages yet (EOS before any caps or buffer): nothing inside would
     * forward it, and downstream would wait for it forever */
    if (target == NULL)
      return gst_pad_push_event (self->srcpad, event);
    gst_object_unref (target);
  }
  return gst_pad_event_default (pad, parent, event);
}

/* Without stages yet, answer caps queries as a whole-model nnstage. */
static gboolean
gst_nn_pipeline_pad_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstNnPipeline *self = GST_NN_PIPELINE (parent);
  GstPad *target = gst_ghost_pad_get_target (GST_GHOST_PAD (pad));
  GstCaps *caps = NULL, *filter, *tmpl;
  NnpModel *model;

  if (target) {
    gst_object_unref (target);
    return gst_pad_query_default (pad, parent, query);
  }

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      gst_query_parse_caps (query, &filter);
      /* the object lock, not build_lock: queries come from streaming
       * threads, and a build holds build_lock while it starts elements */
      GST_OBJECT_LOCK (self);
      model = self->model ? nnp_model_ref (self->model) : NULL;
      GST_OBJECT_UNLOCK (self);
      if (pad == self->sinkpad && model)
        caps = gst_nn_stage_model_sink_caps_filtered (model, filter);
      g_clear_pointer (&model, nnp_model_unref);
      if (caps == NULL)
        caps = gst_pad_get_pad_template_caps (pad);
      else
        filter = NULL; /* applied */
      if (filter) {
        GstCaps *tmp =
            gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);

        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    case GST_QUERY_ACCEPT_CAPS:
      gst_query_parse_accept_caps (query, &caps);
      tmpl = gst_pad_get_pad_template_caps (pad);
      gst_query_set_accept_caps_result (query,
          gst_caps_can_intersect (tmpl, caps));
      gst_caps_unref (tmpl);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* GstElement */

static gboolean
valid_stages (const gchar *str)
{
  gchar *end = NULL;
  gint64 v;

  if (str == NULL || g_ascii_strcasecmp (str, "auto") == 0)
    return TRUE;
  v = g_ascii_strtoll (str, &end, 10);
  return end != str && *end == '\0' && v >= 1 && v <= MAX_STAGES;
}

/* The properties a start must refuse (an error naming the property and
 * the value), before anything is loaded. */
static gboolean
check_properties (GstNnPipeline *self, GError **error)
{
  gchar *stages, *devices, **items = NULL;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  stages = g_strdup (self->stages);
  devices = g_strdup (self->devices);
  GST_OBJECT_UNLOCK (self);

  if (!valid_stages (stages)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "invalid value \"%s\" for property 'stages': expected \"auto\" or a number of stages from 1 to %d",
        stages, MAX_STAGES);
    ok = FALSE;
  }
  /* the syntax of each device here, whether it is there when planning */
  if (ok && devices && *devices)
    items = g_strsplit (devices, ",", -1);
  for (guint i = 0; ok && items && items[i]; i++) {
    GError *err = NULL;
    gchar *device = NULL;
    gint replicas;

    if (!nnp_device_item_split_replicas (items[i], &device, &replicas, &err)
        || !nnp_device_spec_parse (device, NULL, NULL, &err)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "invalid value \"%s\" for property 'devices': item %u: %s", devices,
          i, err->message);
      g_error_free (err);
      ok = FALSE;
    }
    g_free (device);
  }
  g_strfreev (items);
  g_free (stages);
  g_free (devices);
  return ok && gst_nn_pipeline_rebalance_check (self, error);
}

/* self->model is written under build_lock and the object lock (the caps
 * query reads it under the object lock alone). */
static void
gst_nn_pipeline_drop_model (GstNnPipeline *self)
{
  NnpModel *model;

  GST_OBJECT_LOCK (self);
  model = g_steal_pointer (&self->model);
  GST_OBJECT_UNLOCK (self);
  if (model)
    nnp_model_unref (model);
}

static GstStateChangeReturn
gst_nn_pipeline_change_state (GstElement *element, GstStateChange transition)
{
  GstNnPipeline *self = GST_NN_PIPELINE (element);
  GstStateChangeReturn ret;
  GError *err = NULL;
  gboolean ok = TRUE;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!check_properties (self, &err))
        goto bad_property;
      gst_nn_pipeline_stats_reset (self);
      gst_nn_pipeline_drop_reset (self);
      gst_nn_pipeline_rebalance_reset (self);
      g_mutex_lock (&self->build_lock);
      ok = gst_nn_pipeline_trace_open_locked (self, &err);
      if (ok)
        ok = gst_nn_pipeline_load_model_locked (self, &err);
      if (ok)
        ok = gst_nn_pipeline_streams_start_locked (self, &err);
      /* static input shapes: build now, caps queries then reach the stages */
      if (ok)
        ok = gst_nn_pipeline_build_locked (self, NULL, FALSE, &err);
      if (ok)
        ok = gst_nn_pipeline_rebalance_built (self, &err);
      g_mutex_unlock (&self->build_lock);
      if (!ok)
        goto build_failed;
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      gst_nn_pipeline_stats_start (self);
      gst_nn_pipeline_rebalance_start (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_pipeline_parent_class)
            ->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      gst_nn_pipeline_stats_stop (self);
      gst_nn_pipeline_rebalance_stop (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      gst_nn_pipeline_stats_stop (self);
      gst_nn_pipeline_rebalance_stop (self);
      gst_nn_pipeline_rebalance_reset (self);
      g_mutex_lock (&self->build_lock);
      gst_nn_pipeline_teardown_locked (self);
      gst_nn_pipeline_drop_model (self);
      ok = gst_nn_pipeline_trace_close_locked (self, &err);
      g_mutex_unlock (&self->build_lock);
      if (!ok)
        goto trace_failed;
      break;
    default:
      break;
  }
  return ret;

  /* ERRORS */
trace_failed : {
  GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err->message), (NULL));
  g_clear_error (&err);
  return GST_STATE_CHANGE_FAILURE;
}
bad_property : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message), (NULL));
  g_clear_error (&err);
  return GST_STATE_CHANGE_FAILURE;
}
build_failed : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message), (NULL));
  g_clear_error (&err);
  g_mutex_lock (&self->build_lock);
  gst_nn_pipeline_teardown_locked (self);
  gst_nn_pipeline_drop_model (self);
  gst_nn_pipeline_trace_close_locked (self, NULL);
  g_mutex_unlock (&self->build_lock);
  return GST_STATE_CHANGE_FAILURE;
}
}

/* ------------------------------------------------------------------------ */
/* GObject */

static void
gst_nn_pipeline_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  if (gst_nn_drop_set_property (&self->drop_settings, PROP_DROP, prop_id,
          value)) {
    gst_nn_pipeline_drop_update (self); /* to every input */
    return;
  }
  if (gst_nn_pipeline_rebalance_set_property (self, prop_id, value))
    return; /* gstnnpipeline-rebalance.c's */
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_free (self->model_path);
      self->model_path = g_value_dup_string (value);
      break;
    case PROP_STAGES:
      /* checked at start (an error there names the property) */
      g_free (self->stages);
      self->stages = g_value_dup_string (value);
      break;
    case PROP_DEVICES:
      g_free (self->devices);
      self->devices = g_value_dup_string (value);
      break;
    case PROP_PLAN:
      g_free (self->plan_path);
      self->plan_path = g_value_dup_string (value);
      break;
    case PROP_QUEUE_SIZE:
      self->queue_size = g_value_get_uint (value);
      break;
    case PROP_CUTS:
      g_free (self->cuts);
      self->cuts = g_value_dup_string (value);
      break;
    case PROP_STATS_INTERVAL:
      self->stats_interval = g_value_get_uint (value);
      break;
    case PROP_PIN:
      self->pin = g_value_get_boolean (value);
      break;
    case PROP_FALLBACK:
      self->fallback = g_value_get_boolean (value);
      break;
    case PROP_STAGE_LOAD:
      g_free (self->stage_load);
      self->stage_load = g_value_dup_string (value);
      break;
    case PROP_TRACE:
      g_free (self->trace_path);
      self->trace_path = g_value_dup_string (value);
      break;
    case PROP_MAX_REPLICAS:
      self->max_replicas = g_value_get_uint (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    case PROP_BATCH_TIMEOUT:
      self->batch_timeout = g_value_get_uint64 (value);
      break;
    case PROP_INFERENCE_INTERVAL:
      self->inference_interval = g_value_get_uint (value);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_pipeline_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  if (gst_nn_pipeline_rebalance_get_property (self, prop_id, value))
    return; /* gstnnpipeline-rebalance.c's */
  if (prop_id == PROP_DROP + GST_NN_DROP_PROP_DROPPED) {
    g_value_set_uint64 (value, gst_nn_pipeline_drop_dropped (self, -1));
    return;
  }
  if (gst_nn_drop_get_property (&self->drop_settings, PROP_DROP, prop_id,
          value))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string (value, self->model_path);
      break;
    case PROP_STAGES:
      g_value_set_string (value, self->stages);
      break;
    case PROP_DEVICES:
      g_value_set_string (value, self->devices);
      break;
    case PROP_PLAN:
      g_value_set_string (value, self->plan_path);
      break;
    case PROP_QUEUE_SIZE:
      g_value_set_uint (value, self->queue_size);
      break;
    case PROP_CUTS:
      g_value_set_string (value, self->cuts);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint (value, self->stats_interval);
      break;
    case PROP_PIN:
      g_value_set_boolean (value, self->pin);
      break;
    case PROP_FALLBACK:
      g_value_set_boolean (value, self->fallback);
      break;
    case PROP_STAGE_LOAD:
      g_value_set_string (value, self->stage_load);
      break;
    case PROP_TRACE:
      g_value_set_string (value, self->trace_path);
      break;
    case PROP_MAX_REPLICAS:
      g_value_set_uint (value, self->max_replicas);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_BATCH_TIMEOUT:
      g_value_set_uint64 (value, self->batch_timeout);
      break;
    case PROP_INFERENCE_INTERVAL:
      g_value_set_uint (value, self->inference_interval);
      break;

    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_pipeline_finalize (GObject *object)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  gst_nn_pipeline_stats_stop (self);
  gst_nn_pipeline_rebalance_finalize (self);
  g_clear_pointer (&self->streams, gst_nn_streams_free);
  gst_nn_pipeline_drop_finalize (self);
  g_ptr_array_unref (self->stage_elems);
  g_ptr_array_unref (self->queues);
  g_ptr_array_unref (self->stats_stages);
  g_ptr_array_unref (self->stats_queues);
  gst_caps_replace (&self->refused_caps, NULL);
  g_clear_pointer (&self->plan, nnp_plan_free);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_free (self->model_file);
  g_free (self->built_key);
  g_free (self->model_path);
  g_free (self->stages);
  g_free (self->devices);
  g_free (self->plan_path);
  g_free (self->cuts);
  g_free (self->stage_load);
  g_free (self->trace_path);
  g_queue_clear (&self->in_times);
  g_free (self->source_id);
  g_clear_pointer (&self->stream_last, g_hash_table_unref);
  g_mutex_clear (&self->build_lock);
  g_mutex_clear (&self->stats_lock);
  g_mutex_clear (&self->post_lock);
  g_cond_clear (&self->ticker_cond);

  G_OBJECT_CLASS (gst_nn_pipeline_parent_class)->finalize (object);
}

static void
gst_nn_pipeline_class_init (GstNnPipelineClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_pipeline_debug, "nnpipeline", 0,
      "nnpipe model pipeline");

  gobject_class->set_property = gst_nn_pipeline_set_property;
  gobject_class->get_property = gst_nn_pipeline_get_property;
  gobject_class->finalize = gst_nn_pipeline_finalize;

  /**
   * GstNnPipeline:model:
   *
   * Path of the ONNX model file (or unset with #GstNnPipeline:plan: the
   * plan's model).
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model", "Path of the ONNX model file",
          DEFAULT_MODEL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stages:
   *
   * Number of stages, or "auto": as many as devices (the split may use
   * fewer when that is not slower).
   */
  g_object_class_install_property (gobject_class, PROP_STAGES,
      g_param_spec_string ("stages", "Stages",
          "Number of stages (1 to 64) or \"auto\"", DEFAULT_STAGES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:devices:
   *
   * Devices of the stages, comma-separated: "cpu" or "cpu:THREADS", and
   * "opencl", "opencl:N" or "opencl:NAME" (an OpenCL device by index or
   * name, never a thread count), e.g. "cpu:1,cpu:1" or "cpu,opencl".
   * Stage k uses item k, the last item repeats.  Parsed as `nnpipe split
   * --devices` (nnp_device_specs_parse()); OpenCL stages are planned with
   * the partitioner's OpenCL costs.  Unset: one single-thread CPU stage
   * per stage (with stages=auto, one per core).
   */
  g_object_class_install_property (gobject_class, PROP_DEVICES,
      g_param_spec_string ("devices", "Devices",
          "Devices of the stages: cpu[:THREADS] or opencl[:N|:NAME], comma-separated, e.g. \"cpu:1,cpu:1\" or \"cpu,opencl\" (unset: cpu:1 per stage)",
          DEFAULT_DEVICES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:plan:
   *
   * Path of a plan file (JSON) to load instead of computing a split.
   */
  g_object_class_install_property (gobject_class, PROP_PLAN,
      g_param_spec_string ("plan", "Plan",
          "Path of a plan file (JSON) to load instead of computing a split",
          DEFAULT_PLAN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:queue-size:
   *
   * max-size-buffers of each queue between stages.
   */
  g_object_class_install_property (gobject_class, PROP_QUEUE_SIZE,
      g_param_spec_uint ("queue-size", "Queue size",
          "Buffers each queue between stages holds at most", 1, 1024,
          DEFAULT_QUEUE_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:cuts:
   *
   * Manual split: where stages start, as topological node indices of the
   * specialised graph ("10,20": stages [0,10) [10,20) [20,n)) or node
   * names.
   */
  g_object_class_install_property (gobject_class, PROP_CUTS,
      g_param_spec_string ("cuts", "Cuts",
          "Manual split: node indices (\"10,20\") or names where stages start",
          DEFAULT_CUTS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stats-interval:
   *
   * Milliseconds between `nnpipeline-stats` messages (0: none; the final
   * one at EOS is always posted).
   */
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Stats interval",
          "Milliseconds between nnpipeline-stats messages (0 = off)", 0,
          G_MAXUINT, DEFAULT_STATS_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:pin:
   *
   * Pin the threads of stages the plan does not pin to consecutive cores
   * (stage 0 on core 0, ...).
   */
  g_object_class_install_property (gobject_class, PROP_PIN,
      g_param_spec_boolean ("pin", "Pin",
          "Pin stages the plan does not pin to consecutive cores", DEFAULT_PIN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:fallback:
   *
   * Stages on an OpenCL device that is missing or cannot run them run on
   * the CPU instead, with a warning (#GstNnStage:fallback).  A missing
   * device of #GstNnPipeline:devices or of a plan file is replaced by
   * "cpu" before planning.
   */
  g_object_class_install_property (gobject_class, PROP_FALLBACK,
      g_param_spec_boolean ("fallback", "Fallback",
          "Run OpenCL stages on the CPU (with a warning) when their device is missing or cannot run them",
          DEFAULT_FALLBACK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stage-load:
   *
   * Other work sharing each stage's core, as fractions of the whole
   * model's time, for the automatic split: "0,0.6" = the second of two
   * stages also runs something taking 0.6 of this model's time (a second
   * model downstream in the same thread, e.g. the text recogniser after
   * the detector), so it gets fewer of this model's nodes.
   */
  g_object_class_install_property (gobject_class, PROP_STAGE_LOAD,
      g_param_spec_string ("stage-load", "Stage load",
          "Automatic split: other work on each stage's core, as fractions of the model's time (\"0,0.6\")",
          DEFAULT_STAGE_LOAD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:trace:
   *
   * Record which stage ran which frame when, and the level of every queue
   * between stages, into one Chrome trace-event JSON file (Perfetto,
   * chrome://tracing, `nnpipe timeline FILE -o timeline.svg`), written when
   * the element goes back to READY.  Unset: $NNP_TRACE, if set.
   */
  g_object_class_install_property (gobject_class, PROP_TRACE,
      g_param_spec_string ("trace", "Trace",
          "Write a Chrome trace-event JSON file of the stages' runs and the queue levels (default: $NNP_TRACE)",
          DEFAULT_TRACE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:max-replicas:
   *
   * Automatic split (stages=auto): also consider running a stage as up to
   * this many replicas (copies taking frames in turn), made of neighbouring
   * identical items of #GstNnPipeline:devices ("cpu:1,cpu:1" may become one
   * stage "cpu:1*2"), and keep the best predicted throughput.  A stage is
   * also replicated when the device list says so ("cpu:1,cpu:1*2") or the
   * plan file has "replicas".  1 = never by itself.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_REPLICAS,
      g_param_spec_uint ("max-replicas", "Max replicas",
          "stages=auto: consider replicated stages of up to this many copies (1 = none)",
          1, 64, DEFAULT_MAX_REPLICAS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  /* rebalance, rebalance-threshold, -interval, -sustain, debug-slowdown */
  gst_nn_pipeline_rebalance_install_properties (gobject_class);

  /**
   * GstNnPipeline:batch-size:
   *
   * Request pads (several streams): run up to this many frames of equal
   * caps, from different streams, as one batch (concatenated on dim 0, the
   * outputs cut back per frame).  Needs a dynamic first dim on every input
   * of the model (a fixed one fails the start naming the input).  A batch
   * leaves when full, when every running stream has a frame in it, or at
   * #GstNnPipeline:batch-timeout.  1 = no batching (frames interleave).
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Request pads: frames of different streams run as one batch of up to this many (dynamic batch dim only; 1 = none)",
          1, 64, DEFAULT_BATCH_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:batch-timeout:
   *
   * Nanoseconds the first frame of a batch waits for the others; a partial
   * batch leaves then, so a slow or stopped stream never stalls the rest.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_TIMEOUT,
      g_param_spec_uint64 ("batch-timeout", "Batch timeout",
          "Nanoseconds a batch waits to fill before it runs partial", 0,
          G_MAXUINT64, DEFAULT_BATCH_TIMEOUT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  /* the first stage runs on one frame in N and the others pass its skipped
   * frames on (nnstage inference-interval, gstnnskip.h) */
  g_object_class_install_property (gobject_class, PROP_INFERENCE_INTERVAL,
      g_param_spec_uint ("inference-interval", "Inference interval",
          "Run the model on one buffer in N; pass the others on as skipped frames (not with remote stages or request pads)",
          1, G_MAXINT, 1,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:drop:
   *
   * The drop policy of late frames at every input (gstnndrop.h, as
   * nnstage's): auto drops the frames of live input that arrive more than
   * #GstNnPipeline:max-lateness late (or that a QoS event said are late)
   * before they enter the stages, and none of files; on drops late frames
   * of any input, off none.  Each sink_N has its own state; the stages
   * inside never drop, so every frame that entered comes out.
   */
  gst_nn_drop_install (gobject_class, PROP_DROP, "at the inputs, all streams");

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class,
      &stream_sink_template);
  gst_element_class_add_static_pad_template (element_class,
      &stream_src_template);
  gst_element_class_set_static_metadata (element_class,
      "Neural network pipeline", "Filter/Tensor",
      "Runs an ONNX model as a pipeline of device-bound stages",
      "nnpipe developers");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_change_state);
  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_nn_pipeline_release_pad);
}

static void
gst_nn_pipeline_init (GstNnPipeline *self)
{
  GstPadTemplate *tmpl;

  g_mutex_init (&self->build_lock);
  g_mutex_init (&self->stats_lock);
  g_mutex_init (&self->post_lock);
  g_cond_init (&self->ticker_cond);
  self->stats_stages = g_ptr_array_new_with_free_func (gst_object_unref);
  self->stats_queues = g_ptr_array_new_with_free_func (gst_object_unref);
  self->stages = g_strdup (DEFAULT_STAGES);
  self->queue_size = DEFAULT_QUEUE_SIZE;
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->batch_timeout = DEFAULT_BATCH_TIMEOUT;
  self->inference_interval = 1;
  self->stats_interval = DEFAULT_STATS_INTERVAL;
  self->pin = DEFAULT_PIN;
  self->fallback = DEFAULT_FALLBACK;
  self->max_replicas = DEFAULT_MAX_REPLICAS;
  self->stage_elems = g_ptr_array_new_with_free_func (gst_object_unref);
  self->queues = g_ptr_array_new_with_free_func (gst_object_unref);
  gst_nn_pipeline_drop_init (self);

  tmpl = gst_static_pad_template_get (&sink_template);
  self->sinkpad = gst_ghost_pad_new_no_target_from_template ("sink", tmpl);
  gst_object_unref (tmpl);
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_pad_query));
  tmpl = gst_static_pad_template_get (&src_template);
  self->srcpad = gst_ghost_pad_new_no_target_from_template ("src", tmpl);
  gst_object_unref (tmpl);
  /* first: a dropped frame never counts as one in */
  gst_nn_pipeline_drop_attach (self, -1, self->sinkpad, self->srcpad);
  gst_pad_add_probe (self->sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
      gst_nn_pipeline_stats_sink_probe, self, NULL);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_pad_query));
  gst_pad_add_probe (self->srcpad,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM
          | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      gst_nn_pipeline_stats_src_probe, self, NULL);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  gst_nn_pipeline_rebalance_init (self);
}
