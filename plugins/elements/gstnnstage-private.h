/* GStreamer nnpipe plugin: nnstage, the instance struct shared by the
 * element's files (gstnnstage.c, gstnnstagecaps.c).  Not for other
 * elements: they use gstnnstage.h. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <nnpipe/part.h>

#include "gstnndrop.h"
#include "gstnnpartprops.h"
#include "gstnnrunstats.h"
#include "gstnnstage.h"
#include "gstnntensorcaps.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nn_stage_debug);

struct _GstNnStage
{
  GstBaseTransform parent;

  /* properties (object lock): what part runs where (props.gen is bumped
   * by every write: set_caps remakes the part), and nnstage's own */
  GstNnPartProps props;
  gint shape_cache;
  guint inference_interval; /* run the model on one buffer in N */

  /* the device, between start() and stop(): dev_spec is what the part
   * runs on ("cpu", "opencl:1": the library's choice, after fallback);
   * use_device_memory when that device keeps tensors in memory of its own
   * (not the host: OpenCL), which is then device (shared through
   * GstContext; also set by set_context; gstnndevicememory.h). */
  gchar *dev_spec;
  gboolean use_device_memory;
  NnpDevice *device; /* owned ref */

  /* what runs, between start() and stop(); transform_caps runs on any
   * thread (lock) */
  GMutex lock;
  NnpDevice *memory_device; /* owned ref: device when use_device_memory, for
                             * the caps and context queries of any thread
                             * (gst_nn_stage_memory_device()); set at the end
                             * of start(), cleared by stop() */
  NnpPart *part;            /* owned (nnp_part_open()): the model, plan,
                                 * device, specialisations, stages and the
                                 * memo of the last caps question */
  gchar *model_name;        /* its model's file name, for messages */
  guint part_gen;           /* props.gen the part was made from */

  /* negotiated state (streaming thread) */
  GstNnTensorsInfo in_info, out_info;
  NnpPartSpec *spec;        /* owned ref: the current specialisation */
  NnpStage *stage;          /* borrowed from spec, or NULL */
  gboolean stage_on_device; /* the stage runs on device (no fallback) */
  gboolean out_device;      /* output caps are in device's memory */
  GstCaps *refused_caps;    /* input caps whose error was posted (ref):
                                 * upstream retries the same CAPS event on
                                 * every buffer, the error is posted once */

  guint64 frames_seen; /* buffers counted for inference-interval */
  guint stages_built;  /* stages prepared since start (object lock) */
  GstNnRunStats stats; /* busy time, frames, latency, trace and
                                 * debug-slowdown (their properties) */
  GstNnDrop drop;      /* late frames of live input (drop,
                                 * max-lateness, dropped) */
};

/* gstnnstagecaps.c: negotiation (its base class vfuncs: transform_caps,
 * fixate_caps, get_unit_size, accept_caps, sink_event, set_caps,
 * decide_allocation) and what start(), stop() and query() need of it */
void gst_nn_stage_caps_class_init (GstBaseTransformClass *trans_class);
gboolean gst_nn_stage_answer_shapes_query (GstNnStage *self, GstQuery *query);
void gst_nn_stage_set_part_locked (GstNnStage *self, NnpPart *part);
/* the device whose memory this stage offers (a new ref, or NULL), safe on
 * any thread (lock) */
NnpDevice *gst_nn_stage_memory_device (GstNnStage *self);
/* the base class, for the vfuncs above */
#define GST_NN_STAGE_PARENT_CLASS(obj) \
  GST_BASE_TRANSFORM_CLASS (g_type_class_peek_parent (G_OBJECT_GET_CLASS (obj)))

G_END_DECLS
