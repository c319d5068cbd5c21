/* libnnpipe internal: stages (lib/exec/stage.c). */
#pragma once

#include <nnpipe/stage.h>

G_BEGIN_DECLS

NnpGraph *nnp_stage_get_graph (NnpStage *stage);

/* A new tensor for output i in the memory of the stage's device (host memory
 * on the CPU). */
NnpTensor *nnp_stage_new_device_output (NnpStage *stage, int i, GError **error);

G_END_DECLS
