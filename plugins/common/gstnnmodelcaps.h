/* GStreamer nnpipe plugin: caps <-> a model's inputs and outputs, shared by
 * nnstage and nnpipeline (gstnnmodelcaps.c).  Tensor caps themselves are
 * gstnntensorcaps.h. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/model.h>
#include <nnpipe/specialize.h>
#include <nnpipe/part.h>

#include "gstnntensorcaps.h"

G_BEGIN_DECLS

/* Caps describing a model's real inputs (dims when all are static);
 * framerate: the value to set, or NULL for any.  New caps. */
GstCaps *gst_nn_model_input_caps (NnpModel *model, const GValue *framerate);

/* Match caps tensors to the model's real inputs (in order) and fill
 * shapes[] (names point into the model's graph).  FALSE + NNP_ERROR_INVALID
 * naming the input, what it expects and what it got; model_name is the
 * file name for messages. */
gboolean gst_nn_model_match_inputs (NnpModel *model, const gchar *model_name,
    const GstNnTensorsInfo *info, NnpInputShape *shapes, GError **error);

/* The structures of caps except fixed tensors the model's inputs refuse
 * (count, type, rank or a fixed dim).  obj (may be NULL) logs.  New caps;
 * caps not taken. */
GstCaps *gst_nn_model_filter_inputs (GstObject *obj, NnpModel *model,
    const gchar *model_name, GstCaps *caps);

/* Tensors info of n values with static shapes (a stage's outputs): FALSE
 * with an error naming what (e.g. "model m.onnx") when there are not 1 to
 * GST_NN_TENSORS_MAX of them or one has no static, non-empty shape. */
gboolean gst_nn_values_to_info (const gchar *what,
    const NnpValue *const *values, guint n, GstNnTensorsInfo *out,
    GError **error);

/* The answer to a caps query on the sink pad of an element that takes the
 * model's inputs: filter (upstream's offer) less the fixed tensors the
 * model refuses (gst_nn_model_filter_inputs()), intersected with caps
 * (what the element offers).  When nothing offered fits, filter
 * intersected with fallback (its template): upstream then sends its caps
 * and the CAPS event fails with an error naming what the model expects and
 * what it got (an empty answer would only make upstream fail with a bare
 * "not-negotiated").  New caps; nothing taken. */
GstCaps *gst_nn_model_answer_offer (GstObject *obj, NnpModel *model,
    const gchar *model_name, GstCaps *filter, GstCaps *caps, GstCaps *fallback);

/* For nnpipeline, which looks like a whole-model nnstage from outside:
 * the sink caps of a whole-model nnstage for the model (new caps). */
GstCaps *gst_nn_stage_model_sink_caps (NnpModel *model);
/* The answer of a whole-model nnstage's sink pad to a CAPS query with this
 * filter (NULL: none): the model's input caps, intersected with the
 * filter's structures except fixed tensors the model refuses (e.g. one
 * channel where it wants three: dynamic sizes leave dimensions out of the
 * caps, so only this check tells upstream).  When nothing offered fits,
 * the offer itself: upstream then sends it and the CAPS event fails with
 * an error naming what the model expects.  New caps; filter not taken. */
GstCaps *gst_nn_stage_model_sink_caps_filtered (NnpModel *model,
    GstCaps *filter);
/* The model input shapes that tensor caps describe (shapes[i].name points
 * into the model's graph; FALSE + an error naming what the model expects). */
gboolean gst_nn_stage_match_model_inputs (NnpModel *model,
    const GstNnTensorsInfo *info, NnpInputShape *shapes, guint *n_shapes,
    GError **error);

/* caps -> shapes -> part: the specialisation of an NnpPart for caps
 * tensors `in` (new ref).  The whole model (nnp_part_is_whole()): the caps
 * are its inputs.  Else a later part's inputs (a plan stage > 0, a node
 * range) are intermediate tensors that do not say what the model's input
 * sizes are: the part tries the caps as model inputs, then the keys the
 * stage upstream answered (upstream, may be NULL), then what NnpPart knows
 * (the plan's shapes, the model's static ones, the shapes it last used),
 * until its inputs are what the caps describe (nnp_part_find()). */
NnpPartSpec *gst_nn_part_spec_for_info (NnpPart *part,
    const GstNnTensorsInfo *in, gchar **upstream, GError **error);
/* The caps tensors of the outputs of a specialisation of part; messages
 * name the model and, unless it is the whole model, the part. */
gboolean gst_nn_part_spec_outputs_info (NnpPart *part, NnpPartSpec *spec,
    GstNnTensorsInfo *out, GError **error);

/* The shapes query: the custom query a later stage of a model (nnstage,
 * nnremote) sends upstream for the model input shapes the stage before it
 * used, and which that stage (nnstage, or nnserversrc for a served part)
 * answers.  Its structure is named "nnp-model-input-shapes" with a
 * "digest" string field (the model asked about) and, answered, a "shapes"
 * string field: the keys joined by '|'.  These functions are its only
 * readers and writers (gstnnmodelcaps.c). */
/* TRUE for a shapes query. */
gboolean gst_nn_shapes_query_is (GstQuery *query);
/* Ask upstream: the keys (nnp_shapes_key(), newest first; g_strfreev) or
 * NULL when no stage of the model with that digest answered. */
gchar **gst_nn_shapes_query_upstream (GstPad *sinkpad, const gchar *digest);
/* Answer it with the keys of part (nnp_part_get_keys()) when part runs the
 * model asked about.  TRUE when answered. */
gboolean gst_nn_shapes_query_answer (GstQuery *query, NnpPart *part);
/* Answer it with keys already joined by '|' (a served part's, known to run
 * the model asked about).  FALSE when @query is not a shapes query or
 * @joined_keys is NULL or empty. */
gboolean gst_nn_shapes_query_answer_keys (GstQuery *query,
    const gchar *joined_keys);

G_END_DECLS
