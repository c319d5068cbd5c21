/* nnpipe: umbrella header of libnnpipe. */
#pragma once

#include <nnpipe/error.h>
#include <nnpipe/tensor.h>
#include <nnpipe/graph.h>
#include <nnpipe/model.h>
#include <nnpipe/stage.h>
#include <nnpipe/plan.h>
#include <nnpipe/log.h>

G_BEGIN_DECLS
const char *nnp_version (void);
G_END_DECLS
