/* GStreamer nnpipe plugin: nnstage, runs an ONNX model (or a stage of one)
 * on other/tensors buffers. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <nnpipe/model.h>

#include "gstnntensorcaps.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_STAGE (gst_nn_stage_get_type ())
G_DECLARE_FINAL_TYPE (GstNnStage, gst_nn_stage, GST, NN_STAGE,
    GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE (nnstage);

/* For nnpipeline, which looks like a whole-model nnstage from outside:
 * the sink caps of a whole-model nnstage for the model (new caps), and
 * the model input shapes that tensor caps describe (shapes[i].name points
 * into the model's graph; FALSE + an error naming what the model expects). */
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
gboolean gst_nn_stage_match_model_inputs (NnpModel * model,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, guint * n_shapes,
    GError ** error);

G_END_DECLS
