/* nnpipe OpenCL kernels: data movement by element size (1, 2, 4, 8 bytes):
 * strided copy (Transpose, Slice, Expand), Gather, Pad. */

typedef struct {
  int rank;
  int dims[NNP_OCL_MAX_RANK];
  int strides[NNP_OCL_MAX_RANK];     /* source strides in elements (may be 0 or negative) */
  int offset;                /* source offset in elements */
  int n;
} CopyP;

typedef struct {
  int rank;
  int in[NNP_OCL_MAX_RANK];
  int out[NNP_OCL_MAX_RANK];
  int pad_begin[NNP_OCL_MAX_RANK];
  int mode;                  /* NNP_OCL_PAD_* */
  int n;
} PadP;

#define DEFINE_COPY(SUFFIX, T)                                                     \
  /* rows x part elements between a dense part and a strided whole (Concat,      \
   * Split): to_whole 1 copies part -> whole at column col */                    \
  __kernel void rows_copy_##SUFFIX (__global const T *x, int xo, __global T *y,     \
                                    int yo, int rows, int part, int whole, int col, \
                                    int to_whole)                                  \
  {                                                                                \
    int i = get_global_id (0);                                                     \
    int r, j;                                                                      \
    if (i >= rows * part)                                                          \
      return;                                                                      \
    r = i / part;                                                                  \
    j = i % part;                                                                  \
    if (to_whole)                                                                  \
      y[yo + r * whole + col + j] = x[xo + i];                                     \
    else                                                                           \
      y[yo + i] = x[xo + r * whole + col + j];                                     \
  }                                                                                \
                                                                                   \
  __kernel void strided_copy_##SUFFIX (__global const T *x, int xo, __global T *y,  \
                                       int yo, CopyP p)                            \
  {                                                                                \
    int i = get_global_id (0);                                                     \
    int rest, off;                                                                 \
    if (i >= p.n)                                                                  \
      return;                                                                      \
    rest = i;                                                                      \
    off = p.offset;                                                                \
    for (int d = p.rank - 1; d >= 0; d--) {                                        \
      off += (rest % p.dims[d]) * p.strides[d];                                    \
      rest /= p.dims[d];                                                           \
    }                                                                              \
    y[yo + i] = x[xo + off];                                                       \
  }                                                                                \
                                                                                   \
  /* data outer x axis_dim x inner, indices int32 (long_idx 0) or int64.       \
   * With a status buffer, items i < n_check validate index i: the first one    \
   * out of [-axis_dim, axis_dim) sets status[so] = 1 and writes its value      \
   * (low, high 32 bits) and position; the executor then fails the run.  Such   \
   * elements are written as 0 (the run fails anyway, no read out of bounds). */ \
  __kernel void gather_##SUFFIX (__global const T *x, int xo, __global const int *i32, \
                                 __global const long *i64, int io, __global T *y,  \
                                 int yo, int long_idx, int axis_dim, int inner,    \
                                 int n_idx, int n, __global int *status, int so,   \
                                 int n_check)                                      \
  {                                                                                \
    int i = get_global_id (0);                                                     \
    int in, j, o;                                                                  \
    long ix;                                                                       \
    if (i < n_check) {                                                             \
      ix = long_idx ? i64[io + i] : (long) i32[io + i];                            \
      if ((ix < -(long) axis_dim || ix >= (long) axis_dim)                         \
          && atomic_cmpxchg (&status[so], 0, 1) == 0) {                            \
        status[so + 1] = (int) (ix & 0xffffffffL);                                 \
        status[so + 2] = (int) (ix >> 32);                                         \
        status[so + 3] = i;                                                        \
      }                                                                            \
    }                                                                              \
    if (i >= n)                                                                    \
      return;                                                                      \
    in = i % inner;                                                                \
    j = (i / inner) % n_idx;                                                       \
    o = i / (inner * n_idx);                                                       \
    ix = long_idx ? i64[io + j] : (long) i32[io + j];                              \
    if (ix < 0)                                                                    \
      ix += axis_dim;                                                              \
    if (ix < 0 || ix >= axis_dim) {                                                \
      y[yo + i] = 0;                                                               \
      return;                                                                      \
    }                                                                              \
    y[yo + i] = x[xo + (o * axis_dim + (int) ix) * inner + in];                    \
  }                                                                                \
                                                                                   \
  __kernel void pad_##SUFFIX (__global const T *x, int xo, __global T *y, int yo,   \
                              PadP p, T value)                                     \
  {                                                                                \
    int i = get_global_id (0);                                                     \
    int rest, off = 0, s = 1;                                                      \
    if (i >= p.n)                                                                  \
      return;                                                                      \
    rest = i;                                                                      \
    for (int d = p.rank - 1; d >= 0; d--) {                                        \
      int c = rest % p.out[d] - p.pad_begin[d];                                    \
      int len = p.in[d];                                                           \
      rest /= p.out[d];                                                            \
      if (c < 0 || c >= len) {                                                     \
        if (p.mode == NNP_OCL_PAD_CONSTANT || len == 0) {                          \
          y[yo + i] = value;                                                       \
          return;                                                                  \
        } else if (p.mode == NNP_OCL_PAD_REFLECT) {                                \
          if (len == 1) {                                                          \
            c = 0;                                                                 \
          } else {                                                                 \
            int period = 2 * (len - 1);                                            \
            c = c % period;                                                        \
            if (c < 0)                                                             \
              c += period;                                                         \
            if (c >= len)                                                          \
              c = period - c;                                                      \
          }                                                                        \
        } else if (p.mode == NNP_OCL_PAD_EDGE) {                                   \
          c = clamp (c, 0, len - 1);                                               \
        } else {                                                                   \
          c = c % len;                                                             \
          if (c < 0)                                                               \
            c += len;                                                              \
        }                                                                          \
      }                                                                            \
      off += c * s;                                                                \
      s *= len;                                                                    \
    }                                                                              \
    y[yo + i] = x[xo + off];                                                       \
  }

DEFINE_COPY (1, uchar)
DEFINE_COPY (2, ushort)
DEFINE_COPY (4, uint)
DEFINE_COPY (8, ulong)
