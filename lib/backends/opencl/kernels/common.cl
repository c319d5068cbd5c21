/* nnpipe OpenCL kernels: definitions shared by every program (this file is
 * prepended to each kernel file when a program is built).
 *
 * Conventions: OpenCL C 1.2, no extensions.  Every tensor is passed as a
 * buffer and an element offset (int).  Elementwise kernels are launched with
 * a global size rounded up to a multiple of 64 and a NULL local size, so they
 * check their index against the element count.  The host structs mirroring
 * the ones below are made of 4-byte fields only (same layout everywhere). */

#define MAX_RANK 8

/* Fused activations: numbered as NnpActivation (include/nnpipe/graph.h). */
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_CLIP 2
#define ACT_LEAKY_RELU 3
#define ACT_HARD_SIGMOID 4
#define ACT_HARD_SWISH 5
#define ACT_SIGMOID 6
#define ACT_HARD_SWISH_AFFINE 7

typedef struct {
  int act;
  float alpha, beta;
} Act;

inline float
apply_act (float x, Act a)
{
  switch (a.act) {
    case ACT_RELU: return fmax (x, 0.0f);
    case ACT_CLIP: return fmin (fmax (x, a.alpha), a.beta);
    case ACT_LEAKY_RELU: return x < 0.0f ? a.alpha * x : x;
    case ACT_HARD_SIGMOID: return clamp (a.alpha * x + a.beta, 0.0f, 1.0f);
    case ACT_HARD_SWISH: return x * clamp (x / 6.0f + 0.5f, 0.0f, 1.0f);
    case ACT_SIGMOID: return 1.0f / (1.0f + exp (-x));
    case ACT_HARD_SWISH_AFFINE:
      return a.alpha * (x * clamp (x / 6.0f + 0.5f, 0.0f, 1.0f)) + a.beta;
    default: return x;
  }
}
