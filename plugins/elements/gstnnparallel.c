/* GStreamer nnpipe plugin: nnparallel
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnparallel
 * @title: nnparallel
 * @short_description: K copies of a chain of elements taking frames in turn
 *
 * nnparallel runs #GstNnParallel:copies copies of the chain of elements
 * described by #GstNnParallel:chain (a gst-launch description with one
 * unlinked sink pad and one unlinked src pad), each in its own streaming
 * thread, and hands every frame to the first idle copy.  Outputs leave in
 * the order the frames came in, with the chain's own caps, timestamps and
 * metas: downstream sees what one copy of the chain would give, faster
 * when the chain is a series of one-thread steps that cannot be split
 * evenly across cores (parallelism over frames instead of over stages).
 *
 * The chain must give exactly one output frame per input frame, in order
 * (a frame it drops would hold back every later one; a frame too many is
 * an error).  Events do not go through the copies: sticky events reach
 * each copy with its next frame, and serialized events leave in their
 * place in the sequence of frames.  Elements of the chain that load the
 * same model file share it (libnnpipe's model cache, nnp_model_load()),
 * so weights are in memory once whatever the number of copies.
 *
 * The copies are made when the element goes from NULL to READY; a chain
 * that cannot be made (no such element, a property it does not have, no
 * unlinked sink or src pad) is an error naming the description.
 *
 * ## Example launch line
 * |[
 * ... ! nnconvert keep-frame=true ... ! nnparallel copies=2 chain="\
 *     nnstage model=det.onnx threads=1 ! nndbdecode ! nncrop ! \
 *     nnstage model=rec.onnx threads=1 ! nnctcdecode keys=keys.txt" ! \
 *   nnmetapublish ! fakesink
 * ]| the whole OCR chain twice, one frame each (pipelines/ocr-file.sh on
 * a video).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnparallel.h"
#include "gstnnreplicas.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_parallel_debug);
#define GST_CAT_DEFAULT gst_nn_parallel_debug

#define DEFAULT_CHAIN NULL
#define DEFAULT_COPIES 2
#define MAX_COPIES 64

enum
{
  PROP_0,
  PROP_CHAIN,
  PROP_COPIES,
};

struct _GstNnParallel
{
  GstBin parent;

  GstPad *sink, *src;     /* ghost pads (owned by the element) */
  GstElement *copies_bin; /* the replicas bin while READY or up, or NULL */

  /* OBJECT_LOCK */
  gchar *chain;
  gint copies; /* checked at start: 1 to MAX_COPIES */
};

G_DEFINE_TYPE (GstNnParallel, gst_nn_parallel, GST_TYPE_BIN);
GST_ELEMENT_REGISTER_DEFINE (nnparallel, "nnparallel", GST_RANK_NONE,
    GST_TYPE_NN_PARALLEL);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* make_stage of gst_nn_replicas_new: the copies parsed beforehand
 * (floating; the replicas bin takes them) */
static GstElement *
take_copy (gpointer user_data, guint r)
{
  GstElement **made = user_data;

  return g_steal_pointer (&made[r]);
}

/* One copy of the chain (floating), or NULL and @error set. */
static GstElement *
parse_copy (const gchar *chain, GError **error)
{
  GstElement *bin;
  GstPad *sink, *src;
  GstParseContext *ctx = gst_parse_context_new ();

  bin = gst_parse_bin_from_description_full (chain, TRUE, ctx,
      GST_PARSE_FLAG_FATAL_ERRORS, error);
  gst_parse_context_free (ctx);
  if (bin == NULL)
    return NULL;
  sink = gst_element_get_static_pad (bin, "sink");
  src = gst_element_get_static_pad (bin, "src");
  if (sink == NULL || src == NULL) {
    g_set_error (error, GST_PARSE_ERROR, GST_PARSE_ERROR_LINK,
        "it has no unlinked %s pad (the chain takes frames in and gives frames out: no source or sink elements)",
        sink ? "src" : "sink");
    gst_object_ref_sink (bin);
    gst_object_unref (bin);
    bin = NULL;
  }
  g_clear_object (&sink);
  g_clear_object (&src);
  return bin;
}

/* NULL -> READY: the copies, inside a replicas bin behind our pads. */
static gboolean
build (GstNnParallel *self)
{
  GstElement **made;
  GError *err = NULL;
  gchar *chain;
  gint copies;
  guint r;
  GstPad *target;

  GST_OBJECT_LOCK (self);
  chain = g_strdup (self->chain);
  copies = self->copies;
  GST_OBJECT_UNLOCK (self);
  if (chain == NULL || g_strstrip (chain)[0] == '\0')
    goto no_chain;
  if (copies < 1 || copies > MAX_COPIES)
    goto bad_copies;

  made = g_new0 (GstElement *, copies);
  for (r = 0; r < (guint) copies; r++) {
    made[r] = parse_copy (chain, &err);
    if (made[r] == NULL)
      goto bad_chain;
  }
  self->copies_bin = gst_nn_replicas_new ("copies", copies, take_copy, made);
  g_free (made);
  gst_bin_add (GST_BIN (self), self->copies_bin);
  target = gst_element_get_static_pad (self->copies_bin, "sink");
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->sink), target);
  gst_object_unref (target);
  target = gst_element_get_static_pad (self->copies_bin, "src");
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->src), target);
  gst_object_unref (target);
  GST_INFO_OBJECT (self, "%d copies of \"%s\"", copies, chain);
  g_free (chain);
  return TRUE;

  /* ERRORS */
no_chain : {
  g_free (chain);
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("nnparallel needs chain= (a gst-launch description of the elements to copy)"),
      (NULL));
  return FALSE;
}
bad_copies : {
  g_free (chain);
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("invalid value %d for property 'copies': expected 1 to %d", copies,
          MAX_COPIES),
      (NULL));
  return FALSE;
}
bad_chain : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("chain=\"%s\" cannot be made: %s", chain, err->message), (NULL));
  for (guint i = 0; i < r; i++) {
    gst_object_ref_sink (made[i]);
    gst_object_unref (made[i]);
  }
  g_free (made);
  g_clear_error (&err);
  g_free (chain);
  return FALSE;
}
}

/* READY -> NULL: forget the copies (chain= and copies= may change). */
static void
unbuild (GstNnParallel *self)
{
  if (self->copies_bin == NULL)
    return;
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->sink), NULL);
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->src), NULL);
  gst_element_set_state (self->copies_bin, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (self), self->copies_bin);
  self->copies_bin = NULL;
}

static GstStateChangeReturn
gst_nn_parallel_change_state (GstElement *element, GstStateChange transition)
{
  GstNnParallel *self = GST_NN_PARALLEL (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY && !build (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (gst_nn_parallel_parent_class)
            ->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL
      || (transition == GST_STATE_CHANGE_NULL_TO_READY
          && ret == GST_STATE_CHANGE_FAILURE))
    unbuild (self);
  return ret;
}

static void
gst_nn_parallel_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnParallel *self = GST_NN_PARALLEL (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CHAIN:
      g_free (self->chain);
      self->chain = g_value_dup_string (value);
      break;
    case PROP_COPIES:
      self->copies = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_parallel_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnParallel *self = GST_NN_PARALLEL (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CHAIN:
      g_value_set_string (value, self->chain);
      break;
    case PROP_COPIES:
      g_value_set_int (value, self->copies);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_parallel_finalize (GObject *object)
{
  GstNnParallel *self = GST_NN_PARALLEL (object);

  g_free (self->chain);
  G_OBJECT_CLASS (gst_nn_parallel_parent_class)->finalize (object);
}

static void
gst_nn_parallel_class_init (GstNnParallelClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_parallel_debug, "nnparallel", 0,
      "nnpipe copies of a chain over frames");
  gobject_class->set_property = gst_nn_parallel_set_property;
  gobject_class->get_property = gst_nn_parallel_get_property;
  gobject_class->finalize = gst_nn_parallel_finalize;
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_nn_parallel_change_state);

  /**
   * GstNnParallel:chain:
   *
   * The elements to copy, as a gst-launch description with one unlinked
   * sink pad and one unlinked src pad; each copy must give one output
   * frame per input frame.
   */
  g_object_class_install_property (gobject_class, PROP_CHAIN,
      g_param_spec_string ("chain", "Chain",
          "gst-launch description of the elements each copy runs (one frame out per frame in)",
          DEFAULT_CHAIN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  /**
   * GstNnParallel:copies:
   *
   * How many copies of the chain take frames in turn (each in its own
   * streaming thread), 1 to 64; another value is an error at start.
   */
  g_object_class_install_property (gobject_class, PROP_COPIES,
      g_param_spec_int ("copies", "Copies",
          "Copies of the chain (1 to 64), each taking frames in turn in its own thread",
          G_MININT, G_MAXINT, DEFAULT_COPIES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "nnpipe parallel chain",
      "Filter/Bin",
      "Runs copies of a chain of elements over alternate frames, outputs in input order",
      "nnpipe");
}

static void
gst_nn_parallel_init (GstNnParallel *self)
{
  GstElementClass *klass = GST_ELEMENT_GET_CLASS (self);

  self->copies = DEFAULT_COPIES;
  self->chain = g_strdup (DEFAULT_CHAIN);
  self->sink = gst_ghost_pad_new_no_target_from_template ("sink",
      gst_element_class_get_pad_template (klass, "sink"));
  gst_element_add_pad (GST_ELEMENT (self), self->sink);
  self->src = gst_ghost_pad_new_no_target_from_template ("src",
      gst_element_class_get_pad_template (klass, "src"));
  gst_element_add_pad (GST_ELEMENT (self), self->src);
}
