/* GStreamer nnpipe plugin: caps <-> a model's inputs and outputs, shared by
 * nnstage and nnpipeline (gstnnmodelcaps.c).  Tensor caps themselves are
 * gstnntensorcaps.h. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/model.h>

#include "gstnntensorcaps.h"

G_BEGIN_DECLS

/* Caps describing a model's real inputs (dims when all are static);
 * framerate: the value to set, or NULL for any.  New caps. */
GstCaps *gst_nn_model_input_caps (NnpModel * model, const GValue * framerate);

/* Match caps tensors to the model's real inputs (in order) and fill
 * shapes[] (names point into the model's graph).  FALSE + NNP_ERROR_INVALID
 * naming the input, what it expects and what it got; model_name is the
 * file name for messages. */
gboolean gst_nn_model_match_inputs (NnpModel * model, const gchar * model_name,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, GError ** error);

/* The structures of caps except fixed tensors the model's inputs refuse
 * (count, type, rank or a fixed dim).  obj (may be NULL) logs.  New caps;
 * caps not taken. */
GstCaps *gst_nn_model_filter_inputs (GstObject * obj, NnpModel * model,
    const gchar * model_name, GstCaps * caps);

/* Tensors info of n values with static shapes (a stage's outputs): FALSE
 * with an error naming what (e.g. "model m.onnx") when there are not 1 to
 * GST_NN_TENSORS_MAX of them or one has no static, non-empty shape. */
gboolean gst_nn_values_to_info (const gchar * what, const NnpValue * const *values,
    guint n, GstNnTensorsInfo * out, GError ** error);

/* For nnpipeline, which looks like a whole-model nnstage from outside:
 * the sink caps of a whole-model nnstage for the model (new caps). */
GstCaps *gst_nn_stage_model_sink_caps (NnpModel * model);
/* The answer of a whole-model nnstage's sink pad to a CAPS query with this
 * filter (NULL: none): the model's input caps, intersected with the
 * filter's structures except fixed tensors the model refuses (e.g. one
 * channel where it wants three: dynamic sizes leave dimensions out of the
 * caps, so only this check tells upstream).  When nothing offered fits,
 * the offer itself: upstream then sends it and the CAPS event fails with
 * an error naming what the model expects.  New caps; filter not taken. */
GstCaps *gst_nn_stage_model_sink_caps_filtered (NnpModel * model,
    GstCaps * filter);
/* The model input shapes that tensor caps describe (shapes[i].name points
 * into the model's graph; FALSE + an error naming what the model expects). */
gboolean gst_nn_stage_match_model_inputs (NnpModel * model,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, guint * n_shapes,
    GError ** error);

G_END_DECLS
