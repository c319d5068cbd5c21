/* libFuzzer harnesses of the ONNX loader, built twice:
 *
 * fuzz-onnx-load: the loader from bytes (ModelProto, then the same bytes as a
 *   TensorProto).  Seeds: corpus/onnx-load/.
 * fuzz-onnx-run (-DNNP_FUZZ_RUN): load + specialise + run on small shapes.
 *   A model that loads is specialised (unknown dims small, dims <= 64) and
 *   run as one CPU stage when its activations hold at most 2^18 elements and
 *   it costs at most 5e7 FLOPs, so an input cannot make the fuzzer run out of
 *   memory or time.  Seeds: corpus/onnx-run/.
 *
 * Any input must give a result xor a one-line GError; a crash, a sanitizer
 * report, a leak or a broken contract aborts. */
#include "fuzz-common.h"
#include "onnx/model-private.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  NnpFuzzCounts c = { 0 };
  GError *error = NULL;
  NnpModel *model;

  model = nnp_model_load_from_bytes (data, size, "fuzz.onnx", &error);
  if (!nnp_fuzz_check_error ("load", 0, model != NULL, error, &c))
    abort ();
  g_clear_error (&error);
#ifdef NNP_FUZZ_RUN
  if (model != NULL)
    nnp_fuzz_try_run (model, 0, 262144.0, 5e7, &c);
#else
  {
    char *name = NULL;
    NnpTensor *tensor = nnp_tensor_from_onnx_bytes (data, size, &name, &error);
    if (!nnp_fuzz_check_error ("tensor", 0, tensor != NULL, error, &c))
      abort ();
    g_clear_pointer (&tensor, nnp_tensor_unref);
    g_clear_error (&error);
    g_free (name);
  }
#endif
  g_clear_pointer (&model, nnp_model_unref);
  if (c.violations > 0)
    abort ();
  return 0;
}
