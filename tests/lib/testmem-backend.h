/* "testmem": a test-only device backend (testmem-backend.c). */
#pragma once

#include "backend.h"

extern const NnpBackend nnp_testmem_backend;
