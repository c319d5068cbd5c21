/* libnnpipe internal: the CPU backend's executor (cpu-exec.c): a prepared
 * list of nodes run on host tensors, behind the table of cpu-backend.c. */
#pragma once

#include "backend.h"
#include "backends/cpu/cpu.h"

G_BEGIN_DECLS

typedef struct _NnpCpuExec NnpCpuExec;

NnpCpuExec *nnp_cpu_exec_new (const NnpBackendStageInfo *info, GError **error);
void nnp_cpu_exec_free (NnpCpuExec *exec);
gsize nnp_cpu_exec_get_arena_bytes (NnpCpuExec *exec);
/* Host tensors, checked by the caller; NULL for forwarded outputs. */
gboolean nnp_cpu_exec_run (NnpCpuExec *exec, NnpTensor *const *inputs, NnpTensor *const *outputs,
                           GError **error);

G_END_DECLS
