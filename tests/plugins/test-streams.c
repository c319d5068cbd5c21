/* Several streams through one nnpipeline (request pads sink_%u / src_%u,
 * issue 13 item 1) and replicated stages (item 2):
 *
 * - 4 streams of different content (their own seeds, timestamps and
 *   segments), pushed from 4 threads at once into one nnpipeline of 2
 *   stages: each stream's outputs equal its own run through a whole-model
 *   nnstage, frame for frame, in order, with its own PTS, caps, segment and
 *   EOS, counted per stream at EOS;
 * - a stream that ends early leaves the others running to the end;
 * - a stream that errors (a frame of the wrong size; caps the model cannot
 *   take) ends alone with a warning naming it, the others run to the end;
 * - a model whose inputs have another size on one stream: both streams'
 *   outputs right (the stages re-specialise between frames);
 * - replicas: `devices=cpu:1,cpu:1*2` runs stage 1 on two replicas; the
 *   outputs are identical to the whole model's and in order, and both
 *   replicas did work;
 * - max-replicas=2 on a model whose bottleneck is one big Conv
 *   (benchmarks/make-bottleneck-model.py): the partitioner replicates the
 *   stage holding it (plan message), outputs still the whole model's;
 *   without max-replicas nothing is replicated;
 * - pin=true with `cpu:1*2`: each replica's thread on a core of its own
 *   (the threads' affinities in /proc), none pinned without pin;
 * - batching (batch-size, batch-timeout) on models with a dynamic batch
 *   dim: 4 streams batched, each output bit for bit its own single-frame
 *   run (Conv, pooling, Gemm, Softmax, two outputs of different ranks),
 *   the stages ran fewer buffers than frames; streams ending early or one
 *   slow stream: the others go on, counts at EOS; streams of two sizes go
 *   in separate batches; a flush takes a waiting frame out of its batch; a
 *   model with a fixed batch dim fails the start naming its input. */
#include "test-common.h"

#include <math.h>
#include <string.h>

#define N_STREAMS 4
#define FRAMES 30

typedef struct
{
  GstHarness *h;
  guint index;
  guint n;                      /* frames to push */
  guint32 seed;
  gint h_px, w_px;
  guint bad_frame;              /* push a wrong-size frame here (0: none) */
  gulong delay_us;              /* sleep before each frame (a slow stream) */
  gboolean short_caps;          /* caps without the outer 1 ("16:16:3") */
  GstFlowReturn last;
} Feed;

static gsize
n_floats (const Feed * f)
{
  return (gsize) 3 * f->h_px * f->w_px;
}

static GstClockTime
stream_pts (guint stream, guint i)
{
  return stream * 1000 * GST_SECOND + i * NNP_TEST_FRAME_DURATION;
}

static gpointer
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
    f->last = gst_harness_push (f->h, b);
    if (f->last != GST_FLOW_OK)
      return NULL;
  }
  fail_unless (gst_harness_push_event (f->h, gst_event_new_eos ()));
  return NULL;
}

/* The whole model's outputs for a feed's frames (nnstage). */
static GPtrArray *
reference (const gchar * model, const Feed * f, guint n)
{
  GstHarness *h = nnp_test_harness_take (nnp_test_make ("nnstage", "model",
          model, NULL));
  GPtrArray *out =
      g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  gchar *caps = nnp_test_tensor_caps (3, f->h_px, f->w_px);

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  nnp_test_push_frames (h, n_floats (f), f->seed, 0, n);
  nnp_test_pull_frames (h, 0, n, out);
  gst_harness_teardown (h);
  return out;
}

/* Outputs must be the reference's bit for bit (batching), not within
 * 1e-6. */
static gboolean bit_exact;

static void
assert_same (GstBuffer * ref, GstBuffer * got, const gchar * what, guint i)
{
  GstMapInfo ma, mb;

  fail_unless (gst_buffer_map (ref, &ma, GST_MAP_READ));
  fail_unless (gst_buffer_map (got, &mb, GST_MAP_READ));
  fail_unless (ma.size == mb.size, "%s frame %u: %" G_GSIZE_FORMAT
      " bytes instead of %" G_GSIZE_FORMAT, what, i, mb.size, ma.size);
  if (memcmp (ma.data, mb.data, ma.size) != 0) {
    const gfloat *fa = (const gfloat *) ma.data, *fb = (const gfloat *) mb.data;

    for (gsize k = 0; k < ma.size / sizeof (gfloat); k++) {
      gdouble d = fabs ((gdouble) fa[k] - fb[k]);

      fail_unless (!bit_exact || fa[k] == fb[k], "%s frame %u value %"
          G_GSIZE_FORMAT ": %.9g instead of %.9g (bit-exact expected)", what,
          i, k, fb[k], fa[k]);
      fail_unless (d <= 1e-6 * MAX (fabs (fa[k]), fabs (fb[k])) + 1e-30,
          "%s frame %u value %" G_GSIZE_FORMAT ": %.9g instead of %.9g",
          what, i, k, fb[k], fa[k]);
    }
  }
  gst_buffer_unmap (ref, &ma);
  gst_buffer_unmap (got, &mb);
}

/* Pull what stream f gave (expect frames, then EOS), compare with the
 * whole model, check PTS, segment and caps. */
static void
check_stream (const gchar * model, Feed * f, guint expect)
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
      fail_unless (g_get_monotonic_time () < deadline, "%s: no EOS after %u "
          "frames", what, got);
      g_usleep (1000);
      continue;
    }
    fail_unless (got < expect, "%s: more than %u frames", what, expect);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), stream_pts (f->index, got));
    assert_same (g_ptr_array_index (ref, got), b, what, got);
    gst_buffer_unref (b);
    got++;
  }
  fail_unless (got == expect, "%s: %u frames at EOS, expected %u", what, got,
      expect);

  /* its own segment (base = its index) reached its own pad */
  ev = gst_pad_get_sticky_event (f->h->sinkpad, GST_EVENT_SEGMENT, 0);
  fail_unless (ev != NULL, "%s: no segment", what);
  gst_event_parse_segment (ev, (const GstSegment **) &seg);
  fail_unless_equals_uint64 (seg->base, f->index * GST_SECOND);
  gst_event_unref (ev);
  g_ptr_array_unref (ref);
  g_free (what);
}

/* nnpipeline with props, a harness per stream (sink_N -> src_N). */
static GstElement *
make_pipeline (const gchar * model, const gchar * devices, GstBus ** bus)
{
  GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages", "2",
      "stats-interval", 0, NULL);

  if (devices)
    g_object_set (p, "devices", devices, NULL);
  gst_object_ref_sink (p);
  *bus = gst_bus_new ();
  gst_element_set_bus (p, *bus);
  return p;
}

static void
start_feed (GstElement * p, Feed * f)
{
  gchar *sink = g_strdup_printf ("sink_%u", f->index);
  gchar *src = g_strdup_printf ("src_%u", f->index);
  gchar *caps = f->short_caps ? g_strdup_printf ("other/tensors,format="
      "static,num_tensors=1,types=float32,dimensions=%d:%d:3,framerate=30/1",
      f->w_px, f->h_px) : nnp_test_tensor_caps (3, f->h_px, f->w_px);
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
static void
feed_and_check (const gchar * model, Feed * feeds, guint n,
    const guint * expect)
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
static void
run_streams (const gchar * model, const gchar * devices, Feed * feeds,
    guint n, const guint * expect, GstBus ** bus_out, GstElement ** p_out)
{
  GstBus *bus;
  GstElement *p = make_pipeline (model, devices, &bus);

  for (guint i = 0; i < n; i++)
    start_feed (p, &feeds[i]);
  feed_and_check (model, feeds, n, expect);
  *bus_out = bus;
  *p_out = p;
}

static void
finish (GstElement * p, GstBus * bus, Feed * feeds, guint n)
{
  for (guint i = 0; i < n; i++)
    gst_harness_teardown (feeds[i].h);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
}

static void
no_error (GstBus * bus)
{
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR |
      GST_MESSAGE_WARNING);

  if (m) {
    GError *err = NULL;

    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
      gst_message_parse_error (m, &err, NULL);
    else
      gst_message_parse_warning (m, &err, NULL);
    fail ("unexpected message: %s", err->message);
  }
}

/* frames-out of the final nnpipeline-stats message on bus (posted before the
 * last stream's EOS left). */
static guint64
final_frames (GstBus * bus)
{
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    gboolean final = FALSE;
    guint64 out = 0;

    if (gst_structure_has_name (s, "nnpipeline-stats")
        && gst_structure_get_boolean (s, "final", &final) && final) {
      fail_unless (gst_structure_get_uint64 (s, "frames-out", &out));
      gst_message_unref (m);
      return out;
    }
    gst_message_unref (m);
  }
  fail ("no final nnpipeline-stats message");
  return 0;
}

static void
init_feeds (Feed * feeds, guint n, guint frames)
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

GST_START_TEST (test_four_streams)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS];
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, N_STREAMS, FRAMES);
  for (guint i = 0; i < N_STREAMS; i++) {
    /* different lengths too */
    feeds[i].n = FRAMES + 3 * i;
    expect[i] = feeds[i].n;
  }
  run_streams (model, NULL, feeds, N_STREAMS, expect, &bus, &p);
  /* the stages' statistics cover every stream */
  fail_unless_equals_uint64 (final_frames (bus), 4 * FRAMES + 3 * 6);
  no_error (bus);
  finish (p, bus, feeds, N_STREAMS);
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_stream_ends_early)
{
  gchar *model = nnp_test_model_path ("unet.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, 2, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].n = 2;
  run_streams (model, NULL, feeds, 3, expect, &bus, &p);
  no_error (bus);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_stream_errors)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, 5, FRAMES };
  GstBus *bus;
  GstElement *p;
  GError *err;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].bad_frame = 5;
  run_streams (model, NULL, feeds, 3, expect, &bus, &p);
  fail_unless_equals_int (feeds[1].last, GST_FLOW_ERROR);
  err = nnp_test_pop_message (bus, GST_MESSAGE_WARNING, NULL, "bad frame");
  fail_unless (strstr (err->message, "stream 1 (pad sink_1) stopped: a frame "
          "of 3068 bytes, its caps say 3072") != NULL, "%s", err->message);
  g_error_free (err);
  no_error (bus);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

/* A stream whose caps the model cannot take (1 channel) is refused alone. */
GST_START_TEST (test_stream_bad_caps)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  GstHarness *bad;
  GError *err;
  GstEvent *ev;
  gchar *caps = nnp_test_tensor_caps (1, 16, 16);

  init_feeds (feeds, 2, FRAMES);
  feeds[1].index = 2;
  start_feed (p, &feeds[0]);
  bad = gst_harness_new_with_element (p, "sink_1", "src_1");
  fail_unless (gst_harness_push_event (bad, gst_event_new_stream_start
          ("bad")));
  /* refused (a sticky event: the push may still say it was stored) */
  gst_harness_push_event (bad, gst_event_new_caps (gst_caps_from_string
          (caps)));
  g_free (caps);
  {
    GstSegment segment;

    gst_segment_init (&segment, GST_FORMAT_TIME);
    fail_unless (gst_harness_push_event (bad,
            gst_event_new_segment (&segment)));
  }
  err = nnp_test_pop_message (bus, GST_MESSAGE_WARNING, NULL, "bad caps");
  fail_unless (strstr (err->message, "stream 1 (pad sink_1) stopped:") != NULL
      && strstr (err->message, "input 'x'") != NULL, "%s", err->message);
  g_error_free (err);
  fail_unless_equals_int (gst_harness_push (bad,
          nnp_test_random_buffer (16 * 16, 1)), GST_FLOW_NOT_NEGOTIATED);
  /* its EOS came out */
  for (gboolean eos = FALSE; !eos;) {
    ev = gst_harness_pull_event (bad);
    fail_unless (ev != NULL, "no EOS on src_1");
    eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
  }
  start_feed (p, &feeds[1]);
  feed_and_check (model, feeds, 2, expect);
  no_error (bus);
  gst_harness_teardown (bad);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;

/* Streams of different sizes share the stages. */
GST_START_TEST (test_streams_sizes)
{
  gchar *model = nnp_test_model_path ("unet.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 2, FRAMES);
  feeds[1].h_px = 8;
  feeds[1].w_px = 24;
  run_streams (model, NULL, feeds, 2, expect, &bus, &p);
  no_error (bus);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;

/* Frames each nnstage inside the replicated stage `name` of p ran. */
static void
replica_frames (GstElement * p, const gchar * name, guint want_replicas)
{
  GstElement *rep = gst_bin_get_by_name (GST_BIN (p), name);
  GstIterator *it;
  GValue v = G_VALUE_INIT;
  guint n = 0;
  guint64 total = 0;

  fail_unless (rep != NULL && GST_IS_BIN (rep), "no replicated %s", name);
  it = gst_bin_iterate_elements (GST_BIN (rep));
  while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&v);
    GstElementFactory *f = gst_element_get_factory (e);

    if (f && g_strcmp0 (GST_OBJECT_NAME (f), "nnstage") == 0) {
      guint64 frames = 0;

      g_object_get (e, "frames", &frames, NULL);
      fail_unless (frames > 0, "%s: replica %s ran no frame", name,
          GST_OBJECT_NAME (e));
      total += frames;
      n++;
    }
    g_value_unset (&v);
  }
  gst_iterator_free (it);
  fail_unless_equals_int (n, want_replicas);
  g_object_get (rep, "frames", &total, NULL);
  fail_unless (total > 0);
  gst_object_unref (rep);
}

/* The output of h held back for a while, so that frames pile up in the
 * replicas whatever the machine's load: the dispatcher then has to use
 * every replica (with output flowing, one fast replica may be idle each
 * time a frame comes, and rightly gets them all). */
typedef struct
{
  GstPad *pad;
  gulong id;
} Hold;

static GstPadProbeReturn
hold_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  return GST_PAD_PROBE_OK;
}

static gpointer
release_thread (gpointer data)
{
  Hold *hold = data;

  g_usleep (300 * 1000);
  gst_pad_remove_probe (hold->pad, hold->id);
  return NULL;
}

/* Push frames 0..n-1 of f into h with its output held for 300 ms. */
static void
push_held (GstHarness * h, Feed * f, guint n)
{
  Hold hold;
  GThread *t;

  hold.pad = h->sinkpad;
  hold.id = gst_pad_add_probe (h->sinkpad, GST_PAD_PROBE_TYPE_BLOCK |
      GST_PAD_PROBE_TYPE_BUFFER, hold_probe, NULL, NULL);
  t = g_thread_new ("release", release_thread, &hold);
  nnp_test_push_frames (h, n_floats (f), f->seed, 0, n);
  g_thread_join (t);
}

/* Replicated stages: outputs identical to the whole model's, in order. */
static void
check_replicas (const gchar * model_name, const gchar * stages,
    const gchar * devices, const gchar * replicated, guint replicas)
{
  gchar *model = nnp_test_model_path (model_name);
  GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages",
      stages, "devices", devices, "stats-interval", 0, NULL);
  GstHarness *h;
  Feed f;
  GPtrArray *ref, *got;
  gchar *caps, *what = g_strdup_printf ("%s devices=%s", model_name, devices);
  guint n = 60;

  init_feeds (&f, 1, n);
  gst_object_ref_sink (p);
  h = gst_harness_new_with_element (p, "sink", "src");
  caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  ref = reference (model, &f, n);
  got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  push_held (h, &f, n);
  nnp_test_pull_frames (h, 0, n, got);
  nnp_test_finish_eos (h);
  for (guint i = 0; i < n; i++) {
    GstBuffer *b = g_ptr_array_index (got, i);

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), i * NNP_TEST_FRAME_DURATION);
    assert_same (g_ptr_array_index (ref, i), b, what, i);
  }
  replica_frames (p, replicated, replicas);
  g_ptr_array_unref (ref);
  g_ptr_array_unref (got);
  gst_harness_teardown (h);
  gst_object_unref (p);
  g_free (model);
  g_free (what);
}

GST_START_TEST (test_replicas)
{
  check_replicas ("residual.onnx", "2", "cpu:1,cpu:1*2", "stage1", 2);
  check_replicas ("unet.onnx", "2", "cpu:1*2,cpu:1", "stage0", 2);
  check_replicas ("two-out.onnx", "1", "cpu:1*3", "stage0", 3);
}

GST_END_TEST;

/* Cores that threads of this process are pinned to alone (a thread whose
 * affinity is one core), as a bit mask. */
static guint64
single_core_threads (void)
{
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *tid;
  guint64 mask = 0;

  fail_unless (dir != NULL);
  while ((tid = g_dir_read_name (dir))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/status", tid);
    const gchar *key = "Cpus_allowed_list:\t";
    gchar *text = NULL, *line, *end;
    gint64 core;

    if (g_file_get_contents (path, &text, NULL, NULL)
        && (line = strstr (text, key))) {
      core = g_ascii_strtoll (line + strlen (key), &end, 10);
      /* one core alone, not a list or range */
      if (end != line + strlen (key) && *end == '\n' && core >= 0
          && core < 64)
        mask |= G_GUINT64_CONSTANT (1) << core;
    }
    g_free (text);
    g_free (path);
  }
  g_dir_close (dir);
  return mask;
}

/* A stage pins its thread only while it runs (nnp_thread_pool_enter/_leave),
 * so the cores are seen by watching the threads while frames are in flight. */
typedef struct
{
  gint stop;
  guint64 mask;
} Watch;

static gpointer
watch_thread (gpointer data)
{
  Watch *w = data;

  while (!g_atomic_int_get (&w->stop)) {
    w->mask |= single_core_threads ();
    g_usleep (100);
  }
  return NULL;
}

/* pin=true: the replicas of `cpu:1*2` run on cores of their own
 * (each while it runs); the
 * outputs are still the whole model's, in order. */
GST_START_TEST (test_replicas_pinned)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  gint n_cores = MIN (g_get_num_processors (), 2);

  for (gint pin = 0; pin <= 1; pin++) {
    GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages",
        "1", "devices", "cpu:1*2", "pin", pin, "stats-interval", 0, NULL);
    GstHarness *h;
    Feed f;
    GPtrArray *ref, *got;
    gchar *caps;
    guint n = 20;
    guint64 mask;

    Watch w = { 0, 0 };
    GThread *watcher;

    init_feeds (&f, 1, n);
    /* frames big enough that a run lasts milliseconds */
    f.h_px = f.w_px = 160;
    gst_object_ref_sink (p);
    fail_unless_equals_uint64 (single_core_threads (), 0);
    h = gst_harness_new_with_element (p, "sink", "src");
    caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
    gst_harness_set_src_caps_str (h, caps);
    g_free (caps);
    ref = reference (model, &f, n);
    got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
    watcher = g_thread_new ("watch", watch_thread, &w);
    push_held (h, &f, n);
    nnp_test_pull_frames (h, 0, n, got);
    g_atomic_int_set (&w.stop, 1);
    g_thread_join (watcher);
    mask = w.mask;
    nnp_test_finish_eos (h);
    /* and no thread is left pinned once the frames are through */
    fail_unless_equals_uint64 (single_core_threads (), 0);
    for (guint i = 0; i < n; i++)
      assert_same (g_ptr_array_index (ref, i), g_ptr_array_index (got, i),
          "pinned replicas", i);
    replica_frames (p, "stage0", 2);
    /* pin: both cores of 0..1 (one on a 1-core machine); none without */
    fail_unless_equals_uint64 (mask, pin ? (G_GUINT64_CONSTANT (1) << n_cores)
        - 1 : 0);
    g_ptr_array_unref (ref);
    g_ptr_array_unref (got);
    gst_harness_teardown (h);
    gst_object_unref (p);
  }
  g_free (model);
}

GST_END_TEST;

/* The replicas of the stages of the nnpipeline-plan message on bus. */
static gint
plan_replicas (GstBus * bus, gint * n_stages)
{
  GstMessage *m;
  gint total = 0;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);

    if (gst_structure_has_name (s, "nnpipeline-plan")) {
      const GValue *stages = gst_structure_get_value (s, "stages");

      *n_stages = (gint) gst_value_array_get_size (stages);
      for (gint k = 0; k < *n_stages; k++) {
        const GstStructure *st =
            gst_value_get_structure (gst_value_array_get_value (stages, k));
        gint r = 0;

        fail_unless (gst_structure_get_int (st, "replicas", &r));
        total += r;
      }
      gst_message_unref (m);
      return total;
    }
    gst_message_unref (m);
  }
  fail ("no nnpipeline-plan message");
  return 0;
}

static void
check_max_replicas (guint max_replicas, gint want_replicas)
{
  gchar *model = nnp_test_model_path ("bottleneck.onnx");
  GstElement *p;

  /* the predicted choice (a timing trial of plain threading against the
   * replicas could pick either on a loaded machine: partition-replicas
   * tests it) */
  g_setenv ("NNP_PLAN_MEASURE", "0", TRUE);
  p = nnp_test_make ("nnpipeline", "model", model, "devices",
      "cpu:1,cpu:1", "max-replicas", max_replicas, "stats-interval", 0, NULL);
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  Feed f;
  GPtrArray *ref, *got;
  gchar *caps;
  guint n = 20;
  gint n_stages = 0, replicas;

  init_feeds (&f, 1, n);
  gst_object_ref_sink (p);
  gst_element_set_bus (p, bus);
  h = gst_harness_new_with_element (p, "sink", "src");
  caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  ref = reference (model, &f, n);
  got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  push_held (h, &f, n);
  nnp_test_pull_frames (h, 0, n, got);
  nnp_test_finish_eos (h);
  for (guint i = 0; i < n; i++)
    assert_same (g_ptr_array_index (ref, i), g_ptr_array_index (got, i),
        "max-replicas", i);
  replicas = plan_replicas (bus, &n_stages);
  /* with replicas: one stage of 2 on the two cores (the big Conv cannot be
   * split); without: no stage replicated */
  fail_unless (replicas - n_stages == want_replicas - 1, "max-replicas=%u: "
      "%d stages, %d replicas in all", max_replicas, n_stages, replicas);
  if (want_replicas > 1)
    replica_frames (p, "stage0", want_replicas);
  no_error (bus);
  g_ptr_array_unref (ref);
  g_ptr_array_unref (got);
  gst_harness_teardown (h);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (model);
}

GST_START_TEST (test_max_replicas)
{
  check_max_replicas (2, 2);
  check_max_replicas (1, 1);
}

GST_END_TEST;

/* Replicas with several streams: each stream still equals its own run. */
GST_START_TEST (test_streams_replicas)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, FRAMES + 5, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].n = FRAMES + 5;
  run_streams (model, "cpu:1,cpu:1*2", feeds, 3, expect, &bus, &p);
  no_error (bus);
  replica_frames (p, "stage1", 2);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

/* Buffers stage k of p ran (a batch counts once). */
static guint64
stage_buffers (GstElement * p, const gchar * stage)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (p), stage);
  guint64 frames = 0;

  fail_unless (e != NULL, "no %s", stage);
  g_object_get (e, "frames", &frames, NULL);
  gst_object_unref (e);
  return frames;
}

/* Feeds through one nnpipeline with batch-size/batch-timeout; each stream's
 * outputs bit for bit its own whole-model run, counted at EOS; returns the
 * buffers stage0 ran. */
static guint64
run_batched (const gchar * model_name, const gchar * stages, guint batch,
    guint64 timeout, Feed * feeds, guint n, const guint * expect)
{
  gchar *model = nnp_test_model_path (model_name);
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  guint64 total = 0, ran;

  g_object_set (p, "stages", stages, "batch-size", batch, "batch-timeout",
      timeout, NULL);
  for (guint i = 0; i < n; i++) {
    start_feed (p, &feeds[i]);
    total += expect[i];
  }
  bit_exact = TRUE;
  feed_and_check (model, feeds, n, expect);
  bit_exact = FALSE;
  /* the statistics count frames, not batches */
  fail_unless_equals_uint64 (final_frames (bus), total);
  no_error (bus);
  ran = stage_buffers (p, "stage0");
  fail_unless (ran <= total, "%" G_GUINT64_FORMAT " buffers for %"
      G_GUINT64_FORMAT " frames", ran, total);
  finish (p, bus, feeds, n);
  g_free (model);
  return ran;
}

GST_START_TEST (test_batch_four_streams)
{
  const gchar *models[] = { "residual-batch.onnx", "mlp-batch.onnx" };
  const gchar *stages[] = { "2", "1" };

  for (guint m = 0; m < G_N_ELEMENTS (models); m++) {
    Feed feeds[N_STREAMS];
    guint expect[N_STREAMS];
    guint64 ran;

    init_feeds (feeds, N_STREAMS, FRAMES);
    for (guint i = 0; i < N_STREAMS; i++)
      expect[i] = FRAMES;
    /* caps may leave out the outer 1: the batch is on the model's dim 0 */
    feeds[1].short_caps = TRUE;
    /* a long timeout: batches leave when every stream has a frame in */
    ran = run_batched (models[m], stages[m], 4, 10 * GST_SECOND, feeds,
        N_STREAMS, expect);
    /* 4 threads push at once: most batches hold several frames */
    fail_unless (ran <= N_STREAMS * FRAMES / 2, "%s: %" G_GUINT64_FORMAT
        " batches for %u frames", models[m], ran, N_STREAMS * FRAMES);
  }
}

GST_END_TEST;

/* Streams ending early (with a long timeout: the batch stops waiting for
 * an ended stream) and a slow stream (a short timeout: the others do not
 * wait for it long): all to the end, counted at EOS. */
GST_START_TEST (test_batch_ends_and_slow)
{
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS] = { FRAMES, 3, FRAMES, 12 };
  guint slow[N_STREAMS] = { FRAMES, FRAMES, 8, FRAMES };
  gint64 t0;

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[1].n = 3;
  feeds[3].n = 12;
  run_batched ("residual-batch.onnx", "2", 4, 10 * GST_SECOND, feeds,
      N_STREAMS, expect);

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[2].n = 8;
  feeds[2].delay_us = 200 * 1000;
  t0 = g_get_monotonic_time ();
  run_batched ("residual-batch.onnx", "2", 4, 5 * GST_MSECOND, feeds,
      N_STREAMS, slow);
  /* 1.6 s for the slow stream's 8 frames; the others did not take a
   * 200 ms step per frame (30 frames: 6 s) */
  fail_unless (g_get_monotonic_time () - t0 < 5 * G_USEC_PER_SEC,
      "the slow stream stalled the others");
}

GST_END_TEST;

/* Two sizes: frames of equal caps only share a batch. */
GST_START_TEST (test_batch_sizes)
{
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS] = { FRAMES, FRAMES, FRAMES, FRAMES };

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[1].h_px = 24;
  feeds[3].h_px = 24;
  run_batched ("residual-batch.onnx", "2", 4, 20 * GST_MSECOND, feeds,
      N_STREAMS, expect);
}

GST_END_TEST;

typedef struct
{
  Feed *f;
  GstFlowReturn ret;
  gint done;
} PushOne;

static gpointer
push_one_thread (gpointer data)
{
  PushOne *po = data;
  GstBuffer *b = nnp_test_random_frame (n_floats (po->f), 999, 0);

  GST_BUFFER_PTS (b) = stream_pts (po->f->index, 0);
  po->ret = gst_harness_push (po->f->h, b);
  g_atomic_int_set (&po->done, 1);
  return NULL;
}

/* A frame waiting for its batch (stream 1 sends nothing yet, the timeout is
 * long) leaves it on a flush of its stream (FLUSHING) and never comes out;
 * both streams then run to the end. */
GST_START_TEST (test_batch_flush)
{
  gchar *model = nnp_test_model_path ("residual-batch.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  PushOne po = { &feeds[0], GST_FLOW_OK, 0 };
  GstSegment segment;
  GThread *t;

  g_object_set (p, "batch-size", 2, "batch-timeout", 30 * GST_SECOND, NULL);
  init_feeds (feeds, 2, FRAMES);
  start_feed (p, &feeds[0]);
  start_feed (p, &feeds[1]);
  t = g_thread_new ("push-one", push_one_thread, &po);
  g_usleep (300 * 1000);
  fail_unless (!g_atomic_int_get (&po.done), "the frame did not wait for "
      "its batch");
  fail_unless (gst_harness_push_event (feeds[0].h,
          gst_event_new_flush_start ()));
  g_thread_join (t);
  fail_unless_equals_int (po.ret, GST_FLOW_FLUSHING);
  fail_unless (gst_harness_push_event (feeds[0].h,
          gst_event_new_flush_stop (FALSE)));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.base = 0;
  fail_unless (gst_harness_push_event (feeds[0].h,
          gst_event_new_segment (&segment)));
  bit_exact = TRUE;
  feed_and_check (model, feeds, 2, expect);
  bit_exact = FALSE;
  fail_unless_equals_uint64 (final_frames (bus), 2 * FRAMES);
  no_error (bus);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;

/* batch-size > 1 on a fixed batch dim: the start fails naming the input. */
GST_START_TEST (test_batch_fixed_dim)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  GstPad *pad = gst_element_request_pad_simple (p, "sink_%u");
  GError *err;

  g_object_set (p, "batch-size", 4, NULL);
  fail_unless (pad != NULL);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, NULL, "fixed dim");
  fail_unless (strstr (err->message, "batch-size=4") != NULL
      && strstr (err->message, "input 'x'") != NULL
      && strstr (err->message, "fixed (1x3x?x?)") != NULL, "%s",
      err->message);
  g_error_free (err);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_element_release_request_pad (p, pad);
  gst_object_unref (pad);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (model);
}

GST_END_TEST;

static Suite *
streams_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-streams", 120, &tc);

  tcase_add_test (tc, test_four_streams);
  tcase_add_test (tc, test_stream_ends_early);
  tcase_add_test (tc, test_stream_errors);
  tcase_add_test (tc, test_stream_bad_caps);
  tcase_add_test (tc, test_streams_sizes);
  tcase_add_test (tc, test_replicas);
  tcase_add_test (tc, test_streams_replicas);
  tcase_add_test (tc, test_replicas_pinned);
  tcase_add_test (tc, test_max_replicas);
  tcase_add_test (tc, test_batch_four_streams);
  tcase_add_test (tc, test_batch_ends_and_slow);
  tcase_add_test (tc, test_batch_sizes);
  tcase_add_test (tc, test_batch_fixed_dim);
  tcase_add_test (tc, test_batch_flush);
  return s;
}

GST_CHECK_MAIN (streams);
