/* libFuzzer harness: the plan JSON parser (nnp_plan_from_json).
 *
 * The input is passed with its length and no NUL after it (the public API
 * allows that; issue 14 F1).  A plan that parses must print back to JSON
 * that parses to the same text, and is validated against a small specialised
 * graph (tests/data/small.onnx) so the checks behind validation run too.
 * Seeds: corpus/plan-json/. */
#include "fuzz-common.h"
#include <nnpipe/specialize.h>
#include "partition/partition.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

static NnpGraph *small_graph; /* owned for the process's life */

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;
  NnpModel *model = nnp_model_load (NNP_FUZZ_SMALL_MODEL, &error);
  NnpInputShape shape = { "x", { 4, { 1, 3, 8, 8 } } };

  if (model == NULL) {
    g_printerr ("fuzz-plan-json: %s\n", error->message);
    abort ();
  }
  small_graph = nnp_model_specialize (model, &shape, 1, NNP_SPECIALIZE_DEFAULT, &error);
  nnp_model_unref (model);
  if (small_graph == NULL) {
    g_printerr ("fuzz-plan-json: %s\n", error->message);
    abort ();
  }
  return 0;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  NnpFuzzCounts c = { 0 };
  GError *error = NULL;
  /* a copy of exactly `size` bytes: ASan sees any read past the end */
  char *buf = (char *) g_malloc (size + 1) + 1;
  NnpPlan *plan, *back;
  char *json, *json2;

  memcpy (buf, data, size);
  plan = nnp_plan_from_json (buf, (gssize) size, &error);
  if (!nnp_fuzz_check_error ("from_json", 0, plan != NULL, error, &c))
    abort ();
  g_clear_error (&error);
  if (plan != NULL) {
    json = nnp_plan_to_json (plan);
    back = nnp_plan_from_json (json, -1, &error);
    if (back == NULL) {
      g_printerr ("a printed plan does not parse: %s\n%s\n", error->message, json);
      abort ();
    }
    json2 = nnp_plan_to_json (back);
    if (strcmp (json, json2) != 0) {
      g_printerr ("plan JSON does not survive a round trip:\n%s\n%s\n", json, json2);
      abort ();
    }
    if (!nnp_plan_validate (back, small_graph, &error)
        && !nnp_fuzz_check_error ("validate", 0, FALSE, error, &c))
      abort ();
    g_clear_error (&error);
    g_free (json);
    g_free (json2);
    nnp_plan_free (back);
    nnp_plan_free (plan);
  }
  g_free (buf - 1);
  return 0;
}
