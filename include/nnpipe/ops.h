/* nnpipe: what the library knows of an op beyond its shapes (lib/ops/).
 *
 * The ops themselves are declared once in op-list.h (NnpOpType in graph.h). */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Total FLOPs (multiply-add = 2) of one node given its inferred shapes; 0 if unknown. */
double nnp_node_flops (const NnpGraph *graph, const NnpNode *node);

G_END_DECLS
