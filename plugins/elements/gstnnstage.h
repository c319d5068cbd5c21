/* GStreamer nnpipe plugin: nnstage, runs an ONNX model (or a stage of one)
 * on other/tensors buffers. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <nnpipe/model.h>

#include "gstnnmodelcaps.h"
#include "gstnntensorcaps.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_STAGE (gst_nn_stage_get_type ())
G_DECLARE_FINAL_TYPE (GstNnStage, gst_nn_stage, GST, NN_STAGE, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE (nnstage);

G_END_DECLS
