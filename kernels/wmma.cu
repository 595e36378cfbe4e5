// wmma.cu -- Lesson 2: Tensor Cores through the WMMA API.
//
// What it teaches: the smallest complete Tensor Core GEMM. One warp (32
// threads) owns one 16x16 tile of C. It walks K in steps of 16: load a 16x16
// tile of A and of B from global memory straight into "fragments" (registers
// spread over the warp), issue one mma_sync (16*16*16 = 4096 multiply-adds,
// 8192 FLOPs), and finally store the 16x16 accumulator.
//
// Why it is still far from cuBLAS: every K step reloads A and B from global
// memory; nothing is staged in shared memory, so the Tensor Cores wait on loads.
// Lesson 5 fixes this one rung at a time.
//
// Requirements: sm_70 or newer; M, N, K multiples of 16 (the helpers pad other
// sizes with zeros); A, B row-major half; tile pointers 32-byte aligned (true
// when the matrix base is aligned and the leading dimension is a multiple of 16).
//
// Launch (the seed article's mapping): block = dim3(32, 8): 8 warps stacked in
// M, each warp one 16x16 tile. grid = dim3(N / 16, ceil(M / (16 * 8))).

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

extern "C" __global__ void wmma_gemm_naive(const half* __restrict__ A,
                                           const half* __restrict__ B,
                                           float* __restrict__ C,
                                           int M, int N, int K)
{
    // threadIdx.x is the lane (0..31); threadIdx.y picks the warp in the block.
    const int tile_row = (blockIdx.y * blockDim.y + threadIdx.y) * 16;  // first row of this warp's C tile
    const int tile_col = blockIdx.x * 16;                               // first column
    if (tile_row >= M || tile_col >= N) return;   // the whole warp leaves together

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 16) {
        // ldm is the leading dimension in elements: K for row-major A, N for B.
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);          // acc = a * b + acc
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
}
