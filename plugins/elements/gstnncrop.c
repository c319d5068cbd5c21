/* GStreamer nnpipe plugin: nncrop
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nncrop
 * @title: nncrop
 * @short_description: cut text regions out of frames as recogniser tensors
 *
 * nncrop takes video frames carrying #GstVideoRegionOfInterestMeta (from
 * nndbdecode) and pushes one float32 tensor of 1x3x#GstNnCrop:height x W
 * per region, in the regions' id order: the region's rotated box is
 * straightened (sampled along its own axes: enlarged with #GstNnCrop:filter,
 * Lanczos by default, shrunk by averaging several bilinear samples per
 * pixel), turned by 90 degrees when it is at least 1.5 times
 * taller than wide, resized to the tensor height keeping its aspect ratio
 * and padded on the right with zeros.  Each sample becomes
 * (x / 255 - mean) / std.  This is PaddleOCR's recogniser input (BGR
 * channel order, mean = std = 0.5).
 *
 * The tensor width W follows each box by default (#GstNnCrop:width 0):
 * the box's width at the tensor height, narrowed by #GstNnCrop:width-scale
 * when the box is more than 4 times wider than high (but not below 4
 * times the height), rounded up to a multiple of
 * #GstNnCrop:width-multiple (so the recogniser sees few distinct shapes)
 * and clamped to [#GstNnCrop:width-multiple, #GstNnCrop:max-width]; only
 * boxes longer than #GstNnCrop:max-width are squeezed further.
 * PP-OCRv4's recogniser was trained on lines squeezed into 48x320 and
 * drops spaces between words at their true aspect ratio
 * (#GstNnCrop:width-scale 1, PaddleOCR's own resize): the default 0.5
 * reads them.  When a tensor's
 * width differs from the previous one's, new caps go out before it (a
 * downstream nnstage re-specialises for the new shape).  A fixed
 * #GstNnCrop:width > 0 gives every tensor that width, squeezing boxes that
 * are wider, for models with a fixed input.
 *
 * Every tensor carries a #GstNnFrameMeta with the frame, the region's index
 * and id and the number of regions, so nnctcdecode can put the results
 * back and push the frame once all its regions are read.  A frame without
 * regions still gives one (blank) tensor whose meta says so: frames never
 * get lost on the way.
 *
 * ## Example launch lines
 * |[
 * ... ! nndbdecode ! nncrop channel-order=bgr ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_rec_infer.onnx ! \
 *     nnctcdecode keys=.cache/models/ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
 *     pngenc ! filesink location=ocr.png
 * ]| reads the text in the boxes found by nndbdecode, prints it and writes
 * the annotated frame (pipelines/ocr.sh).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnncrop.h"
#include "gstnnconvert.h"
#include "gstnnframemeta.h"
#include "gstnnresults.h"
#include "gstnntensorcaps.h"
#include "nnchannels.h"
#include "nncropicon.h"
#include "nncropsample.h"

#include <gst/video/video.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_crop_debug);
#define GST_CAT_DEFAULT gst_nn_crop_debug

#define DEFAULT_WIDTH 0
#define DEFAULT_WIDTH_MULTIPLE 32
#define DEFAULT_MAX_WIDTH 1280
#define DEFAULT_WIDTH_SCALE 1.0
#define DEFAULT_HEIGHT 48
#define DEFAULT_MEAN "0.5"
#define DEFAULT_STD "0.5"
#define DEFAULT_CHANNEL_ORDER GST_NN_CONVERT_CHANNEL_ORDER_RGB
#define DEFAULT_ROTATE_TALL TRUE
#define DEFAULT_MARGIN 0.0
#define DEFAULT_FLIP_LABEL "180"
#define DEFAULT_FLIP_THRESHOLD 0.95
#define DEFAULT_ROI_TYPE "text"
#define DEFAULT_FILTER NN_CROP_FILTER_LANCZOS
#define DEFAULT_READ_BOTH TRUE
#define DEFAULT_SKIP_ICON TRUE

enum
{
  PROP_0,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_MEAN,
  PROP_STD,
  PROP_CHANNEL_ORDER,
  PROP_ROTATE_TALL,
  PROP_MARGIN,
  PROP_FLIP_LABEL,
  PROP_FLIP_THRESHOLD,
  PROP_ROI_TYPE,
  PROP_WIDTH_MULTIPLE,
  PROP_MAX_WIDTH,
  PROP_WIDTH_SCALE,
  PROP_FILTER,
  PROP_READ_BOTH,
  PROP_SKIP_ICON,
};

#define GST_TYPE_NN_CROP_FILTER (gst_nn_crop_filter_get_type ())
static GType
gst_nn_crop_filter_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { NN_CROP_FILTER_BILINEAR, "Bilinear (2 x 2 pixels)", "bilinear" },
    { NN_CROP_FILTER_BICUBIC, "Bicubic (Keys, a = -0.5; 4 x 4 pixels)",
        "bicubic" },
    { NN_CROP_FILTER_LANCZOS, "Lanczos (a = 3; 6 x 6 pixels)", "lanczos" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstNnCropFilter", values));
  return type;
}

#define VIDEO_FORMATS \
  "{ RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, ARGB, ABGR, GRAY8 }"

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS)));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (
        "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) float32, framerate = (fraction) [ 0/1, MAX ]"));

typedef struct
{
  gint width, height, width_multiple, max_width;
  gdouble width_scale;
  gdouble mean[3], std[3];
  gchar *mean_str, *std_str;
  GstNnConvertChannelOrder order;
  gboolean rotate_tall;
  gdouble margin;
  gchar *flip_label;
  gdouble flip_threshold;
  gchar *roi_type;
  NnCropFilter filter;
  gboolean read_both;
  gboolean skip_icon;
} GstNnCropSettings;

struct _GstNnCrop
{
  GstElement parent;

  GstPad *sinkpad, *srcpad;

  GstNnCropSettings settings; /* object lock */

  /* streaming state, fixed at caps time */
  gboolean have_info;
  GstVideoInfo vinfo;
  NnCropParams crop; /* the sampler's settings */
  gint caps_width;   /* width of the caps pushed last, 0: none */
  gint src_chan[3];  /* output channel c reads colour component */
  gchar *flip_label; /* NULL: never turned */
  gdouble flip_threshold;
  gboolean read_both;
  gboolean skip_icon;
  gchar *roi_type;
};

G_DEFINE_TYPE (GstNnCrop, gst_nn_crop, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (nncrop, "nncrop", GST_RANK_NONE, GST_TYPE_NN_CROP);

/* Push the caps of 1x3xheight x @width tensors; remembers @width. */
static gboolean
push_tensor_caps (GstNnCrop *self, gint width)
{
  GstNnTensorsInfo tinfo;
  GstCaps *out;
  gboolean ret;

  gst_nn_tensors_info_init (&tinfo);
  tinfo.n_tensors = 1;
  tinfo.tensors[0].dtype = NNP_DTYPE_FLOAT32;
  tinfo.tensors[0].shape.rank = 4;
  tinfo.tensors[0].shape.dims[0] = 1;
  tinfo.tensors[0].shape.dims[1] = 3;
  tinfo.tensors[0].shape.dims[2] = self->crop.height;
  tinfo.tensors[0].shape.dims[3] = width;
  tinfo.fps_n = 0;
  tinfo.fps_d = 1;
  out = gst_nn_tensors_info_to_caps (&tinfo);
  GST_DEBUG_OBJECT (self, "output caps %" GST_PTR_FORMAT, out);
  ret = gst_pad_push_event (self->srcpad, gst_event_new_caps (out));
  gst_caps_unref (out);
  self->caps_width = ret ? width : 0;
  return ret;
}

static gboolean
gst_nn_crop_set_caps (GstNnCrop *self, GstCaps *caps)
{
  GstVideoInfo vinfo;

  if (!gst_video_info_from_caps (&vinfo, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("invalid video caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }

  GST_OBJECT_LOCK (self);
  self->crop.filter = self->settings.filter;
  self->crop.width = self->settings.width;
  self->crop.height = self->settings.height;
  self->crop.width_multiple = self->settings.width_multiple;
  self->crop.max_width = self->settings.max_width;
  self->crop.width_scale = self->settings.width_scale;
  g_free (self->roi_type);
  self->roi_type = g_strdup (self->settings.roi_type);
  self->crop.rotate_tall = self->settings.rotate_tall;
  self->crop.margin = self->settings.margin;
  g_free (self->flip_label);
  self->flip_label = self->settings.flip_label && *self->settings.flip_label
      ? g_strdup (self->settings.flip_label)
      : NULL;
  self->flip_threshold = self->settings.flip_threshold;
  self->read_both = self->settings.read_both;
  self->skip_icon = self->settings.skip_icon;
  for (gint c = 0; c < 3; c++) {
    self->crop.mul[c] = (gfloat) (1.0 / (255.0 * self->settings.std[c]));
    self->crop.add[c] =
        (gfloat) (-self->settings.mean[c] / self->settings.std[c]);
  }
  if (GST_VIDEO_INFO_IS_GRAY (&vinfo)) {
    self->src_chan[0] = self->src_chan[1] = self->src_chan[2] = 0;
  } else if (self->settings.order == GST_NN_CONVERT_CHANNEL_ORDER_BGR) {
    self->src_chan[0] = GST_VIDEO_COMP_B;
    self->src_chan[1] = GST_VIDEO_COMP_G;
    self->src_chan[2] = GST_VIDEO_COMP_R;
  } else {
    self->src_chan[0] = GST_VIDEO_COMP_R;
    self->src_chan[1] = GST_VIDEO_COMP_G;
    self->src_chan[2] = GST_VIDEO_COMP_B;
  }
  GST_OBJECT_UNLOCK (self);

  self->vinfo = vinfo;
  self->have_info = TRUE;

  /* with a width per box these are only the first caps (they must come
   * before the segment): tensors of another width push their own */
  return push_tensor_caps (self,
      self->crop.width > 0       ? self->crop.width
          : self->caps_width > 0 ? self->caps_width
                                 : self->crop.width_multiple);
}

static gboolean
gst_nn_crop_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstNnCrop *self = GST_NN_CROP (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gboolean ret;

    gst_event_parse_caps (event, &caps);
    ret = gst_nn_crop_set_caps (self, caps);
    gst_event_unref (event);
    return ret;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* How a region is cut: as it is, turned by 180 degrees, or both ways. */
typedef enum
{
  CUT_UPRIGHT = 1 << 0,
  CUT_TURNED = 1 << 1,
  CUT_BOTH = CUT_UPRIGHT | CUT_TURNED,
} CutWays;

/* From the ROI's "nnpipe/class" structure (the direction classifier's
 * result, from nnclassdecode): labelled flip-label, both ways with
 * read-both, else turned when its score reaches flip-threshold. */
static CutWays
roi_cut_ways (GstNnCrop *self, GstVideoRegionOfInterestMeta *roi)
{
  GstStructure *p;
  const gchar *label;
  gdouble score = 0;

  if (self->flip_label == NULL)
    return CUT_UPRIGHT;
  p = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_CLASS_PARAM_NAME);
  if (p == NULL || (label = gst_structure_get_string (p, "label")) == NULL
      || strcmp (label, self->flip_label) != 0)
    return CUT_UPRIGHT;
  if (self->read_both)
    return CUT_BOTH;
  gst_structure_get_double (p, "score", &score);
  return score >= self->flip_threshold ? CUT_TURNED : CUT_UPRIGHT;
}

static gint
roi_id_cmp (gconstpointer a, gconstpointer b)
{
  const GstVideoRegionOfInterestMeta *p = *(GstVideoRegionOfInterestMeta **) a;
  const GstVideoRegionOfInterestMeta *q = *(GstVideoRegionOfInterestMeta **) b;

  return p->id < q->id ? -1 : p->id > q->id;
}

static GstBuffer *
new_tensor_buffer (GstNnCrop *self, GstBuffer *frame, gint width, gfloat **data,
    GstMapInfo *map)
{
  gsize size = (gsize) 3 * width * self->crop.height * sizeof (gfloat);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, size, NULL);

  if (buf == NULL)
    return NULL;
  gst_buffer_map (buf, map, GST_MAP_WRITE);
  *data = (gfloat *) map->data;
  GST_BUFFER_PTS (buf) = GST_BUFFER_PTS (frame);
  GST_BUFFER_DTS (buf) = GST_BUFFER_DTS (frame);
  GST_BUFFER_DURATION (buf) = GST_BUFFER_DURATION (frame);
  return buf;
}

/* Push one tensor of @width, new caps first when the width changed. */
static GstFlowReturn
push_tensor (GstNnCrop *self, GstBuffer *buf, gint width)
{
  if (width != self->caps_width && !push_tensor_caps (self, width)) {
    gst_buffer_unref (buf);
    if (GST_PAD_IS_FLUSHING (self->srcpad))
      return GST_FLOW_FLUSHING;
    GST_DEBUG_OBJECT (self, "downstream refused %d-wide tensors", width);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return gst_pad_push (self->srcpad, buf);
}

static GstFlowReturn
gst_nn_crop_chain (GstPad *pad, GstObject *parent, GstBuffer *frame)
{
  GstNnCrop *self = GST_NN_CROP (parent);
  GstVideoFrame vframe;
  GPtrArray *rois;
  gpointer state = NULL;
  GstMeta *m;
  NnImage img;
  GstFlowReturn ret = GST_FLOW_OK;

  if (!self->have_info)
    goto not_negotiated;

  rois = g_ptr_array_new ();
  while ((m = gst_buffer_iterate_meta_filtered (frame, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;

    if (self->roi_type == NULL || *self->roi_type == '\0'
        || roi->roi_type == g_quark_from_string (self->roi_type))
      g_ptr_array_add (rois, roi);
  }
  g_ptr_array_sort (rois, roi_id_cmp);

  if (rois->len == 0) {
    /* a placeholder that keeps the frame flowing */
    GstMapInfo map;
    gfloat *data;
    gint width = self->crop.width > 0 ? self->crop.width
        : self->caps_width > 0        ? self->caps_width
                                      : self->crop.width_multiple;
    GstBuffer *buf = new_tensor_buffer (self, frame, width, &data, &map);
    GstNnFrameMeta *fm;

    g_ptr_array_unref (rois);
    if (buf == NULL) {
      gst_buffer_unref (frame);
      goto alloc_failed;
    }
    memset (data, 0, map.size);
    gst_buffer_unmap (buf, &map);
    fm = gst_buffer_add_nn_frame_meta (buf, frame, &self->vinfo);
    fm->n_rois = 0;
    gst_buffer_unref (frame);
    return push_tensor (self, buf, width);
  }

  if (!gst_video_frame_map (&vframe, &self->vinfo, frame, GST_MAP_READ)) {
    g_ptr_array_unref (rois);
    gst_buffer_unref (frame);
    goto map_failed;
  }
  img.data = GST_VIDEO_FRAME_PLANE_DATA (&vframe, 0);
  img.stride = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 0);
  img.pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (&vframe, 0);
  img.width = GST_VIDEO_FRAME_WIDTH (&vframe);
  img.height = GST_VIDEO_FRAME_HEIGHT (&vframe);
  for (gint c = 0; c < 3; c++)
    img.off[c] = GST_VIDEO_FRAME_COMP_POFFSET (&vframe, self->src_chan[c]);

  /* crop everything first: the frame is unmapped before pushing */
  {
    GPtrArray *bufs = g_ptr_array_new ();
    GArray *cuts = g_array_new (FALSE, FALSE, sizeof (gint));
    guint n_cuts;

    /* each region's cuts: index * 2, + 1 when turned (turned first) */
    for (guint i = 0; i < rois->len; i++) {
      CutWays ways = roi_cut_ways (self, g_ptr_array_index (rois, i));
      gint cut;

      if (ways & CUT_TURNED) {
        cut = (gint) i * 2 + 1;
        g_array_append_val (cuts, cut);
      }
      if (ways & CUT_UPRIGHT) {
        cut = (gint) i * 2;
        g_array_append_val (cuts, cut);
      }
    }
    n_cuts = cuts->len;
    for (guint i = 0; i < n_cuts; i++) {
      gint cut = g_array_index (cuts, gint, i);
      GstVideoRegionOfInterestMeta *roi = g_ptr_array_index (rois, cut / 2);
      GstMapInfo map;
      gfloat *data;
      GstBuffer *buf;
      GstNnFrameMeta *fm;
      NnQuad quad;
      gint width, used;

      gst_nn_roi_get_quad (roi, &quad);
      if (cut % 2) {
        /* upside down: read it from the other corner */
        NnQuad r = { { quad.p[2], quad.p[3], quad.p[0], quad.p[1] } };

        quad = r;
      }
      width = nn_crop_tensor_width (&self->crop, &quad);
      buf = new_tensor_buffer (self, frame, width, &data, &map);
      if (buf == NULL)
        break;
      used = nn_crop_sample (&self->crop, &img, &quad, width, data);
      if (self->skip_icon) {
        gint from = nn_crop_find_icon (data, self->crop.height, width, used,
            self->crop.mul, self->crop.add);

        if (from > 0) {
          GST_LOG_OBJECT (self, "region %d: an icon in columns 0-%d left out",
              roi->id, from);
          nn_crop_shift_left (data, self->crop.height, width, used, from);
        }
      }
      gst_buffer_unmap (buf, &map);
      fm = gst_buffer_add_nn_frame_meta (buf, frame, &self->vinfo);
      fm->n_rois = (gint) n_cuts;
      fm->roi_index = (gint) i;
      fm->roi_id = roi->id;
      g_ptr_array_add (bufs, buf);
    }
    g_array_unref (cuts);
    gst_video_frame_unmap (&vframe);
    if (bufs->len != n_cuts) {
      g_ptr_array_set_free_func (bufs, (GDestroyNotify) gst_buffer_unref);
      g_ptr_array_unref (bufs);
      g_ptr_array_unref (rois);
      gst_buffer_unref (frame);
      goto alloc_failed;
    }
    GST_LOG_OBJECT (self, "%u crops", bufs->len);
    for (guint i = 0; i < bufs->len; i++) {
      GstBuffer *buf = g_ptr_array_index (bufs, i);
      gint width = (gint) (gst_buffer_get_size (buf)
          / (3 * sizeof (gfloat) * (gsize) self->crop.height));

      if (ret == GST_FLOW_OK)
        ret = push_tensor (self, buf, width);
      else
        gst_buffer_unref (buf);
    }
    g_ptr_array_unref (bufs);
  }
  g_ptr_array_unref (rois);
  gst_buffer_unref (frame);
  return ret;

  /* ERRORS */
not_negotiated:
  gst_buffer_unref (frame);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL), ("buffer before caps"));
  return GST_FLOW_NOT_NEGOTIATED;
map_failed:
  GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
      ("could not map the video frame"));
  return GST_FLOW_ERROR;
alloc_failed:
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED, (NULL),
      ("could not allocate a tensor buffer"));
  return GST_FLOW_ERROR;
}

static GstStateChangeReturn
gst_nn_crop_change_state (GstElement *element, GstStateChange transition)
{
  GstNnCrop *self = GST_NN_CROP (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gchar *mean, *std;
    gdouble v[3];
    gboolean mean_ok, std_ok;

    GST_OBJECT_LOCK (self);
    mean = g_strdup (self->settings.mean_str);
    std = g_strdup (self->settings.std_str);
    GST_OBJECT_UNLOCK (self);
    mean_ok = nn_channel_values_parse_n (mean, v, 3, FALSE);
    std_ok = nn_channel_values_parse_n (std, v, 3, TRUE);
    if (!mean_ok || !std_ok)
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("invalid value \"%s\" for property '%s': expected one or three numbers separated by commas%s",
              mean_ok ? std : mean, mean_ok ? "std" : "mean",
              mean_ok ? ", not 0" : ""),
          (NULL));
    g_free (mean);
    g_free (std);
    if (!mean_ok || !std_ok)
      return GST_STATE_CHANGE_FAILURE;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_crop_parent_class)
            ->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    self->have_info = FALSE;
    self->caps_width = 0;
  }
  return ret;
}

static void
gst_nn_crop_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnCrop *self = GST_NN_CROP (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WIDTH:
      self->settings.width = g_value_get_int (value);
      break;
    case PROP_HEIGHT:
      self->settings.height = g_value_get_int (value);
      break;
    case PROP_WIDTH_MULTIPLE:
      self->settings.width_multiple = g_value_get_int (value);
      break;
    case PROP_MAX_WIDTH:
      self->settings.max_width = g_value_get_int (value);
      break;
    case PROP_WIDTH_SCALE:
      self->settings.width_scale = g_value_get_double (value);
      break;
    case PROP_FILTER:
      self->settings.filter = g_value_get_enum (value);
      break;
    case PROP_READ_BOTH:
      self->settings.read_both = g_value_get_boolean (value);
      break;
    case PROP_SKIP_ICON:
      self->settings.skip_icon = g_value_get_boolean (value);
      break;
    case PROP_MEAN:
    case PROP_STD: {
      gboolean is_std = prop_id == PROP_STD;
      const gchar *str = g_value_get_string (value);
      gdouble v[3];

      /* kept as given: an invalid value fails the start, naming it */
      if (nn_channel_values_parse_n (str, v, 3, is_std))
        memcpy (is_std ? self->settings.std : self->settings.mean, v,
            sizeof (v));
      g_free (is_std ? self->settings.std_str : self->settings.mean_str);
      if (is_std)
        self->settings.std_str = g_strdup (str);
      else
        self->settings.mean_str = g_strdup (str);
      break;
    }
    case PROP_CHANNEL_ORDER:
      self->settings.order = g_value_get_enum (value);
      break;
    case PROP_ROTATE_TALL:
      self->settings.rotate_tall = g_value_get_boolean (value);
      break;
    case PROP_MARGIN:
      self->settings.margin = g_value_get_double (value);
      break;
    case PROP_FLIP_LABEL:
      g_free (self->settings.flip_label);
      self->settings.flip_label = g_value_dup_string (value);
      break;
    case PROP_FLIP_THRESHOLD:
      self->settings.flip_threshold = g_value_get_double (value);
      break;
    case PROP_ROI_TYPE:
      g_free (self->settings.roi_type);
      self->settings.roi_type = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_crop_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnCrop *self = GST_NN_CROP (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WIDTH:
      g_value_set_int (value, self->settings.width);
      break;
    case PROP_HEIGHT:
      g_value_set_int (value, self->settings.height);
      break;
    case PROP_WIDTH_MULTIPLE:
      g_value_set_int (value, self->settings.width_multiple);
      break;
    case PROP_MAX_WIDTH:
      g_value_set_int (value, self->settings.max_width);
      break;
    case PROP_WIDTH_SCALE:
      g_value_set_double (value, self->settings.width_scale);
      break;
    case PROP_FILTER:
      g_value_set_enum (value, self->settings.filter);
      break;
    case PROP_READ_BOTH:
      g_value_set_boolean (value, self->settings.read_both);
      break;
    case PROP_SKIP_ICON:
      g_value_set_boolean (value, self->settings.skip_icon);
      break;
    case PROP_MEAN:
      g_value_set_string (value, self->settings.mean_str);
      break;
    case PROP_STD:
      g_value_set_string (value, self->settings.std_str);
      break;
    case PROP_CHANNEL_ORDER:
      g_value_set_enum (value, self->settings.order);
      break;
    case PROP_ROTATE_TALL:
      g_value_set_boolean (value, self->settings.rotate_tall);
      break;
    case PROP_MARGIN:
      g_value_set_double (value, self->settings.margin);
      break;
    case PROP_FLIP_LABEL:
      g_value_set_string (value, self->settings.flip_label);
      break;
    case PROP_FLIP_THRESHOLD:
      g_value_set_double (value, self->settings.flip_threshold);
      break;
    case PROP_ROI_TYPE:
      g_value_set_string (value, self->settings.roi_type);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_crop_finalize (GObject *object)
{
  GstNnCrop *self = GST_NN_CROP (object);

  g_free (self->settings.mean_str);
  g_free (self->settings.std_str);
  g_free (self->settings.roi_type);
  g_free (self->roi_type);
  g_free (self->settings.flip_label);
  g_free (self->flip_label);
  G_OBJECT_CLASS (gst_nn_crop_parent_class)->finalize (object);
}

static void
gst_nn_crop_class_init (GstNnCropClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  GST_DEBUG_CATEGORY_INIT (gst_nn_crop_debug, "nncrop", 0,
      "nnpipe region cropper");

  /* register the metas up front (tests look them up by name) */
  (void) GST_NN_FRAME_META_INFO;

  gobject_class->set_property = gst_nn_crop_set_property;
  gobject_class->get_property = gst_nn_crop_get_property;
  gobject_class->finalize = gst_nn_crop_finalize;

  g_object_class_install_property (gobject_class, PROP_WIDTH,
      g_param_spec_int ("width", "Width",
          "Width of the output tensors (crops are padded to it, squeezed when wider); 0: per box, following its aspect ratio (see width-multiple and max-width)",
          0, 32768, DEFAULT_WIDTH, flags));
  g_object_class_install_property (gobject_class, PROP_WIDTH_MULTIPLE,
      g_param_spec_int ("width-multiple", "Width multiple",
          "With width 0: round each tensor's width up to a multiple of this (and at least this)",
          1, 32768, DEFAULT_WIDTH_MULTIPLE, flags));
  g_object_class_install_property (gobject_class, PROP_MAX_WIDTH,
      g_param_spec_int ("max-width", "Maximum width",
          "With width 0: the widest tensor (longer boxes are squeezed)", 1,
          32768, DEFAULT_MAX_WIDTH, flags));
  g_object_class_install_property (gobject_class, PROP_WIDTH_SCALE,
      g_param_spec_double ("width-scale", "Width scale",
          "With width 0: narrow boxes more than 4 times wider than high by this factor (not below 4 times the height); 1: keep the aspect ratio exactly",
          0.1, 1.0, DEFAULT_WIDTH_SCALE, flags));
  /**
   * GstNnCrop:filter:
   *
   * How a line lower than the tensor height is enlarged.  A small text
   * line enlarged with a bilinear filter blurs the gaps between its words
   * shut (the recogniser then drops the spaces); the sharper Lanczos
   * filter keeps more of them (docs/ocr.md).  Lines as high as the tensor
   * or higher are sampled bilinearly, averaging k x k samples per output
   * pixel when shrunk, whatever the filter.
   */
  g_object_class_install_property (gobject_class, PROP_FILTER,
      g_param_spec_enum ("filter", "Filter",
          "Interpolation that enlarges lines lower than the tensor (higher ones are shrunk by averaging bilinear samples)",
          GST_TYPE_NN_CROP_FILTER, DEFAULT_FILTER, flags));
  /**
   * GstNnCrop:read-both:
   *
   * A region the direction classifier labels #GstNnCrop:flip-label is cut
   * both ways, turned and as it is (two tensors with the region's id), and
   * nnctcdecode keeps the better-scored reading: the classifier turns
   * some upright lines upside down, and the recogniser scores a wrong turn
   * lower.  FALSE: such a region is cut turned only, when its score
   * reaches #GstNnCrop:flip-threshold.
   */
  g_object_class_install_property (gobject_class, PROP_READ_BOTH,
      g_param_spec_boolean ("read-both", "Read both",
          "Cut regions labelled flip-label both ways (turned and as they are) for the recogniser to pick the better reading; FALSE: turned only "
          "when the label's score reaches flip-threshold",
          DEFAULT_READ_BOTH, flags));
  /**
   * GstNnCrop:skip-icon:
   *
   * A menu entry, a button or a dialog's line often starts with an icon
   * (a star, a magnifier, a cross) inside the text's box, which the
   * recogniser reads as a letter ("Q Search", "X Close").  A first word of
   * the crop's ink that is about square, as high as the line and set
   * apart by a gap wider than the line's own word gaps is left out (the
   * rest of the crop moves to the left edge).  See docs/ocr.md.
   */
  g_object_class_install_property (gobject_class, PROP_SKIP_ICON,
      g_param_spec_boolean ("skip-icon", "Skip icon",
          "Leave out a square mark as high as the line at its start, set apart by a gap wider than the line's word gaps (an icon)",
          DEFAULT_SKIP_ICON, flags));
  g_object_class_install_property (gobject_class, PROP_HEIGHT,
      g_param_spec_int ("height", "Height",
          "Height of the output tensor (crops are resized to it)", 1, 32768,
          DEFAULT_HEIGHT, flags));
  g_object_class_install_property (gobject_class, PROP_MEAN,
      g_param_spec_string ("mean", "Mean",
          "Per-channel mean in [0, 1] units, one value or three comma-separated",
          DEFAULT_MEAN, flags));
  g_object_class_install_property (gobject_class, PROP_STD,
      g_param_spec_string ("std", "Standard deviation",
          "Per-channel standard deviation in [0, 1] units, one value or three comma-separated",
          DEFAULT_STD, flags));
  g_object_class_install_property (gobject_class, PROP_CHANNEL_ORDER,
      g_param_spec_enum ("channel-order", "Channel order",
          "Colour channel order of the output tensor",
          GST_TYPE_NN_CONVERT_CHANNEL_ORDER, DEFAULT_CHANNEL_ORDER, flags));
  g_object_class_install_property (gobject_class, PROP_ROTATE_TALL,
      g_param_spec_boolean ("rotate-tall", "Rotate tall regions",
          "Turn regions at least 1.5 times taller than wide by 90 degrees",
          DEFAULT_ROTATE_TALL, flags));
  g_object_class_install_property (gobject_class, PROP_MARGIN,
      g_param_spec_double ("margin", "Margin",
          "Grow every box above and below by this fraction of its height before cropping",
          0.0, 2.0, DEFAULT_MARGIN, flags));
  g_object_class_install_property (gobject_class, PROP_FLIP_LABEL,
      g_param_spec_string ("flip-label", "Flip label",
          "Turn by 180 degrees the regions whose nnpipe/class label (the direction classifier's, from nnclassdecode) is this (empty: never)",
          DEFAULT_FLIP_LABEL, flags));
  g_object_class_install_property (gobject_class, PROP_FLIP_THRESHOLD,
      g_param_spec_double ("flip-threshold", "Flip threshold",
          "Minimum score of the flip-label class to turn a region", 0.0, 1.0,
          DEFAULT_FLIP_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_ROI_TYPE,
      g_param_spec_string ("roi-type", "Region type",
          "Only crop regions of this roi_type (empty: all)", DEFAULT_ROI_TYPE,
          flags));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Region cropper",
      "Filter/Converter/Video/Tensor",
      "Cuts the regions of interest of video frames out as straightened, resized and normalised float32 tensors, one buffer per region",
      "nnpipe developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_nn_crop_change_state);
}

static void
gst_nn_crop_init (GstNnCrop *self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_crop_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_crop_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->settings.filter = DEFAULT_FILTER;
  self->settings.read_both = DEFAULT_READ_BOTH;
  self->settings.skip_icon = DEFAULT_SKIP_ICON;
  self->settings.width = DEFAULT_WIDTH;
  self->settings.height = DEFAULT_HEIGHT;
  self->settings.width_multiple = DEFAULT_WIDTH_MULTIPLE;
  self->settings.max_width = DEFAULT_MAX_WIDTH;
  self->settings.width_scale = DEFAULT_WIDTH_SCALE;
  nn_channel_values_parse_n (DEFAULT_MEAN, self->settings.mean, 3, FALSE);
  nn_channel_values_parse_n (DEFAULT_STD, self->settings.std, 3, TRUE);
  self->settings.mean_str = g_strdup (DEFAULT_MEAN);
  self->settings.std_str = g_strdup (DEFAULT_STD);
  self->settings.order = DEFAULT_CHANNEL_ORDER;
  self->settings.rotate_tall = DEFAULT_ROTATE_TALL;
  self->settings.margin = DEFAULT_MARGIN;
  self->settings.flip_label = g_strdup (DEFAULT_FLIP_LABEL);
  self->settings.flip_threshold = DEFAULT_FLIP_THRESHOLD;
  self->settings.roi_type = g_strdup (DEFAULT_ROI_TYPE);
}
