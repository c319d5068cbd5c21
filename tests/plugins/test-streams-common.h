/* Helpers of the many-streams tests (test-streams.c: streams and batching
 * through one nnpipeline; test-streams-replicas.c: replicated stages). */
#pragma once

#include "test-common.h"

G_BEGIN_DECLS

#define N_STREAMS 4
#define FRAMES 30

typedef struct {
  GstHarness *h;
  guint index;
  guint n; /* frames to push */
  guint32 seed;
  gint h_px, w_px;
  guint bad_frame;     /* push a wrong-size frame here (0: none) */
  gulong delay_us;     /* sleep before each frame (a slow stream) */
  gboolean short_caps; /* caps without the outer 1 ("16:16:3") */
  gboolean metas;      /* frames carry metas (add_frame_metas ()) */
  GstFlowReturn last;
} Feed;

/* Floats in one of f's frames (3 x h_px x w_px). */
gsize n_floats (const Feed *f);

/* The PTS of frame i of stream `stream` (each stream its own origin). */
GstClockTime stream_pts (guint stream, guint i);

/* Puts on frame i of stream `stream` one meta of each kind a video
 * analytics chain carries: GstNnFrameMeta (its frame a buffer of PTS
 * stream_pts ()), GstNnTransformMeta, a GstVideoRegionOfInterestMeta and
 * a custom meta, each naming the stream and the frame. */
void add_frame_metas (GstBuffer *b, guint stream, guint i);

/* Fails unless b carries exactly add_frame_metas (stream, i)'s metas. */
void check_frame_metas (GstBuffer *b, guint stream, guint i);

/* Pushes f's frames into f->h, then EOS (a GThreadFunc). */
gpointer feed_thread (gpointer data);

/* The whole model's outputs for f's first n frames (a whole-model nnstage). */
GPtrArray *reference (const gchar *model, const Feed *f, guint n);

/* Outputs must be the reference's bit for bit (batching), not within
 * 1e-6. */
extern gboolean bit_exact;

/* Fails unless got equals ref (bit for bit with bit_exact, else within
 * 1e-6 relative); what and i name the frame. */
void assert_same (GstBuffer *ref, GstBuffer *got, const gchar *what, guint i);

/* Pull what stream f gave (expect frames, then EOS), compare with the
 * whole model, check PTS, segment and caps. */
void check_stream (const gchar *model, Feed *f, guint expect);

/* nnpipeline with props (2 stages, devices when not NULL), on a new bus
 * (*bus, the caller's); a harness per stream (sink_N -> src_N). */
GstElement *make_pipeline (const gchar *model, const gchar *devices, GstBus **bus);

/* f->h: a harness on p's sink_N/src_N, caps and f's own segment pushed. */
void start_feed (GstElement *p, Feed *f);

/* Push the started feeds[] from a thread each; expect[i] frames out of
 * stream i. */
void feed_and_check (const gchar *model, Feed *feeds, guint n, const guint *expect);

/* Run feeds[] at once through a new nnpipeline (*p_out and *bus_out the
 * caller's, for finish ()). */
void run_streams (const gchar *model, const gchar *devices, Feed *feeds, guint n,
                  const guint *expect, GstBus **bus_out, GstElement **p_out);

/* Tears down the feeds' harnesses, p and bus. */
void finish (GstElement *p, GstBus *bus, Feed *feeds, guint n);

/* Fails on an error or warning message on bus. */
void no_error (GstBus *bus);

/* n feeds of `frames` 16x16 frames each, seeds 1000 * (index + 1). */
void init_feeds (Feed *feeds, guint n, guint frames);

G_END_DECLS
