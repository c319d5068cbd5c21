/* GStreamer nnpipe plugin: nnstreams private header.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * The state shared by gstnnstreams.c (request pads, the mux and its
 * batching) and gstnnstreams-out.c (the demux: the FIFO of frames and
 * events delivered to src_N).  Not installed.
 */

#ifndef __GST_NN_STREAMS_PRIVATE_H__
#define __GST_NN_STREAMS_PRIVATE_H__

#include "gstnnstreams.h"
#include "gstnnbatch.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_streams_debug);

/* One stream: a sink_N / src_N pair. */
typedef struct
{
  guint index;
  GstPad *sink_ghost, *src_ghost; /* on the bin (owned by it) */
  GstPad *mux_sink;               /* mux's sink pad (owned by the mux) */
  GstPad *demux_src;              /* demux's src pad (owned by the demux) */
  GstPad *mq_sink;                /* multiqueue request pad (ref) */

  /* lock */
  GstCaps *in_caps;  /* accepted caps (ref), NULL before */
  gboolean ended;    /* EOS received or the stream failed */
  gboolean released; /* lock and out_lock to write */
  guint64 frames_in, frames_out;
  gchar *source_id;       /* of its last frame (GstNnSourceMeta) */
  guint64 latency_sum_us; /* frames out: into the mux to out of the */
  gint64 latency_max_us;  /* demux, summed and the largest */

  /* batch_lock */
  gboolean flushing; /* between flush-start and flush-stop */

  /* out_lock */
  GstCaps *out_caps; /* caps last pushed on demux_src (ref) */
  GQueue held;       /* sticky events waiting for the first caps */
} Stream;

/* A FIFO entry: a frame in the chain or an event behind it. */
typedef struct
{
  Stream *stream;
  GstEvent *event; /* owned; NULL: a frame */
  GstClockTime pts, dts, duration;
  guint64 offset, offset_end;
  gint64 t_in;              /* monotonic us it went into the chain */
  GstBuffer *metas;         /* owned: an empty buffer holding the frame's metas
                     * (frame, transform, ROI, custom...), put back on its
                     * output; the frame enters the stages without them, so
                     * a lone frame and a part of a batch come out alike
                     * (a stage copies only untagged metas, a batch none) */
  guint batch;              /* frames in the chain buffer this one went
                                 * in with (1: alone); the entries of one
                                 * batch are neighbours in the FIFO */
  gboolean drop;            /* flushed: the frame is dropped */
  gboolean after_chain_eos; /* the last stream's EOS: waits for the
                                 * stages' EOS (the final statistics) */
} Entry;

struct _GstNnStreams
{
  GstBin *bin; /* not owned */
  GstNnStreamsHooks hooks;
  gpointer user_data;
  GstElement *mux, *demux, *mq; /* refs (the bin owns them too) */
  GstPad *mux_src, *demux_sink; /* borrowed from mux, demux */

  GMutex lock;            /* fifo, streams, the flags of Stream */
  GMutex in_lock;         /* pushes into the chain, chain_* below */
  GMutex out_lock;        /* deliveries to the streams' outputs */
  GQueue fifo;            /* Entry* */
  GPtrArray *streams;     /* Stream*, owned */
  gboolean chain_eos_out; /* the stages' EOS reached the demux */

  /* in_lock */
  gboolean chain_started;
  GstCaps *chain_in_caps; /* ref */
  gboolean chain_eos;
  guint in_frames; /* frames in the buffer being pushed */
  /* out_lock */
  GstCaps *chain_out_caps; /* ref: caps out of the last stage */
  GstCaps *frame_out_caps; /* ref: one frame's part of them, for */
  guint frame_out_n;       /* batches of this many frames */

  /* batching (gstnnbatch.h): frames of several streams wait in `pending`
   * until it holds batch_size frames, a frame of every stream still
   * running, or its deadline passed; the thread that sees that pushes it.
   * Each frame's streaming thread waits until its batch went through the
   * stages' first element, so a stream has one frame in a batch at most
   * and its events stay behind its frame. */
  GMutex batch_lock; /* the fields below, Stream.flushing */
  GCond batch_cond;  /* a batch was pushed, a flush, stopping */
  guint batch_size;  /* 1: no batching */
  GstClockTime batch_timeout;
  gint batch_ranks[GST_NN_TENSORS_MAX]; /* the model inputs' ranks */
  guint n_batch_ranks;
  struct _Batch *pending; /* owned ref, NULL when no frame waits */
  gboolean stopping;      /* PAUSED -> READY: waiting frames leave */
};

/* Frames of equal caps waiting to go into the chain as one buffer. */
typedef struct
{
  Stream *stream;
  GstBuffer *buf; /* owned, NULL once taken */
} Pending;

/* Shared by the threads whose frames it holds.  The count is a plain
 * atomic (not GLib's rc box, whose count lives inside libglib where
 * ThreadSanitizer cannot see it order the last thread's free). */
typedef struct _Batch
{
  gint ref_count;    /* batch_ref() / batch_unref() */
  GstCaps *caps;     /* ref: every frame's caps */
  GArray *frames;    /* Pending */
  gint64 deadline;   /* monotonic us: it leaves then, full or not */
  gboolean done;     /* pushed (batch_lock) */
  GstFlowReturn ret; /* of the push */
} Batch;

/* ------------------------------------------------------------------------ */
/* The two internal elements */

#define GST_TYPE_NN_STREAM_MUX (gst_nn_stream_mux_get_type ())
G_DECLARE_FINAL_TYPE (GstNnStreamMux, gst_nn_stream_mux, GST, NN_STREAM_MUX,
    GstElement);
#define GST_TYPE_NN_STREAM_DEMUX (gst_nn_stream_demux_get_type ())
G_DECLARE_FINAL_TYPE (GstNnStreamDemux, gst_nn_stream_demux, GST,
    NN_STREAM_DEMUX, GstElement);

struct _GstNnStreamMux
{
  GstElement parent;
  GstNnStreams *streams; /* not owned */
};

struct _GstNnStreamDemux
{
  GstElement parent;
  GstNnStreams *streams; /* not owned */
};

/* gstnnstreams.c */
void gst_nn_streams_entry_free (Entry *e);

/* gstnnstreams-out.c: the output side (out_lock held where said) */
void gst_nn_streams_drain_events (GstNnStreams *sn);
GstCaps *gst_nn_streams_template_caps (const gchar *str, GstCaps *filter);
GstFlowReturn gst_nn_streams_demux_chain (GstPad *pad, GstObject *parent,
    GstBuffer *buf);
gboolean gst_nn_streams_demux_sink_event (GstPad *pad, GstObject *parent,
    GstEvent *event);
gboolean gst_nn_streams_demux_sink_query (GstPad *pad, GstObject *parent,
    GstQuery *query);
gboolean gst_nn_streams_demux_src_query (GstPad *pad, GstObject *parent,
    GstQuery *query);

G_END_DECLS

#endif /* __GST_NN_STREAMS_PRIVATE_H__ */
