/* libFuzzer harness: the other/tensors caps parser (plugins/common/gstnntensorcaps.c).
 *
 * The input describes one GstStructure, one line each:
 *   NAME                      first line: the structure name (other/tensors,
 *                             other/tensor, video/x-raw, else a stand-in)
 *   FIELD=T:VALUE             FIELD: format, num_tensors, types, dimensions,
 *                             framerate, type, dimension, width, else x-other;
 *                             T: s string, i int, d double, b boolean,
 *                             f fraction (N/D), r int range (A-B),
 *                             l list of strings (a|b|c)
 * (e.g. corpus/tensor-caps/).  The structure is built here with typed
 * GValues rather than gst_caps_from_string(), so the fuzzer spends its time
 * in our parser and not in GStreamer's (whose own leaks on malformed strings
 * are GStreamer's).  gst_nn_tensors_info_from_structure() must succeed or
 * fail with a one-line error; an info that parses must turn into caps that
 * parse back to an equal info, and fixate.  Every VALUE also goes to
 * gst_nn_dims_from_string(). */
#include "gstnntensorcaps.h"
#include "fuzz-common.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  gst_init (NULL, NULL);
  g_log_set_default_handler (nnp_fuzz_log_handler, NULL);
  return 0;
}

/* Structure and field names become GQuarks, which live forever (GLib even
 * drops its old quark arrays on purpose): made-up names would look like a
 * leak growing with the run.  So a name is one of these, or the last one. */
static const char *const structure_names[] = { "other/tensors", "other/tensor", "video/x-raw",
                                               "application/x-fuzz", NULL };
static const char *const field_names[] = { "format",    "num_tensors", "types",     "dimensions",
                                           "framerate", "type",        "dimension", "width",
                                           "x-other",   NULL };

static const char *
known_name (const char *name, const char *const *names)
{
  int i;

  for (i = 0; names[i + 1] != NULL; i++)
    if (strcmp (name, names[i]) == 0)
      break;
  return names[i];
}

/* Set FIELD of s from "T:VALUE"; unknown types and bad numbers are skipped. */
static void
set_field (GstStructure *s, const char *field, const char *typed)
{
  GValue v = G_VALUE_INIT;
  const char *val = typed + 2;
  NnpShape shape;

  /* GStreamer strings are UTF-8 (it refuses others with a warning) */
  if (strlen (typed) < 2 || typed[1] != ':' || !g_utf8_validate (typed, -1, NULL))
    return;
  field = known_name (field, field_names);
  (void) gst_nn_dims_from_string (val, &shape);
  switch (typed[0]) {
    case 's':
      g_value_init (&v, G_TYPE_STRING);
      g_value_set_string (&v, val);
      break;
    case 'i':
      g_value_init (&v, G_TYPE_INT);
      g_value_set_int (&v, (int) g_ascii_strtoll (val, NULL, 10));
      break;
    case 'd':
      g_value_init (&v, G_TYPE_DOUBLE);
      g_value_set_double (&v, g_ascii_strtod (val, NULL));
      break;
    case 'b':
      g_value_init (&v, G_TYPE_BOOLEAN);
      g_value_set_boolean (&v, val[0] == '1' || val[0] == 't');
      break;
    case 'f': {
      char *end = NULL;
      gint64 n = g_ascii_strtoll (val, &end, 10), d = 1;
      if (end && *end == '/')
        d = g_ascii_strtoll (end + 1, NULL, 10);
      if (n < G_MININT32 || n > G_MAXINT32 || d <= 0 || d > G_MAXINT32)
        return;
      g_value_init (&v, GST_TYPE_FRACTION);
      gst_value_set_fraction (&v, (gint) n, (gint) d);
      break;
    }
    case 'r': {
      char *end = NULL;
      gint64 a = g_ascii_strtoll (val, &end, 10), b;
      if (a < G_MININT32 || a >= G_MAXINT32)
        return;
      b = a + 1;
      if (end && *end == '-')
        b = g_ascii_strtoll (end + 1, NULL, 10);
      if (a < G_MININT32 || b > G_MAXINT32 || a >= b)
        return;
      g_value_init (&v, GST_TYPE_INT_RANGE);
      gst_value_set_int_range (&v, (gint) a, (gint) b);
      break;
    }
    case 'l': {
      char **items = g_strsplit (val, "|", 8);
      g_value_init (&v, GST_TYPE_LIST);
      for (int i = 0; items[i]; i++) {
        GValue item = G_VALUE_INIT;
        g_value_init (&item, G_TYPE_STRING);
        g_value_set_string (&item, items[i]);
        gst_value_list_append_and_take_value (&v, &item);
      }
      g_strfreev (items);
      break;
    }
    default: return;
  }
  gst_structure_take_value (s, field, &v);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  NnpFuzzCounts c = { 0 };
  char *text = g_strndup ((const char *) data, size);
  char **lines = g_strsplit (text, "\n", 33);
  GstNnTensorsInfo info, again;
  GError *error = NULL;
  GstStructure *s;
  gboolean ok;

  if (lines[0] == NULL)
    goto out;
  s = gst_structure_new_empty (known_name (lines[0], structure_names));
  for (int i = 1; lines[i] != NULL; i++) {
    char *eq = strchr (lines[i], '=');
    if (eq == NULL)
      continue;
    *eq = '\0';
    set_field (s, lines[i], eq + 1);
  }
  ok = gst_nn_tensors_info_from_structure (&info, s, &error);
  if (!nnp_fuzz_check_error ("from_structure", 0, ok, error, &c))
    abort ();
  g_clear_error (&error);
  if (ok) {
    GstCaps *out = gst_nn_tensors_info_to_caps (&info);
    char *desc = gst_nn_tensors_info_to_string (&info);
    if (!gst_nn_tensors_info_from_caps (&again, out, &error)
        || !gst_nn_tensors_info_is_equal (&info, &again)) {
      g_printerr ("caps do not survive a round trip: %s -> %s (%s)\n", text, desc,
                  error ? error->message : "not equal");
      abort ();
    }
    (void) gst_nn_tensors_info_get_size (&info);
    g_free (desc);
    gst_caps_unref (out);
  }
  {
    GstCaps *caps = gst_caps_new_full (s, NULL); /* takes s */
    gst_caps_unref (gst_nn_tensors_caps_fixate (caps));
  }
out:
  g_strfreev (lines);
  g_free (text);
  return 0;
}
