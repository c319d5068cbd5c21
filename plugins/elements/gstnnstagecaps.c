/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* nnstage, negotiation: caps -> model input shapes -> the part's
 * specialisation (NnpPart, include/nnpipe/part.h) -> its stage, the caps
 * queries that tell upstream what the model takes, the errors that say why
 * caps do not fit, and allocation.  The per-buffer path is gstnnstage.c. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstage-private.h"
#include "gstnndevicememory.h"
#include "gstnnmodelcaps.h"
#include "gstnntensorpool.h"

#define GST_CAT_DEFAULT gst_nn_stage_debug

/* Run part (taken) from now on: start(), a property written while
 * running; or none (NULL): stop(), a failed start().  Lock held. */
void
gst_nn_stage_set_part_locked (GstNnStage *self, NnpPart *part)
{
  g_clear_pointer (&self->part, nnp_part_free);
  g_clear_pointer (&self->model_name, g_free);
  self->part = part;
  if (part)
    self->model_name =
        g_path_get_basename (nnp_model_get_name (nnp_part_get_model (part)));
}

/* Answer the shapes query of a later nnstage of the same model. */
gboolean
gst_nn_stage_answer_shapes_query (GstNnStage *self, GstQuery *query)
{
  gboolean ret;

  g_mutex_lock (&self->lock);
  ret = self->part && gst_nn_shapes_query_answer (query, self->part);
  g_mutex_unlock (&self->lock);
  return ret;
}

/* The question of infer_info(): caps tensors, the keys upstream used */
typedef struct
{
  const GstNnTensorsInfo *in;
  gchar **upstream;
} Question;

/* NnpPartAnswerFunc: caps -> shapes -> specialisation (the library logs
 * the answer) */
static NnpPartSpec *
answer (NnpPart *part, gpointer data, GError **error)
{
  Question *q = data;

  return gst_nn_part_spec_for_info (part, q->in, q->upstream, error);
}

/* Caps tensors -> the specialisation (spec_out, may be NULL: new ref) and
 * the output tensors.  The part remembers the last answer
 * (nnp_part_answer()): caps queries ask the same again and again.  A later
 * part asks upstream which shapes it used, outside the lock. */
static gboolean
infer_info (GstNnStage *self, const GstNnTensorsInfo *in, GstNnTensorsInfo *out,
    NnpPartSpec **spec_out, GError **error)
{
  gchar *question = gst_nn_tensors_info_to_string (in), *digest;
  Question q = { in, NULL };
  NnpPartSpec *spec = NULL;
  gboolean ok = FALSE;

  g_mutex_lock (&self->lock);
  if (self->part && !nnp_part_is_whole (self->part)
      && !nnp_part_knows (self->part, question)) {
    digest = g_strdup (nnp_model_get_digest (nnp_part_get_model (self->part)));
    g_mutex_unlock (&self->lock);
    q.upstream =
        gst_nn_shapes_query_upstream (GST_BASE_TRANSFORM_SINK_PAD (self),
            digest);
    g_free (digest);
    g_mutex_lock (&self->lock);
  }
  if (self->part == NULL)
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
  else if ((spec = nnp_part_answer (self->part, question, answer, &q, error)))
    ok = gst_nn_part_spec_outputs_info (self->part, spec, out, error);
  g_mutex_unlock (&self->lock);
  out->fps_n = in->fps_n;
  out->fps_d = in->fps_d;
  if (ok && spec_out)
    *spec_out = g_steal_pointer (&spec);
  g_clear_pointer (&spec, nnp_part_spec_unref);
  g_strfreev (q.upstream);
  g_free (question);
  return ok;
}

/* The model, its name and whether the part takes other tensors than the
 * model's inputs (a later part), as start() left them (new refs). */
static NnpModel *
get_model (GstNnStage *self, gchar **name, gboolean *later)
{
  NnpModel *model;

  g_mutex_lock (&self->lock);
  model = self->part ? nnp_model_ref (nnp_part_get_model (self->part)) : NULL;
  *name = g_strdup (self->model_name);
  *later = self->part && !nnp_part_takes_model_inputs (self->part);
  g_mutex_unlock (&self->lock);
  return model;
}

NnpDevice *
gst_nn_stage_memory_device (GstNnStage *self)
{
  NnpDevice *device;

  g_mutex_lock (&self->lock);
  device = self->memory_device ? nnp_device_ref (self->memory_device) : NULL;
  g_mutex_unlock (&self->lock);
  return device;
}

/* Output caps for one input structure: exact when it is fixed, else any
 * tensors.  NULL when fixed caps do not fit the model's declared inputs
 * (count, types, ranks, fixed dims) and the part takes them.  Fixed caps
 * that fit them but fail shape inference (a detector's size that is not a
 * multiple of 32) give any tensors: the CAPS event then fails with an
 * error saying why, where a refusal here would only make upstream report
 * "not-negotiated". */
static GstStructure *
output_structure (GstNnStage *self, NnpModel *model, const gchar *name,
    gboolean later, const GstStructure *s)
{
  const GValue *framerate = gst_structure_get_value (s, "framerate");
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  GstNnTensorsInfo in, out;
  GstStructure *ret;
  GError *err = NULL;

  if (gst_nn_tensors_info_from_structure (&in, s, NULL)) {
    if (infer_info (self, &in, &out, NULL, &err)) {
      ret = gst_nn_tensors_info_to_structure (&out);
    } else if (!later
        && !gst_nn_model_match_inputs (model, name, &in, shapes, NULL)) {
      GST_DEBUG_OBJECT (self, "%s", err->message);
      g_clear_error (&err);
      return NULL;
    } else {
      GST_DEBUG_OBJECT (self, "%s (left to the CAPS event)", err->message);
      g_clear_error (&err);
      ret = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE, "format",
          G_TYPE_STRING, "static", NULL);
    }
  } else {
    ret = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE, "format", G_TYPE_STRING,
        "static", NULL);
  }
  if (framerate)
    gst_structure_set_value (ret, "framerate", framerate);
  else
    gst_structure_remove_field (ret, "framerate");
  return ret;
}

/* The caps of the other pad: before start() anything the templates allow;
 * sink -> src the outputs of each structure (shape inference); src -> sink
 * the model's inputs (a whole model, a first part) or any tensors (a later
 * part: its inputs are checked on the CAPS event); on a stage whose device
 * has memory of its own each also in that memory, first. */
static GstCaps *
gst_nn_stage_transform_caps (GstBaseTransform *trans, GstPadDirection direction,
    GstCaps *caps, GstCaps *filter)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstPad *sinkpad = GST_BASE_TRANSFORM_SINK_PAD (trans);
  GstCaps *ret;
  gchar *name;
  gboolean later;
  NnpModel *model = get_model (self, &name, &later);
  /* start() and stop() of the main thread may be changing it */
  NnpDevice *memory_device = gst_nn_stage_memory_device (self);

  if (!model || (later && direction == GST_PAD_SRC)) {
    ret = gst_pad_get_pad_template_caps (direction == GST_PAD_SINK
            ? GST_BASE_TRANSFORM_SRC_PAD (trans)
            : sinkpad);
  } else if (direction == GST_PAD_SINK) {
    ret = gst_caps_new_empty ();
    for (guint i = 0; i < gst_caps_get_size (caps); i++) {
      GstStructure *s = output_structure (self, model, name, later,
          gst_caps_get_structure (caps, i));

      if (s)
        ret = gst_caps_merge_structure (ret, s);
    }
    /* none fits the model: any tensors, so that upstream sends its caps
     * and the CAPS event fails with an error naming what the model expects
     * and what it got (an empty answer would only make upstream fail with
     * a bare "not-negotiated") */
    if (gst_caps_is_empty (ret) && !gst_caps_is_empty (caps)) {
      gst_caps_unref (ret);
      ret = gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SRC_PAD (trans));
    }
  } else {
    ret = gst_caps_new_empty ();
    for (guint i = 0; i < gst_caps_get_size (caps); i++)
      ret = gst_caps_merge (ret,
          gst_nn_model_input_caps (model,
              gst_structure_get_value (gst_caps_get_structure (caps, i),
                  "framerate")));
    if (gst_caps_get_size (caps) == 0 && gst_caps_is_any (caps))
      ret = gst_caps_merge (ret, gst_nn_model_input_caps (model, NULL));
  }

  ret = gst_nn_caps_offer_device_memory (ret, memory_device);

  /* upstream offers candidates: drop fixed ones the model cannot take
   * (e.g. 1 channel for a model that wants 3), which the caps above cannot
   * say when the model's sizes are dynamic */
  if (filter && model && !later && direction == GST_PAD_SRC) {
    /* the template's memories narrowed to what this stage takes */
    GstCaps *tmpl =
                gst_nn_caps_offer_device_memory (gst_pad_get_pad_template_caps (
                                                     sinkpad),
                    memory_device),
            *tmp;

    tmp = gst_nn_model_answer_offer (GST_OBJECT (self), model, name, filter,
        ret, tmpl);
    gst_caps_unref (tmpl);
    gst_caps_take (&ret, tmp);
  } else if (filter) {
    gst_caps_take (&ret,
        gst_caps_intersect_full (filter, ret, GST_CAPS_INTERSECT_FIRST));
  }

  GST_DEBUG_OBJECT (self, "%s: %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink->src" : "src->sink", caps, ret);
  g_clear_pointer (&model, nnp_model_unref);
  g_clear_pointer (&memory_device, nnp_device_unref);
  g_free (name);
  return ret;
}

static GstCaps *
gst_nn_stage_fixate_caps (GstBaseTransform *trans, GstPadDirection direction,
    GstCaps *caps, GstCaps *othercaps)
{
  GstCaps *ret = gst_nn_tensors_caps_fixate (othercaps);

  GST_DEBUG_OBJECT (trans, "fixated to %" GST_PTR_FORMAT, ret);
  return ret;
}

static gboolean
gst_nn_stage_get_unit_size (GstBaseTransform *trans, GstCaps *caps, gsize *size)
{
  GstNnTensorsInfo info;

  if (!gst_nn_tensors_info_from_caps (&info, caps, NULL))
    return FALSE;
  *size = gst_nn_tensors_info_get_size (&info);
  return *size > 0;
}

/* Accept any tensor caps our template allows: whether they fit the model is
 * checked on the CAPS event, which fails with an error naming what the
 * model expects and what it got (an accept-caps refusal would only say
 * "not negotiated").  Upstream elements that can choose learn the model's
 * inputs from caps queries (transform_caps). */
static gboolean
gst_nn_stage_accept_caps (GstBaseTransform *trans, GstPadDirection direction,
    GstCaps *caps)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstCaps *tmpl;
  gboolean ret;

  if (direction != GST_PAD_SINK)
    return GST_NN_STAGE_PARENT_CLASS (trans)->accept_caps (trans, direction,
        caps);

  tmpl = gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SINK_PAD (trans));
  ret = gst_caps_can_intersect (tmpl, caps);
  gst_caps_unref (tmpl);
  /* system memory, or the memory of the stage's own device */
  for (guint i = 0; ret && i < gst_caps_get_size (caps); i++)
    if (!gst_nn_caps_is_system_memory (caps, i)
        && !(self->use_device_memory
            && gst_nn_caps_is_device_memory (caps, i, self->device)))
      ret = FALSE;
  GST_DEBUG_OBJECT (trans, "accept caps %" GST_PTR_FORMAT ": %d", caps, ret);
  return ret;
}

/* Post the reason fixed input caps do not fit the model, before the base
 * class refuses them (it only says "not negotiated").  Upstream sends the
 * refused CAPS event again with every buffer it tries: the error is posted
 * for the first one only. */
static gboolean
gst_nn_stage_sink_event (GstBaseTransform *trans, GstEvent *event)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  /* the drop policy follows the segment and new streams */
  gst_nn_drop_event (&self->drop, event);
  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    GstNnTensorsInfo in, out;
    GError *err = NULL;
    gboolean ok;

    gst_event_parse_caps (event, &caps);
    if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps)) {
      GST_DEBUG_OBJECT (self,
          "caps refused before (error posted then): %" GST_PTR_FORMAT, caps);
      gst_event_unref (event);
      return FALSE;
    }
    ok = gst_nn_tensors_info_from_caps (&in, caps, &err)
        && infer_info (self, &in, &out, NULL, &err);
    if (!ok) {
      gchar *str = gst_caps_to_string (caps);

      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
          ("input caps %s", str));
      gst_caps_replace (&self->refused_caps, caps);
      g_free (str);
      g_clear_error (&err);
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_NN_STAGE_PARENT_CLASS (trans)->sink_event (trans, event);
}

static gboolean
gst_nn_stage_set_caps (GstBaseTransform *trans, GstCaps *incaps,
    GstCaps *outcaps)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstNnTensorsInfo in, out, want;
  NnpPartSpec *spec = NULL;
  NnpStage *stage;
  GError *err = NULL, *why = NULL;
  gboolean stale;
  gint cache_size;
  guint built;

  if (!gst_nn_tensors_info_from_caps (&in, incaps, &err)
      || !gst_nn_tensors_info_from_caps (&out, outcaps, &err))
    goto refused;
  self->out_device = self->use_device_memory
      && gst_nn_caps_is_device_memory (outcaps, 0, self->device);

  /* a property changed since the part was made: a new part, on the
   * device start() chose */
  GST_OBJECT_LOCK (self);
  stale = self->part_gen != self->props.gen;
  cache_size = self->shape_cache;
  GST_OBJECT_UNLOCK (self);
  if (self->part && stale) {
    NnpPart *part = gst_nn_part_props_open (GST_OBJECT (self), &self->props,
        self->dev_spec, cache_size, &self->part_gen, NULL, &err);

    if (part == NULL)
      goto refused;
    g_mutex_lock (&self->lock);
    gst_nn_stage_set_part_locked (self, part);
    g_mutex_unlock (&self->lock);
    g_clear_pointer (&self->spec, nnp_part_spec_unref);
    self->stage = NULL;
  }

  if (!infer_info (self, &in, &want, &spec, &err))
    goto refused;
  if (!gst_nn_tensors_info_is_equal (&want, &out)) {
    gchar *w = gst_nn_tensors_info_to_string (&want);
    gchar *g = gst_nn_tensors_info_to_string (&out);

    g_set_error (&err, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: outputs are %s, output caps say %s", self->model_name, w, g);
    g_free (w);
    g_free (g);
    goto refused;
  }

  built = nnp_part_get_n_stages_built (self->part);
  stage = nnp_part_prepare (self->part, spec, &why, &err);
  if (why) {
    GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
        ("model %s: %s", self->model_name, why->message), ("fallback=true"));
    g_clear_error (&why);
  }
  if (stage == NULL)
    goto no_stage;

  g_clear_pointer (&self->spec, nnp_part_spec_unref);
  self->spec = spec;
  self->stage = stage;
  self->stage_on_device =
      self->use_device_memory && !nnp_part_spec_fell_back (spec);
  self->in_info = in;
  self->out_info = out;
  if (nnp_part_get_n_stages_built (self->part) == built) {
    GST_DEBUG_OBJECT (self, "shapes seen before, reusing their stage");
    return TRUE;
  }
  GST_OBJECT_LOCK (self);
  self->stages_built++; /* the library logs the stage it built */
  GST_OBJECT_UNLOCK (self);
  GST_INFO_OBJECT (self, "model %s, %s: new stage for %s, output in %s memory",
      self->model_name, nnp_part_get_name (self->part),
      nnp_part_spec_get_key (spec), self->out_device ? "device" : "host");
  return TRUE;

  /* ERRORS (each posted once: sink_event refuses these caps from now on) */
refused : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
      ("input caps %" GST_PTR_FORMAT ", output caps %" GST_PTR_FORMAT, incaps,
          outcaps));
  gst_caps_replace (&self->refused_caps, incaps);
  g_clear_error (&err);
  g_clear_pointer (&spec, nnp_part_spec_unref);
  return FALSE;
}
no_stage : {
  if (self->use_device_memory)
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("model %s: could not prepare the stage on %s device '%s' (%s): %s",
            self->model_name, gst_nn_device_kind_name (self->device),
            self->dev_spec, nnp_device_get_name (self->device), err->message),
        ("%s (set fallback=true to run on the CPU instead)", err->message));
  else
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("model %s: could not prepare a %s stage: %s", self->model_name,
            self->dev_spec, err->message),
        ("%s", err->message));
  gst_caps_replace (&self->refused_caps, incaps);
  g_clear_error (&err);
  nnp_part_spec_unref (spec);
  return FALSE;
}
}

/* Our pool, whatever downstream offers; in device memory (the device's caps
 * feature, memory:OpenCL) an allocator of the stage's device. */
static gboolean
gst_nn_stage_decide_allocation (GstBaseTransform *trans, GstQuery *query)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  if ((self->out_device && self->device == NULL)
      || !gst_nn_tensor_pool_decide_allocation (query,
          self->out_device ? self->device : NULL))
    return FALSE;
  return GST_NN_STAGE_PARENT_CLASS (trans)->decide_allocation (trans, query);
}

void
gst_nn_stage_caps_class_init (GstBaseTransformClass *trans_class)
{
  trans_class->transform_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_transform_caps);
  trans_class->fixate_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_fixate_caps);
  trans_class->get_unit_size = GST_DEBUG_FUNCPTR (gst_nn_stage_get_unit_size);
  trans_class->accept_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_accept_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_nn_stage_sink_event);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_set_caps);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_nn_stage_decide_allocation);
}
