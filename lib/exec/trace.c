/* nnpipe: the tracer (see include/nnpipe/trace.h). */
#include <nnpipe/trace.h>

#include "exec/trace-private.h"

#include <glib/gstdio.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_EVENTS 4096

enum { EV_SPAN = 1, EV_COUNTER = 2 };

typedef struct {
  gint64 ts;    /* microseconds, absolute monotonic */
  gint64 dur;   /* spans */
  gint64 value; /* frame index (spans) or counter value */
  gint32 track;
  gint32 kind; /* 0 until the event is complete (atomic store last) */
} TraceEvent;

typedef struct {
  char *name;
  int sort_index;
  gboolean counter;
} TraceTrack;

struct _NnpTrace {
  char *path;   /* owned */
  int refs;     /* under traces_lock */
  gint64 epoch; /* nnp_trace_now() at open */
  guint max_events;
  guint n_chunks;
  TraceEvent **chunks; /* n_chunks pointers, each NULL or CHUNK_EVENTS events */
  gint next;           /* atomic: next free slot */
  gint dropped;        /* atomic */
  GMutex lock;         /* tracks and writing */
  GPtrArray *tracks;   /* TraceTrack* (owned); id = index + 1 */
};

/* path -> NnpTrace*, the open traces of this process */
static GMutex traces_lock;
static GHashTable *traces;

static void
track_free (gpointer p)
{
  TraceTrack *t = p;

  g_free (t->name);
  g_free (t);
}

NnpTrace *
nnp_trace_open (const char *path, guint max_events, GError **error)
{
  static const char empty[] = "{\"traceEvents\":[]}\n";
  g_autoptr (GError) werr = NULL;
  NnpTrace *t;

  g_return_val_if_fail (path != NULL, NULL);
  if (*path == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "empty trace file name");
    return NULL;
  }

  g_mutex_lock (&traces_lock);
  if (traces == NULL)
    traces = g_hash_table_new (g_str_hash, g_str_equal);
  t = g_hash_table_lookup (traces, path);
  if (t != NULL) {
    t->refs++;
    g_mutex_unlock (&traces_lock);
    return t;
  }
  /* fail now, not at the end of the run, when the file cannot be written */
  if (!g_file_set_contents (path, empty, -1, &werr)) {
    g_mutex_unlock (&traces_lock);
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot write trace '%s': %s", path,
                 werr->message);
    return NULL;
  }
  t = g_new0 (NnpTrace, 1);
  t->path = g_strdup (path);
  t->refs = 1;
  t->epoch = nnp_trace_now ();
  t->max_events = max_events ? max_events : NNP_TRACE_DEFAULT_MAX_EVENTS;
  t->n_chunks = (t->max_events + CHUNK_EVENTS - 1) / CHUNK_EVENTS;
  t->max_events = t->n_chunks * CHUNK_EVENTS;
  t->chunks = g_new0 (TraceEvent *, t->n_chunks);
  g_mutex_init (&t->lock);
  t->tracks = g_ptr_array_new_with_free_func (track_free);
  g_hash_table_insert (traces, t->path, t);
  g_mutex_unlock (&traces_lock);
  return t;
}

gboolean
nnp_trace_close (NnpTrace *trace, GError **error)
{
  gboolean last, ok = TRUE;

  if (trace == NULL)
    return TRUE;
  g_mutex_lock (&traces_lock);
  last = --trace->refs == 0;
  if (last)
    g_hash_table_remove (traces, trace->path);
  g_mutex_unlock (&traces_lock);
  if (!last)
    return TRUE;

  ok = nnp_trace_write (trace, error);
  for (guint i = 0; i < trace->n_chunks; i++)
    g_free (trace->chunks[i]);
  g_free (trace->chunks);
  g_ptr_array_unref (trace->tracks);
  g_mutex_clear (&trace->lock);
  g_free (trace->path);
  g_free (trace);
  return ok;
}

const char *
nnp_trace_get_path (const NnpTrace *trace)
{
  g_return_val_if_fail (trace != NULL, NULL);
  return trace->path;
}

const char *
nnp_trace_env_path (void)
{
  const char *p = g_getenv ("NNP_TRACE");

  return p && *p ? p : NULL;
}

gint64
nnp_trace_now (void)
{
  return g_get_monotonic_time ();
}

static int
add_track (NnpTrace *trace, const char *name, int sort_index, gboolean counter)
{
  int id = 0;

  g_return_val_if_fail (trace != NULL && name != NULL, 0);
  g_mutex_lock (&trace->lock);
  for (guint i = 0; i < trace->tracks->len && id == 0; i++) {
    TraceTrack *t = g_ptr_array_index (trace->tracks, i);
    if (t->counter == counter && strcmp (t->name, name) == 0)
      id = (int) i + 1;
  }
  if (id == 0) {
    TraceTrack *t = g_new0 (TraceTrack, 1);
    t->name = g_strdup (name);
    t->sort_index = sort_index;
    t->counter = counter;
    g_ptr_array_add (trace->tracks, t);
    id = (int) trace->tracks->len;
  }
  g_mutex_unlock (&trace->lock);
  return id;
}

int
nnp_trace_add_track (NnpTrace *trace, const char *name, int sort_index)
{
  return add_track (trace, name, sort_index, FALSE);
}

int
nnp_trace_add_counter (NnpTrace *trace, const char *name)
{
  return add_track (trace, name, 0, TRUE);
}

/* A slot for one event, or NULL when the trace is full. */
static TraceEvent *
reserve (NnpTrace *trace)
{
  guint slot = (guint) g_atomic_int_add (&trace->next, 1);
  TraceEvent **chunk;
  TraceEvent *mem;

  if (slot >= trace->max_events) {
    g_atomic_int_inc (&trace->dropped);
    return NULL;
  }
  chunk = &trace->chunks[slot / CHUNK_EVENTS];
  mem = g_atomic_pointer_get (chunk);
  if (mem == NULL) {
    TraceEvent *fresh = g_new0 (TraceEvent, CHUNK_EVENTS);
    if (g_atomic_pointer_compare_and_exchange (chunk, NULL, fresh))
      mem = fresh;
    else {
      g_free (fresh);
      mem = g_atomic_pointer_get (chunk);
    }
  }
  return &mem[slot % CHUNK_EVENTS];
}

void
nnp_trace_span (NnpTrace *trace, int track, gint64 frame, gint64 begin_us, gint64 end_us)
{
  TraceEvent *e;

  g_return_if_fail (trace != NULL && track > 0);
  if ((e = reserve (trace)) == NULL)
    return;
  e->ts = begin_us;
  e->dur = MAX (end_us - begin_us, 0);
  e->value = frame;
  e->track = track;
  g_atomic_int_set (&e->kind, EV_SPAN);
}

void
nnp_trace_counter (NnpTrace *trace, int track, gint64 value, gint64 ts_us)
{
  TraceEvent *e;

  g_return_if_fail (trace != NULL && track > 0);
  if ((e = reserve (trace)) == NULL)
    return;
  e->ts = ts_us;
  e->dur = 0;
  e->value = value;
  e->track = track;
  g_atomic_int_set (&e->kind, EV_COUNTER);
}

guint
nnp_trace_get_n_events (NnpTrace *trace)
{
  g_return_val_if_fail (trace != NULL, 0);
  return MIN ((guint) g_atomic_int_get (&trace->next), trace->max_events);
}

guint
nnp_trace_get_n_dropped (NnpTrace *trace)
{
  g_return_val_if_fail (trace != NULL, 0);
  return (guint) g_atomic_int_get (&trace->dropped);
}

/* A JSON string literal of s (quotes included) appended to out. */
static void
append_json_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_printf (out, "\\%c", *p);
    else if (*p < 0x20)
      g_string_append_printf (out, "\\u%04x", *p);
    else
      g_string_append_c (out, (char) *p);
  }
  g_string_append_c (out, '"');
}

static int
cmp_events (gconstpointer a, gconstpointer b)
{
  const TraceEvent *x = a, *y = b;

  /* ties (same microsecond): by track, then frame, so a track stays in order */
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  if (x->track != y->track)
    return x->track < y->track ? -1 : 1;
  return x->value < y->value ? -1 : x->value > y->value;
}

gboolean
nnp_trace_write (NnpTrace *trace, GError **error)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GArray) events = g_array_new (FALSE, FALSE, sizeof (TraceEvent));
  g_autofree char *tmp = NULL;
  guint n;
  g_autoptr (GError) werr = NULL;

  g_return_val_if_fail (trace != NULL, FALSE);

  n = nnp_trace_get_n_events (trace);
  for (guint i = 0; i < n; i++) {
    TraceEvent *chunk = g_atomic_pointer_get (&trace->chunks[i / CHUNK_EVENTS]);
    TraceEvent *e = chunk ? &chunk[i % CHUNK_EVENTS] : NULL;
    if (e && g_atomic_int_get (&e->kind) != 0)
      g_array_append_val (events, *e);
  }
  g_array_sort (events, cmp_events);

  g_mutex_lock (&trace->lock);
  g_string_append (out, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  g_string_append (
      out,
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"nnpipe\"}}");
  for (guint i = 0; i < trace->tracks->len; i++) {
    const TraceTrack *t = g_ptr_array_index (trace->tracks, i);
    if (t->counter)
      continue;
    g_string_append_printf (
        out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":",
        i + 1);
    append_json_string (out, t->name);
    g_string_append_printf (
        out,
        "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"sort_index\":%d}}",
        i + 1, t->sort_index);
  }
  for (guint i = 0; i < events->len; i++) {
    const TraceEvent *e = &g_array_index (events, TraceEvent, i);
    char ts[G_ASCII_DTOSTR_BUF_SIZE], dur[G_ASCII_DTOSTR_BUF_SIZE];
    const TraceTrack *t;

    if (e->track < 1 || (guint) e->track > trace->tracks->len)
      continue;
    t = g_ptr_array_index (trace->tracks, e->track - 1);
    g_ascii_formatd (ts, sizeof ts, "%.1f", (double) (e->ts - trace->epoch));
    if (e->kind == EV_SPAN) {
      g_ascii_formatd (dur, sizeof dur, "%.1f", (double) e->dur);
      g_string_append_printf (
          out,
          ",\n{\"name\":\"frame %" G_GINT64_FORMAT
          "\",\"cat\":\"stage\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":1,\"tid\":%d,\"args\":{\"frame\":%" G_GINT64_FORMAT
          "}}",
          e->value, ts, dur, e->track, e->value);
    } else {
      g_string_append (out, ",\n{\"name\":");
      append_json_string (out, t->name);
      g_string_append_printf (
          out,
          ",\"cat\":\"queue\",\"ph\":\"C\",\"ts\":%s,\"pid\":1,\"args\":{\"buffers\":%" G_GINT64_FORMAT
          "}}",
          ts, e->value);
    }
  }
  g_string_append_printf (out, "\n],\"otherData\":{\"dropped_events\":%u}}\n",
                          nnp_trace_get_n_dropped (trace));
  g_mutex_unlock (&trace->lock);

  tmp = g_strdup_printf ("%s.tmp%d", trace->path, (int) getpid ());
  if (!g_file_set_contents (tmp, out->str, (gssize) out->len, &werr))
    goto write_failed;
  if (g_rename (tmp, trace->path) != 0) {
    int errsv = errno;
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot write trace '%s': %s", trace->path,
                 g_strerror (errsv));
    g_unlink (tmp);
    return FALSE;
  }
  return TRUE;

  /* ERRORS */
write_failed:
  g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot write trace '%s': %s", trace->path,
               werr->message);
  return FALSE;
}
