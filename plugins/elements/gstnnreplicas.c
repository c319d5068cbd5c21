/* GStreamer nnpipe plugin: one stage of a plan run as K replicas.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * See gstnnreplicas.h.  State shared by the dispatcher and the reorder
 * lives in the bin (lock + cond): the sequence numbers each replica owes,
 * frames in flight per replica, and the items (frames and events) waiting
 * for their turn to leave.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnreplicas.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_replicas_debug);
#define GST_CAT_DEFAULT gst_nn_replicas_debug

/* frames a replica holds at most: one running, one waiting in its queue */
#define MAX_IN_FLIGHT 2

enum
{
  PROP_0,
  PROP_BUSY_TIME,
  PROP_FRAMES,
};

/* A frame or an event waiting for its sequence number to come up. */
typedef struct
{
  GstBuffer *buffer; /* owned, or NULL */
  GstEvent *event;   /* owned, or NULL */
  GstCaps *caps;     /* the replica's output caps of buffer (ref) */
} Item;

struct _GstNnReplicas
{
  GstBin parent;

  guint n;                        /* replicas */
  GstElement *dispatch, *reorder; /* children (the bin owns them) */
  GPtrArray *stages;              /* nnstage refs */
  GstPad *disp_sink, **disp_src;  /* borrowed from dispatch */
  GstPad *reo_src, **reo_sink;    /* borrowed from reorder */

  GMutex lock;         /* everything below but the push_lock part */
  GCond cond;          /* a replica became idle, or flushing */
  guint *in_flight;    /* per replica */
  GQueue *owed;        /* per replica: sequence numbers, in order */
  GHashTable *pending; /* sequence number -> Item */
  guint64 next_seq, next_out;
  guint last;      /* replica given the last frame */
  GstEvent *eos;   /* EOS given to the replicas (ref), or NULL */
  guint64 eos_seq; /* its place in the sequence */
  guint eos_left;  /* replicas whose EOS has not come out */
  gboolean flushing;
  GstFlowReturn last_flow; /* downstream's last non-OK return */

  GMutex push_lock;  /* one thread pushes out at a time */
  GstCaps *out_caps; /* push_lock: caps last pushed on src */
  GQueue held;       /* push_lock: sticky events before caps */
};

G_DEFINE_TYPE (GstNnReplicas, gst_nn_replicas, GST_TYPE_BIN);

/* The two children: plain elements whose pads call into the bin. */
#define GST_TYPE_NN_REPLICA_PART (gst_nn_replica_part_get_type ())
G_DECLARE_FINAL_TYPE (GstNnReplicaPart, gst_nn_replica_part, GST,
    NN_REPLICA_PART, GstElement);
struct _GstNnReplicaPart
{
  GstElement parent;
};
G_DEFINE_TYPE (GstNnReplicaPart, gst_nn_replica_part, GST_TYPE_ELEMENT);

static void
gst_nn_replica_part_class_init (GstNnReplicaPartClass *klass)
{
}

static void
gst_nn_replica_part_init (GstNnReplicaPart *self)
{
}

static GstNnReplicas *
replicas_of (GstObject *part)
{
  return GST_NN_REPLICAS (GST_OBJECT_PARENT (part));
}

static void
item_free (Item *it)
{
  if (it->buffer)
    gst_buffer_unref (it->buffer);
  if (it->event)
    gst_event_unref (it->event);
  if (it->caps)
    gst_caps_unref (it->caps);
  g_free (it);
}

/* Forget frames and events in flight (lock held). */
static void
reset_locked (GstNnReplicas *self)
{
  for (guint r = 0; r < self->n; r++) {
    self->in_flight[r] = 0;
    g_queue_clear (&self->owed[r]);
  }
  g_hash_table_remove_all (self->pending);
  gst_clear_event (&self->eos);
  self->eos_left = 0;
  self->next_seq = self->next_out = 0;
  self->last = self->n > 0 ? self->n - 1 : 0; /* first frame: replica 0 */
  self->last_flow = GST_FLOW_OK;
}

/* ------------------------------------------------------------------------ */
/* Out: items in sequence order */

static void
push_out_event (GstNnReplicas *self, GstEvent *event)
{
  if (self->out_caps == NULL && GST_EVENT_IS_STICKY (event)
      && GST_EVENT_TYPE (event) != GST_EVENT_STREAM_START
      && GST_EVENT_TYPE (event) != GST_EVENT_EOS) {
    /* caps come first on src: they come with the first frame */
    g_queue_push_tail (&self->held, event);
    return;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    GstEvent *e;

    while ((e = g_queue_pop_head (&self->held)))
      gst_pad_push_event (self->reo_src, e);
  }
  gst_pad_push_event (self->reo_src, event);
}

/* Push every item whose turn has come. */
static void
push_ready (GstNnReplicas *self)
{
  g_mutex_lock (&self->push_lock);
  for (;;) {
    Item *it;
    GstFlowReturn ret;
    GstEvent *e;

    g_mutex_lock (&self->lock);
    if (!g_hash_table_steal_extended (self->pending,
            GSIZE_TO_POINTER ((gsize) self->next_out), NULL, (gpointer *) &it))
      it = NULL;
    else
      self->next_out++;
    g_mutex_unlock (&self->lock);
    if (it == NULL)
      break;
    if (it->event) {
      push_out_event (self, g_steal_pointer (&it->event));
      item_free (it);
      continue;
    }
    if (it->caps
        && (self->out_caps == NULL
            || !gst_caps_is_equal (it->caps, self->out_caps))) {
      gst_caps_replace (&self->out_caps, it->caps);
      gst_pad_push_event (self->reo_src, gst_event_new_caps (it->caps));
    }
    while ((e = g_queue_pop_head (&self->held)))
      gst_pad_push_event (self->reo_src, e);
    ret = gst_pad_push (self->reo_src, g_steal_pointer (&it->buffer));
    item_free (it);
    if (ret != GST_FLOW_OK) {
      g_mutex_lock (&self->lock);
      self->last_flow = ret;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
    }
  }
  g_mutex_unlock (&self->push_lock);
}

static GstFlowReturn
reorder_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnReplicas *self = replicas_of (parent);
  guint r = GPOINTER_TO_UINT (gst_pad_get_element_private (pad));
  Item *it = g_new0 (Item, 1);
  gpointer seq;
  GstFlowReturn ret;

  it->buffer = buf;
  it->caps = gst_pad_get_current_caps (pad);
  g_mutex_lock (&self->lock);
  if (g_queue_is_empty (&self->owed[r]))
    goto not_owed;
  seq = g_queue_pop_head (&self->owed[r]);
  self->in_flight[r]--;
  g_hash_table_insert (self->pending, seq, it);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  push_ready (self);
  g_mutex_lock (&self->lock);
  ret = self->last_flow;
  g_mutex_unlock (&self->lock);
  /* not linked / EOS downstream: the dispatcher tells upstream */
  return ret == GST_FLOW_FLUSHING ? ret : GST_FLOW_OK;

  /* ERRORS */
not_owed : {
  g_mutex_unlock (&self->lock);
  item_free (it);
  GST_ELEMENT_ERROR (self, STREAM, FAILED,
      ("replica %u gave a frame it was not given", r), (NULL));
  return GST_FLOW_ERROR;
}
}

/* Replica r's EOS came out (or could not go in): the stream's EOS leaves,
 * in its place, once every replica's has. */
static void
eos_out (GstNnReplicas *self, guint r)
{
  Item *it = NULL;

  g_mutex_lock (&self->lock);
  if (self->eos && --self->eos_left == 0) {
    it = g_new0 (Item, 1);
    it->event = g_steal_pointer (&self->eos);
    g_hash_table_insert (self->pending,
        GSIZE_TO_POINTER ((gsize) self->eos_seq), it);
  }
  g_mutex_unlock (&self->lock);
  if (it)
    push_ready (self);
}

static gboolean
reorder_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnReplicas *self = replicas_of (parent);
  guint r = GPOINTER_TO_UINT (gst_pad_get_element_private (pad));
  guint lost;

  /* the replicas' caps are stored on their pads (taken with each frame);
   * the stream's events travel with the dispatcher's sequence numbers,
   * but EOS goes through the replicas too: each frame given to a replica
   * has come out before its EOS */
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    g_mutex_lock (&self->lock);
    lost = g_queue_get_length (&self->owed[r]);
    g_mutex_unlock (&self->lock);
    if (lost > 0)
      goto frames_lost;
    eos_out (self, r);
  }
  gst_event_unref (event);
  return TRUE;

  /* ERRORS */
frames_lost : {
  gst_event_unref (event);
  GST_ELEMENT_ERROR (self, STREAM, FAILED,
      ("replica %u gave no output for %u of the frames it was given (it must give one frame out per frame in)",
          r, lost),
      (NULL));
  return FALSE;
}
}

static gboolean
reorder_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  return gst_pad_peer_query (replicas_of (parent)->reo_src, query);
}

static gboolean
reorder_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  return gst_pad_peer_query (replicas_of (parent)->reo_sink[0], query);
}

/* ------------------------------------------------------------------------ */
/* In: the least busy replica; among equals, the first after the one that
 * had the last frame (round robin), so a source slower than one replica
 * still spreads its frames over every replica rather than feeding the
 * first one only */

static GstFlowReturn
dispatch_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstNnReplicas *self = replicas_of (parent);
  guint best = 0;
  GstFlowReturn ret;

  g_mutex_lock (&self->lock);
  for (;;) {
    if (self->flushing || self->last_flow != GST_FLOW_OK)
      goto stopped;
    best = (self->last + 1) % self->n;
    for (guint i = 1; i < self->n; i++) {
      guint r = (self->last + 1 + i) % self->n;
      if (self->in_flight[r] < self->in_flight[best])
        best = r;
    }
    if (self->in_flight[best] < MAX_IN_FLIGHT)
      break;
    g_cond_wait (&self->cond, &self->lock);
  }
  self->last = best;
  g_queue_push_tail (&self->owed[best],
      GSIZE_TO_POINTER ((gsize) self->next_seq++));
  self->in_flight[best]++;
  g_mutex_unlock (&self->lock);

  GST_LOG_OBJECT (self, "frame to replica %u", best);
  ret = gst_pad_push (self->disp_src[best], buf);
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT (self, "replica %u returned %s", best,
        gst_flow_get_name (ret));
  return ret;

stopped : {
  ret = self->flushing ? GST_FLOW_FLUSHING : self->last_flow;
  g_mutex_unlock (&self->lock);
  gst_buffer_unref (buf);
  return ret;
}
}

static gboolean
dispatch_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnReplicas *self = replicas_of (parent);
  Item *it;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      for (guint r = 0; r < self->n; r++)
        gst_pad_push_event (self->disp_src[r], gst_event_ref (event));
      return gst_pad_push_event (self->reo_src, event);
    case GST_EVENT_FLUSH_STOP:
      for (guint r = 0; r < self->n; r++)
        gst_pad_push_event (self->disp_src[r], gst_event_ref (event));
      g_mutex_lock (&self->push_lock);
      g_mutex_lock (&self->lock);
      reset_locked (self);
      self->flushing = FALSE;
      g_mutex_unlock (&self->lock);
      g_queue_clear_full (&self->held, (GDestroyNotify) gst_event_unref);
      g_mutex_unlock (&self->push_lock);
      return gst_pad_push_event (self->reo_src, event);
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_push_event (self->reo_src, event);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    /* through every replica (after its frames), out when all came out */
    g_mutex_lock (&self->lock);
    gst_event_replace (&self->eos, event);
    self->eos_seq = self->next_seq++;
    self->eos_left = self->n;
    g_mutex_unlock (&self->lock);
    for (guint r = 0; r < self->n; r++)
      if (!gst_pad_push_event (self->disp_src[r], gst_event_ref (event)))
        eos_out (self, r);
    gst_event_unref (event);
    return TRUE;
  }
  /* the replicas get the sticky ones with their next frame */
  if (GST_EVENT_IS_STICKY (event))
    for (guint r = 0; r < self->n; r++)
      gst_pad_store_sticky_event (self->disp_src[r], event);
  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    /* outputs carry their replica's caps */
    gst_event_unref (event);
    return TRUE;
  }
  it = g_new0 (Item, 1);
  it->event = event;
  g_mutex_lock (&self->lock);
  g_hash_table_insert (self->pending,
      GSIZE_TO_POINTER ((gsize) self->next_seq++), it);
  g_mutex_unlock (&self->lock);
  push_ready (self);
  return TRUE;
}

static gboolean
dispatch_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstNnReplicas *self = replicas_of (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
    case GST_QUERY_ACCEPT_CAPS:
    case GST_QUERY_CUSTOM:
      /* replica 0's stage answers for all (nnp-model-input-shapes too) */
      return gst_pad_peer_query (self->disp_src[0], query);
    case GST_QUERY_ALLOCATION:
      return FALSE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* The bin */

static GstStateChangeReturn
gst_nn_replicas_change_state (GstElement *element, GstStateChange transition)
{
  GstNnReplicas *self = GST_NN_REPLICAS (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      || transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->push_lock);
    g_mutex_lock (&self->lock);
    reset_locked (self);
    /* stopping: a dispatcher waiting for an idle replica gives up */
    self->flushing = transition == GST_STATE_CHANGE_PAUSED_TO_READY;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    gst_caps_replace (&self->out_caps, NULL);
    g_queue_clear_full (&self->held, (GDestroyNotify) gst_event_unref);
    g_mutex_unlock (&self->push_lock);
  }
  ret = GST_ELEMENT_CLASS (gst_nn_replicas_parent_class)
            ->change_state (element, transition);
  return ret;
}

static void
gst_nn_replicas_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnReplicas *self = GST_NN_REPLICAS (object);
  guint64 sum = 0;

  switch (prop_id) {
    case PROP_BUSY_TIME:
    case PROP_FRAMES:
      for (guint r = 0; r < self->stages->len; r++) {
        guint64 v = 0;

        g_object_get (g_ptr_array_index (self->stages, r),
            prop_id == PROP_BUSY_TIME ? "busy-time" : "frames", &v, NULL);
        sum += v;
      }
      /* busy time: of the replicas together, per replica (a stage of K
       * replicas all busy is 100 % busy) */
      if (prop_id == PROP_BUSY_TIME && self->n > 0)
        sum /= self->n;
      g_value_set_uint64 (value, sum);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_nn_replicas_finalize (GObject *object)
{
  GstNnReplicas *self = GST_NN_REPLICAS (object);

  g_ptr_array_unref (self->stages);
  g_hash_table_unref (self->pending);
  for (guint r = 0; r < self->n; r++)
    g_queue_clear (&self->owed[r]);
  g_free (self->owed);
  g_free (self->in_flight);
  g_free (self->disp_src);
  g_free (self->reo_sink);
  gst_caps_replace (&self->out_caps, NULL);
  gst_clear_event (&self->eos);
  g_queue_clear_full (&self->held, (GDestroyNotify) gst_event_unref);
  g_mutex_clear (&self->lock);
  g_mutex_clear (&self->push_lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (gst_nn_replicas_parent_class)->finalize (object);
}

static void
gst_nn_replicas_class_init (GstNnReplicasClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_replicas_debug, "nnreplicas", 0,
      "nnpipeline replicated stage");
  gobject_class->get_property = gst_nn_replicas_get_property;
  gobject_class->finalize = gst_nn_replicas_finalize;
  GST_ELEMENT_CLASS (klass)->change_state = gst_nn_replicas_change_state;

  g_object_class_install_property (gobject_class, PROP_BUSY_TIME,
      g_param_spec_uint64 ("busy-time", "Busy time",
          "Nanoseconds the replicas spent running, divided by their number", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames", "Frames the replicas ran", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
}

static void
gst_nn_replicas_init (GstNnReplicas *self)
{
  g_mutex_init (&self->lock);
  g_mutex_init (&self->push_lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->held);
  self->stages = g_ptr_array_new_with_free_func (gst_object_unref);
  self->pending = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      (GDestroyNotify) item_free);
}

GstElement *
gst_nn_replicas_new (const gchar *name, guint replicas,
    GstElement *(*make_stage) (gpointer user_data, guint r), gpointer user_data)
{
  GstNnReplicas *self;
  GstPad *ghost;

  g_return_val_if_fail (replicas >= 1, NULL);
  self = g_object_new (GST_TYPE_NN_REPLICAS, "name", name, NULL);
  self->n = replicas;
  self->in_flight = g_new0 (guint, replicas);
  self->owed = g_new0 (GQueue, replicas);
  self->disp_src = g_new0 (GstPad *, replicas);
  self->reo_sink = g_new0 (GstPad *, replicas);

  self->dispatch =
      g_object_new (GST_TYPE_NN_REPLICA_PART, "name", "dispatch", NULL);
  self->reorder =
      g_object_new (GST_TYPE_NN_REPLICA_PART, "name", "reorder", NULL);
  gst_bin_add_many (GST_BIN (self), self->dispatch, self->reorder, NULL);

  self->disp_sink = gst_pad_new ("sink", GST_PAD_SINK);
  gst_pad_set_chain_function (self->disp_sink, dispatch_chain);
  gst_pad_set_event_function (self->disp_sink, dispatch_sink_event);
  gst_pad_set_query_function (self->disp_sink, dispatch_sink_query);
  gst_element_add_pad (self->dispatch, self->disp_sink);
  self->reo_src = gst_pad_new ("src", GST_PAD_SRC);
  gst_pad_set_query_function (self->reo_src, reorder_src_query);
  gst_element_add_pad (self->reorder, self->reo_src);

  for (guint r = 0; r < replicas; r++) {
    GstElement *stage = make_stage (user_data, r);
    GstElement *queue = gst_element_factory_make ("queue", NULL);
    gchar *pname;

    g_queue_init (&self->owed[r]);
    /* one frame waits while the replica runs the other */
    g_object_set (queue, "max-size-buffers", MAX_IN_FLIGHT, "max-size-bytes", 0,
        "max-size-time", (guint64) 0, NULL);
    gst_bin_add_many (GST_BIN (self), queue, stage, NULL);
    g_ptr_array_add (self->stages, gst_object_ref (stage));

    pname = g_strdup_printf ("src_%u", r);
    self->disp_src[r] = gst_pad_new (pname, GST_PAD_SRC);
    g_free (pname);
    gst_element_add_pad (self->dispatch, self->disp_src[r]);
    pname = g_strdup_printf ("sink_%u", r);
    self->reo_sink[r] = gst_pad_new (pname, GST_PAD_SINK);
    g_free (pname);
    gst_pad_set_element_private (self->reo_sink[r], GUINT_TO_POINTER (r));
    gst_pad_set_chain_function (self->reo_sink[r], reorder_chain);
    gst_pad_set_event_function (self->reo_sink[r], reorder_sink_event);
    gst_pad_set_query_function (self->reo_sink[r], reorder_sink_query);
    gst_element_add_pad (self->reorder, self->reo_sink[r]);

    gst_element_link_pads (self->dispatch, GST_PAD_NAME (self->disp_src[r]),
        queue, "sink");
    gst_element_link_pads (queue, "src", stage, "sink");
    gst_element_link_pads (stage, "src", self->reorder,
        GST_PAD_NAME (self->reo_sink[r]));
  }

  ghost = gst_ghost_pad_new ("sink", self->disp_sink);
  gst_element_add_pad (GST_ELEMENT (self), ghost);
  ghost = gst_ghost_pad_new ("src", self->reo_src);
  gst_element_add_pad (GST_ELEMENT (self), ghost);
  return GST_ELEMENT (self);
}
