// check_model.cu -- the result check's model of a kernel's arithmetic, on CUDA cores.
//
// What it teaches: the course's check (helpers.check) compares every element of a kernel's C with a
// model of the kernel's arithmetic (helpers.emulate), bit for bit. On the CPU that model is numpy; for
// the large products a GPU runs, these kernels compute the same numbers on CUDA cores in float64, so
// the check can afford every element at every size. Same data, same roundings, same order: the results
// equal helpers.emulate's bit for bit (tests/test_gpu_check_model.py).
//
// tc_model_gemm: the Tensor Cores' block FMA (helpers.emulate.TensorCoreModel). For each block of
// `block` products plus the accumulator c:
//   1. every product a*b is exact in float64 (at most 11 x 11 significant bits);
//   2. the terms are aligned to the largest exponent: a product counts with e(a) + e(b) - 1 (its
//      exponent before normalisation; `normalised` = 1 takes the exact product's own exponent), c with
//      its own; inputs below the smallest normal count with the format's smallest exponent (emin);
//   3. each term keeps `keep` bits below that exponent; lower bits are dropped (toward zero, or toward
//      minus infinity when `floor_cut` = 1). After scaling by 2^(keep - emax) the kept terms are
//      integers below 2^(keep + 1), and block + 1 of them add exactly in float64;
//   4. the sum is rounded once to the accumulator: FP32 toward zero (or to nearest when
//      `fp32_nearest` = 1; cut to `result_bits` significant bits when that is below 24, as FP8 wgmma
//      does), or FP16 to nearest even (acc_fp16 = 1).
// A and B are the values the Tensor Cores multiply, as float64, row-major; D is float64 (each value
// is a number of the accumulator's format). `block` must divide TK.
//
// fma_chain_model: an FP32 kernel's arithmetic (gemm_fp32_kernel): acc = fma(a_k, b_k, acc) for
// k = 0 .. K-1 in order, one IEEE rounding per step.
//
// Launch: block = dim3(16, 16), grid = dim3(ceil(N / 16), ceil(M / 16)); any M, N, K.

#define TS 16          // output tile: TS x TS elements, one per thread
#define TK 32          // K elements staged in shared memory at a time (a multiple of every block size)
#define ZERO_EXP (-100000)

__device__ __forceinline__ int term_exponent(double x, int emin)
{
    int e;
    frexp(x, &e);                       // |x| in [2^(e-1), 2^e)
    return x == 0.0 ? ZERO_EXP : max(e, emin);
}

// float64 -> FP16, round to nearest even, directly (no double rounding through FP32); subnormals and
// overflow to infinity as the format has them. Returns the FP16 value as a double.
__device__ __forceinline__ double round_fp16(double s)
{
    if (s == 0.0 || isnan(s) || isinf(s)) return s;
    int e;
    frexp(s, &e);
    e = max(e, -13);                    // FP16's smallest normal is 2^-14 (frexp exponent -13)
    const double ulp = ldexp(1.0, e - 11);
    const double r = rint(s / ulp) * ulp;           // rint: to nearest even; powers of two keep it exact
    return fabs(r) > 65504.0 ? copysign(__longlong_as_double(0x7ff0000000000000LL), s) : r;
}

extern "C" __global__ void tc_model_gemm(const double* __restrict__ A, const double* __restrict__ B,
                                         double* __restrict__ D, int M, int N, int K,
                                         int block, int keep, int emin, int acc_fp16, int floor_cut,
                                         int fp32_nearest, int result_bits, int normalised)
{
    __shared__ double As[TS][TK];
    __shared__ double Bs[TK][TS];
    __shared__ int eAs[TS][TK];
    __shared__ int eBs[TK][TS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    double acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        // stage TS x TK of A and TK x TS of B with their exponents; zeros past the edges
        for (int t = tx; t < TK; t += TS) {
            const int k = k0 + t;
            const double a = (row < M && k < K) ? A[(size_t)row * K + k] : 0.0;
            As[ty][t] = a;
            eAs[ty][t] = term_exponent(a, emin);
        }
        for (int t = ty; t < TK; t += TS) {
            const int k = k0 + t;
            const double b = (col < N && k < K) ? B[(size_t)k * N + col] : 0.0;
            Bs[t][tx] = b;
            eBs[t][tx] = term_exponent(b, emin);
        }
        __syncthreads();
        const int kn = min(TK, K - k0);
        for (int kb = 0; kb < kn; kb += block) {     // one block FMA: `block` products + the accumulator
            int emax = term_exponent(acc, ZERO_EXP);      // c with its own exponent (no clamp)
            for (int t = kb; t < kb + block; ++t) {
                int e;
                if (normalised) {
                    const double p = As[ty][t] * Bs[t][tx];
                    frexp(p, &e);
                    if (p == 0.0) e = ZERO_EXP;
                } else {
                    e = eAs[ty][t] + eBs[t][tx] - 1;
                }
                emax = max(emax, e);
            }
            emax = max(emax, -990);                  // an all-zero block: any scale will do
            const double scale = ldexp(1.0, keep - emax);
            double s = 0.0;
            for (int t = kb; t < kb + block; ++t) {
                const double p = __dmul_rn(__dmul_rn(As[ty][t], Bs[t][tx]), scale);   // exact: powers of two
                s += floor_cut ? floor(p) : trunc(p);                                 // integers: exact sums
            }
            const double c = __dmul_rn(acc, scale);
            s += floor_cut ? floor(c) : trunc(c);
            s = s / scale;                                                            // exact
            if (acc_fp16) {
                acc = round_fp16(s);
            } else if (result_bits < 24) {           // FP8 wgmma: 14 significant bits, cut toward zero
                int es;
                frexp(s, &es);
                const double ulp = ldexp(1.0, es - result_bits);
                acc = trunc(s / ulp) * ulp;
            } else {
                acc = (double)(fp32_nearest ? __double2float_rn(s) : __double2float_rz(s));
            }
        }
        __syncthreads();
    }
    if (row < M && col < N) D[(size_t)row * N + col] = acc;
}

extern "C" __global__ void fma_chain_model(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TS][TK];
    __shared__ float Bs[TK][TS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int t = tx; t < TK; t += TS)
            As[ty][t] = (row < M && k0 + t < K) ? A[(size_t)row * K + k0 + t] : 0.0f;
        for (int t = ty; t < TK; t += TS)
            Bs[t][tx] = (col < N && k0 + t < K) ? B[(size_t)(k0 + t) * N + col] : 0.0f;
        __syncthreads();
        const int kn = min(TK, K - k0);
        for (int t = 0; t < kn; ++t) acc = __fmaf_rn(As[ty][t], Bs[t][tx], acc);   // one rounding per step
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
