/* libnnpipe: network links of remote stages in the partitioner's cost model.
 *
 * A stage on another host receives its input buffer over the link and sends
 * its output buffer back over it (nnremote keeps the frame on this host, so
 * even two consecutive remote stages talk through it).  What the link costs
 * the remote stage j per frame (derivation: docs/partition.md, "Remote
 * stages: the link"):
 *
 *   bytes_in / B  +  bytes_out / B  +  RTT / W
 *
 * charged on the transfer lines of the cuts around the stage: the receiving
 * line of the cut onto it carries bytes / B + RTT / W (once per frame: the
 * per-buffer overhead), the sending line of the cut off it bytes / B.  With
 * the stage's compute this is an upper bound of the stage's period, exact
 * for W = 1, and additive in the cut's bytes: the split solvers need no
 * change to weigh the network. */
#include <nnpipe/plan.h>

#include "partition/partition.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a number followed by a unit of `units` (name, factor; NULL-terminated);
 * TRUE with *value = number * factor */
typedef struct {
  const char *name;
  double factor;
} Unit;

static const Unit bandwidth_units[] = {
  { "bit", 1.0 / 8 }, { "kbit", 1e3 / 8 }, { "mbit", 1e6 / 8 }, { "gbit", 1e9 / 8 }, { "B", 1.0 },
  { "kB", 1e3 },      { "KB", 1e3 },       { "MB", 1e6 },       { "GB", 1e9 },       { NULL, 0 },
};

static const Unit time_units[] = {
  { "us", 1e-3 },
  { "ms", 1.0 },
  { "s", 1e3 },
  { NULL, 0 },
};

static gboolean
parse_quantity (const char *text, const Unit *units, double *value)
{
  char *end = NULL;
  double v;

  if (text == NULL || (!g_ascii_isdigit (*text) && *text != '.'))
    return FALSE;
  v = g_ascii_strtod (text, &end);
  if (end == text || !isfinite (v))
    return FALSE;
  for (const Unit *u = units; u->name; u++) {
    /* bit units are case-insensitive like tc's; byte units are not (B vs b) */
    gboolean bits = g_str_has_suffix (u->name, "bit");
    if (bits ? g_ascii_strcasecmp (end, u->name) == 0 : strcmp (end, u->name) == 0) {
      *value = v * u->factor;
      return TRUE;
    }
  }
  return FALSE;
}

gboolean
nnp_link_parse (const char *text, NnpLink *link, GError **error)
{
  g_auto (GStrv) parts = NULL;
  int n;
  NnpLink l = { 0, 0, 1 };

  g_return_val_if_fail (link != NULL, FALSE);
  parts = g_strsplit (text ? text : "", "/", -1);
  n = g_strv_length (parts);
  if (n < 2 || n > 3) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "link '%s': expected BANDWIDTH/RTT[/WINDOW] (e.g. 100mbit/20ms/4)",
                 text ? text : "");
    return FALSE;
  }
  if (!parse_quantity (g_strstrip (parts[0]), bandwidth_units, &l.bytes_per_s)
      || l.bytes_per_s <= 0) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_PLAN,
        "link '%s': bandwidth '%s' is not a positive number with a unit (bit, kbit, mbit, gbit, B, kB, MB, GB per second)",
        text, parts[0]);
    return FALSE;
  }
  if (!parse_quantity (g_strstrip (parts[1]), time_units, &l.rtt_ms) || l.rtt_ms < 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "link '%s': round-trip time '%s' is not a number >= 0 with a unit (us, ms, s)",
                 text, parts[1]);
    return FALSE;
  }
  if (n == 3) {
    char *end = NULL;
    gint64 w = g_ascii_strtoll (g_strstrip (parts[2]), &end, 10);
    if (end == parts[2] || *end != '\0' || w < 1 || w > 1 << 16) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "link '%s': window '%s' is not a whole number of frames in 1..65536", text,
                   parts[2]);
      return FALSE;
    }
    l.window = (int) w;
  }
  *link = l;
  return TRUE;
}

char *
nnp_link_to_string (const NnpLink *link)
{
  double mbit;

  g_return_val_if_fail (link != NULL, NULL);
  mbit = link->bytes_per_s * 8 / 1e6;
  return g_strdup_printf ("%.4g Mbit/s, RTT %.3g ms, window %d", mbit, link->rtt_ms,
                          MAX (link->window, 1));
}

void
nnp_link_charge (const NnpLink *onto, const NnpLink *off, NnpXferCost *out, NnpXferCost *in)
{
  if (off != NULL && off->bytes_per_s > 0)
    out->ms_per_byte += 1e3 / off->bytes_per_s;
  if (onto != NULL && onto->bytes_per_s > 0) {
    in->ms_per_byte += 1e3 / onto->bytes_per_s;
    in->overhead_ms += onto->rtt_ms / MAX (onto->window, 1);
  }
}
