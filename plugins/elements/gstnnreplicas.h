/* GStreamer nnpipe plugin: one stage of a plan run as K replicas.
 *
 * An internal bin (not registered) that nnpipeline puts where a plan stage
 * has "replicas": K > 1:
 *
 *   sink -> dispatch -> queue ! nnstage (replica 0) -> reorder -> src
 *                    -> queue ! nnstage (replica 1) ->
 *
 * The dispatcher gives each frame a sequence number and hands it to the
 * least busy replica (fewest frames in flight, at most 2 each: one running,
 * one waiting; among equals round robin); the reorder pushes outputs in sequence order.  A replica
 * must give one frame out per frame in, in order.  Events do not go
 * through the replicas: sticky ones are stored on every replica's pad (sent
 * with its next frame), and the dispatcher puts each serialized event in the
 * sequence itself, so it leaves after the frames before it and before those
 * after it.  EOS is the exception: it goes through every replica (their
 * elements see the end of the stream) and leaves, in its place, once all
 * came out; a replica whose EOS comes out before the output of every frame
 * it was given is an error naming it.  Outputs carry the caps their
 * replica's stage gave.  Properties busy-time and frames (read-only) sum the
 * replicas', as nnstage's.  The replicas may be any element with one sink
 * and one src pad (nnparallel: a bin parsed from a launch description). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_REPLICAS (gst_nn_replicas_get_type ())
G_DECLARE_FINAL_TYPE (GstNnReplicas, gst_nn_replicas, GST, NN_REPLICAS, GstBin)

/* A bin of `replicas` elements, each made by make_stage (r) (a floating
 * element with pads sink and src: an nnstage configured by the caller, or a
 * bin), with pads sink and src. */
GstElement *gst_nn_replicas_new (const gchar *name, guint replicas,
    GstElement *(*make_stage) (gpointer user_data, guint r),
    gpointer user_data);

G_END_DECLS
