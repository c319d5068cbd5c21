/* Tests of other/tensors caps <-> GstNnTensorsInfo (plugins/common/gstnntensorcaps.c):
 * NNStreamer's dimension order, round trips, the singular form, errors. */
#include <gst/check/gstcheck.h>

#include "gstnntensorcaps.h"

static void
parse_ok (GstNnTensorsInfo *info, const gchar *str)
{
  GstCaps *caps = gst_caps_from_string (str);
  GError *err = NULL;

  fail_unless (caps != NULL, "unparsable caps %s", str);
  fail_unless (gst_nn_tensors_info_from_caps (info, caps, &err), "%s: %s", str,
               err ? err->message : "?");
  gst_caps_unref (caps);
}

static gchar *
parse_error (const gchar *str)
{
  GstCaps *caps = gst_caps_from_string (str);
  GstNnTensorsInfo info;
  GError *err = NULL;
  gchar *msg;

  fail_unless (caps != NULL, "unparsable caps %s", str);
  fail_if (gst_nn_tensors_info_from_caps (&info, caps, &err), "%s parsed", str);
  fail_unless (err != NULL);
  msg = g_strdup (err->message);
  g_error_free (err);
  gst_caps_unref (caps);
  return msg;
}

GST_START_TEST (test_dims_order)
{
  NnpShape shape;
  gchar *str;

  /* innermost first in caps, outermost first (ONNX) in NnpShape */
  fail_unless (gst_nn_dims_from_string ("640:480:3:1", &shape));
  fail_unless_equals_int (shape.rank, 4);
  fail_unless_equals_int64 (shape.dims[0], 1);
  fail_unless_equals_int64 (shape.dims[1], 3);
  fail_unless_equals_int64 (shape.dims[2], 480);
  fail_unless_equals_int64 (shape.dims[3], 640);

  str = gst_nn_dims_to_string (&shape);
  fail_unless_equals_string (str, "640:480:3:1");
  g_free (str);

  /* trailing (outer) 1s may be left out; fit_rank restores them */
  fail_unless (gst_nn_dims_from_string ("640:480:3", &shape));
  fail_unless_equals_int (shape.rank, 3);
  fail_unless (gst_nn_shape_fit_rank (&shape, 4, &shape));
  fail_unless_equals_int64 (shape.dims[0], 1);
  fail_unless_equals_int64 (shape.dims[3], 640);

  /* extra outer dims must be 1 */
  fail_unless (gst_nn_dims_from_string ("10:2:1:1", &shape));
  fail_unless (gst_nn_shape_fit_rank (&shape, 2, &shape));
  fail_unless_equals_int (shape.rank, 2);
  fail_unless_equals_int64 (shape.dims[0], 2);
  fail_unless_equals_int64 (shape.dims[1], 10);
  fail_unless (gst_nn_dims_from_string ("10:2", &shape));
  fail_if (gst_nn_shape_fit_rank (&shape, 1, &shape));

  /* malformed */
  fail_if (gst_nn_dims_from_string ("", &shape));
  fail_if (gst_nn_dims_from_string ("3::1", &shape));
  fail_if (gst_nn_dims_from_string ("3:0", &shape));
  fail_if (gst_nn_dims_from_string ("3:-2", &shape));
  fail_if (gst_nn_dims_from_string ("3:x", &shape));
  fail_if (gst_nn_dims_from_string ("1:1:1:1:1:1:1:1:1", &shape));
}

GST_END_TEST;

GST_START_TEST (test_compatible)
{
  NnpShape a, b;

  gst_nn_dims_from_string ("640:480:3", &a);
  gst_nn_dims_from_string ("640:480:3:1", &b);
  fail_unless (gst_nn_shape_is_compatible (&a, &b));
  gst_nn_dims_from_string ("480:640:3:1", &b);
  fail_if (gst_nn_shape_is_compatible (&a, &b));
}

GST_END_TEST;

GST_START_TEST (test_round_trip)
{
  const gchar *str =
      "other/tensors, format=(string)static, num_tensors=(int)2, types=(string)\"float32,int64\", "
      "dimensions=(string)\"640:640:3:1,10:1\", framerate=(fraction)30/1";
  GstNnTensorsInfo info, info2;
  GstCaps *caps, *caps2;
  gchar *desc;

  parse_ok (&info, str);
  fail_unless_equals_int (info.n_tensors, 2);
  fail_unless_equals_int (info.tensors[0].dtype, NNP_DTYPE_FLOAT32);
  fail_unless_equals_int (info.tensors[1].dtype, NNP_DTYPE_INT64);
  fail_unless_equals_int (info.tensors[0].shape.rank, 4);
  fail_unless_equals_int64 (info.tensors[0].shape.dims[1], 3);
  fail_unless_equals_int (info.tensors[1].shape.rank, 2);
  fail_unless_equals_int64 (info.tensors[1].shape.dims[0], 1);
  fail_unless_equals_int64 (info.tensors[1].shape.dims[1], 10);
  fail_unless_equals_int (info.fps_n, 30);
  fail_unless_equals_int (info.fps_d, 1);
  fail_unless_equals_int (gst_nn_tensor_info_get_size (&info.tensors[0]), 640 * 640 * 3 * 4);
  fail_unless_equals_int (gst_nn_tensors_info_get_size (&info), 640 * 640 * 3 * 4 + 10 * 8);

  caps = gst_nn_tensors_info_to_caps (&info);
  caps2 = gst_caps_from_string (str);
  fail_unless (gst_caps_is_equal (caps, caps2), "%" GST_PTR_FORMAT " != %" GST_PTR_FORMAT, caps,
               caps2);
  fail_unless (gst_caps_is_fixed (caps));

  {
    gchar *printed = gst_caps_to_string (caps);

    parse_ok (&info2, printed);
    g_free (printed);
  }
  fail_unless (gst_nn_tensors_info_is_equal (&info, &info2));

  desc = gst_nn_tensors_info_to_string (&info);
  fail_unless (strstr (desc, "640:640:3:1,10:1") != NULL, "%s", desc);
  fail_unless (strstr (desc, "float32,int64") != NULL, "%s", desc);
  g_free (desc);

  gst_caps_unref (caps);
  gst_caps_unref (caps2);
}

GST_END_TEST;

/* the 16-bit floats: two bytes an element, names round-trip */
GST_START_TEST (test_half_types)
{
  const gchar *str =
      "other/tensors, format=(string)static, num_tensors=(int)2, types=(string)\"float16,bfloat16\", "
      "dimensions=(string)\"8:6:3:1,5:1\", framerate=(fraction)0/1";
  GstNnTensorsInfo info;
  GstCaps *caps, *caps2;

  parse_ok (&info, str);
  fail_unless_equals_int (info.tensors[0].dtype, NNP_DTYPE_FLOAT16);
  fail_unless_equals_int (info.tensors[1].dtype, NNP_DTYPE_BFLOAT16);
  fail_unless_equals_int (gst_nn_tensors_info_get_size (&info), 8 * 6 * 3 * 2 + 5 * 2);
  caps = gst_nn_tensors_info_to_caps (&info);
  caps2 = gst_caps_from_string (str);
  fail_unless (gst_caps_is_equal (caps, caps2), "%" GST_PTR_FORMAT " != %" GST_PTR_FORMAT, caps,
               caps2);
  gst_caps_unref (caps);
  gst_caps_unref (caps2);
}

GST_END_TEST;

GST_START_TEST (test_print_parse)
{
  GstNnTensorsInfo info, back;
  GstCaps *caps;
  gint64 dims[3] = { 2, 5, 7 };
  gchar *str;

  gst_nn_tensors_info_init (&info);
  info.n_tensors = 1;
  info.tensors[0].dtype = NNP_DTYPE_UINT8;
  nnp_shape_set (&info.tensors[0].shape, 3, (const int64_t *) dims);

  caps = gst_nn_tensors_info_to_caps (&info);
  fail_unless_equals_string (
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions"), "7:5:2");
  fail_unless_equals_string (gst_structure_get_string (gst_caps_get_structure (caps, 0), "types"),
                             "uint8");

  /* through the string form and back */
  str = gst_caps_to_string (caps);
  gst_caps_unref (caps);
  parse_ok (&back, str);
  g_free (str);
  fail_unless (gst_nn_tensors_info_is_equal (&info, &back));
  fail_unless_equals_int (back.tensors[0].shape.rank, 3);
  fail_unless_equals_int64 (back.tensors[0].shape.dims[0], 2);
  fail_unless_equals_int64 (back.tensors[0].shape.dims[2], 7);
}

GST_END_TEST;

GST_START_TEST (test_singular)
{
  GstNnTensorsInfo info;

  /* NNStreamer's other/tensor form */
  parse_ok (
      &info,
      "other/tensor, type=(string)float32, dimension=(string)192:48:3:1, framerate=(fraction)0/1");
  fail_unless_equals_int (info.n_tensors, 1);
  fail_unless_equals_int (info.tensors[0].dtype, NNP_DTYPE_FLOAT32);
  fail_unless_equals_int64 (info.tensors[0].shape.dims[3], 192);

  /* format may be left out */
  parse_ok (&info, "other/tensors, num_tensors=(int)1, types=(string)int32, dimensions=(string)4");
  fail_unless_equals_int (info.tensors[0].dtype, NNP_DTYPE_INT32);
  fail_unless_equals_int (info.fps_n, 0);
  fail_unless_equals_int (info.fps_d, 1);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  gchar *msg;

  msg = parse_error (
      "other/tensors, format=(string)static, num_tensors=(int)2, types=(string)float32, dimensions=(string)\"4:1,4:1\"");
  fail_unless (strstr (msg, "types") != NULL, "%s", msg);
  g_free (msg);

  msg = parse_error (
      "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)float99, dimensions=(string)4:1");
  fail_unless (strstr (msg, "float99") != NULL, "%s", msg);
  g_free (msg);

  msg = parse_error (
      "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)float32, dimensions=(string)4:0");
  fail_unless (strstr (msg, "4:0") != NULL, "%s", msg);
  g_free (msg);

  msg = parse_error ("other/tensors, format=(string)flexible, num_tensors=(int)1");
  fail_unless (strstr (msg, "flexible") != NULL, "%s", msg);
  g_free (msg);

  msg = parse_error (
      "other/tensors, format=(string)static, num_tensors=(int)1, types=(string)float32");
  fail_unless (strstr (msg, "dimensions") != NULL, "%s", msg);
  g_free (msg);

  msg = parse_error ("video/x-raw, format=(string)RGB");
  fail_unless (strstr (msg, "video/x-raw") != NULL, "%s", msg);
  g_free (msg);

  /* control characters in a field stay out of the one-line message
   * (found by tests/fuzz/ fuzz-tensor-caps) */
  {
    GstNnTensorsInfo info;
    GError *error = NULL;
    const gchar *bad[][2] = { { "dimensions", "4:1\n1" },
                              { "types", "float\r32" },
                              { "format", "sta\ntic" },
                              { "dimensions", "4:1,\n2" } };
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
      GstStructure *st = gst_structure_new ("other/tensors", "format", G_TYPE_STRING, "static",
                                            "num_tensors", G_TYPE_INT, 1, "types", G_TYPE_STRING,
                                            "float32", "dimensions", G_TYPE_STRING, "4:1", NULL);
      gst_structure_set (st, bad[i][0], G_TYPE_STRING, bad[i][1], NULL);
      fail_if (gst_nn_tensors_info_from_structure (&info, st, &error));
      fail_unless (strchr (error->message, '\n') == NULL && strchr (error->message, '\r') == NULL,
                   "%s", error->message);
      g_clear_error (&error);
      gst_structure_free (st);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_fixate)
{
  GstCaps *caps = gst_caps_from_string (
      "other/tensors, num_tensors=(int)1, types=(string)float32, dimensions=(string)4:1, "
      "framerate=(fraction)[ 0/1, 60/1 ]; other/tensors, num_tensors=(int)2");
  GstStructure *s;
  gint n, d;

  caps = gst_nn_tensors_caps_fixate (caps);
  fail_unless (gst_caps_is_fixed (caps));
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "static");
  fail_unless (gst_structure_get_fraction (s, "framerate", &n, &d));
  fail_unless_equals_int (n, 0);
  gst_caps_unref (caps);
}

GST_END_TEST;

static Suite *
tensorcaps_suite (void)
{
  Suite *s = suite_create ("tensorcaps");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_dims_order);
  tcase_add_test (tc, test_compatible);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_half_types);
  tcase_add_test (tc, test_print_parse);
  tcase_add_test (tc, test_singular);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_fixate);
  return s;
}

GST_CHECK_MAIN (tensorcaps);
