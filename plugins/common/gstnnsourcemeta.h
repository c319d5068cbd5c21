/* GStreamer nnpipe plugin: where and when a frame comes from.
 *
 * nnconvert puts one "GstNnSourceMeta" on every tensor buffer it makes and
 * on the frame it keeps (keep-frame=true), so the results of the frame say
 * where and when it was taken, whatever was dropped or batched on the way:
 *
 *   nnpipe/source, frame=(guint64)41, source-id=(string)cam0,
 *       unix-us=(gint64)1795784701123456, time-source=(string)ntp
 *
 * frame: the frame's number at its source (nnconvert counts the frames it
 * receives from 0 since it started: a frame dropped later, by the drop
 * policy of live input, is a gap); source-id: nnconvert's source-id
 * property (absent when unset); unix-us: the wall-clock time of the frame
 * in microseconds since 1970, from the frame's GstReferenceTimestampMeta
 * when the source gave one (time-source "ntp": timestamp/x-ntp, RTSP with
 * `rtspsrc add-reference-timestamp-meta=true` and RTCP sender reports;
 * "unix": timestamp/x-unix), else its running time mapped through the
 * pipeline clock to the system time (time-source "clock"), else (no clock
 * yet: a frame prerolling; no timestamp) the system time when nnconvert
 * saw it (time-source "system").
 *
 * It is a GstCustomMeta (no tags: every element copies it), so PyGObject
 * reads it too: buf.get_custom_meta("GstNnSourceMeta").get_structure(). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_NN_SOURCE_META_NAME "GstNnSourceMeta"
#define GST_NN_SOURCE_STRUCT_NAME "nnpipe/source"

/* Register the meta (once; any thread). */
void gst_nn_source_meta_register (void);

/* What the meta says. */
typedef struct
{
  guint64 frame;
  const gchar *source_id;   /* borrowed from the buffer's meta, or NULL */
  gint64 unix_us;           /* -1: unknown */
  const gchar *time_source; /* "ntp", "unix", "clock", "system" (static),
                             * or NULL */
} GstNnSource;

/* Is meta a GstNnSourceMeta? */
gboolean gst_nn_source_meta_is (const GstMeta *meta);

/* Add the meta to a writable buffer (source_id may be NULL), replacing
 * one it has. */
void gst_nn_source_meta_add (GstBuffer *buf, const GstNnSource *src);

/* The buffer's meta into *src (borrowed strings); FALSE when it has none. */
gboolean gst_nn_source_meta_get (GstBuffer *buf, GstNnSource *src);

/* Where and when buf was taken, into a results message's structure:
 * "frame" (guint64), "source-id" (when set), "unix-ms" (gint64) and
 * "time" (ISO-8601); nothing when buf has no GstNnSourceMeta. */
void gst_nn_source_structure_set (GstStructure *s, GstBuffer *buf);

/* The wall-clock time of buf (in element, whose segment is `segment`) in
 * unix microseconds, and which clock said it ("ntp", "unix", "clock",
 * "system"). */
gint64 gst_nn_source_wallclock (GstElement *element, const GstSegment *segment,
    GstBuffer *buf, const gchar **time_source);

/* unix microseconds as ISO-8601 UTC with milliseconds,
 * "2026-11-27T13:05:01.123Z".  g_free(). */
gchar *gst_nn_source_iso8601 (gint64 unix_us);

G_END_DECLS
