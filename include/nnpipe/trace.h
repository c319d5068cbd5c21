/* nnpipe: a tracer of which stage worked on which frame when.
 *
 * A trace records spans ("stage 1 ran frame 7 from t0 to t1") and counter
 * samples ("queue0 holds 2 buffers at t") on named tracks, and writes them
 * as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open and `nnpipe timeline` draws:
 *
 *   { "displayTimeUnit": "ms", "traceEvents": [
 *       { "name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": { "name": "stage0" } },
 *       { "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": 1, "args": { "sort_index": 0 } },
 *       { "name": "frame 0", "cat": "stage", "ph": "X", "ts": 12.0, "dur": 51.3,
 *         "pid": 1, "tid": 1, "args": { "frame": 0 } },
 *       { "name": "queue0", "cat": "queue", "ph": "C", "ts": 63.4, "pid": 1,
 *         "args": { "buffers": 1 } }, ... ],
 *     "otherData": { "dropped_events": 0 } }
 * Times are microseconds since the trace was opened (monotonic clock).
 *
 * Recording is lock-free (one atomic add per event) and memory is bounded:
 * events go into chunks allocated on first use, up to max_events; events
 * past that are counted as dropped (written in "otherData").
 *
 * Traces are shared by file name within a process: nnp_trace_open() of a
 * path that is already open returns the same trace with one more
 * reference, so every stage of a pipeline writes into one file.  The file
 * is written when the last reference is closed (nnp_trace_close()). */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>

G_BEGIN_DECLS

typedef struct _NnpTrace NnpTrace;

#define NNP_TRACE_DEFAULT_MAX_EVENTS (1 << 18)

/* The trace for `path` (new, or the open one with one more reference).
 * max_events bounds its memory (0 = NNP_TRACE_DEFAULT_MAX_EVENTS; only the
 * first opener's value counts).  A new trace writes an empty trace file
 * at once, so that a path that cannot be written fails here
 * (NNP_ERROR_IO naming the path) and not at the end of a run. */
NnpTrace *nnp_trace_open (const char *path, guint max_events, GError **error);
/* Drop one reference; the last one writes the file and frees the trace.
 * Returns FALSE and sets error (NNP_ERROR_IO) when that write fails. */
gboolean nnp_trace_close (NnpTrace *trace, GError **error);
/* The path given to nnp_trace_open (owned by the trace). */
const char *nnp_trace_get_path (const NnpTrace *trace);

/* The value of the environment variable NNP_TRACE, or NULL when unset or empty. */
const char *nnp_trace_env_path (void);

/* A track (a row of the timeline) named `name` (copied).  Tracks with a
 * lower sort_index are drawn first.  Returns the track id (>= 1).  Asking
 * twice for the same name returns the same id. */
int nnp_trace_add_track (NnpTrace *trace, const char *name, int sort_index);

/* A counter (a queue level, drawn as a "C" series) named `name` (copied);
 * same-name calls return the same id.  Use it with nnp_trace_counter(). */
int nnp_trace_add_counter (NnpTrace *trace, const char *name);

/* Microseconds of the trace's clock (g_get_monotonic_time()). */
gint64 nnp_trace_now (void);

/* A span on a track: frame `frame` from begin_us to end_us (nnp_trace_now() values). */
void nnp_trace_span (NnpTrace *trace, int track, gint64 frame, gint64 begin_us, gint64 end_us);
/* A counter sample: counter `counter` (nnp_trace_add_counter) has `value` at ts_us. */
void nnp_trace_counter (NnpTrace *trace, int counter, gint64 value, gint64 ts_us);

/* Events dropped because the trace was full. */
guint nnp_trace_get_n_dropped (NnpTrace *trace);


G_END_DECLS
