/* GStreamer nnpipe plugin: registers every element and forwards libnnpipe's
 * log categories ("nnp-graph", "nnp-exec", ...) to GStreamer debug
 * categories of the same names, so GST_DEBUG=nnp*:6 tells the whole story.
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <nnpipe/log.h>

#include "gstnnconvert.h"
#include "gstnnstage.h"
#include "gstnnpipeline.h"
#include "gstnndbdecode.h"
#include "gstnncrop.h"
#include "gstnnctcdecode.h"
#include "gstnnclassdecode.h"
#include "gstnnoverlay.h"
#include "gstnnmetapublish.h"
#include "gstnnserversrc.h"
#include "gstnnremote.h"
#include "gstnnparallel.h"
#include "gstnntrack.h"
#include "gstnnredact.h"
#include "gstnndetectdecode.h"
#include "gstnnmask.h"

#ifndef PACKAGE
#define PACKAGE "nnpipe"
#endif

/* The library's categories, created up front so that gst-inspect and
 * GST_DEBUG="help" list them; others are created on first use. */
static const gchar *const known_categories[] = {
  "nnp-graph",
  "nnp-onnx",
  "nnp-ops",
  "nnp-exec",
  "nnp-partition",
  "nnp-cpu",
  "nnp-opencl",
};

/* category name -> GstDebugCategory*; categories live for the process */
static GHashTable *log_categories;
static GMutex log_lock;

static GstDebugCategory *
nnp_category_get (const gchar *name)
{
  GstDebugCategory *cat;

  g_mutex_lock (&log_lock);
  cat = g_hash_table_lookup (log_categories, name);
  if (cat == NULL) {
    /* GstDebugCategory keeps the name pointer it is given: intern it */
    const gchar *iname = g_intern_string (name);

    cat = _gst_debug_category_new (iname, 0, "libnnpipe");
    g_hash_table_insert (log_categories, (gpointer) iname, cat);
  }
  g_mutex_unlock (&log_lock);
  return cat;
}

static void
nnp_log_to_gst (const char *category, NnpLogLevel level, const char *file,
    int line, const char *func, const char *message, gpointer user_data)
{
  GstDebugCategory *cat = nnp_category_get (category ? category : "nnp");

  if ((gint) level > (gint) gst_debug_category_get_threshold (cat))
    return;
  gst_debug_log_literal (cat, (GstDebugLevel) level, file ? file : "",
      func ? func : "", line, NULL, message);
}

static gboolean
plugin_init (GstPlugin *plugin)
{
  gboolean ret = FALSE;

  if (log_categories == NULL) {
    log_categories = g_hash_table_new (g_str_hash, g_str_equal);
    GstDebugLevel max_level = GST_LEVEL_NONE;

    for (guint i = 0; i < G_N_ELEMENTS (known_categories); i++) {
      GstDebugCategory *cat = nnp_category_get (known_categories[i]);
      max_level = MAX (max_level, gst_debug_category_get_threshold (cat));
    }
    nnp_log_set_handler (nnp_log_to_gst, NULL);
    /* GST_DEBUG is parsed before plugins load: format library messages only
     * when one of our categories would print them */
    nnp_log_set_threshold ((NnpLogLevel) max_level);
  }

  /* one line per element */
  ret |= GST_ELEMENT_REGISTER (nnconvert, plugin);
  ret |= GST_ELEMENT_REGISTER (nnstage, plugin);
  ret |= GST_ELEMENT_REGISTER (nnpipeline, plugin);
  ret |= GST_ELEMENT_REGISTER (nndbdecode, plugin);
  ret |= GST_ELEMENT_REGISTER (nncrop, plugin);
  ret |= GST_ELEMENT_REGISTER (nnctcdecode, plugin);
  ret |= GST_ELEMENT_REGISTER (nnclassdecode, plugin);
  ret |= GST_ELEMENT_REGISTER (nnoverlay, plugin);
  ret |= GST_ELEMENT_REGISTER (nnmetapublish, plugin);
  ret |= GST_ELEMENT_REGISTER (nnserversrc, plugin);
  ret |= GST_ELEMENT_REGISTER (nnserversink, plugin);
  ret |= GST_ELEMENT_REGISTER (nnremote, plugin);
  ret |= GST_ELEMENT_REGISTER (nnparallel, plugin);
  ret |= GST_ELEMENT_REGISTER (nntrack, plugin);
  ret |= GST_ELEMENT_REGISTER (nnredact, plugin);
  ret |= GST_ELEMENT_REGISTER (nndetectdecode, plugin);
  ret |= GST_ELEMENT_REGISTER (nnmask, plugin);

  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, nnpipe,
    "Run ONNX networks as pipelines of device-bound stages", plugin_init,
    NNP_VERSION, "LGPL", "nnpipe", "https://github.com/nnpipe/nnpipe")
