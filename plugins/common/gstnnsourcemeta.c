/* GStreamer nnpipe plugin: where and when a frame comes from
 * (gstnnsourcemeta.h).
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnsourcemeta.h"

/* seconds from 1900-01-01 (NTP's era 0) to 1970-01-01 */
#define NTP_UNIX_OFFSET G_GUINT64_CONSTANT (2208988800)

void
gst_nn_source_meta_register (void)
{
  static gsize once;

  if (g_once_init_enter (&once)) {
    const gchar *tags[] = { NULL };

    gst_meta_register_custom (GST_NN_SOURCE_META_NAME, tags, NULL, NULL, NULL);
    g_once_init_leave (&once, 1);
  }
}

gboolean
gst_nn_source_meta_is (const GstMeta *meta)
{
  gst_nn_source_meta_register ();
  return meta->info == gst_meta_get_info (GST_NN_SOURCE_META_NAME);
}

void
gst_nn_source_meta_add (GstBuffer *buf, const GstNnSource *src)
{
  GstCustomMeta *meta;
  GstStructure *s;

  gst_nn_source_meta_register ();
  meta = gst_buffer_get_custom_meta (buf, GST_NN_SOURCE_META_NAME);
  if (meta)
    gst_buffer_remove_meta (buf, (GstMeta *) meta);
  meta = gst_buffer_add_custom_meta (buf, GST_NN_SOURCE_META_NAME);
  if (meta == NULL)
    return;
  s = gst_custom_meta_get_structure (meta);
  gst_structure_set_name (s, GST_NN_SOURCE_STRUCT_NAME);
  gst_structure_set (s, "frame", G_TYPE_UINT64, src->frame, NULL);
  if (src->source_id)
    gst_structure_set (s, "source-id", G_TYPE_STRING, src->source_id, NULL);
  if (src->unix_us >= 0)
    gst_structure_set (s, "unix-us", G_TYPE_INT64, src->unix_us, NULL);
  if (src->time_source)
    gst_structure_set (s, "time-source", G_TYPE_STRING, src->time_source, NULL);
}

gboolean
gst_nn_source_meta_get (GstBuffer *buf, GstNnSource *src)
{
  GstCustomMeta *meta;
  GstStructure *s;

  gst_nn_source_meta_register ();
  meta = gst_buffer_get_custom_meta (buf, GST_NN_SOURCE_META_NAME);
  if (meta == NULL)
    return FALSE;
  s = gst_custom_meta_get_structure (meta);
  src->frame = 0;
  gst_structure_get_uint64 (s, "frame", &src->frame);
  src->source_id = gst_structure_get_string (s, "source-id");
  if (!gst_structure_get_int64 (s, "unix-us", &src->unix_us))
    src->unix_us = -1;
  src->time_source = gst_structure_get_string (s, "time-source");
  return TRUE;
}

/* The reference timestamp of buf in unix us, from an NTP or unix one. */
static gint64
reference_unix_us (GstBuffer *buf, const gchar **time_source)
{
  static GstCaps *ntp, *unix_caps;
  static gsize once;
  GstReferenceTimestampMeta *ref;

  if (g_once_init_enter (&once)) {
    ntp = gst_caps_new_empty_simple ("timestamp/x-ntp");
    unix_caps = gst_caps_new_empty_simple ("timestamp/x-unix");
    GST_MINI_OBJECT_FLAG_SET (ntp, GST_MINI_OBJECT_FLAG_MAY_BE_LEAKED);
    GST_MINI_OBJECT_FLAG_SET (unix_caps, GST_MINI_OBJECT_FLAG_MAY_BE_LEAKED);
    g_once_init_leave (&once, 1);
  }
  ref = gst_buffer_get_reference_timestamp_meta (buf, ntp);
  if (ref && ref->timestamp >= NTP_UNIX_OFFSET * GST_SECOND) {
    *time_source = "ntp";
    return (gint64) ((ref->timestamp - NTP_UNIX_OFFSET * GST_SECOND) / 1000);
  }
  ref = gst_buffer_get_reference_timestamp_meta (buf, unix_caps);
  if (ref) {
    *time_source = "unix";
    return (gint64) (ref->timestamp / 1000);
  }
  return -1;
}

gint64
gst_nn_source_wallclock (GstElement *element, const GstSegment *segment,
    GstBuffer *buf, const gchar **time_source)
{
  GstClock *clock;
  GstClockTime rt, now, base;
  gint64 us = reference_unix_us (buf, time_source);

  if (us >= 0)
    return us;
  /* no running time, or no clock yet (prerolling): the system time now */
  *time_source = "system";
  if (!GST_BUFFER_PTS_IS_VALID (buf) || segment == NULL
      || segment->format != GST_FORMAT_TIME)
    return g_get_real_time ();
  rt = gst_segment_to_running_time (segment, GST_FORMAT_TIME,
      GST_BUFFER_PTS (buf));
  clock = gst_element_get_clock (element);
  if (clock == NULL || !GST_CLOCK_TIME_IS_VALID (rt)) {
    if (clock)
      gst_object_unref (clock);
    return g_get_real_time ();
  }
  now = gst_clock_get_time (clock);
  base = gst_element_get_base_time (element);
  gst_object_unref (clock);
  *time_source = "clock";
  /* the system time now, less how long ago (or ahead) the frame's running
   * time is on the pipeline clock */
  return g_get_real_time () - GST_CLOCK_DIFF (base + rt, now) / 1000;
}

gchar *
gst_nn_source_iso8601 (gint64 unix_us)
{
  GDateTime *dt = g_date_time_new_from_unix_utc (unix_us / G_USEC_PER_SEC);
  gchar *date, *iso;

  if (dt == NULL)
    return g_strdup ("");
  date = g_date_time_format (dt, "%Y-%m-%dT%H:%M:%S");
  iso = g_strdup_printf ("%s.%03dZ", date,
      (gint) (unix_us % G_USEC_PER_SEC / 1000));
  g_free (date);
  g_date_time_unref (dt);
  return iso;
}

void
gst_nn_source_structure_set (GstStructure *s, GstBuffer *buf)
{
  GstNnSource src;

  if (!gst_nn_source_meta_get (buf, &src))
    return;
  gst_structure_set (s, "frame", G_TYPE_UINT64, src.frame, NULL);
  if (src.source_id)
    gst_structure_set (s, "source-id", G_TYPE_STRING, src.source_id, NULL);
  if (src.unix_us >= 0) {
    gchar *iso = gst_nn_source_iso8601 (src.unix_us);

    gst_structure_set (s, "unix-ms", G_TYPE_INT64, src.unix_us / 1000, "time",
        G_TYPE_STRING, iso, NULL);
    g_free (iso);
  }
}
