/* GStreamer nnpipe plugin: nnstage, the instance struct shared by the
 * element's files (gstnnstage.c, gstnnstagepart.c, gstnnstagedevice.c).
 * Not for other elements: they use gstnnstage.h. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>
#include <nnpipe/trace.h>

#include "gstnnstage.h"
#include "gstnntensorcaps.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_stage_debug);

/* processing-time samples kept for the LATENCY query */
#define LATENCY_WINDOW 16

/* prepared stages kept per negotiated shapes (see set_caps) */
#define STAGE_CACHE_SIZE 4

struct _GstNnStage
{
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *model_path;
  gchar *device;                /* device spec as set (device.h syntax) */
  gint threads;
  gchar *cpus;
  gchar *plan_path;
  gint stage_index;
  gchar *nodes;
  NnpPlan *plan_object;         /* owned copy (set by nnpipeline) */
  gint device_index;
  gchar *device_name;
  gboolean fallback;

  /* the device, between start() and stop(): dev_spec is what the stage
   * runs on ("cpu", "opencl:1"); use_cl when that is an OpenCL device,
   * which is then cl_device (shared through GstContext; also set by
   * set_context).  Set in start() before negotiation, read by
   * transform_caps. */
  gchar *dev_spec;
  gint dev_threads;             /* threads of the stage: the device spec's
                                 * ("cpu:2") or #GstNnStage:threads */
  gboolean use_cl;
  NnpDevice *cl_device;         /* owned ref */

  /* the model and the shape-inference cache: transform_caps runs on any
   * thread (lock) */
  GMutex lock;
  NnpModel *model;              /* owned ref, between start() and stop() */
  gchar *model_name;            /* file name, for messages */
  NnpSpecializeFlags spec_flags;
  gboolean spec_valid;
  GstNnTensorsInfo spec_in;     /* the inputs the cached result is for */
  NnpGraph *spec_graph;         /* owned ref, or NULL when spec_error */
  NnpPlan *spec_plan;           /* part: resolved for spec_graph (owned) */
  gint spec_stage;
  GError *spec_error;
  GPtrArray *recent_keys;       /* model input shapes keys, newest first */

  /* part of the model, between start() and stop() (lock) */
  gboolean part;                /* plan or nodes set */
  NnpPlan *plan;                /* the plan file / plan-object (owned), or NULL */
  gint part_stage;              /* stage index in plan */
  gboolean part_first;          /* the part's inputs are the model's (stage
                                 * 0 of a plan, or nodes with nothing
                                 * before them): caps as a whole model */
  gchar *part_name;             /* "stage 1 of plan.json", for messages */
  gint part_threads;            /* nodes form: threads and cpus */
  GArray *part_cpus;
  GHashTable *graphs;           /* shapes key -> specialised NnpGraph (ref) */

  /* negotiated state (streaming thread) */
  GstNnTensorsInfo in_info, out_info;
  NnpStage *stage;              /* borrowed from stage_cache[0], or NULL */
  GPtrArray *stage_cache;       /* GstNnCachedStage (owned), newest first,
                                 * at most STAGE_CACHE_SIZE; cleared at
                                 * stop() and when props_gen moves */
  guint stage_cache_gen;        /* props_gen the cached stages are for */
  gboolean stage_on_cl;         /* the stage runs on cl_device (no fallback) */
  gboolean out_device;          /* output caps have memory:OpenCL */
  GstCaps *refused_caps;        /* input caps whose error was posted (ref):
                                 * upstream retries the same CAPS event on
                                 * every buffer, the error is posted once */

  /* measured processing time (object lock) */
  GstClockTime run_times[LATENCY_WINDOW];
  guint n_run_times, run_time_pos;
  GstClockTime reported_latency;
  guint64 busy_ns, frames;      /* accumulated processing time, buffers */
  gint64 run_start;             /* monotonic us the current run began, 0
                                 * when none: busy-time counts it too, so
                                 * busy over an interval never exceeds it */
  /* trace (include/nnpipe/trace.h): path under the object lock; the
   * trace itself opened in start(), written to in transform(), closed in stop() */
  gchar *trace_path;
  NnpTrace *trace;
  gint trace_track;
  guint64 trace_frame;
  guint props_gen;              /* bumped by every property write */
  guint stages_built;           /* stages prepared since start */
};

G_END_DECLS
