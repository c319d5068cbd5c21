/* GStreamer nnpipe plugin: nndetectdecode's instance and settings, shared
 * by gstnndetectdecode.c (decoding) and gstnndetectdecode-props.c (the
 * property table). */
#pragma once

#include "gstnndetectdecode.h"
#include "nndetect.h"
#include "nnnms.h"

G_BEGIN_DECLS

typedef enum
{
  PRESET_NONE,
  PRESET_BLAZEFACE,
} Preset;

/* Everything the properties say (object lock); strings owned. */
typedef struct
{
  NnDetectLayout layout;
  Preset preset;
  gdouble threshold, iou_threshold;
  NnNmsMode nms;
  gboolean class_agnostic;
  gint top_k;
  NnScoreActivation activation;
  gint background_label;
  gdouble score_clip;
  gchar *anchor_strides, *anchors_per_cell, *anchor_ratios, *box_scale;
  gchar *strides, *labels, *labels_file;
  gdouble anchor_offset, anchor_min_scale, anchor_max_scale;
  gdouble anchor_interpolated;
  gboolean anchor_fixed;
  NnBoxFormat box_format;
  gboolean box_normalized, box_exp;
  gint keypoints, keypoint_offset, dfl_bins;
  gint input_width, input_height;
  gboolean merge;
} Settings;

#define DEFAULT_LAYOUT NN_DETECT_LAYOUT_SSD
#define DEFAULT_THRESHOLD 0.5
#define DEFAULT_IOU_THRESHOLD 0.45
#define DEFAULT_NMS NN_NMS_HARD
#define DEFAULT_ACTIVATION NN_SCORE_NONE
#define DEFAULT_ANCHOR_OFFSET 0.5
#define DEFAULT_ANCHOR_MIN_SCALE 0.1484375
#define DEFAULT_ANCHOR_MAX_SCALE 0.75
#define DEFAULT_BOX_FORMAT NN_BOX_CXCYWH
#define DEFAULT_KEYPOINT_OFFSET 4


struct _GstNnDetectDecode
{
  GstNnDecoder parent;

  Settings settings; /* object lock */
  guint gen;         /* bumped by every property write (object lock) */

  /* streaming state: what the settings of generation @made_gen give */
  guint made_gen;
  gboolean made;
  Settings active; /* a copy without its strings */
  NnSsdAnchorOptions anchor_opts;
  gdouble box_scale[4];
  gint n_strides, strides[NN_SSD_MAX_LAYERS];
  gchar **labels;  /* NULL: class numbers */
  GArray *anchors; /* NnAnchor, for anchors_w x anchors_h */
  gint anchors_w, anchors_h;
  /* the caps' tensors in the layout's roles */
  gint scores_idx[GST_NN_TENSORS_MAX], boxes_idx[GST_NN_TENSORS_MAX];
  gint n_scores, n_boxes, indices_idx;
  guint n, n_classes, row;        /* rows, classes, values per regressor row */
  gfloat *scores_buf, *boxes_buf; /* concatenation of several tensors */
  gint frame_width, frame_height; /* of the last frame decoded */
};

GType gst_nn_detect_layout_get_type (void);
GType gst_nn_detect_preset_get_type (void);
GType gst_nn_detect_nms_get_type (void);
GType gst_nn_detect_activation_get_type (void);
GType gst_nn_detect_box_format_get_type (void);

/* gstnndetectdecode-props.c: the properties, written and read under the
 * object lock; every write bumps self->gen */
void gst_nn_detect_decode_install_properties (GObjectClass *klass);
void gst_nn_detect_decode_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec);
void gst_nn_detect_decode_get_property (GObject *object, guint prop_id,
    GValue *value, GParamSpec *pspec);

G_END_DECLS
