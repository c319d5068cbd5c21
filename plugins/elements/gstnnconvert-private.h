/* GStreamer nnpipe plugin: what nnconvert's files share (gstnnconvert.c,
 * the element; gstnnconvertcaps.c, settings -> geometry -> caps). */
#pragma once

#include "gstnnconvert.h"
#include "nnframeconvert.h"

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

#define MAX_CHANNELS NN_FRAME_CONVERT_MAX_CHANNELS
#define MAX_SIZE 32768

/* Settings, read under the object lock. */
typedef struct
{
  GstNnConvertLayout layout;
  GstNnConvertChannelOrder channel_order;
  gdouble mean[MAX_CHANNELS];
  gdouble std[MAX_CHANNELS];
  gint mean_n, std_n; /* values given: 1 (every channel), 3 or 4 */
  gint width, height;
  gboolean keep_aspect;
  guint multiple_of;
  gfloat pad_value;
  gdouble max_upscale; /* 0: unbounded */
  gboolean pad_to_size;
  /* the region of the frame converted: x, y, width, height as fractions
   * of the frame (0, 0, 1, 1: all of it) */
  gdouble region[4];
} GstNnConvertSettings;

/* Output geometry for one input size. */
typedef struct
{
  gint out_w, out_h;         /* tensor spatial size */
  gint content_w, content_h; /* image area inside it (top-left) */
} GstNnConvertGeometry;

/* Parse "0.485,0.456,0.406" (one value for every channel, or 3 or 4) into
 * @out (filled up to MAX_CHANNELS) and their count into @n_out; commas,
 * colons and blanks separate values; @nonzero: 0 is refused (the grammar of
 * nnchannels.h, nncrop's too). */
gboolean gst_nn_convert_parse_channel_values (const gchar *str,
    gdouble out[MAX_CHANNELS], gint *n_out, gboolean nonzero);

/* TRUE for the element types nnconvert writes (float32, float16). */
gboolean gst_nn_convert_dtype_supported (NnpDType dtype);

/* The region of an in_w x in_h frame that is converted, in pixels: x, y,
 * width, height (at least 1 x 1, inside the frame). */
void gst_nn_convert_region (const GstNnConvertSettings *st, gint in_w,
    gint in_h, gint r[4]);

/* The output geometry for an in_w x in_h frame (of its region). */
void gst_nn_convert_compute_geometry (const GstNnConvertSettings *st, gint in_w,
    gint in_h, GstNnConvertGeometry *g);

/* The tensor shape (1 x c x h x w or 1 x h x w x c) of @layout. */
void gst_nn_convert_layout_shape (GstNnConvertLayout layout, gint c, gint h,
    gint w, NnpShape *shape);

/* transform_caps, one structure at a time: the tensor caps a video
 * structure @s allows (sink -> src), appended to @out ... */
void gst_nn_convert_caps_from_video (const GstNnConvertSettings *st,
    const GstStructure *s, GstCaps *out);
/* ... and the video caps a tensor structure @s allows (src -> sink). */
void gst_nn_convert_caps_from_tensors (const GstNnConvertSettings *st,
    const GstStructure *s, GstCaps *out);

G_END_DECLS
