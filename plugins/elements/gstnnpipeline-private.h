/* GStreamer nnpipe plugin: nnpipeline, what its files share (private)
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* gstnnpipeline.c: the element (properties, ghost pads, state changes);
 * gstnnpipeline-build.c: the plan and the inner stages and queues;
 * gstnnpipeline-stats.c: the nnpipeline-stats messages. */
#pragma once

#include "gstnndrop.h"
#include "gstnnpipeline.h"
#include "gstnnstreams.h"
#include "gstnntensorcaps.h"

#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/plan-make.h>
#include <nnpipe/trace.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_pipeline_debug);

#define MAX_STAGES NNP_PLAN_MAX_STAGES

/* properties of gstnnpipeline-rebalance.c (after gstnnpipeline.c's) */
enum
{
  PROP_REBALANCE = 100,
  PROP_REBALANCE_THRESHOLD,
  PROP_REBALANCE_INTERVAL,
  PROP_REBALANCE_SUSTAIN,
  PROP_DEBUG_SLOWDOWN,
};

typedef struct _GstNnPipelineRebalance GstNnPipelineRebalance;
typedef struct _GstNnPipelineDrop GstNnPipelineDrop;

struct _GstNnPipeline
{
  GstBin parent;

  GstPad *sinkpad, *srcpad; /* ghost pads (owned by the element) */
  GstNnStreams *streams;    /* owned; NULL until a sink_%u is requested:
                                 * then the stages run between its mux and
                                 * demux and sink/src stay unlinked
                                 * (gstnnpipeline-streams.c) */

  /* properties (object lock) */
  gchar *model_path;
  gchar *stages;
  gchar *devices;
  gchar *plan_path;
  guint queue_size;
  gchar *cuts;
  guint stats_interval;
  gboolean pin;
  gboolean fallback;
  gchar *stage_load;
  gchar *trace_path;
  guint max_replicas;
  guint batch_size;
  guint64 batch_timeout;    /* ns */
  guint inference_interval; /* the first stage's (nnstage) */
  GstNnDrop drop_settings;  /* drop, max-lateness: copied to drops */
  GPtrArray *drops;         /* GstNnPipelineDrop*, owned: one per sink pad
                            * (gstnnpipeline-drop.c; the array under the
                            * object lock) */

  /* stream state (build_lock), between READY -> PAUSED and back */
  GMutex build_lock;
  NnpModel *model;        /* owned ref; also under the object lock
                                 * (the caps query reads it) */
  gchar *model_file;      /* path the model was loaded from */
  NnpPlan *plan;          /* owned, NULL until built */
  NnpGraph *graph;        /* owned ref: the specialised graph of plan */
  NnpPlan *next_plan;     /* owned: the plan the next build takes
                                 * instead of making one (a re-balancing
                                 * switch, gstnnpipeline-rebalance.c) */
  GPtrArray *stage_elems; /* nnstage GstElement* (refs) */
  GPtrArray *queues;      /* queue GstElement* (refs) */
  gchar *built_key;       /* input caps the stages were built for */
  NnpTrace *trace;        /* owned ref, NULL when not tracing: the
                                 * queues' levels; the stages hold their own */

  GstCaps *refused_caps; /* input caps whose error was posted (ref,
                                 * build_lock): posted once, not on every
                                 * retry of the same CAPS event */

  /* statistics (stats_lock).  post_stats runs on the stats thread and, at
   * EOS, on a streaming thread holding stream locks: it must never take
   * build_lock (a state change holds build_lock while inner elements stop,
   * which takes their stream locks).  So the stages and queues it reads are
   * its own references, set by build_locked() and dropped by
   * teardown_locked() under stats_lock. */
  GMutex stats_lock;
  GMutex post_lock;        /* one post_stats at a time, so that the
                                 * messages leave in order */
  GPtrArray *stats_stages; /* nnstage GstElement* (refs) */
  GPtrArray *stats_queues; /* queue GstElement* (refs) */
  gboolean final_posted;   /* the final=true message is out: no
                                 * periodic one after it */
  GThread *ticker;         /* the periodic messages' thread, or NULL */
  GCond ticker_cond;       /* wakes it up to stop */
  gint64 tick_period;      /* us */
  gint64 last_tick;        /* monotonic us */
  guint64 last_busy[MAX_STAGES];
  guint64 last_frames;
  guint64 frames_in, frames_out;
  gint64 first_in; /* monotonic us of the first input buffer, 0 */
  /* latency (the static pads: frames leave in order, so the times of the
   * frames in the stages are a FIFO; request pads: per stream, in
   * gstnnstreams.c) and the last frame's source id */
  GQueue in_times;        /* monotonic us (GSIZE_TO_POINTER) */
  guint64 latency_sum_us; /* over frames_out */
  gint64 latency_max_us;
  guint64 last_latency_sum_us, last_frames_out; /* at the last tick */
  gchar *source_id;
  GHashTable *stream_last; /* stream index -> guint64[2]: frames out and
                             * latency sum at the last tick */
  gint64 first_out,
      last_out; /* monotonic us of the first and last output buffers */

  GstNnPipelineRebalance
      *rb; /* owned: re-balancing (gstnnpipeline-rebalance.c) */
};

/* gstnnpipeline-build.c (build_lock held by the caller) */
gboolean gst_nn_pipeline_load_model_locked (GstNnPipeline *self,
    GError **error);
gboolean gst_nn_pipeline_build_locked (GstNnPipeline *self,
    const GstNnTensorsInfo *info, gboolean sync, GError **error);
void gst_nn_pipeline_teardown_locked (GstNnPipeline *self);
gboolean gst_nn_pipeline_trace_open_locked (GstNnPipeline *self,
    GError **error);
gboolean gst_nn_pipeline_trace_close_locked (GstNnPipeline *self,
    GError **error);

/* gstnnpipeline-streams.c: request pads sink_%u / src_%u */
GstPad *gst_nn_pipeline_request_new_pad (GstElement *element,
    GstPadTemplate *templ, const gchar *name, const GstCaps *caps);
void gst_nn_pipeline_release_pad (GstElement *element, GstPad *pad);
/* READY -> PAUSED, model loaded: batch-size checked against the model and
 * handed to the streams. */
gboolean gst_nn_pipeline_streams_start_locked (GstNnPipeline *self,
    GError **error);

/* gstnnpipeline-stats.c (never takes build_lock) */
/* Zero the counters (READY -> PAUSED). */
void gst_nn_pipeline_stats_reset (GstNnPipeline *self);
/* The stages and queues the stats read: references of their own, so that
 * a post never needs build_lock (NULL, NULL: none). */
void gst_nn_pipeline_stats_set_elements (GstNnPipeline *self, GPtrArray *stages,
    GPtrArray *queues);
void gst_nn_pipeline_stats_start (GstNnPipeline *self);
void gst_nn_pipeline_stats_stop (GstNnPipeline *self);
GstPadProbeReturn gst_nn_pipeline_stats_sink_probe (GstPad *pad,
    GstPadProbeInfo *info, gpointer user_data);
GstPadProbeReturn gst_nn_pipeline_stats_src_probe (GstPad *pad,
    GstPadProbeInfo *info, gpointer user_data);

/* gstnnpipeline-drop.c: late frames of live input dropped at the inputs
 * (properties drop, max-lateness) */
void gst_nn_pipeline_drop_init (GstNnPipeline *self);
void gst_nn_pipeline_drop_finalize (GstNnPipeline *self);
/* The policy on a sink ghost pad (index: its stream, -1 for the static
 * sink) and its src ghost pad (QoS, LATENCY). */
void gst_nn_pipeline_drop_attach (GstNnPipeline *self, gint index, GstPad *sink,
    GstPad *src);
/* drop or max-lateness changed: to every input */
void gst_nn_pipeline_drop_update (GstNnPipeline *self);
/* READY -> PAUSED: counters to 0 */
void gst_nn_pipeline_drop_reset (GstNnPipeline *self);
/* Frames dropped at input `index` (-1: all inputs). */
guint64 gst_nn_pipeline_drop_dropped (GstNnPipeline *self, gint index);

/* gstnnpipeline-rebalance.c: re-balancing while PLAYING (never takes
 * build_lock but in the switch, from the streaming thread) */
void gst_nn_pipeline_rebalance_init (GstNnPipeline *self);
void gst_nn_pipeline_rebalance_finalize (GstNnPipeline *self);
void gst_nn_pipeline_rebalance_install_properties (GObjectClass *gobject_class);
gboolean gst_nn_pipeline_rebalance_set_property (GstNnPipeline *self,
    guint prop_id, const GValue *value);
gboolean gst_nn_pipeline_rebalance_get_property (GstNnPipeline *self,
    guint prop_id, GValue *value);
void gst_nn_pipeline_rebalance_start (GstNnPipeline *self);
void gst_nn_pipeline_rebalance_stop (GstNnPipeline *self);
void gst_nn_pipeline_rebalance_reset (GstNnPipeline *self);
/* debug-slowdown parses (check_properties, at start) */
gboolean gst_nn_pipeline_rebalance_check (GstNnPipeline *self, GError **error);
/* after each successful build (build_lock held): the stages are new.
 * FALSE with an error naming 'rebalance' when it is true and the plan has
 * a remote stage (refused at start). */
gboolean gst_nn_pipeline_rebalance_built (GstNnPipeline *self, GError **error);
/* Count the buffers into and out of the stages on these pads (a switch
 * happens on `in`, before a buffer): the ghost pads at init, the streams'
 * chain ends when request pads are made. */
void gst_nn_pipeline_rebalance_watch (GstNnPipeline *self, GstPad *in,
    GstPad *out);

G_END_DECLS
