/* libnnpipe internal: specialisation (lib/specialize/specialize.c). */
#pragma once

#include <nnpipe/specialize.h>

G_BEGIN_DECLS

/* Parse a key back: at most max_shapes shapes; each name must be a
 * non-constant input of graph (shapes[i].name points into graph); *flags
 * (when not NULL) gets NNP_SPECIALIZE_NO_FUSION for a "-nofusion" key.
 * FALSE + NNP_ERROR_INVALID naming the bad item. */
gboolean nnp_shapes_from_key (const NnpGraph *graph, const char *key, NnpInputShape *shapes,
                              int max_shapes, int *n_shapes, NnpSpecializeFlags *flags,
                              GError **error);

G_END_DECLS
