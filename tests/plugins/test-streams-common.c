/* Helpers of the many-streams tests (test-streams.c: streams and batching;
 * test-streams-replicas.c: replicated stages): feeds pushed from threads
 * into an nnpipeline's request pads, checked against a whole-model nnstage
 * (test-streams-common.h). */
#include "test-streams-common.h"

#include <gst/video/video.h>
#include <math.h>
#include <string.h>

/* struct layouts only: the metas are registered by the plugin */
#include "gstnnframemeta.h"
#include "gstnnmeta.h"

#define CUSTOM_META "NnpTestStreamMeta"

static GstMeta *
add_plugin_meta (GstBuffer *buf, const gchar *impl)
{
  const GstMetaInfo *info = gst_meta_get_info (impl);

  fail_unless (info != NULL, "%s not registered", impl);
  return gst_buffer_add_meta (buf, info, NULL);
}

static GstMeta *
get_plugin_meta (GstBuffer *buf, const gchar *api_name)
{
  GType api = g_type_from_name (api_name);

  fail_unless (api != 0, "%s not registered", api_name);
  return gst_buffer_get_meta (buf, api);
}

void
add_frame_metas (GstBuffer *b, guint stream, guint i)
{
  static gsize once;
  GstNnFrameMeta *fm;
  GstNnTransformMeta *tm;
  GstVideoRegionOfInterestMeta *roi;
  GstCustomMeta *cm;
  GstBuffer *frame = gst_buffer_new_allocate (NULL, 16, NULL);

  if (g_once_init_enter (&once)) {
    const gchar *tags[] = { NULL };

    gst_meta_register_custom (CUSTOM_META, tags, NULL, NULL, NULL);
    /* the plugin registers its metas with their first use */
    nnp_test_launch_stop (nnp_test_launch_to_eos (
        "videotestsrc num-buffers=1 ! video/x-raw,width=16,height=16 ! nnconvert keep-frame=true ! fakesink",
        30 * GST_SECOND));
    g_once_init_leave (&once, 1);
  }
  GST_BUFFER_PTS (frame) = stream_pts (stream, i);
  fm = (GstNnFrameMeta *) add_plugin_meta (b, "GstNnFrameMeta");
  fm->frame = frame; /* the meta's reference */
  gst_video_info_set_format (&fm->info, GST_VIDEO_FORMAT_GRAY8, 4, 4);
  fm->n_rois = fm->roi_index = fm->roi_id = -1;
  tm = (GstNnTransformMeta *) add_plugin_meta (b, "GstNnTransformMeta");
  tm->source_width = 100 + stream;
  tm->source_height = 1000 + i;
  tm->scale_x = tm->scale_y = 1.0;
  roi = gst_buffer_add_video_region_of_interest_meta (b, "nnp-test", stream, i, 1, 1);
  roi->id = (gint) (stream * 1000 + i);
  cm = gst_buffer_add_custom_meta (b, CUSTOM_META);
  gst_structure_set (gst_custom_meta_get_structure (cm), "stream", G_TYPE_UINT, stream, "frame",
                     G_TYPE_UINT, i, NULL);
}

void
check_frame_metas (GstBuffer *b, guint stream, guint i)
{
  GstNnFrameMeta *fm = (GstNnFrameMeta *) get_plugin_meta (b, "GstNnFrameMetaAPI");
  GstNnTransformMeta *tm = (GstNnTransformMeta *) get_plugin_meta (b, "GstNnTransformMetaAPI");
  GstVideoRegionOfInterestMeta *roi = gst_buffer_get_video_region_of_interest_meta (b);
  GstCustomMeta *cm = gst_buffer_get_custom_meta (b, CUSTOM_META);
  guint s_got = G_MAXUINT, i_got = G_MAXUINT;

  fail_unless (fm != NULL && fm->frame != NULL, "stream %u frame %u: no frame meta", stream, i);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (fm->frame), stream_pts (stream, i));
  fail_unless (tm != NULL, "stream %u frame %u: no transform meta", stream, i);
  fail_unless_equals_int (tm->source_width, 100 + stream);
  fail_unless_equals_int (tm->source_height, 1000 + i);
  fail_unless (roi != NULL, "stream %u frame %u: no ROI meta", stream, i);
  fail_unless_equals_int (roi->id, stream * 1000 + i);
  fail_unless_equals_int (roi->x, stream);
  fail_unless_equals_int (roi->y, i);
  fail_unless (cm != NULL, "stream %u frame %u: no custom meta", stream, i);
  fail_unless (gst_structure_get_uint (gst_custom_meta_get_structure (cm), "stream", &s_got));
  fail_unless (gst_structure_get_uint (gst_custom_meta_get_structure (cm), "frame", &i_got));
  fail_unless_equals_int (s_got, stream);
  fail_unless_equals_int (i_got, i);
  /* one of each: no meta of another frame of the batch came along */
  fail_unless_equals_int (gst_buffer_get_n_meta (b, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE), 1);
  fail_unless_equals_int (gst_buffer_get_n_meta (b, g_type_from_name ("GstNnFrameMetaAPI")), 1);
}

gsize
n_floats (const Feed *f)
{
  return (gsize) 3 * f->h_px * f->w_px;
}

GstClockTime
stream_pts (guint stream, guint i)
{
  return stream * 1000 * GST_SECOND + i * NNP_TEST_FRAME_DURATION;
}

gpointer
feed_thread (gpointer data)
{
  Feed *f = data;

  for (guint i = 0; i < f->n; i++) {
    GstBuffer *b;

    if (f->delay_us)
      g_usleep (f->delay_us);
    if (f->bad_frame && i == f->bad_frame)
      b = nnp_test_random_buffer (n_floats (f) - 1, f->seed + i);
    else
      b = nnp_test_random_frame (n_floats (f), f->seed + i, i);
    GST_BUFFER_PTS (b) = stream_pts (f->index, i);
    if (f->metas)
      add_frame_metas (b, f->index, i);
    f->last = gst_harness_push (f->h, b);
    if (f->last != GST_FLOW_OK)
      return NULL;
  }
  fail_unless (gst_harness_push_event (f->h, gst_event_new_eos ()));
  return NULL;
}

/* The whole model's outputs for a feed's frames (nnstage). */
GPtrArray *
reference (const gchar *model, const Feed *f, guint n)
{
  GstHarness *h = nnp_test_harness_take (nnp_test_make ("nnstage", "model", model, NULL));
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  gchar *caps = nnp_test_tensor_caps (3, f->h_px, f->w_px);

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  nnp_test_push_frames (h, n_floats (f), f->seed, 0, n);
  nnp_test_pull_frames (h, 0, n, out);
  gst_harness_teardown (h);
  return out;
}

/* test-streams-common.h */
gboolean bit_exact;

void
assert_same (GstBuffer *ref, GstBuffer *got, const gchar *what, guint i)
{
  GstMapInfo ma, mb;

  fail_unless (gst_buffer_map (ref, &ma, GST_MAP_READ));
  fail_unless (gst_buffer_map (got, &mb, GST_MAP_READ));
  fail_unless (ma.size == mb.size,
               "%s frame %u: %" G_GSIZE_FORMAT " bytes instead of %" G_GSIZE_FORMAT, what, i,
               mb.size, ma.size);
  if (memcmp (ma.data, mb.data, ma.size) != 0) {
    const gfloat *fa = (const gfloat *) ma.data, *fb = (const gfloat *) mb.data;

    for (gsize k = 0; k < ma.size / sizeof (gfloat); k++) {
      gdouble d = fabs ((gdouble) fa[k] - fb[k]);

      fail_unless (!bit_exact || fa[k] == fb[k],
                   "%s frame %u value %" G_GSIZE_FORMAT
                   ": %.9g instead of %.9g (bit-exact expected)",
                   what, i, k, fb[k], fa[k]);
      fail_unless (d <= 1e-6 * MAX (fabs (fa[k]), fabs (fb[k])) + 1e-30,
                   "%s frame %u value %" G_GSIZE_FORMAT ": %.9g instead of %.9g", what, i, k, fb[k],
                   fa[k]);
    }
  }
  gst_buffer_unmap (ref, &ma);
  gst_buffer_unmap (got, &mb);
}

/* Pull what stream f gave (expect frames, then EOS), compare with the
 * whole model, check PTS, segment and caps. */
void
check_stream (const gchar *model, Feed *f, guint expect)
{
  GPtrArray *ref = reference (model, f, expect);
  gchar *what = g_strdup_printf ("stream %u", f->index);
  GstEvent *ev;
  GstSegment *seg;
  guint got = 0;
  gboolean eos = FALSE;
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;

  /* frames and EOS come from another thread, in two queues of the
   * harness: every frame before EOS is in the buffer queue once EOS is */
  for (;;) {
    GstBuffer *b;

    while (!eos && (ev = gst_harness_try_pull_event (f->h))) {
      eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
      gst_event_unref (ev);
    }
    b = gst_harness_try_pull (f->h);
    if (b == NULL) {
      if (eos)
        break;
      fail_unless (g_get_monotonic_time () < deadline, "%s: no EOS after %u frames", what, got);
      g_usleep (1000);
      continue;
    }
    fail_unless (got < expect, "%s: more than %u frames", what, expect);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), stream_pts (f->index, got));
    if (f->metas)
      check_frame_metas (b, f->index, got);
    assert_same (g_ptr_array_index (ref, got), b, what, got);
    gst_buffer_unref (b);
    got++;
  }
  fail_unless (got == expect, "%s: %u frames at EOS, expected %u", what, got, expect);

  /* its own segment (base = its index) reached its own pad */
  ev = gst_pad_get_sticky_event (f->h->sinkpad, GST_EVENT_SEGMENT, 0);
  fail_unless (ev != NULL, "%s: no segment", what);
  gst_event_parse_segment (ev, (const GstSegment **) &seg);
  fail_unless_equals_uint64 (seg->base, f->index * GST_SECOND);
  gst_event_unref (ev);
  /* and its own stream-start: the stream id survives */
  {
    GstEvent *in = gst_pad_get_sticky_event (f->h->srcpad, GST_EVENT_STREAM_START, 0);
    const gchar *id_in = NULL, *id_out = NULL;

    ev = gst_pad_get_sticky_event (f->h->sinkpad, GST_EVENT_STREAM_START, 0);
    fail_unless (in != NULL && ev != NULL, "%s: no stream-start", what);
    gst_event_parse_stream_start (in, &id_in);
    gst_event_parse_stream_start (ev, &id_out);
    fail_unless_equals_string (id_out, id_in);
    gst_event_unref (in);
    gst_event_unref (ev);
  }
  g_ptr_array_unref (ref);
  g_free (what);
}

/* nnpipeline with props, a harness per stream (sink_N -> src_N). */
GstElement *
make_pipeline (const gchar *model, const gchar *devices, GstBus **bus)
{
  GstElement *p =
      nnp_test_make ("nnpipeline", "model", model, "stages", "2", "stats-interval", 0, NULL);

  if (devices)
    g_object_set (p, "devices", devices, NULL);
  gst_object_ref_sink (p);
  *bus = gst_bus_new ();
  gst_element_set_bus (p, *bus);
  return p;
}

void
start_feed (GstElement *p, Feed *f)
{
  gchar *sink = g_strdup_printf ("sink_%u", f->index);
  gchar *src = g_strdup_printf ("src_%u", f->index);
  gchar *caps =
      f->short_caps ? g_strdup_printf (
          "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:3,framerate=30/1",
          f->w_px, f->h_px)
                    : nnp_test_tensor_caps (3, f->h_px, f->w_px);
  GstSegment segment;

  f->h = gst_harness_new_with_element (p, sink, src);
  fail_unless (f->h != NULL);
  gst_harness_set_src_caps_str (f->h, caps);
  /* its own segment, to see it come out on its own pad */
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.base = f->index * GST_SECOND;
  fail_unless (gst_harness_push_event (f->h, gst_event_new_segment (&segment)));
  g_free (caps);
  g_free (sink);
  g_free (src);
}

/* Push the started feeds[] from a thread each; expect[i] frames out of
 * stream i. */
void
feed_and_check (const gchar *model, Feed *feeds, guint n, const guint *expect)
{
  GThread *threads[N_STREAMS];

  for (guint i = 0; i < n; i++)
    threads[i] = g_thread_new ("feed", feed_thread, &feeds[i]);
  for (guint i = 0; i < n; i++)
    g_thread_join (threads[i]);
  for (guint i = 0; i < n; i++)
    check_stream (model, &feeds[i], expect[i]);
}

/* Run feeds[] at once through a new nnpipeline. */
void
run_streams (const gchar *model, const gchar *devices, Feed *feeds, guint n, const guint *expect,
             GstBus **bus_out, GstElement **p_out)
{
  GstBus *bus;
  GstElement *p = make_pipeline (model, devices, &bus);

  for (guint i = 0; i < n; i++)
    start_feed (p, &feeds[i]);
  feed_and_check (model, feeds, n, expect);
  *bus_out = bus;
  *p_out = p;
}

void
finish (GstElement *p, GstBus *bus, Feed *feeds, guint n)
{
  for (guint i = 0; i < n; i++)
    gst_harness_teardown (feeds[i].h);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
}

void
no_error (GstBus *bus)
{
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);

  if (m) {
    GError *err = NULL;

    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
      gst_message_parse_error (m, &err, NULL);
    else
      gst_message_parse_warning (m, &err, NULL);
    fail ("unexpected message: %s", err->message);
  }
}

void
init_feeds (Feed *feeds, guint n, guint frames)
{
  memset (feeds, 0, sizeof (Feed) * n);
  for (guint i = 0; i < n; i++) {
    feeds[i].index = i;
    feeds[i].n = frames;
    feeds[i].seed = 1000 * (i + 1);
    feeds[i].h_px = 16;
    feeds[i].w_px = 16;
  }
}
