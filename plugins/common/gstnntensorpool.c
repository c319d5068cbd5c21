/* GStreamer nnpipe plugin: buffer pool for other/tensors (see
 * gstnntensorpool.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnntensorpool.h"
#include "gstnntensorcaps.h"
#include "gstnndevicememory.h"

GST_DEBUG_CATEGORY_STATIC (gst_nn_tensor_pool_debug);
#define GST_CAT_DEFAULT gst_nn_tensor_pool_debug

/* ThreadSanitizer cannot see the happens-before edges a buffer pool relies
 * on: the reference count and the pool's lock-free queue are atomics inside
 * uninstrumented libgstreamer, so a stage that read a buffer and dropped its
 * reference and the stage that fills the same buffer after the next acquire
 * look like a race on the tensor memory (the TSan job saw one between two
 * nnstages).  Under TSan, release_buffer (run by whoever dropped the last
 * reference) acquires what every unref released (tests/tsan/glib-locks.c
 * releases the buffer on each unref) and releases it to the next
 * acquire_buffer, keyed on the GstBuffer, which the pool reuses.  Nothing
 * in other builds.  tests/tsan/test-tensor-pool.c shows TSan's report
 * without them. */
#if defined(__SANITIZE_THREAD__) && !defined(NNP_TSAN_POOL_UNSEEN)
void __tsan_acquire (void *addr);
void __tsan_release (void *addr);
#define POOL_TSAN_RELEASE(b) (__tsan_acquire (b), __tsan_release (b))
#define POOL_TSAN_ACQUIRE(b) __tsan_acquire (b)
#else
#define POOL_TSAN_RELEASE(b) ((void) (b))
#define POOL_TSAN_ACQUIRE(b) ((void) (b))
#endif

/* tensors are 64-byte aligned, as libnnpipe's own allocations */
#define TENSOR_ALIGN 63

struct _GstNnTensorPool
{
  GstBufferPool parent;

  GstNnTensorsInfo info;
  GstAllocator *allocator;
  GstAllocationParams params;
};

G_DEFINE_TYPE_WITH_CODE (GstNnTensorPool, gst_nn_tensor_pool,
    GST_TYPE_BUFFER_POOL,
    GST_DEBUG_CATEGORY_INIT (gst_nn_tensor_pool_debug, "nntensorpool", 0,
        "nnpipe tensor buffer pool"));

static const gchar **
gst_nn_tensor_pool_get_options (GstBufferPool *pool)
{
  static const gchar *options[] = { NULL };
  return options;
}

static gboolean
gst_nn_tensor_pool_set_config (GstBufferPool *pool, GstStructure *config)
{
  GstNnTensorPool *self = GST_NN_TENSOR_POOL (pool);
  GstCaps *caps = NULL;
  guint size, min, max;
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  GError *err = NULL;
  gsize total;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || caps == NULL) {
    GST_WARNING_OBJECT (pool, "no caps in the pool configuration");
    return FALSE;
  }
  if (!gst_nn_tensors_info_from_caps (&self->info, caps, &err)) {
    GST_WARNING_OBJECT (pool, "invalid caps %" GST_PTR_FORMAT ": %s", caps,
        err->message);
    g_clear_error (&err);
    return FALSE;
  }
  total = gst_nn_tensors_info_get_size (&self->info);
  if (total == 0) {
    GST_WARNING_OBJECT (pool, "tensor caps with no size");
    return FALSE;
  }

  if (!gst_buffer_pool_config_get_allocator (config, &allocator, &params))
    return FALSE;
  params.align = MAX (params.align, TENSOR_ALIGN);
  gst_buffer_pool_config_set_allocator (config, allocator, &params);
  /* the pool's size is the sum of all tensors */
  gst_buffer_pool_config_set_params (config, caps, (guint) total, min, max);

  g_clear_object (&self->allocator);
  self->allocator = allocator ? gst_object_ref (allocator) : NULL;
  self->params = params;

  return GST_BUFFER_POOL_CLASS (gst_nn_tensor_pool_parent_class)
      ->set_config (pool, config);
}

static GstBuffer *
tensors_buffer_new (const GstNnTensorsInfo *info, GstAllocator *allocator,
    GstAllocationParams *params)
{
  GstBuffer *buf = gst_buffer_new ();

  for (guint i = 0; i < info->n_tensors; i++) {
    gsize size = gst_nn_tensor_info_get_size (&info->tensors[i]);
    GstMemory *mem = gst_allocator_alloc (allocator, size, params);

    if (mem == NULL) {
      gst_buffer_unref (buf);
      return NULL;
    }
    gst_buffer_append_memory (buf, mem);
  }
  return buf;
}

static GstFlowReturn
gst_nn_tensor_pool_alloc_buffer (GstBufferPool *pool, GstBuffer **buffer,
    GstBufferPoolAcquireParams *acquire_params)
{
  GstNnTensorPool *self = GST_NN_TENSOR_POOL (pool);

  *buffer = tensors_buffer_new (&self->info, self->allocator, &self->params);
  if (*buffer == NULL) {
    GST_WARNING_OBJECT (pool, "could not allocate a tensor buffer");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_nn_tensor_pool_acquire_buffer (GstBufferPool *pool, GstBuffer **buffer,
    GstBufferPoolAcquireParams *params)
{
  GstFlowReturn ret = GST_BUFFER_POOL_CLASS (gst_nn_tensor_pool_parent_class)
                          ->acquire_buffer (pool, buffer, params);

  if (ret == GST_FLOW_OK)
    POOL_TSAN_ACQUIRE (*buffer);
  return ret;
}

static void
gst_nn_tensor_pool_release_buffer (GstBufferPool *pool, GstBuffer *buffer)
{
  POOL_TSAN_RELEASE (buffer);
  GST_BUFFER_POOL_CLASS (gst_nn_tensor_pool_parent_class)
      ->release_buffer (pool, buffer);
}

static void
gst_nn_tensor_pool_finalize (GObject *object)
{
  GstNnTensorPool *self = GST_NN_TENSOR_POOL (object);

  g_clear_object (&self->allocator);
  G_OBJECT_CLASS (gst_nn_tensor_pool_parent_class)->finalize (object);
}

static void
gst_nn_tensor_pool_class_init (GstNnTensorPoolClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = gst_nn_tensor_pool_finalize;
  pool_class->get_options = GST_DEBUG_FUNCPTR (gst_nn_tensor_pool_get_options);
  pool_class->set_config = GST_DEBUG_FUNCPTR (gst_nn_tensor_pool_set_config);
  pool_class->alloc_buffer =
      GST_DEBUG_FUNCPTR (gst_nn_tensor_pool_alloc_buffer);
  pool_class->acquire_buffer =
      GST_DEBUG_FUNCPTR (gst_nn_tensor_pool_acquire_buffer);
  pool_class->release_buffer =
      GST_DEBUG_FUNCPTR (gst_nn_tensor_pool_release_buffer);
}

static void
gst_nn_tensor_pool_init (GstNnTensorPool *self)
{
  gst_nn_tensors_info_init (&self->info);
  gst_allocation_params_init (&self->params);
}

GstBufferPool *
gst_nn_tensor_pool_new (void)
{
  /* GstObjects start floating: sink it, as gst_buffer_pool_new() does */
  return gst_object_ref_sink (g_object_new (GST_TYPE_NN_TENSOR_POOL, NULL));
}

GstBuffer *
gst_nn_tensors_buffer_new (const GstCaps *caps)
{
  GstNnTensorsInfo info;
  GstAllocationParams params;

  g_return_val_if_fail (GST_IS_CAPS (caps), NULL);

  if (!gst_nn_tensors_info_from_caps (&info, caps, NULL))
    return NULL;
  gst_allocation_params_init (&params);
  params.align = TENSOR_ALIGN;
  return tensors_buffer_new (&info, NULL, &params);
}

gboolean
gst_nn_tensor_pool_decide_allocation (GstQuery *query, NnpDevice *device)
{
  GstCaps *outcaps;
  GstNnTensorsInfo info;
  GstBufferPool *pool;
  guint min = 0;

  gst_query_parse_allocation (query, &outcaps, NULL);
  if (outcaps == NULL || !gst_nn_tensors_info_from_caps (&info, outcaps, NULL))
    return FALSE;

  /* keep downstream's minimum; no maximum */
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, NULL, NULL, &min, NULL);
  while (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_remove_nth_allocation_pool (query, 0);

  pool = gst_nn_tensor_pool_new ();
  gst_query_add_allocation_pool (query, pool,
      (guint) gst_nn_tensors_info_get_size (&info), min, 0);
  gst_object_unref (pool);

  if (device) {
    GstAllocator *allocator = gst_nn_device_allocator_new (device);
    GstAllocationParams params;

    gst_allocation_params_init (&params);
    while (gst_query_get_n_allocation_params (query) > 0)
      gst_query_remove_nth_allocation_param (query, 0);
    gst_query_add_allocation_param (query, allocator, &params);
    gst_object_unref (allocator);
  }
  return TRUE;
}
