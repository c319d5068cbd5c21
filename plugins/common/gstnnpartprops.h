/* GStreamer nnpipe plugin: the properties that select a part of a model
 * and where it runs (gstnnpartprops.c), installed, set, got and checked in
 * one place for every element that runs or sends a part: nnstage (all of
 * them) and nnremote (model, plan, plan-object, stage, nodes).  Names,
 * defaults and messages are the same in every element; an element may word
 * a property's blurb its own way.
 *
 * Use: the element's PROP_ enum starts at GST_NN_PART_PROP_LAST, its
 * instance holds a GstNnPartProps, class_init calls
 * gst_nn_part_props_install(), set_property / get_property hand the ids
 * below to gst_nn_part_props_set() / _get() (object lock held). */
#pragma once

#include <gst/gst.h>
#include <nnpipe/part.h>
#include <nnpipe/plan.h>

G_BEGIN_DECLS

#define GST_NN_PART_DEFAULT_DEVICE "cpu"
#define GST_NN_PART_DEFAULT_THREADS 1
#define GST_NN_PART_DEFAULT_STAGE 0
#define GST_NN_PART_DEFAULT_DEVICE_INDEX -1
#define GST_NN_PART_DEFAULT_FALLBACK FALSE
#define GST_NN_PART_MAX_THREADS 256

/* The property ids (an element's own ids follow GST_NN_PART_PROP_LAST). */
typedef enum
{
  GST_NN_PART_PROP_MODEL = 1,
  GST_NN_PART_PROP_PLAN,
  GST_NN_PART_PROP_PLAN_OBJECT,
  GST_NN_PART_PROP_STAGE,
  GST_NN_PART_PROP_NODES,
  /* where it runs (GST_NN_PART_PROPS_DEVICE) */
  GST_NN_PART_PROP_DEVICE,
  GST_NN_PART_PROP_DEVICE_INDEX,
  GST_NN_PART_PROP_DEVICE_NAME,
  GST_NN_PART_PROP_FALLBACK,
  GST_NN_PART_PROP_THREADS,
  GST_NN_PART_PROP_CPUS,
  GST_NN_PART_PROP_LAST
} GstNnPartProp;

/* Which properties an element installs. */
typedef enum
{
  GST_NN_PART_PROPS_PART = 1 << 0,   /* model .. nodes */
  GST_NN_PART_PROPS_DEVICE = 1 << 1, /* device .. cpus */
} GstNnPartPropsFlags;

/* The values (the element's object lock guards them). */
typedef struct
{
  gchar *model, *plan_path, *nodes;
  NnpPlan *plan; /* plan-object: owned copy, or NULL */
  gint stage;
  gchar *device, *device_name, *cpus;
  gint device_index, threads;
  gboolean fallback;
  guint gen; /* bumped by every write */
} GstNnPartProps;

/* Install the properties of `which`; blurbs (may be NULL), indexed by
 * GstNnPartProp, words some of them the element's way (NULL entries: the
 * default blurb; static strings). */
void gst_nn_part_props_install (GObjectClass *klass, GstNnPartPropsFlags which,
    const gchar *const *blurbs);

void gst_nn_part_props_init (GstNnPartProps *props);
void gst_nn_part_props_clear (GstNnPartProps *props);

/* set_property / get_property of prop_id; FALSE when prop_id is not one
 * of ours (the element's own).  Call with the object lock held. */
gboolean gst_nn_part_props_set (GstNnPartProps *props, guint prop_id,
    const GValue *value);
gboolean gst_nn_part_props_get (const GstNnPartProps *props, guint prop_id,
    GValue *value);

/* The device spec the properties name (device in the syntax of
 * nnp_device_spec_parse(), refined by device-index / device-name): "cpu",
 * "opencl", "opencl:N", "opencl:NAME" (new string); threads_out (may be
 * NULL) gets the spec's thread count ("cpu:2") or 0.  NULL with an error
 * naming the property and its value when they are invalid.  Object lock
 * held. */
gchar *gst_nn_part_props_device_spec (const GstNnPartProps *props,
    gint *threads_out, GError **error);

/* Check the device properties before anything is opened: the device spec,
 * threads against a thread count in it, cpus.  The error names the
 * property and its value.  Takes owner's object lock. */
gboolean gst_nn_part_props_check (GstObject *owner, const GstNnPartProps *props,
    GError **error);

/* The part the properties name (nnp_part_open(): plan, model, digest,
 * stage or nodes, device and its fallback), on device when not NULL (a
 * part remade while running stays on the device chosen at start), keeping
 * cache_size specialisations.  gen_out (may be NULL) gets the props' gen
 * it was made from; why (may be NULL) the library's fallback reason.
 * Takes owner's object lock. */
NnpPart *gst_nn_part_props_open (GstObject *owner, GstNnPartProps *props,
    const gchar *device, gint cache_size, guint *gen_out, GError **why,
    GError **error);

/* Post the error of gst_nn_part_props_open() on element, in the domain
 * that fits its code (a file that cannot be read, a missing device, a
 * plan or node list that does not fit the properties, a model that does
 * not load); the library's message names the file, device or setting. */
void gst_nn_part_props_post_error (GstElement *element, const GError *err);

G_END_DECLS
