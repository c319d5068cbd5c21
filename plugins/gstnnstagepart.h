/* GStreamer nnpipe plugin: nnstage, the part of the model it runs and
 * shape inference (gstnnstagepart.c).  Internal to nnstage.
 *
 * Functions named _locked are called with self->lock held; the others take
 * it themselves. */
#pragma once

#include "gstnnstage-private.h"

G_BEGIN_DECLS

/* Output info for input info; graph_out (NULL: not wanted) gets a new ref
 * of the specialised graph, plan_out the resolved plan of a part (a new
 * copy, NULL for a whole model) and stage_out its stage index.  A part
 * asks upstream for the model input shapes first. */
gboolean gst_nn_stage_infer (GstNnStage * self, const GstNnTensorsInfo * in,
    GstNnTensorsInfo * out, NnpGraph ** graph_out, NnpPlan ** plan_out,
    gint * stage_out, GError ** error);

/* Answer the custom upstream query "nnp-model-input-shapes" of a later
 * nnstage of the same model.  TRUE when answered. */
gboolean gst_nn_stage_handle_shapes_query (GstNnStage * self,
    GstQuery * query);

/* Caps describing a graph's inputs (dims when all are static); framerate:
 * the value to set, or NULL for any.  New caps. */
GstCaps *gst_nn_stage_graph_input_caps (NnpGraph * graph,
    const GValue * framerate);

/* Whether tensors fit the model's declared inputs (count, types, ranks,
 * fixed dims), without shape inference. */
gboolean gst_nn_stage_inputs_match (GstNnStage * self,
    const GstNnTensorsInfo * info);

/* caps without the fixed structures the model's inputs refuse.  New caps;
 * caps not taken. */
GstCaps *gst_nn_stage_filter_model_inputs (GstNnStage * self, GstCaps * caps);

/* Check a part at the plan's shapes (or the model's static ones) so that a
 * bad plan or node list fails at start. */
gboolean gst_nn_stage_check_part_locked (GstNnStage * self, GError ** error);

/* Whether a device spec names an OpenCL device. */
gboolean gst_nn_stage_spec_is_opencl (const gchar * spec);

/* Stage k of a resolved plan on a device. */
NnpStage *gst_nn_stage_plan_stage_new (const NnpPlan * plan, gint k,
    NnpGraph * graph, const gchar * device, GError ** error);

G_END_DECLS
