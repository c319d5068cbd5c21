/* "testmem": a test-only device backend (lib/backend.h), shared by
 * tests/lib/test-backend.c (the library with a third backend) and
 * tests/plugins/test-testmem.c (the plugin with it).
 *
 * Its device memory is host memory it allocates itself (refcounted
 * blocks), it runs Relu only (one node per stage), and it counts the host
 * copies it makes, as a device backend must.  Registering it
 * (nnp_backend_register (&nnp_testmem_backend)) is all it takes for device
 * specs ("testmem"), nnp_device_open(), tensors in its memory,
 * nnp_tensor_copy_into() and nnp_stage_run() to work with it. */
#include "testmem-backend.h"

#include "backends/copy-counts.h"
#include <nnpipe/device.h>

#include <string.h>

typedef struct {
  gint ref_count;
  gsize bytes;
  guint8 *mem;
} Block;

static int testmem_context;

static gpointer
tm_open (const char *spec, char **name_out, GError **error)
{
  if (strcmp (spec, "testmem") != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "testmem: no device '%s'", spec);
    return NULL;
  }
  *name_out = g_strdup ("testmem (host memory posing as a device)");
  return &testmem_context;
}

static void
tm_close (gpointer ctx)
{
  g_assert_true (ctx == &testmem_context);
}

static gboolean
tm_supports_node (gpointer ctx, const NnpGraph *graph, const NnpNode *node, char **why)
{
  if (node->op == NNP_OP_RELU)
    return TRUE;
  if (why)
    *why = g_strdup_printf ("%s: testmem runs Relu only", node->op_type);
  return FALSE;
}

typedef struct {
  int in_id, out_id;
  gsize n; /* floats */
} TmStage;

static gpointer
tm_stage_new (gpointer ctx, const NnpBackendStageInfo *info, GError **error)
{
  TmStage *s;

  if (info->n_nodes != 1 || info->n_inputs != 1 || info->n_outputs != 1) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "testmem: one Relu per stage");
    return NULL;
  }
  s = g_new0 (TmStage, 1);
  s->in_id = info->inputs[0];
  s->out_id = info->outputs[0];
  s->n = (gsize) nnp_shape_numel (&nnp_graph_value (info->graph, s->in_id)->shape);
  return s;
}

/* Where a tensor's floats are: its host data, or in a block of ours. */
static float *
tm_floats (NnpTensor *t)
{
  if (t->device == NULL)
    return t->data;
  g_assert_cmpstr (nnp_device_get_backend (t->device), ==, "testmem");
  return (float *) (((Block *) t->handle)->mem + t->offset);
}

static gboolean
tm_stage_run (gpointer stage, NnpTensor *const *inputs, NnpTensor *const *outputs, GError **error)
{
  TmStage *s = stage;
  const float *x = tm_floats (inputs[0]);
  float *y = tm_floats (outputs[0]);

  /* host boundary tensors cross to "the device" and back: one copy each */
  if (inputs[0]->device == NULL)
    nnp_device_count_copy (TRUE, inputs[0]->nbytes);
  if (outputs[0]->device == NULL)
    nnp_device_count_copy (FALSE, outputs[0]->nbytes);
  for (gsize i = 0; i < s->n; i++)
    y[i] = x[i] > 0.f ? x[i] : 0.f;
  return TRUE;
}

static void
tm_stage_free (gpointer stage)
{
  g_free (stage);
}

static gpointer
tm_buffer_alloc (gpointer ctx, gsize bytes, GError **error)
{
  Block *b = g_new0 (Block, 1);

  b->ref_count = 1;
  b->bytes = bytes;
  b->mem = g_malloc0 (bytes);
  return b;
}

static void
tm_buffer_ref (gpointer buffer)
{
  g_atomic_int_inc (&((Block *) buffer)->ref_count);
}

static void
tm_buffer_unref (gpointer buffer)
{
  Block *b = buffer;

  if (g_atomic_int_dec_and_test (&b->ref_count)) {
    g_free (b->mem);
    g_free (b);
  }
}

static gboolean
tm_buffer_write (gpointer ctx, gpointer buffer, gsize offset, const void *src, gsize bytes,
                 GError **error)
{
  Block *b = buffer;

  g_assert_cmpuint (offset + bytes, <=, b->bytes);
  memcpy (b->mem + offset, src, bytes);
  return TRUE;
}

static gboolean
tm_buffer_read (gpointer ctx, gpointer buffer, gsize offset, void *dst, gsize bytes, GError **error)
{
  Block *b = buffer;

  g_assert_cmpuint (offset + bytes, <=, b->bytes);
  memcpy (dst, b->mem + offset, bytes);
  return TRUE;
}

const NnpBackend nnp_testmem_backend = {
  .name = "testmem",
  .spec_help = "testmem",
  .open = tm_open,
  .close = tm_close,
  .supports_node = tm_supports_node,
  .stage_new = tm_stage_new,
  .stage_run = tm_stage_run,
  .stage_free = tm_stage_free,
  .buffer_alloc = tm_buffer_alloc,
  .buffer_ref = tm_buffer_ref,
  .buffer_unref = tm_buffer_unref,
  .buffer_write = tm_buffer_write,
  .buffer_read = tm_buffer_read,
};
