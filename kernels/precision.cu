// precision.cu -- Lesson 4: how error grows, and how the hardware really adds.
//
// Probe kernels (tc_probe_*): ONE mma_sync per warp, D = A B + C on a single
//    16x16x16 tile (16x16x8 for TF32). They exist to ask the tensor core
//    arithmetic questions, the way Fasi, Higham, Mikaitis & Pranesh (PeerJ
//    Comput. Sci. 2021) and Khattak & Mikaitis (2025) do: choose A, B and C so
//    that the answer in D[0][0] tells whether products are exact, how many
//    alignment bits the adder keeps, how many products it adds at once, and how
//    it rounds. What they teach: the tensor core is not an FMA chain; its
//    rounding is a hardware property that can be measured in one instruction.
//    Batched: block b reads its own tiles at offset b * (tile size) from each
//    array, so one launch runs many probes. Launch: grid = (probes), block = 32.
//    Layouts: A row-major 16 x K, B row-major K x 16, C and D row-major 16 x 16.
//    The TF32 probe takes FP32 values and converts them with __float_to_tf32
//    (round to nearest, ties away from zero); pass values already in TF32 to
//    keep the conversion out of the answer.
//
// The error-versus-K study runs the course's GEMM kernels (mixed_precision.cu,
// through helpers.launch); only the probes live here.
//
// Requirements: FP16 probes sm_70; BF16 and TF32 sm_80.

#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

using namespace nvcuda;

// ---------------------------------------------------------------- probes: FP16 inputs
extern "C" __global__ void tc_probe_f16_f32(const half* __restrict__ A, const half* __restrict__ B,
                                            const float* __restrict__ C, float* __restrict__ D)
{
    const size_t off = (size_t)blockIdx.x * 256;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, A + off, 16);
    wmma::load_matrix_sync(b, B + off, 16);
    wmma::load_matrix_sync(c, C + off, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + off, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void tc_probe_f16_f16(const half* __restrict__ A, const half* __restrict__ B,
                                            const half* __restrict__ C, half* __restrict__ D)
{
    const size_t off = (size_t)blockIdx.x * 256;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> c;          // FP16 accumulator
    wmma::load_matrix_sync(a, A + off, 16);
    wmma::load_matrix_sync(b, B + off, 16);
    wmma::load_matrix_sync(c, C + off, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + off, c, 16, wmma::mem_row_major);
}

// ---------------------------------------------------------------- probes: BF16 and TF32 (sm_80+)
extern "C" __global__ void tc_probe_bf16_f32(const __nv_bfloat16* __restrict__ A,
                                             const __nv_bfloat16* __restrict__ B,
                                             const float* __restrict__ C, float* __restrict__ D)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    const size_t off = (size_t)blockIdx.x * 256;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, A + off, 16);
    wmma::load_matrix_sync(b, B + off, 16);
    wmma::load_matrix_sync(c, C + off, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + off, c, 16, wmma::mem_row_major);
#endif
}

// TF32: the tile is 16x16x8, so A is 16 x 8 (128 values) and B is 8 x 16.
extern "C" __global__ void tc_probe_tf32_f32(const float* __restrict__ A, const float* __restrict__ B,
                                             const float* __restrict__ C, float* __restrict__ D)
{
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    const size_t off_ab = (size_t)blockIdx.x * 128, off = (size_t)blockIdx.x * 256;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::load_matrix_sync(a, A + off_ab, 8);
    wmma::load_matrix_sync(b, B + off_ab, 16);
    for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
    for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    wmma::load_matrix_sync(c, C + off, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(D + off, c, 16, wmma::mem_row_major);
#endif
}
