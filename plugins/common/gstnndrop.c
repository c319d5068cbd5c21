/* GStreamer nnpipe plugin: the drop policy of live input (gstnndrop.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndrop.h"
#include "gstnnframemeta.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_drop_debug);
#define GST_CAT_DEFAULT gst_nn_drop_debug

GType
gst_nn_drop_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_NN_DROP_AUTO, "Drop late frames of live input, none of files",
        "auto" },
    { GST_NN_DROP_ON, "Drop late frames, live input or not", "on" },
    { GST_NN_DROP_OFF, "Run every frame (frames wait upstream)", "off" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnDropMode", values);

    GST_DEBUG_CATEGORY_INIT (gst_nn_drop_debug, "nndrop", 0,
        "nnpipe drop policy of live input");
    g_once_init_leave (&type, t);
  }
  return type;
}

void
gst_nn_drop_init (GstNnDrop *drop)
{
  (void) gst_nn_drop_mode_get_type (); /* the debug category */
  g_mutex_init (&drop->lock);
  drop->mode = GST_NN_DROP_DEFAULT_MODE;
  drop->max_lateness = GST_NN_DROP_DEFAULT_MAX_LATENESS;
  drop->never = FALSE;
  gst_nn_drop_reset (drop, TRUE);
}

void
gst_nn_drop_clear (GstNnDrop *drop)
{
  g_mutex_clear (&drop->lock);
}

static void
reset_locked (GstNnDrop *drop)
{
  gst_segment_init (&drop->segment, GST_FORMAT_TIME);
  drop->probed = FALSE;
  drop->live = FALSE;
  drop->upstream_latency = 0;
  drop->qos_earliest = GST_CLOCK_TIME_NONE;
}

void
gst_nn_drop_reset (GstNnDrop *drop, gboolean counters)
{
  g_mutex_lock (&drop->lock);
  reset_locked (drop);
  if (counters)
    drop->processed = drop->dropped = 0;
  g_mutex_unlock (&drop->lock);
}

void
gst_nn_drop_install (GObjectClass *klass, guint first_id,
    const gchar *what_dropped)
{
  gchar *blurb = g_strdup_printf (
      "Frames dropped by the drop policy since the element started (%s)",
      what_dropped);

  g_object_class_install_property (klass, first_id + GST_NN_DROP_PROP_DROP,
      g_param_spec_enum ("drop", "Drop",
          "Late frames: auto (dropped on live input, never from files), on, off (every frame runs)",
          GST_TYPE_NN_DROP_MODE, GST_NN_DROP_DEFAULT_MODE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (klass,
      first_id + GST_NN_DROP_PROP_MAX_LATENESS,
      g_param_spec_int64 ("max-lateness", "Max lateness",
          "ns a frame may arrive behind the clock before it is dropped (drop policy on; -1: QoS events only)",
          -1, G_MAXINT64, GST_NN_DROP_DEFAULT_MAX_LATENESS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  /* the blurb lives as long as the class: never freed */
  g_object_class_install_property (klass, first_id + GST_NN_DROP_PROP_DROPPED,
      g_param_spec_uint64 ("dropped", "Dropped", g_intern_string (blurb), 0,
          G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_NAME | G_PARAM_STATIC_NICK
              | G_PARAM_STATIC_BLURB));
  g_free (blurb);
  gst_type_mark_as_plugin_api (GST_TYPE_NN_DROP_MODE, 0);
}

gboolean
gst_nn_drop_set_property (GstNnDrop *drop, guint first_id, guint prop_id,
    const GValue *value)
{
  g_mutex_lock (&drop->lock);
  if (prop_id == first_id + GST_NN_DROP_PROP_DROP)
    drop->mode = g_value_get_enum (value);
  else if (prop_id == first_id + GST_NN_DROP_PROP_MAX_LATENESS)
    drop->max_lateness = g_value_get_int64 (value);
  else
    prop_id = 0;
  g_mutex_unlock (&drop->lock);
  return prop_id != 0;
}

gboolean
gst_nn_drop_get_property (GstNnDrop *drop, guint first_id, guint prop_id,
    GValue *value)
{
  gboolean ours = TRUE;

  g_mutex_lock (&drop->lock);
  if (prop_id == first_id + GST_NN_DROP_PROP_DROP)
    g_value_set_enum (value, drop->mode);
  else if (prop_id == first_id + GST_NN_DROP_PROP_MAX_LATENESS)
    g_value_set_int64 (value, drop->max_lateness);
  else if (prop_id == first_id + GST_NN_DROP_PROP_DROPPED)
    g_value_set_uint64 (value, drop->dropped);
  else
    ours = FALSE;
  g_mutex_unlock (&drop->lock);
  return ours;
}

void
gst_nn_drop_copy_settings (GstNnDrop *dst, GstNnDrop *src)
{
  GstNnDropMode mode;
  gint64 max_lateness;

  g_mutex_lock (&src->lock);
  mode = src->mode;
  max_lateness = src->max_lateness;
  g_mutex_unlock (&src->lock);
  g_mutex_lock (&dst->lock);
  dst->mode = mode;
  dst->max_lateness = max_lateness;
  g_mutex_unlock (&dst->lock);
}

void
gst_nn_drop_set_never (GstNnDrop *drop, gboolean never)
{
  g_mutex_lock (&drop->lock);
  drop->never = never;
  g_mutex_unlock (&drop->lock);
}

guint64
gst_nn_drop_get_dropped (GstNnDrop *drop)
{
  guint64 v;

  g_mutex_lock (&drop->lock);
  v = drop->dropped;
  g_mutex_unlock (&drop->lock);
  return v;
}

static gboolean
active_locked (GstNnDrop *drop, gboolean live)
{
  switch (drop->mode) {
    case GST_NN_DROP_ON:
      return TRUE;
    case GST_NN_DROP_AUTO:
      return live && !drop->never;
    default:
      return FALSE;
  }
}

gboolean
gst_nn_drop_is_active (GstNnDrop *drop)
{
  gboolean active;

  g_mutex_lock (&drop->lock);
  active = active_locked (drop, drop->live);
  g_mutex_unlock (&drop->lock);
  return active;
}

void
gst_nn_drop_event (GstNnDrop *drop, GstEvent *event)
{
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_SEGMENT: {
      const GstSegment *segment;

      gst_event_parse_segment (event, &segment);
      g_mutex_lock (&drop->lock);
      gst_segment_copy_into (segment, &drop->segment);
      g_mutex_unlock (&drop->lock);
      break;
    }
    case GST_EVENT_FLUSH_STOP:
    case GST_EVENT_STREAM_START:
      /* a new stream (a restarted camera) may be another kind of source */
      gst_nn_drop_reset (drop, FALSE);
      break;
    case GST_EVENT_QOS: {
      GstQOSType type;
      gdouble proportion;
      GstClockTimeDiff diff;
      GstClockTime timestamp;

      gst_event_parse_qos (event, &type, &proportion, &diff, &timestamp);
      g_mutex_lock (&drop->lock);
      /* as GstBaseTransform: a frame running before this is late; a
       * late one predicts twice the lateness for the next */
      if (!GST_CLOCK_TIME_IS_VALID (timestamp))
        drop->qos_earliest = GST_CLOCK_TIME_NONE;
      else if (diff > 0)
        drop->qos_earliest = timestamp + 2 * diff;
      else
        drop->qos_earliest = timestamp + diff;
      g_mutex_unlock (&drop->lock);
      break;
    }
    default:
      break;
  }
}

/* Ask upstream whether it is live and its latency (once per stream). */
static void
probe_upstream (GstNnDrop *drop, GstPad *sinkpad)
{
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;
  GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;

  if (gst_pad_peer_query (sinkpad, q))
    gst_query_parse_latency (q, &live, &min, &max);
  gst_query_unref (q);
  GST_DEBUG_OBJECT (sinkpad, "upstream is %slive, latency %" GST_TIME_FORMAT,
      live ? "" : "not ", GST_TIME_ARGS (min));
  g_mutex_lock (&drop->lock);
  drop->probed = TRUE;
  drop->live = live;
  drop->upstream_latency = GST_CLOCK_TIME_IS_VALID (min) ? min : 0;
  g_mutex_unlock (&drop->lock);
}

gboolean
gst_nn_drop_check (GstNnDrop *drop, GstElement *element, GstPad *sinkpad,
    GstBuffer *buf)
{
  GType server_api = g_type_from_name ("GstNnServerMetaAPI");
  GstNnFrameMeta *fm;
  GstClock *clock;
  GstClockTime rt, now, base;
  GstClockTimeDiff lateness = 0;
  gboolean probed, late = FALSE, qos = FALSE;
  guint64 processed, dropped;
  GstMessage *msg;

  g_mutex_lock (&drop->lock);
  probed = drop->probed;
  if (drop->mode == GST_NN_DROP_OFF
      || (drop->mode == GST_NN_DROP_AUTO && drop->never)) {
    /* never drops: no need to ask upstream */
    drop->processed++;
    g_mutex_unlock (&drop->lock);
    return FALSE;
  }
  g_mutex_unlock (&drop->lock);
  if (!probed)
    probe_upstream (drop, sinkpad);

  /* a crop of a frame that ran already */
  fm = gst_buffer_get_nn_frame_meta (buf);
  if (fm && fm->n_rois >= 0)
    return FALSE;
  /* a remote client's request (nnpipe serve: nnserversrc's meta): the
   * client waits for its answer, and dropped late frames on its side */
  if (server_api && gst_buffer_get_meta (buf, server_api))
    return FALSE;

  clock = gst_element_get_clock (element);
  base = gst_element_get_base_time (element);
  now = clock ? gst_clock_get_time (clock) : GST_CLOCK_TIME_NONE;
  if (clock)
    gst_object_unref (clock);

  g_mutex_lock (&drop->lock);
  if (!active_locked (drop, drop->live) || !GST_BUFFER_PTS_IS_VALID (buf)
      || !GST_CLOCK_TIME_IS_VALID (now) || now < base) {
    drop->processed++;
    g_mutex_unlock (&drop->lock);
    return FALSE;
  }
  rt = gst_segment_to_running_time (&drop->segment, GST_FORMAT_TIME,
      GST_BUFFER_PTS (buf));
  if (GST_CLOCK_TIME_IS_VALID (rt)) {
    lateness = GST_CLOCK_DIFF (rt + drop->upstream_latency, now - base);
    late = drop->max_lateness >= 0 && lateness > drop->max_lateness;
    qos = GST_CLOCK_TIME_IS_VALID (drop->qos_earliest)
        && rt <= drop->qos_earliest;
  }
  if (!late && !qos) {
    drop->processed++;
    g_mutex_unlock (&drop->lock);
    return FALSE;
  }
  drop->dropped++;
  processed = drop->processed;
  dropped = drop->dropped;
  g_mutex_unlock (&drop->lock);

  GST_LOG_OBJECT (sinkpad,
      "dropping frame %" GST_TIME_FORMAT " (%s, %" G_GINT64_FORMAT " ms late)",
      GST_TIME_ARGS (GST_BUFFER_PTS (buf)), late ? "late" : "QoS",
      lateness / (gint64) GST_MSECOND);
  msg = gst_message_new_qos (GST_OBJECT (element), TRUE, rt,
      gst_segment_to_stream_time (&drop->segment, GST_FORMAT_TIME,
          GST_BUFFER_PTS (buf)),
      GST_BUFFER_PTS (buf), GST_BUFFER_DURATION (buf));
  gst_message_set_qos_values (msg, lateness, 1.0, 1000000);
  gst_message_set_qos_stats (msg, GST_FORMAT_BUFFERS, processed, dropped);
  gst_element_post_message (element, msg);
  return TRUE;
}

void
gst_nn_drop_add_latency (GstNnDrop *drop, GstObject *obj, GstQuery *query)
{
  gboolean live, active;
  GstClockTime min, max;
  gint64 extra;

  gst_query_parse_latency (query, &live, &min, &max);
  g_mutex_lock (&drop->lock);
  active = active_locked (drop, live);
  extra = drop->max_lateness;
  g_mutex_unlock (&drop->lock);
  if (!active || extra <= 0)
    return;
  /* a frame that runs may have waited this long upstream */
  min += extra;
  if (GST_CLOCK_TIME_IS_VALID (max))
    max += extra;
  GST_DEBUG_OBJECT (obj, "latency + %" GST_TIME_FORMAT " (max-lateness)",
      GST_TIME_ARGS ((GstClockTime) extra));
  gst_query_set_latency (query, live, min, max);
}
