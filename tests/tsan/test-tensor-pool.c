/* tsan-tensor-pool: a tensor buffer shared by two threads and recycled by
 * GstNnTensorPool (at most one buffer), ordered only by GStreamer's own
 * atomics, as between two nnstages:
 *  - a reader thread reads the buffer and drops its reference; the main
 *    thread waits until the count says so, drops the last reference (back
 *    to the pool), acquires the same buffer again and writes it;
 *  - a reader thread reads and drops the last reference itself; the main
 *    thread's acquire gets the buffer back and writes it.
 * The reference count and the pool's queue are atomics inside
 * uninstrumented libgstreamer, so only the TSan annotations (the unref
 * wrapper in tests/tsan/glib-locks.c, the pool's release/acquire in
 * plugins/common/gstnntensorpool.c) tell ThreadSanitizer that the reads
 * happened before the writes.  With them there is no report (test
 * tsan-tensor-pool); with the pool's left out (-DNNP_TSAN_POOL_UNSEEN)
 * TSan reports the race the TSan job once saw (tsan-tensor-pool-unseen,
 * should_fail): proof that the annotations, not timing, keep it quiet. */
#include <gst/gst.h>

#include "gstnntensorpool.h"

#define ROUNDS 20

static guint sums[ROUNDS];

typedef struct {
  GstBuffer *buf;
  guint round;
} Job;

static gpointer
reader (gpointer data)
{
  Job *job = data;
  GstMapInfo map;
  guint sum = 0;

  g_assert_true (gst_buffer_map (job->buf, &map, GST_MAP_READ));
  for (gsize i = 0; i < map.size; i++)
    sum += map.data[i];
  gst_buffer_unmap (job->buf, &map);
  sums[job->round] = sum;
  gst_buffer_unref (job->buf);
  return NULL;
}

static GstBuffer *
acquire_and_fill (GstBufferPool *pool, guint8 value)
{
  GstBuffer *buf = NULL;
  GstMapInfo map;

  g_assert_cmpint (gst_buffer_pool_acquire_buffer (pool, &buf, NULL), ==, GST_FLOW_OK);
  g_assert_true (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  memset (map.data, value, map.size);
  gst_buffer_unmap (buf, &map);
  return buf;
}

int
main (int argc, char **argv)
{
  GstBufferPool *pool;
  GstStructure *config;
  GstCaps *caps;
  Job jobs[ROUNDS];
  GThread *threads[ROUNDS];
  const gsize size = 64 * 32 * 4;

  gst_init (&argc, &argv);
  caps = gst_caps_from_string (
      "other/tensors, format=(string)static, num_tensors=(int)1, dimensions=(string)64:32, types=(string)float32, framerate=(fraction)0/1");
  pool = gst_nn_tensor_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, size, 1, 1);
  g_assert_true (gst_buffer_pool_set_config (pool, config));
  g_assert_true (gst_buffer_pool_set_active (pool, TRUE));

  for (guint r = 0; r < ROUNDS; r++) {
    GstBuffer *buf = acquire_and_fill (pool, (guint8) (r + 1));
    gboolean main_drops_last = r % 2 == 0;

    jobs[r].buf = main_drops_last ? gst_buffer_ref (buf) : buf;
    jobs[r].round = r;
    threads[r] = g_thread_new ("reader", reader, &jobs[r]);
    if (main_drops_last) {
      /* no lock, no join: the reader's unref is the only signal */
      while (g_atomic_int_get (&GST_MINI_OBJECT_CAST (buf)->refcount) > 1)
        g_thread_yield ();
      gst_buffer_unref (buf);
    }
    /* the next round's acquire blocks until the buffer is back */
  }
  for (guint r = 0; r < ROUNDS; r++) {
    g_thread_join (threads[r]);
    g_assert_cmpuint (sums[r], ==, (guint) size * (r + 1));
  }

  g_assert_true (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
  return 0;
}
