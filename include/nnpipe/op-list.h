/* nnpipe: THE list of operators.  Each op is declared here once; the enum,
 * the name table, the ONNX lookup, the shape-inference table and every
 * backend's kernel table are generated from it (see ops.h, lib/ops/op-table.c,
 * lib/backends/cpu/cpu-kernels.c).
 *
 * NNP_OP (ID, id, "OnnxType", min_inputs, max_inputs, min_outputs, max_outputs)
 *
 *   ID  upper-case enum suffix: NNP_OP_<ID>
 *   id  lower-case stem: shape inference is nnp_op_<id>_infer() (lib/ops/),
 *       the CPU kernel is the NnpCpuKernel nnp_cpu_<id> (lib/backends/cpu/).
 *
 * No include guard on purpose: include it after defining NNP_OP.  The table
 * keeps its columns: clang-format is off for it. */

/* clang-format off */

/* neural-network ops (lib/ops/ops-nn.c, lib/backends/cpu/cpu-conv.c ...) */
NNP_OP (CONV,                conv,                "Conv",                2, 3, 1, 1)
NNP_OP (CONV_TRANSPOSE,      conv_transpose,      "ConvTranspose",       2, 3, 1, 1)
NNP_OP (BATCH_NORMALIZATION, batch_normalization, "BatchNormalization",  5, 5, 1, 5)
NNP_OP (MAX_POOL,            max_pool,            "MaxPool",             1, 1, 1, 2)
NNP_OP (AVERAGE_POOL,        average_pool,        "AveragePool",         1, 1, 1, 1)
NNP_OP (GLOBAL_AVERAGE_POOL, global_average_pool, "GlobalAveragePool",   1, 1, 1, 1)
NNP_OP (GLOBAL_MAX_POOL,     global_max_pool,     "GlobalMaxPool",       1, 1, 1, 1)
NNP_OP (MAT_MUL,             mat_mul,             "MatMul",              2, 2, 1, 1)
NNP_OP (GEMM,                gemm,                "Gemm",                2, 3, 1, 1)
NNP_OP (SOFTMAX,             softmax,             "Softmax",             1, 1, 1, 1)
NNP_OP (LOG_SOFTMAX,         log_softmax,         "LogSoftmax",          1, 1, 1, 1)
NNP_OP (RESIZE,              resize,              "Resize",              1, 4, 1, 1)
NNP_OP (PAD,                 pad,                 "Pad",                 1, 4, 1, 1)
NNP_OP (REDUCE_MEAN,         reduce_mean,         "ReduceMean",          1, 2, 1, 1)
NNP_OP (REDUCE_SUM,          reduce_sum,          "ReduceSum",           1, 2, 1, 1)
NNP_OP (REDUCE_MAX,          reduce_max,          "ReduceMax",           1, 2, 1, 1)
NNP_OP (REDUCE_MIN,          reduce_min,          "ReduceMin",           1, 2, 1, 1)
NNP_OP (ARG_MAX,             arg_max,             "ArgMax",              1, 1, 1, 1)

/* elementwise ops (lib/ops/ops-elementwise.c, lib/backends/cpu/cpu-elementwise.c) */
NNP_OP (ADD,                 add,                 "Add",                 2, 2, 1, 1)
NNP_OP (SUB,                 sub,                 "Sub",                 2, 2, 1, 1)
NNP_OP (MUL,                 mul,                 "Mul",                 2, 2, 1, 1)
NNP_OP (DIV,                 div,                 "Div",                 2, 2, 1, 1)
NNP_OP (POW,                 pow,                 "Pow",                 2, 2, 1, 1)
NNP_OP (MAX,                 max,                 "Max",                 1, 16, 1, 1)
NNP_OP (MIN,                 min,                 "Min",                 1, 16, 1, 1)
NNP_OP (SUM,                 sum,                 "Sum",                 1, 16, 1, 1)
NNP_OP (EQUAL,               equal,               "Equal",               2, 2, 1, 1)
NNP_OP (LESS,                less,                "Less",                2, 2, 1, 1)
NNP_OP (GREATER,             greater,             "Greater",             2, 2, 1, 1)
NNP_OP (WHERE,               where,               "Where",               3, 3, 1, 1)
NNP_OP (RELU,                relu,                "Relu",                1, 1, 1, 1)
NNP_OP (LEAKY_RELU,          leaky_relu,          "LeakyRelu",           1, 1, 1, 1)
NNP_OP (CLIP,                clip,                "Clip",                1, 3, 1, 1)
NNP_OP (HARD_SIGMOID,        hard_sigmoid,        "HardSigmoid",         1, 1, 1, 1)
NNP_OP (HARD_SWISH,          hard_swish,          "HardSwish",           1, 1, 1, 1)
NNP_OP (SIGMOID,             sigmoid,             "Sigmoid",             1, 1, 1, 1)
NNP_OP (TANH,                tanh,                "Tanh",                1, 1, 1, 1)
NNP_OP (EXP,                 exp,                 "Exp",                 1, 1, 1, 1)
NNP_OP (LOG,                 log,                 "Log",                 1, 1, 1, 1)
NNP_OP (ERF,                 erf,                 "Erf",                 1, 1, 1, 1)
NNP_OP (SQRT,                sqrt,                "Sqrt",                1, 1, 1, 1)
NNP_OP (RECIPROCAL,          reciprocal,          "Reciprocal",          1, 1, 1, 1)
NNP_OP (NEG,                 neg,                 "Neg",                 1, 1, 1, 1)
NNP_OP (ABS,                 abs,                 "Abs",                 1, 1, 1, 1)
NNP_OP (FLOOR,               floor,               "Floor",               1, 1, 1, 1)
NNP_OP (CEIL,                ceil,                "Ceil",                1, 1, 1, 1)
NNP_OP (CAST,                cast,                "Cast",                1, 1, 1, 1)

/* shape / data-movement ops (lib/ops/ops-shape.c, lib/backends/cpu/cpu-shape.c) */
NNP_OP (CONSTANT,            constant,            "Constant",            0, 0, 1, 1)
NNP_OP (IDENTITY,            identity,            "Identity",            1, 1, 1, 1)
NNP_OP (DROPOUT,             dropout,             "Dropout",             1, 3, 1, 2)
NNP_OP (SHAPE,               shape,               "Shape",               1, 1, 1, 1)
NNP_OP (RESHAPE,             reshape,             "Reshape",             1, 2, 1, 1)
NNP_OP (FLATTEN,             flatten,             "Flatten",             1, 1, 1, 1)
NNP_OP (SQUEEZE,             squeeze,             "Squeeze",             1, 2, 1, 1)
NNP_OP (UNSQUEEZE,           unsqueeze,           "Unsqueeze",           1, 2, 1, 1)
NNP_OP (TRANSPOSE,           transpose,           "Transpose",           1, 1, 1, 1)
NNP_OP (CONCAT,              concat,              "Concat",              1, 64, 1, 1)
NNP_OP (SPLIT,               split,               "Split",               1, 2, 1, 64)
NNP_OP (SLICE,               slice,               "Slice",               1, 5, 1, 1)
NNP_OP (GATHER,              gather,              "Gather",              2, 2, 1, 1)
NNP_OP (EXPAND,              expand,              "Expand",              2, 2, 1, 1)
NNP_OP (CONSTANT_OF_SHAPE,   constant_of_shape,   "ConstantOfShape",     1, 1, 1, 1)
NNP_OP (RANGE,               range,               "Range",               3, 3, 1, 1)
/* math ops (lib/ops/ops-math.c, lib/backends/cpu/cpu-math.c) */
NNP_OP (COS,                 cos,                 "Cos",                 1, 1, 1, 1)
NNP_OP (SIN,                 sin,                 "Sin",                 1, 1, 1, 1)
NNP_OP (TAN,                 tan,                 "Tan",                 1, 1, 1, 1)
NNP_OP (ACOS,                acos,                "Acos",                1, 1, 1, 1)
NNP_OP (ASIN,                asin,                "Asin",                1, 1, 1, 1)
NNP_OP (ATAN,                atan,                "Atan",                1, 1, 1, 1)
NNP_OP (COSH,                cosh,                "Cosh",                1, 1, 1, 1)
NNP_OP (SINH,                sinh,                "Sinh",                1, 1, 1, 1)
NNP_OP (ACOSH,               acosh,               "Acosh",               1, 1, 1, 1)
NNP_OP (ASINH,               asinh,               "Asinh",               1, 1, 1, 1)
NNP_OP (ATANH,               atanh,               "Atanh",               1, 1, 1, 1)
NNP_OP (SOFTPLUS,            softplus,            "Softplus",            1, 1, 1, 1)
NNP_OP (SOFTSIGN,            softsign,            "Softsign",            1, 1, 1, 1)
NNP_OP (ELU,                 elu,                 "Elu",                 1, 1, 1, 1)
NNP_OP (SELU,                selu,                "Selu",                1, 1, 1, 1)
NNP_OP (CELU,                celu,                "Celu",                1, 1, 1, 1)
NNP_OP (THRESHOLDED_RELU,    thresholded_relu,    "ThresholdedRelu",     1, 1, 1, 1)
NNP_OP (SHRINK,              shrink,              "Shrink",              1, 1, 1, 1)
NNP_OP (MISH,                mish,                "Mish",                1, 1, 1, 1)
NNP_OP (GELU,                gelu,                "Gelu",                1, 1, 1, 1)
NNP_OP (ROUND,               round,               "Round",               1, 1, 1, 1)
NNP_OP (SIGN,                sign,                "Sign",                1, 1, 1, 1)
NNP_OP (IS_NAN,              is_nan,              "IsNaN",               1, 1, 1, 1)
NNP_OP (IS_INF,              is_inf,              "IsInf",               1, 1, 1, 1)
NNP_OP (NOT,                 not,                 "Not",                 1, 1, 1, 1)
NNP_OP (BITWISE_NOT,         bitwise_not,         "BitwiseNot",          1, 1, 1, 1)
NNP_OP (AND,                 and,                 "And",                 2, 2, 1, 1)
NNP_OP (OR,                  or,                  "Or",                  2, 2, 1, 1)
NNP_OP (XOR,                 xor,                 "Xor",                 2, 2, 1, 1)
NNP_OP (BITWISE_AND,         bitwise_and,         "BitwiseAnd",          2, 2, 1, 1)
NNP_OP (BITWISE_OR,          bitwise_or,          "BitwiseOr",           2, 2, 1, 1)
NNP_OP (BITWISE_XOR,         bitwise_xor,         "BitwiseXor",          2, 2, 1, 1)
NNP_OP (BIT_SHIFT,           bit_shift,           "BitShift",            2, 2, 1, 1)
NNP_OP (MOD,                 mod,                 "Mod",                 2, 2, 1, 1)
NNP_OP (GREATER_OR_EQUAL,    greater_or_equal,    "GreaterOrEqual",      2, 2, 1, 1)
NNP_OP (LESS_OR_EQUAL,       less_or_equal,       "LessOrEqual",         2, 2, 1, 1)
NNP_OP (PRELU,               prelu,               "PRelu",               2, 2, 1, 1)
NNP_OP (MEAN,                mean,                "Mean",                1, 16, 1, 1)

/* more reductions (lib/ops/ops-reduce.c, lib/backends/cpu/cpu-reduce-math.c, cpu-reduce.c) */
NNP_OP (REDUCE_L1,           reduce_l1,           "ReduceL1",            1, 2, 1, 1)
NNP_OP (REDUCE_L2,           reduce_l2,           "ReduceL2",            1, 2, 1, 1)
NNP_OP (REDUCE_LOG_SUM,      reduce_log_sum,      "ReduceLogSum",        1, 2, 1, 1)
NNP_OP (REDUCE_LOG_SUM_EXP,  reduce_log_sum_exp,  "ReduceLogSumExp",     1, 2, 1, 1)
NNP_OP (REDUCE_PROD,         reduce_prod,         "ReduceProd",          1, 2, 1, 1)
NNP_OP (REDUCE_SUM_SQUARE,   reduce_sum_square,   "ReduceSumSquare",     1, 2, 1, 1)
NNP_OP (ARG_MIN,             arg_min,             "ArgMin",              1, 1, 1, 1)

/* indexing ops (lib/ops/ops-index.c, lib/backends/cpu/cpu-index.c) */
NNP_OP (GATHER_ELEMENTS,     gather_elements,     "GatherElements",      2, 2, 1, 1)
NNP_OP (SCATTER_ELEMENTS,    scatter_elements,    "ScatterElements",     3, 3, 1, 1)
NNP_OP (SCATTER,             scatter,             "Scatter",             3, 3, 1, 1)
NNP_OP (GATHER_ND,           gather_nd,           "GatherND",            2, 2, 1, 1)
NNP_OP (SCATTER_ND,          scatter_nd,          "ScatterND",           3, 3, 1, 1)
NNP_OP (TRILU,               trilu,               "Trilu",               1, 2, 1, 1)
NNP_OP (CUM_SUM,             cum_sum,             "CumSum",              2, 2, 1, 1)
NNP_OP (HARDMAX,             hardmax,             "Hardmax",             1, 1, 1, 1)
NNP_OP (EYE_LIKE,            eye_like,            "EyeLike",             1, 1, 1, 1)
NNP_OP (ONE_HOT,             one_hot,             "OneHot",              3, 3, 1, 1)
NNP_OP (DEPTH_TO_SPACE,      depth_to_space,      "DepthToSpace",        1, 1, 1, 1)
NNP_OP (SPACE_TO_DEPTH,      space_to_depth,      "SpaceToDepth",        1, 1, 1, 1)
NNP_OP (TILE,                tile,                "Tile",                2, 3, 1, 1)
NNP_OP (REVERSE_SEQUENCE,    reverse_sequence,    "ReverseSequence",     2, 2, 1, 1)
NNP_OP (SIZE,                size,                "Size",                1, 1, 1, 1)
NNP_OP (CAST_LIKE,           cast_like,           "CastLike",            2, 2, 1, 1)

/* normalisation and loss ops (lib/ops/ops-norm.c, lib/backends/cpu/cpu-norm.c) */
NNP_OP (LAYER_NORMALIZATION, layer_normalization, "LayerNormalization",  2, 3, 1, 3)
NNP_OP (INSTANCE_NORMALIZATION, instance_normalization, "InstanceNormalization", 3, 3, 1, 1)
NNP_OP (GROUP_NORMALIZATION, group_normalization, "GroupNormalization",  3, 3, 1, 1)
NNP_OP (MEAN_VARIANCE_NORMALIZATION, mean_variance_normalization, "MeanVarianceNormalization", 1, 1, 1, 1)
NNP_OP (LRN,                 lrn,                 "LRN",                 1, 1, 1, 1)
NNP_OP (LP_NORMALIZATION,    lp_normalization,    "LpNormalization",     1, 1, 1, 1)
NNP_OP (NEGATIVE_LOG_LIKELIHOOD_LOSS, negative_log_likelihood_loss, "NegativeLogLikelihoodLoss", 2, 3, 1, 1)
NNP_OP (SOFTMAX_CROSS_ENTROPY_LOSS, softmax_cross_entropy_loss, "SoftmaxCrossEntropyLoss", 2, 3, 1, 2)

/* recurrent ops (lib/ops/ops-rnn.c, lib/backends/cpu/cpu-rnn.c) */
NNP_OP (RNN,                 rnn,                 "RNN",                 3, 6, 0, 2)
NNP_OP (GRU,                 gru,                 "GRU",                 3, 6, 0, 2)
NNP_OP (LSTM,                lstm,                "LSTM",                3, 8, 0, 3)

/* selection ops (lib/ops/ops-select.c, lib/backends/cpu/cpu-select.c) */
NNP_OP (TOP_K,               top_k,               "TopK",                1, 2, 1, 2)
NNP_OP (COMPRESS,            compress,            "Compress",            2, 2, 1, 1)
NNP_OP (NON_ZERO,            non_zero,            "NonZero",             1, 1, 1, 1)
NNP_OP (UNIQUE,              unique,              "Unique",              1, 1, 1, 4)
NNP_OP (NON_MAX_SUPPRESSION, non_max_suppression, "NonMaxSuppression",   2, 5, 1, 1)

/* signal ops (lib/ops/ops-signal.c, lib/backends/cpu/cpu-signal.c) */
NNP_OP (HANN_WINDOW,         hann_window,         "HannWindow",          1, 1, 1, 1)
NNP_OP (HAMMING_WINDOW,      hamming_window,      "HammingWindow",       1, 1, 1, 1)
NNP_OP (BLACKMAN_WINDOW,     blackman_window,     "BlackmanWindow",      1, 1, 1, 1)
NNP_OP (DFT,                 dft,                 "DFT",                 1, 3, 1, 1)

/* sampling ops (lib/ops/ops-sample.c, lib/backends/cpu/cpu-sample.c) */
NNP_OP (GRID_SAMPLE,         grid_sample,         "GridSample",          2, 2, 1, 1)
NNP_OP (ROI_ALIGN,           roi_align,           "RoiAlign",            3, 3, 1, 1)
NNP_OP (MAX_UNPOOL,          max_unpool,          "MaxUnpool",           2, 3, 1, 1)

/* linear algebra (lib/ops/ops-linalg.c, lib/backends/cpu/cpu-linalg.c) */
NNP_OP (EINSUM,              einsum,              "Einsum",              1, 8, 1, 1)
NNP_OP (DET,                 det,                 "Det",                 1, 1, 1, 1)

/* control flow (lib/ops/ops-control.c, lib/backends/cpu/cpu-control.c); the
 * loader appends the outer values a subgraph reads to the node's inputs */
NNP_OP (IF,                  if,                  "If",                  1, 64, 1, 64)
NNP_OP (LOOP,                loop,                "Loop",                0, 64, 1, 64)
NNP_OP (SCAN,                scan,                "Scan",                0, 64, 1, 64)

/* legacy ops (opsets 7 to 9) run by another op's code */
NNP_OP (UPSAMPLE,            upsample,            "Upsample",            1, 2, 1, 1)

/* quantisation ops (lib/ops/ops-quant.c, lib/backends/cpu/cpu-quant.c, cpu-qconv.c) */
NNP_OP (QUANTIZE_LINEAR,     quantize_linear,     "QuantizeLinear",      2, 3, 1, 1)
NNP_OP (DEQUANTIZE_LINEAR,   dequantize_linear,   "DequantizeLinear",    2, 3, 1, 1)
NNP_OP (DYNAMIC_QUANTIZE_LINEAR, dynamic_quantize_linear, "DynamicQuantizeLinear", 1, 1, 1, 3)
NNP_OP (CONV_INTEGER,        conv_integer,        "ConvInteger",         2, 4, 1, 1)
NNP_OP (MAT_MUL_INTEGER,     mat_mul_integer,     "MatMulInteger",       2, 4, 1, 1)
NNP_OP (QLINEAR_CONV,        qlinear_conv,        "QLinearConv",         8, 9, 1, 1)
NNP_OP (QLINEAR_MAT_MUL,     qlinear_mat_mul,     "QLinearMatMul",       8, 9, 1, 1)
/* QLinearMatMul's 9th input (not ONNX): an int32 bias per column, from a
 * QDQ Gemm.  Not ONNX: made by the quantisation pass (lib/specialize/quant-fuse.c) from
 * ConvInteger / MatMulInteger -> Cast -> Mul (scale) [-> Add (bias)]:
 * inputs x, w, x_zero_point, w_zero_point, scale, bias; float output */
NNP_OP (CONV_INTEGER_TO_FLOAT, conv_integer_to_float, "NnpConvIntegerToFloat", 2, 6, 1, 1)
NNP_OP (MAT_MUL_INTEGER_TO_FLOAT, mat_mul_integer_to_float, "NnpMatMulIntegerToFloat", 2, 6, 1, 1)
/* clang-format on */
