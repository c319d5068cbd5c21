/* Helpers shared by the plugin tests (GstCheck + GstHarness): where the
 * test models are, random input frames, elements and harnesses, pushing
 * frames to EOS, error messages on a bus, gst-launch lines run to EOS.
 *
 * Every helper that checks something fails the current test (fail_unless)
 * instead of returning an error, except nnp_test_specialize(), which is
 * also used outside a test (in main()). */
#ifndef NNP_TEST_COMMON_H
#define NNP_TEST_COMMON_H

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include <nnpipe/nnpipe.h>

G_BEGIN_DECLS

/* Duration and PTS step of nnp_test_random_frame() frames (30 fps). */
#define NNP_TEST_FRAME_DURATION (GST_SECOND / 30)

/* NNP_TEST_MODELS_DIR/name (the models of make-models.py and
 * make-dag-models.py); fails when the variable is unset.  g_free(). */
gchar *nnp_test_model_path (const gchar *name);

/* NNP_SOURCE_DIR/.cache/models/name (PP-OCR models of
 * tools/fetch-models.sh); fails the test, naming tools/fetch-models.sh, when
 * it is not there (never NULL: a missing model of ours is not a skip).
 * g_free(). */
gchar *nnp_test_ocr_model (const gchar *name);

/* Loads path and specialises it for one 1x3xhxw float input named `input`
 * (NULL: the model's first input).  Returns the graph (nnp_graph_unref())
 * or NULL with error set.  shape_out (may be NULL) gets the shape used; its
 * name is `input` or borrowed from the model.  model_out (may be NULL) gets
 * the model (nnp_model_unref()); without it the model is dropped, and so
 * must shape_out's borrowed name be. */
NnpGraph *nnp_test_specialize (const gchar *path, const gchar *input, gint h, gint w,
                               NnpInputShape *shape_out, NnpModel **model_out, GError **error);

/* other/tensors caps of one float32 1xcxhxw tensor at 30 fps.  g_free(). */
gchar *nnp_test_tensor_caps (gint c, gint h, gint w);

/* A new buffer of n_floats deterministic floats in [-1, 1) from seed, no
 * timestamps (caller owns it). */
GstBuffer *nnp_test_random_buffer (gsize n_floats, guint32 seed);

/* The same with PTS index * NNP_TEST_FRAME_DURATION and that duration. */
GstBuffer *nnp_test_random_frame (gsize n_floats, guint32 seed, guint64 index);

/* A new element of factory (fails when there is none) with the
 * NULL-terminated property list set.  Floating ref, as made. */
GstElement *nnp_test_make (const gchar *factory, const gchar *first_prop, ...);

/* A harness around e's "sink" and "src" pads.  Takes e's reference (the
 * harness holds its own). */
GstHarness *nnp_test_harness_take (GstElement *e);

/* Pushes frames first .. first+n-1: frame i is
 * nnp_test_random_frame (n_floats, seed + i, i); each push must be OK. */
void nnp_test_push_frames (GstHarness *h, gsize n_floats, guint32 seed, guint first, guint n);

/* Pulls n buffers (frames first .. first+n-1, named so when one does not
 * come out) and appends them to out, which takes them. */
void nnp_test_pull_frames (GstHarness *h, guint first, guint n, GPtrArray *out);

/* Sends EOS; nothing but EOS may come out after it. */
void nnp_test_finish_eos (GstHarness *h);

/* Pops the first message of `type` (GST_MESSAGE_ERROR, _WARNING or
 * _INFO) from bus; fails, naming `what` (may be NULL), when there is none.
 * Returns its GError (g_error_free()); debug (may be NULL) gets its debug
 * text (g_free(), may be NULL). */
GError *nnp_test_pop_message (GstBus *bus, GstMessageType type, gchar **debug, const gchar *what);

/* gst_parse_launch (desc), set to PLAYING and wait (at most timeout) for
 * EOS; fails when it does not parse or start, on no EOS and on an error
 * message (with its text).  Returns the pipeline, still PLAYING: end it
 * with nnp_test_launch_stop(). */
GstElement *nnp_test_launch_to_eos (const gchar *desc, GstClockTime timeout);

/* Sets the pipeline to NULL and drops it (takes the reference). */
void nnp_test_launch_stop (GstElement *pipeline);

/* The "dimensions" field of the current caps on the pad `pad` of the
 * element named `element` in bin; fails when there are no caps.
 * g_free(). */
gchar *nnp_test_current_dims (GstElement *bin, const gchar *element, const gchar *pad);

/* A suite `name` with one test case, "general", added to it (*tc, to
 * add the tests to); timeout in seconds, or 0 for check's default
 * (CK_DEFAULT_TIMEOUT). */
Suite *nnp_test_suite_new (const gchar *name, gint timeout, TCase **tc);

G_END_DECLS

#endif /* NNP_TEST_COMMON_H */
