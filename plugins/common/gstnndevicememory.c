/* GStreamer nnpipe plugin: device memory of any device backend (see
 * gstnndevicememory.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnndevicememory.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_device_memory_debug);
#define GST_CAT_DEFAULT gst_nn_device_memory_debug

#define HOST_ALIGN 64

G_DEFINE_BOXED_TYPE (NnpDevice, gst_nn_device, nnp_device_ref,
    nnp_device_unref);

/* ------------------------------------------------------------------------ */
/* Memory */

typedef struct
{
  GstMemory mem;

  NnpTensor *tensor; /* owned ref */

  GMutex lock;         /* host copy */
  guint8 *host;        /* g_aligned_alloc'ed, or NULL */
  gboolean host_valid; /* host holds the device contents */
  guint n_maps;
  gboolean write_pending; /* a WRITE map is open: upload at the last unmap */
} GstNnDeviceMemory;

struct _GstNnDeviceAllocator
{
  GstAllocator parent;

  NnpDevice *device; /* owned ref */
};

G_DEFINE_TYPE_WITH_CODE (GstNnDeviceAllocator, gst_nn_device_allocator,
    GST_TYPE_ALLOCATOR,
    GST_DEBUG_CATEGORY_INIT (gst_nn_device_memory_debug, "nndevicememory", 0,
        "nnpipe device memory"));

static GstNnDeviceMemory *
device_memory_new (GstAllocator *allocator, GstMemory *parent,
    NnpTensor *tensor)
{
  GstNnDeviceMemory *m = g_new0 (GstNnDeviceMemory, 1);

  /* sharing a part of a tensor makes no sense to device code: copies only */
  gst_memory_init (GST_MEMORY_CAST (m), GST_MEMORY_FLAG_NO_SHARE, allocator,
      parent, tensor->nbytes, 0, 0, tensor->nbytes);
  m->tensor = tensor;
  g_mutex_init (&m->lock);
  return m;
}

static GstMemory *
gst_nn_device_allocator_alloc (GstAllocator *allocator, gsize size,
    GstAllocationParams *params)
{
  GstNnDeviceAllocator *self = GST_NN_DEVICE_ALLOCATOR (allocator);
  NnpTensor *tensor;
  NnpShape shape = { 0 };
  GError *err = NULL;

  shape.rank = 1;
  shape.dims[0] = (int64_t) MAX (size, 1);
  tensor = nnp_tensor_new_on (self->device, NNP_DTYPE_UINT8, &shape, &err);
  if (tensor == NULL) {
    GST_WARNING_OBJECT (self,
        "could not allocate %" G_GSIZE_FORMAT " bytes on %s: %s", size,
        nnp_device_get_name (self->device), err->message);
    g_clear_error (&err);
    return NULL;
  }
  return GST_MEMORY_CAST (device_memory_new (allocator, NULL, tensor));
}

static void
gst_nn_device_allocator_free (GstAllocator *allocator, GstMemory *mem)
{
  GstNnDeviceMemory *m = (GstNnDeviceMemory *) mem;

  nnp_tensor_unref (m->tensor);
  g_aligned_free (m->host);
  g_mutex_clear (&m->lock);
  g_free (m);
}

/* Download the tensor into the host copy.  Call with m->lock held. */
static gboolean
download_locked (GstNnDeviceMemory *m)
{
  NnpTensor *host;
  GError *err = NULL;
  gboolean ok;

  host = nnp_tensor_new_wrapped (m->tensor->dtype, &m->tensor->shape, m->host,
      NULL, NULL);
  ok = nnp_tensor_copy_into (host, m->tensor, &err);
  nnp_tensor_unref (host);
  if (!ok) {
    GST_ERROR ("could not read %" G_GSIZE_FORMAT " bytes back from %s: %s",
        m->tensor->nbytes, nnp_device_get_name (m->tensor->device),
        err->message);
    g_clear_error (&err);
  }
  return ok;
}

static gboolean
upload_locked (GstNnDeviceMemory *m)
{
  NnpTensor *host;
  GError *err = NULL;
  gboolean ok;

  host = nnp_tensor_new_wrapped (m->tensor->dtype, &m->tensor->shape, m->host,
      NULL, NULL);
  ok = nnp_tensor_copy_into (m->tensor, host, &err);
  nnp_tensor_unref (host);
  if (!ok) {
    GST_ERROR ("could not write %" G_GSIZE_FORMAT " bytes to %s: %s",
        m->tensor->nbytes, nnp_device_get_name (m->tensor->device),
        err->message);
    g_clear_error (&err);
  }
  return ok;
}

static gpointer
dev_mem_map_full (GstMemory *mem, GstMapInfo *info, gsize maxsize)
{
  GstNnDeviceMemory *m = (GstNnDeviceMemory *) mem;
  gpointer ret = NULL;

  g_mutex_lock (&m->lock);
  if (m->host == NULL)
    m->host = g_aligned_alloc (1, MAX (m->tensor->nbytes, 1), HOST_ALIGN);
  if ((info->flags & GST_MAP_READ) && !m->host_valid) {
    if (!download_locked (m))
      goto out;
    m->host_valid = TRUE;
  }
  if (info->flags & GST_MAP_WRITE) {
    /* the mapper writes the host copy: it becomes the contents */
    m->write_pending = TRUE;
    m->host_valid = TRUE;
  }
  m->n_maps++;
  ret = m->host;
out:
  g_mutex_unlock (&m->lock);
  return ret;
}

static void
dev_mem_unmap_full (GstMemory *mem, GstMapInfo *info)
{
  GstNnDeviceMemory *m = (GstNnDeviceMemory *) mem;

  g_mutex_lock (&m->lock);
  if (m->n_maps > 0)
    m->n_maps--;
  if (m->n_maps == 0 && m->write_pending) {
    m->write_pending = FALSE;
    if (!upload_locked (m))
      m->host_valid = FALSE;
  }
  g_mutex_unlock (&m->lock);
}

/* A copy in system memory (one download when not on the host already). */
static GstMemory *
dev_mem_copy (GstMemory *mem, gssize offset, gssize size)
{
  GstMapInfo map;
  GstMemory *copy;

  if (!gst_memory_map (mem, &map, GST_MAP_READ))
    return NULL;
  if (size == -1)
    size = map.size > (gsize) offset ? map.size - offset : 0;
  copy = gst_allocator_alloc (NULL, size, NULL);
  if (copy) {
    GstMapInfo dst;

    if (gst_memory_map (copy, &dst, GST_MAP_WRITE)) {
      memcpy (dst.data, map.data + offset, size);
      gst_memory_unmap (copy, &dst);
    }
  }
  gst_memory_unmap (mem, &map);
  return copy;
}

static GstMemory *
dev_mem_share (GstMemory *mem, gssize offset, gssize size)
{
  return NULL; /* GST_MEMORY_FLAG_NO_SHARE */
}

static void
gst_nn_device_allocator_finalize (GObject *object)
{
  GstNnDeviceAllocator *self = GST_NN_DEVICE_ALLOCATOR (object);

  g_clear_pointer (&self->device, nnp_device_unref);
  G_OBJECT_CLASS (gst_nn_device_allocator_parent_class)->finalize (object);
}

static void
gst_nn_device_allocator_class_init (GstNnDeviceAllocatorClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstAllocatorClass *allocator_class = GST_ALLOCATOR_CLASS (klass);

  gobject_class->finalize = gst_nn_device_allocator_finalize;
  allocator_class->alloc = GST_DEBUG_FUNCPTR (gst_nn_device_allocator_alloc);
  allocator_class->free = GST_DEBUG_FUNCPTR (gst_nn_device_allocator_free);
}

static void
gst_nn_device_allocator_init (GstNnDeviceAllocator *self)
{
  GstAllocator *alloc = GST_ALLOCATOR_CAST (self);

  alloc->mem_type = GST_NN_DEVICE_MEMORY_TYPE;
  alloc->mem_map_full = dev_mem_map_full;
  alloc->mem_unmap_full = dev_mem_unmap_full;
  alloc->mem_copy = dev_mem_copy;
  alloc->mem_share = dev_mem_share;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *
gst_nn_device_allocator_new (NnpDevice *device)
{
  GstNnDeviceAllocator *self;

  g_return_val_if_fail (device != NULL, NULL);
  self = g_object_new (GST_TYPE_NN_DEVICE_ALLOCATOR, NULL);
  self->device = nnp_device_ref (device);
  return GST_ALLOCATOR_CAST (gst_object_ref_sink (self));
}

NnpDevice *
gst_nn_device_allocator_get_device (GstNnDeviceAllocator *allocator)
{
  g_return_val_if_fail (GST_IS_NN_DEVICE_ALLOCATOR (allocator), NULL);
  return allocator->device;
}

GstMemory *
gst_nn_device_memory_new_wrapped (GstAllocator *allocator, NnpTensor *tensor)
{
  g_return_val_if_fail (GST_IS_NN_DEVICE_ALLOCATOR (allocator), NULL);
  g_return_val_if_fail (tensor != NULL, NULL);
  g_return_val_if_fail (tensor->device
          == GST_NN_DEVICE_ALLOCATOR (allocator)->device,
      NULL);

  return GST_MEMORY_CAST (
      device_memory_new (allocator, NULL, nnp_tensor_ref (tensor)));
}

gboolean
gst_is_nn_device_memory (GstMemory *mem)
{
  return mem != NULL && mem->allocator != NULL
      && GST_IS_NN_DEVICE_ALLOCATOR (mem->allocator);
}

NnpDevice *
gst_nn_device_memory_get_device (GstMemory *mem)
{
  g_return_val_if_fail (gst_is_nn_device_memory (mem), NULL);
  return ((GstNnDeviceMemory *) mem)->tensor->device;
}

NnpTensor *
gst_nn_device_memory_get_tensor (GstMemory *mem, NnpDType dtype,
    const NnpShape *shape, gboolean write)
{
  GstNnDeviceMemory *m;
  NnpTensor *t;
  gint64 numel;

  g_return_val_if_fail (gst_is_nn_device_memory (mem), NULL);
  g_return_val_if_fail (shape != NULL, NULL);
  m = (GstNnDeviceMemory *) mem;
  t = m->tensor;

  numel = nnp_shape_numel (shape);
  if (numel < 0 || (gsize) numel * nnp_dtype_size (dtype) != t->nbytes)
    return NULL;

  g_mutex_lock (&m->lock);
  g_warn_if_fail (m->n_maps == 0);
  if (write)
    m->host_valid = FALSE;
  g_mutex_unlock (&m->lock);

  if (t->dtype == dtype && nnp_shape_equal (&t->shape, shape))
    return nnp_tensor_ref (t);
  /* a typed view of the same buffer */
  return nnp_tensor_new_device_wrapped (t->device, dtype, shape, t->handle,
      t->offset, NULL, NULL);
}

/* ------------------------------------------------------------------------ */
/* What GStreamer calls a backend's memory: derived from the backend's name
 * ("memory:BACKEND", "nnpipe.BACKEND.device", no raw handles) unless the
 * backend has a line here.  A new device backend needs no line; one adds
 * a caps feature spelt otherwise or raw handles for the context. */

typedef struct
{
  const gchar *field;  /* in the context's structure */
  const gchar *native; /* nnp_device_get_native() name */
} NativeField;

typedef struct
{
  const gchar *backend;
  const gchar *caps_feature;
  NativeField native[4];
} BackendNames;

static const BackendNames backend_names[] = {
  { "opencl", "memory:OpenCL",
      { { "cl-context", "cl_context" }, { "cl-queue", "cl_command_queue" },
          { "cl-device-id", "cl_device_id" } } },
};

static const BackendNames *
find_names (const gchar *backend)
{
  for (guint i = 0; backend && i < G_N_ELEMENTS (backend_names); i++)
    if (g_ascii_strcasecmp (backend_names[i].backend, backend) == 0)
      return &backend_names[i];
  return NULL;
}

static const gchar *
backend_caps_feature (const gchar *backend)
{
  const BackendNames *names = find_names (backend);
  gchar *feature;
  const gchar *ret;

  if (names && names->caps_feature)
    return names->caps_feature;
  feature = g_strdup_printf ("memory:%s", backend);
  ret = g_intern_string (feature);
  g_free (feature);
  return ret;
}

static const gchar *
backend_context_type (const gchar *backend)
{
  gchar *type = g_strdup_printf ("nnpipe.%s.device", backend);
  const gchar *ret = g_intern_string (type);

  g_free (type);
  return ret;
}

/* The backend of a device spec (g_free), NULL when it is none; *bare
 * (may be NULL): whether the spec is the backend alone ("opencl"). */
static gchar *
spec_backend (const gchar *spec, gboolean *bare)
{
  gchar *device = NULL, *colon;

  if (spec == NULL || !nnp_device_spec_parse (spec, &device, NULL, NULL))
    return NULL;
  colon = strchr (device, ':');
  if (colon)
    *colon = '\0';
  if (bare)
    *bare = colon == NULL;
  return device;
}

gboolean
gst_nn_device_spec_has_memory (const gchar *spec)
{
  gchar *backend;

  if (spec == NULL || nnp_device_spec_is_host (spec)
      || nnp_device_spec_remote_address (spec) != NULL)
    return FALSE;
  backend = spec_backend (spec, NULL);
  g_free (backend);
  return backend != NULL;
}

const gchar *
gst_nn_device_caps_feature (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return backend_caps_feature (nnp_device_get_backend (device));
}

const gchar *
gst_nn_device_kind_name (NnpDevice *device)
{
  const gchar *feature = gst_nn_device_caps_feature (device);

  return g_str_has_prefix (feature, "memory:") ? feature + strlen ("memory:")
                                               : feature;
}

const gchar *
gst_nn_device_context_type (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return backend_context_type (nnp_device_get_backend (device));
}

/* ------------------------------------------------------------------------ */
/* Context sharing */

static void
set_context_fields (GstStructure *s, NnpDevice *device, const gchar *spec)
{
  const gchar *backend = nnp_device_get_backend (device);
  const BackendNames *names = find_names (backend);

  gst_structure_set (s, "device", GST_TYPE_NN_DEVICE, device, "spec",
      G_TYPE_STRING, spec ? spec : backend, "name", G_TYPE_STRING,
      nnp_device_get_name (device), "backend", G_TYPE_STRING, backend, NULL);
  for (guint i = 0; names && i < G_N_ELEMENTS (names->native); i++)
    if (names->native[i].field)
      gst_structure_set (s, names->native[i].field, G_TYPE_POINTER,
          nnp_device_get_native (device, names->native[i].native), NULL);
}

GstContext *
gst_nn_device_context_new (NnpDevice *device, const gchar *spec)
{
  GstContext *context;

  g_return_val_if_fail (device != NULL, NULL);
  context = gst_context_new (gst_nn_device_context_type (device), FALSE);
  set_context_fields (gst_context_writable_structure (context), device, spec);
  return context;
}

NnpDevice *
gst_nn_device_context_get_device (GstContext *context)
{
  const GstStructure *s;
  NnpDevice *device = NULL;

  g_return_val_if_fail (GST_IS_CONTEXT (context), NULL);
  s = gst_context_get_structure (context);
  if (!g_str_has_prefix (gst_context_get_context_type (context), "nnpipe.")
      || !gst_structure_get (s, "device", GST_TYPE_NN_DEVICE, &device, NULL)
      || device == NULL)
    return NULL;
  /* a context of the device's own backend's type only */
  if (g_strcmp0 (gst_context_get_context_type (context),
          gst_nn_device_context_type (device))
      != 0)
    g_clear_pointer (&device, nnp_device_unref);
  return device;
}

/* Whether a context's device will do for spec (NULL: any device backend). */
static gboolean
device_acceptable (NnpDevice *device, const gchar *spec)
{
  NnpDevice *want;
  gchar *backend;
  gboolean ok, bare = FALSE;

  if (spec == NULL)
    return !nnp_device_spec_is_host (nnp_device_get_backend (device));
  backend = spec_backend (spec, &bare);
  ok = backend != NULL
      && g_ascii_strcasecmp (backend, nnp_device_get_backend (device)) == 0;
  g_free (backend);
  if (!ok || bare)
    return ok; /* the bare backend ("opencl"): any of its devices */
  /* the library returns one object per physical device */
  want = nnp_device_open (spec, NULL);
  ok = want == device;
  if (want)
    nnp_device_unref (want);
  return ok;
}

void
gst_nn_device_handle_set_context (GstElement *element, GstContext *context,
    const gchar *spec, NnpDevice **device)
{
  NnpDevice *dev;

  g_return_if_fail (device != NULL);
  g_type_ensure (GST_TYPE_NN_DEVICE_ALLOCATOR); /* the debug category */
  if (context == NULL)
    return;
  dev = gst_nn_device_context_get_device (context);
  if (dev == NULL)
    return;
  if (*device == NULL && device_acceptable (dev, spec)) {
    GST_DEBUG_OBJECT (element, "using the context's device %s",
        nnp_device_get_name (dev));
    *device = dev;
    return;
  }
  nnp_device_unref (dev);
}

gboolean
gst_nn_device_handle_context_query (GstElement *element, GstQuery *query,
    NnpDevice *device, const gchar *spec)
{
  const gchar *type = NULL;
  GstContext *context, *old = NULL;

  g_type_ensure (GST_TYPE_NN_DEVICE_ALLOCATOR); /* the debug category */
  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT || device == NULL
      || nnp_device_spec_is_host (nnp_device_get_backend (device)))
    return FALSE;
  if (!gst_query_parse_context_type (query, &type)
      || g_strcmp0 (type, gst_nn_device_context_type (device)) != 0)
    return FALSE;
  gst_query_parse_context (query, &old);
  if (old) {
    /* keep what the query holds, set our fields */
    context = gst_context_copy (old);
    set_context_fields (gst_context_writable_structure (context), device, spec);
  } else {
    context = gst_nn_device_context_new (device, spec);
  }
  gst_query_set_context (query, context);
  gst_context_unref (context);
  GST_DEBUG_OBJECT (element, "answered a context query with %s",
      nnp_device_get_name (device));
  return TRUE;
}

/* Query the peers of the element's pads in one direction. */
static gboolean
run_query (GstElement *element, GstQuery *query, GstPadDirection direction)
{
  GstIterator *it;
  gboolean done = FALSE, found = FALSE;
  GValue item = G_VALUE_INIT;

  it = direction == GST_PAD_SRC ? gst_element_iterate_src_pads (element)
                                : gst_element_iterate_sink_pads (element);
  while (!done && !found) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        found = gst_pad_peer_query (g_value_get_object (&item), query);
        g_value_reset (&item);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return found;
}

gboolean
gst_nn_ensure_element_device (GstElement *element, const gchar *spec,
    NnpDevice **device, GError **error)
{
  GstQuery *query;
  GstContext *context = NULL;
  const gchar *type;
  gchar *backend;

  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  g_return_val_if_fail (device != NULL, FALSE);
  g_type_ensure (GST_TYPE_NN_DEVICE_ALLOCATOR); /* the debug category */

  if (!gst_nn_device_spec_has_memory (spec)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
        "device '%s' has no memory of its own", spec ? spec : "(null)");
    return FALSE;
  }
  if (*device && device_acceptable (*device, spec))
    return TRUE;
  g_clear_pointer (device, nnp_device_unref);
  backend = spec_backend (spec, NULL);
  type = backend_context_type (backend);
  g_free (backend);

  /* 2. neighbours, downstream first */
  query = gst_query_new_context (type);
  if (run_query (element, query, GST_PAD_SRC)
      || run_query (element, query, GST_PAD_SINK)) {
    gst_query_parse_context (query, &context);
    if (context) {
      GST_DEBUG_OBJECT (element, "a neighbour shares its device");
      gst_element_set_context (element, context);
    }
  }
  gst_query_unref (query);

  /* 3. the application or a bin */
  if (*device == NULL) {
    GstMessage *msg = gst_message_new_need_context (GST_OBJECT (element), type);

    gst_element_post_message (element, msg);
  }
  if (*device && !device_acceptable (*device, spec))
    g_clear_pointer (device, nnp_device_unref);

  /* 4. our own, announced */
  if (*device == NULL) {
    *device = nnp_device_open (spec, error);
    if (*device == NULL)
      return FALSE;
    context = gst_nn_device_context_new (*device, spec);
    GST_INFO_OBJECT (element, "opened %s, posting it as a context",
        nnp_device_get_name (*device));
    gst_element_post_message (element,
        gst_message_new_have_context (GST_OBJECT (element), context));
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Caps */

GstCaps *
gst_nn_caps_offer_device_memory (GstCaps *caps, NnpDevice *device)
{
  GstCaps *dev, *sys;

  if (gst_caps_is_any (caps))
    return caps;
  dev = gst_caps_new_empty ();
  sys = gst_caps_new_empty ();
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);

    if (device)
      dev = gst_caps_merge_structure_full (dev, gst_structure_copy (s),
          gst_caps_features_new (gst_nn_device_caps_feature (device), NULL));
    sys = gst_caps_merge_structure (sys, gst_structure_copy (s));
  }
  gst_caps_unref (caps);
  return gst_caps_merge (dev, sys);
}

GstCaps *
gst_nn_caps_device_memory_first (GstCaps *caps, NnpDevice *device)
{
  GstCaps *dev, *rest;

  if (device == NULL || gst_caps_is_any (caps) || gst_caps_is_empty (caps))
    return caps;
  dev = gst_caps_new_empty ();
  rest = gst_caps_new_empty ();
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    gst_caps_append_structure_full (gst_nn_caps_is_device_memory (caps, i,
                                        device)
            ? dev
            : rest,
        gst_structure_copy (gst_caps_get_structure (caps, i)),
        f ? gst_caps_features_copy (f) : NULL);
  }
  gst_caps_unref (caps);
  gst_caps_append (dev, rest);
  return dev;
}

gboolean
gst_nn_caps_is_device_memory (GstCaps *caps, guint i, NnpDevice *device)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, i);

  return device != NULL && f != NULL && !gst_caps_features_is_any (f)
      && gst_caps_features_contains (f, gst_nn_device_caps_feature (device));
}

gboolean
gst_nn_caps_is_system_memory (GstCaps *caps, guint i)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, i);

  return f == NULL
      || gst_caps_features_is_equal (f, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
}
