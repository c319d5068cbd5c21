/* nnpipe: the one planning call (lib/pipeline/plan-make.c). */
#pragma once

#include <glib.h>
#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/specialize.h>

G_BEGIN_DECLS

/* The one planning call of the CLI and nnpipeline: from a plan file or by
 * splitting `model` specialised for `shapes` (n_shapes = 0: the plan file's
 * shapes or the model's static ones) as `req` asks.  The plan is resolved
 * and predicted.  *graph_out (when not NULL) gets the specialised graph the
 * plan refers to (caller owns the ref).  NULL + NNP_ERROR_PLAN (request,
 * plan file, digest), NNP_ERROR_DEVICE (a device is missing without
 * fallback) or the loader's / specialiser's error. */
NnpPlan *nnp_plan_make (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                        const NnpPlanRequest *req, NnpGraph **graph_out, GError **error);

G_END_DECLS
