/* GStreamer nnpipe plugin: several streams through one nnpipeline.
 *
 * nnpipeline's request pads sink_%u / src_%u.  Inside the bin a mux takes
 * the frames of every stream, one at a time, into the one chain of stages
 * (frames interleave: weights once per process and device) and a demux
 * after the last stage hands each output frame back to its stream: a FIFO
 * records which stream each frame in the chain belongs to (the chain keeps
 * the order: every stage, queue and replica reorder gives one output per
 * input, in order), with its timestamps, so outputs leave on src_N in the
 * stream's order with its own PTS/DTS/duration, caps, segment and EOS.  A
 * multiqueue per output keeps one stream's downstream (a sink prerolling)
 * from stalling the others.
 *
 * The element types here are internal (not registered): nnpipeline makes
 * them with g_object_new(). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _GstNnStreams GstNnStreams;

typedef struct
{
  /* CAPS of a stream: build the stages (first caps) or check the caps fit
   * the model.  TRUE: accepted.  FALSE with *stream_error set: this stream
   * cannot run (the others go on); FALSE without it: a fault of the whole
   * element, already posted as an error. */
  gboolean (
      *accept_caps) (gpointer user_data, GstCaps *caps, GError **stream_error);
  /* CAPS query of a stream's sink pad before the stages exist: the model's
   * input caps (new ref, NULL: template). */
  GstCaps *(*query_caps) (gpointer user_data, GstCaps *filter);
} GstNnStreamsHooks;

/* Made with the first request pad: adds the mux, demux and multiqueue to
 * bin (which owns them).  Owned by the caller, hooks are called with
 * user_data (not owned, must outlive the streams). */
GstNnStreams *gst_nn_streams_new (GstBin *bin, const GstNnStreamsHooks *hooks,
    gpointer user_data);
void gst_nn_streams_free (GstNnStreams *streams);

/* A new stream `index` (from the requested name "sink_%u"): the ghost pads
 * sink_N and src_N of bin, made from the templates, added to bin.  NULL
 * when the index is taken. */
GstPad *gst_nn_streams_request (GstNnStreams *streams, guint index,
    GstPadTemplate *sink_templ, GstPadTemplate *src_templ);
/* Its sink ghost pad was released: remove both ghost pads. */
void gst_nn_streams_release (GstNnStreams *streams, GstPad *sink_ghost);
/* Number of streams requested. */
guint gst_nn_streams_count (GstNnStreams *streams);

/* The stages are built: mux -> first's sink pad, last's src pad -> demux. */
gboolean gst_nn_streams_attach (GstNnStreams *streams, GstPad *first_sink,
    GstPad *last_src);
/* The chain's ends, for nnpipeline's probes (frames in and out, EOS of
 * the chain when every stream ended).  Borrowed. */
GstPad *gst_nn_streams_chain_in (GstNnStreams *streams);
GstPad *gst_nn_streams_chain_out (GstNnStreams *streams);

/* Frames of several streams as one batch (gstnnbatch.h): up to batch_size
 * frames of equal caps, waiting at most batch_timeout (ns) for the batch
 * to fill; 1: none (frames interleave).  ranks: the model inputs' ranks
 * (gst_nn_batch_model_ranks()).  Set before PAUSED. */
void gst_nn_streams_set_batching (GstNnStreams *streams, guint batch_size,
    GstClockTime batch_timeout, const gint *ranks, guint n_ranks);
/* For the probes on the chain's ends: how many frames the buffer going in
 * (called from the push) and the next one coming out hold. */
guint gst_nn_streams_in_frames (GstNnStreams *streams);
guint gst_nn_streams_out_frames (GstNnStreams *streams);

/* One stream's figures since the start (gst_nn_streams_get_stats()). */
typedef struct
{
  guint index;
  gchar *source_id; /* owned, NULL: its frames name none */
  guint64 frames_in, frames_out;
  guint64 latency_sum_us; /* over frames_out: into the stages to out */
  gint64 latency_max_us;
} GstNnStreamStats;

/* The streams not released, in index order: a new array of
 * GstNnStreamStats (its clear function frees source_id). */
GArray *gst_nn_streams_get_stats (GstNnStreams *streams);

G_END_DECLS
