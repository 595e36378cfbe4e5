// mixed_precision.cu -- Lesson 3: what the accumulator's format does.
//
// Two kernels with the same loop and launch as wmma.cu, differing only in the
// accumulator fragment:
//   wmma_mixed_gemm_kernel : FP16 inputs, FP32 accumulator, FP32 output
//                            (the seed's "mixed precision" kernel).
//   wmma_fp16acc_gemm_kernel: FP16 inputs, FP16 accumulator, FP16 output: every
//                            K step rounds the running sum to half precision.
// Both halve the input bytes against FP32; only the first keeps the sum in a
// format with 24 significant bits. Lesson 4 measures how the difference grows
// with K.
//
// The seed computes the warp's column as (blockIdx.x * blockDim.x / 32) * 16,
// which equals blockIdx.x * 16 only because blockDim.x is exactly 32 (one warp
// wide); we write the simpler form and launch with blockDim.x == 32.
//
// Requirements and launch: as wmma_gemm_naive (block dim3(32, 8),
// grid dim3(N / 16, ceil(M / 128)), sizes multiples of 16).

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

extern "C" __global__ void wmma_mixed_gemm_kernel(const half* __restrict__ A,
                                                  const half* __restrict__ B,
                                                  float* __restrict__ C,
                                                  int M, int N, int K)
{
    const int warp_m = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int warp_n = blockIdx.x * 16;
    if (warp_m >= M || warp_n >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c_frag;   // FP32 accumulator
    wmma::fill_fragment(c_frag, 0.0f);

    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a_frag, A + (size_t)warp_m * K + k, K);
        wmma::load_matrix_sync(b_frag, B + (size_t)k * N + warp_n, N);
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
    }
    wmma::store_matrix_sync(C + (size_t)warp_m * N + warp_n, c_frag, N, wmma::mem_row_major);
}

extern "C" __global__ void wmma_fp16acc_gemm_kernel(const half* __restrict__ A,
                                                    const half* __restrict__ B,
                                                    half* __restrict__ C,
                                                    int M, int N, int K)
{
    const int warp_m = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int warp_n = blockIdx.x * 16;
    if (warp_m >= M || warp_n >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> c_frag;    // FP16 accumulator
    wmma::fill_fragment(c_frag, __float2half(0.0f));

    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a_frag, A + (size_t)warp_m * K + k, K);
        wmma::load_matrix_sync(b_frag, B + (size_t)k * N + warp_n, N);
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);            // sum rounded to half
    }
    wmma::store_matrix_sync(C + (size_t)warp_m * N + warp_n, c_frag, N, wmma::mem_row_major);
}

// ---------------------------------------------------------------------------
// Two more input formats on the same loop (sm_80 and newer: Ampere, Hopper):
//
//   wmma_bf16_gemm_kernel: BF16 inputs (8 exponent bits like FP32, 8 significant
//       bits), FP32 accumulator, FP32 output. Same m16n16k16 shape, same bytes
//       per element as FP16: only the split between range and precision
//       changes. The host passes the BF16 bit patterns (CuPy has no bfloat16
//       dtype; helpers.formats.to_bf16_bits rounds FP32 to nearest even).
//
//   wmma_tf32_gemm_kernel: FP32 in memory, TF32 on the Tensor Core. The
//       fragments use wmma::precision::tf32 and the shape m16n16k8 (the only
//       one WMMA offers for TF32), so the K loop steps by 8. load_matrix_sync
//       reads plain floats; each element must then be converted with
//       wmma::__float_to_tf32 (round to nearest, ties away from zero: PTX
//       cvt.rna.tf32.f32) before mma_sync. The accumulator is FP32.
//       Memory traffic is that of the FP32 kernel (4 bytes per input).
//
// Launch both like the kernels above: block dim3(32, 8), grid dim3(N / 16,
// ceil(M / 128)), M, N, K multiples of 16 (the helpers pad other sizes).
#include <cuda_bf16.h>

extern "C" __global__ void wmma_bf16_gemm_kernel(const __nv_bfloat16* __restrict__ A,
                                                 const __nv_bfloat16* __restrict__ B,
                                                 float* __restrict__ C,
                                                 int M, int N, int K)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    const int warp_m = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int warp_n = blockIdx.x * 16;
    if (warp_m >= M || warp_n >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c_frag;   // FP32 accumulator
    wmma::fill_fragment(c_frag, 0.0f);

    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a_frag, A + (size_t)warp_m * K + k, K);
        wmma::load_matrix_sync(b_frag, B + (size_t)k * N + warp_n, N);
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
    }
    wmma::store_matrix_sync(C + (size_t)warp_m * N + warp_n, c_frag, N, wmma::mem_row_major);
#endif
}

extern "C" __global__ void wmma_tf32_gemm_kernel(const float* __restrict__ A,
                                                 const float* __restrict__ B,
                                                 float* __restrict__ C,
                                                 int M, int N, int K)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    const int warp_m = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int warp_n = blockIdx.x * 16;
    if (warp_m >= M || warp_n >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c_frag;    // FP32 accumulator
    wmma::fill_fragment(c_frag, 0.0f);

    for (int k = 0; k < K; k += 8) {                               // k-step 8, not 16
        wmma::load_matrix_sync(a_frag, A + (size_t)warp_m * K + k, K);
        wmma::load_matrix_sync(b_frag, B + (size_t)k * N + warp_n, N);
        // the fragments hold FP32 values: round each to TF32 (10 fraction bits)
        for (int i = 0; i < a_frag.num_elements; ++i) a_frag.x[i] = wmma::__float_to_tf32(a_frag.x[i]);
        for (int i = 0; i < b_frag.num_elements; ++i) b_frag.x[i] = wmma::__float_to_tf32(b_frag.x[i]);
        wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);
    }
    wmma::store_matrix_sync(C + (size_t)warp_m * N + warp_n, c_frag, N, wmma::mem_row_major);
#endif
}
