/* nnpipe OpenCL kernels: definitions shared by every program (the last part
 * of the prelude each kernel file is built behind, after the NnpActivation
 * enum, ocl-codes.h and act-scalar.h; see embed-cl.py).
 *
 * Conventions: OpenCL C 1.2, no extensions.  Every tensor is passed as a
 * buffer and an element offset (int).  Elementwise kernels are launched with
 * a global size rounded up to a multiple of 64 and a NULL local size, so they
 * check their index against the element count.  The host structs mirroring
 * the ones below are made of 4-byte fields only (same layout everywhere). */

/* A fused activation: act is an NnpActivation (host: NnpOclActArg). */
typedef struct {
  int act;
  float alpha, beta;
} Act;

static inline float
apply_act (float x, Act a)
{
  return nnp_act_apply (x, a.act, a.alpha, a.beta);
}
