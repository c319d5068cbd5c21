/* nnpipe: umbrella header of libnnpipe, the public API (docs/architecture.md,
 * "The public API"): every header of include/nnpipe/. */
#pragma once

#include <nnpipe/error.h>
#include <nnpipe/log.h>
#include <nnpipe/tensor.h>
#include <nnpipe/graph.h>
#include <nnpipe/ops.h>
#include <nnpipe/model.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include <nnpipe/stage.h>
#include <nnpipe/trace.h>
#include <nnpipe/plan.h>
#include <nnpipe/rebalance.h>
#include <nnpipe/remote.h>
#include <nnpipe/part.h>
#include <nnpipe/plan-make.h>

G_BEGIN_DECLS
const char *nnp_version (void);
G_END_DECLS
