// fp32_variants.cu -- Lesson 1: variants of the FP32 CUDA-core GEMM.
//
// gemm_fp32_tiled: the worked solution of lesson 1's exercise. Same contract
// as gemm_fp32_kernel (row-major A M x K, B K x N, C M x N, FP32, any sizes),
// but each block first copies a TILE x TILE piece of A and of B into shared
// memory, and every thread then reads its operands from there.
//
// What it teaches: data reuse on chip. A block of TILE x TILE threads needs
// TILE rows of A and TILE columns of B; the naive kernel has every thread fetch
// its own copy of them through the cache hierarchy (two global loads per FMA),
// this one has the block fetch each element once per tile (two global loads
// per TILE FMAs). Arithmetic intensity from global memory rises from 1/4 to
// TILE/4 FLOP per byte.
//
// It adds the products in the same order, k = 0, 1, ..., K-1, with one FMA
// each, and pads the edge tiles with zeros (fma(0, 0, acc) == acc), so its
// output is bit-for-bit that of gemm_fp32_kernel.
//
// Launch: block = dim3(TILE, TILE), grid = dim3(ceil(N / TILE), ceil(M / TILE)).
// TILE defaults to 16; compile with -DTILE=32 for 32 x 32 tiles (1024 threads).

#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void gemm_fp32_tiled(const float* __restrict__ A,
                                           const float* __restrict__ B,
                                           float* __restrict__ C,
                                           int M, int N, int K)
{
    __shared__ float As[TILE][TILE];   // As[r][k]: row (block row + r) of A, column (t + k)
    __shared__ float Bs[TILE][TILE];   // Bs[k][c]: row (t + k) of B, column (block col + c)

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        // each thread copies one element of each tile; zeros outside the matrices
        As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.0f;
        __syncthreads();                       // the tiles are complete
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();                       // everyone is done before they are overwritten
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
