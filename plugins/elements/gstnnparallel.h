/* GStreamer nnpipe plugin: nnparallel, K copies of a chain of elements
 * taking frames in turn, outputs in input order (parallelism over frames).
 *
 *   sink -> dispatch -> queue ! CHAIN (copy 0) -> reorder -> src
 *                    -> queue ! CHAIN (copy 1) ->
 *
 * The chain is a gst-launch description (`chain="nnstage model=a.onnx !
 * nndbdecode ! ..."`) with one unlinked sink pad and one unlinked src pad;
 * each copy is parsed from it at start.  Dispatch (first idle copy) and
 * reorder are nnpipeline's replicated stage (gstnnreplicas.h): the chain
 * must give exactly one output frame per input frame, in order. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_PARALLEL (gst_nn_parallel_get_type ())
G_DECLARE_FINAL_TYPE (GstNnParallel, gst_nn_parallel, GST, NN_PARALLEL, GstBin)

GST_ELEMENT_REGISTER_DECLARE (nnparallel);

G_END_DECLS
