/* Replicated stages: a stage run as K copies that take frames in turn
 * (issue 13 item 2).  Throughput model: each replica runs the stage's
 * nodes for every K-th frame, so per frame the stage costs 1/K of one
 * replica (compute and its transfers); the splitting solvers see the scaled
 * costs and balance the stages accordingly (the search over replica counts
 * is in replicas-search.c). */
#include <nnpipe/plan.h>
#include <nnpipe/device.h>

#include "partition/partition.h"

#include <string.h>

#define MAX_REPLICAS 64

static void
scale_xfer (NnpXferCost *x, double f)
{
  x->overhead_ms *= f;
  x->per_tensor_ms *= f;
  x->ms_per_byte *= f;
}

void
nnp_split_scale_replicas (const NnpDeviceSpec *devs, int n_stages, int n_nodes, double *node_ms,
                          NnpXferCost *out, NnpXferCost *in, NnpXferCost *graph_in,
                          NnpXferCost *graph_out)
{
  for (int k = 0; k < n_stages; k++) {
    double f;

    if (devs[k].replicas <= 1)
      continue;
    f = 1.0 / devs[k].replicas;
    for (int i = 0; i < n_nodes; i++)
      node_ms[(gsize) k * n_nodes + i] *= f;
    if (k + 1 < n_stages)
      scale_xfer (&out[k], f);
    if (k > 0)
      scale_xfer (&in[k - 1], f);
    if (k == 0)
      scale_xfer (graph_in, f);
    if (k + 1 == n_stages)
      scale_xfer (graph_out, f);
  }
}
