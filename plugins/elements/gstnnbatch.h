/* GStreamer nnpipe plugin: frames of several streams as one batch.
 *
 * nnpipeline's request pads batch frames of equal shape (batch-size,
 * batch-timeout) where the model's batch dimension (the first dim of every
 * input) is dynamic: the frames' tensors are concatenated on dim 0, the
 * model runs once, and each output tensor is cut back on dim 0 into one
 * part per frame.  These are the caps and buffer operations; the collecting
 * is in gstnnstreams.c. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/model.h>

#include "gstnntensorcaps.h"

G_BEGIN_DECLS

/* batch_size > 1 needs every (non-constant) input of the model to have a
 * dynamic first dim; FALSE with an error naming the first input whose
 * first dim is fixed. */
gboolean gst_nn_batch_check_model (NnpModel *model, guint batch_size,
    GError **error);

/* The ranks of the model's (non-constant) inputs, in order, into ranks[]
 * (at most GST_NN_TENSORS_MAX); returns how many. */
guint gst_nn_batch_model_ranks (NnpModel *model, gint *ranks);

/* Caps of n frames of `frame_caps` on dim 0 (each tensor's first dim
 * times n), tensor t first brought to rank ranks[t] (t < n_ranks: caps may
 * leave out outer 1s, "640:640:3" for 1x3x640x640).  New ref, NULL with
 * error on caps that are no tensors or do not fit the ranks. */
GstCaps *gst_nn_batch_caps (GstCaps *frame_caps, guint n, const gint *ranks,
    guint n_ranks, GError **error);

/* Caps of one of the n frames of a batch (each tensor's first dim divided
 * by n).  New ref, NULL with error when a tensor has no dims or a first
 * dim that n does not divide. */
GstCaps *gst_nn_batch_frame_caps (GstCaps *batch_caps, guint n, GError **error);

/* The frames (of caps `info`, each of its size) concatenated on dim 0:
 * one memory per tensor, frame r's rows at r * the frame's tensor size.
 * New buffer (no timestamps). */
GstBuffer *gst_nn_batch_concat (GstBuffer **frames, guint n,
    const GstNnTensorsInfo *info);

/* Frame r's rows of a batch of n (of caps `batch_info`): one memory per
 * tensor, sharing the batch's memory (no copy).  New buffer, NULL when
 * the batch buffer is smaller than its caps say. */
GstBuffer *gst_nn_batch_slice (GstBuffer *batch,
    const GstNnTensorsInfo *batch_info, guint n, guint r);

G_END_DECLS
