/* Shared by the fuzz harnesses (tests/fuzz/) and the mutation smoke test
 * (tests/lib/fuzz-loader.c): the error contract and a capped run of a model. */
#pragma once

#include <nnpipe/nnpipe.h>

G_BEGIN_DECLS

/* Outcome counts of nnp_fuzz_try_run(). */
typedef struct {
  int loaded, load_failed, specialized, ran, run_failed, violations;
} NnpFuzzCounts;

/* The contract of a call that returns a result and sets a GError: exactly one
 * of the two, and the message one non-empty line.  Prints the violation (with
 * `where` and `iteration`), counts it and returns FALSE. */
gboolean nnp_fuzz_check_error (const char *where, int iteration, gboolean ok, const GError *error,
                               NnpFuzzCounts *c);

/* Specialise `model` with small concrete input shapes (unknown dims 1 for
 * the batch, 8 otherwise; rank <= 4, dims <= 64), then prepare one CPU stage
 * and run it once on the test pattern when the activations hold at most
 * `max_elements` elements in all and the graph at most `max_flops` FLOPs
 * (so a fuzzer cannot make it run out of memory or time). */
void nnp_fuzz_try_run (NnpModel *model, int iteration, double max_elements, double max_flops,
                       NnpFuzzCounts *c);

/* GLib log handler of the harnesses: a critical (a g_return_if_fail ()
 * failed) or a warning outside GStreamer is a bug: abort.  GStreamer warns
 * about odd structure names ("0.10-style raw video caps") that a fuzzer
 * makes up. */
void nnp_fuzz_log_handler (const gchar *domain, GLogLevelFlags level, const gchar *message,
                           gpointer data);

G_END_DECLS
