// wmma_lesson.cu -- Lesson 2 (Tensor Cores and the WMMA API): probes and variants.
//
// What it teaches, kernel by kernel:
//  * wmma_fragment_probe: which lane of the warp holds which matrix element. WMMA
//    fragments are opaque: the CUDA Programming Guide leaves the mapping of
//    elements to lanes unspecified. We load matrices whose values encode their own
//    (row, col) index, and read each lane's fragment elements back out; for the
//    accumulator we write each lane's id into the elements it holds and store.
//  * wmma_gemm_bcol: the naive kernel with B stored column-major (as B^T row-major,
//    N x K): only the fragment's layout tag, the pointer arithmetic and ldm change.
//  * wmma_gemm_2x2: each warp computes a 32x32 tile of C from 2x2 accumulator
//    fragments; each loaded A and B fragment is used twice, so global loads per
//    FLOP halve compared with wmma_gemm_naive.
//
// Requirements: sm_70 or newer; half inputs; tile pointers 32-byte aligned and
// ldm a multiple of 8 halves (16 bytes). Launch configurations are in
// helpers/experiments/wmma.py.

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

// One warp (launch with 32 threads, one block).
//   A, B, Bc: 16x16 half matrices. A[r*16+c] = r*16+c (row-major, index encoding);
//   B the same; Bc is B stored column-major: Bc[c*16+r] = r*16+c.
//   a_out, b_out, bc_out: [32][64] floats, lane l writes its fragment element i at
//   [l*64 + i] (every other entry stays as the caller filled it).
//   acc_out: 16x16 floats, stored from an accumulator whose element i in lane l is
//   l*64 + i, so element (r, c) of the store says who held it.
//   counts: num_elements of the a, b and accumulator fragments.
extern "C" __global__ void wmma_fragment_probe(const half* __restrict__ A,
                                               const half* __restrict__ B,
                                               const half* __restrict__ Bc,
                                               float* __restrict__ a_out,
                                               float* __restrict__ b_out,
                                               float* __restrict__ bc_out,
                                               float* __restrict__ acc_out,
                                               int* __restrict__ counts)
{
    const int lane = threadIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> bc;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;

    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(bc, Bc, 16);
    for (int i = 0; i < a.num_elements; i++)  a_out[lane * 64 + i] = __half2float(a.x[i]);
    for (int i = 0; i < b.num_elements; i++)  b_out[lane * 64 + i] = __half2float(b.x[i]);
    for (int i = 0; i < bc.num_elements; i++) bc_out[lane * 64 + i] = __half2float(bc.x[i]);

    for (int i = 0; i < acc.num_elements; i++) acc.x[i] = (float)(lane * 64 + i);
    wmma::store_matrix_sync(acc_out, acc, 16, wmma::mem_row_major);
    if (lane == 0) {
        counts[0] = a.num_elements;
        counts[1] = b.num_elements;
        counts[2] = acc.num_elements;
    }
}

// C (M x N, float, row-major) = A (M x K, half, row-major) * B, where B is K x N but
// stored column-major: element (k, n) at Bt[n * K + k] (i.e. Bt = B^T, row-major N x K).
// Same mapping as wmma_gemm_naive: block dim3(32, 8), grid (N/16, ceil(M/128)).
extern "C" __global__ void wmma_gemm_bcol(const half* __restrict__ A,
                                          const half* __restrict__ Bt,
                                          float* __restrict__ C,
                                          int M, int N, int K)
{
    const int tile_row = (blockIdx.y * blockDim.y + threadIdx.y) * 16;
    const int tile_col = blockIdx.x * 16;
    if (tile_row >= M || tile_col >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tile_row * K + k, K);
        // column n of B starts at Bt + n*K; the tile's first column is tile_col, first row k
        wmma::load_matrix_sync(b, Bt + (size_t)tile_col * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + (size_t)tile_row * N + tile_col, acc, N, wmma::mem_row_major);
}

// Each warp: a 32x32 tile of C as 2x2 accumulator fragments. Per K step it loads two A
// fragments (rows +0, +16) and two B fragments (columns +0, +16) and issues four
// mma_sync: 4 loads for 4 MMAs instead of 8. M and N multiples of 32, K of 16.
// Launch: block dim3(32, 4) (4 warps stacked in M: 128 rows x 32 columns per block),
// grid (N/32, ceil(M/128)).
extern "C" __global__ void wmma_gemm_2x2(const half* __restrict__ A,
                                         const half* __restrict__ B,
                                         float* __restrict__ C,
                                         int M, int N, int K)
{
    const int tile_row = (blockIdx.y * blockDim.y + threadIdx.y) * 32;
    const int tile_col = blockIdx.x * 32;
    if (tile_row >= M || tile_col >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[2];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k = 0; k < K; k += 16) {
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(a[i], A + (size_t)(tile_row + 16 * i) * K + k, K);
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(b[j], B + (size_t)k * N + tile_col + 16 * j, N);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(C + (size_t)(tile_row + 16 * i) * N + tile_col + 16 * j,
                                    acc[i][j], N, wmma::mem_row_major);
}
