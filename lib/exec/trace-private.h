/* libnnpipe internal: traces (lib/exec/trace.c). */
#pragma once

#include <nnpipe/trace.h>

G_BEGIN_DECLS

/* Events recorded so far. */
guint nnp_trace_get_n_events (NnpTrace *trace);
/* Write the events recorded so far to the trace's path (atomically:
 * a temporary file renamed over it).  NNP_ERROR_IO on failure. */
gboolean nnp_trace_write (NnpTrace *trace, GError **error);

G_END_DECLS
