// hopper_rung08_sm90a.cu -- Lesson 6, rung 8: B read as it is stored.
//
// Adds, over rung 7 (kernels/ladder_sm90a.cu): no transpose of B. B stays K x N row-major ("MN-major":
// consecutive n are adjacent); TMA moves it in 4 boxes of 64 k-rows x 64 columns per stage, and wgmma
// reads it with its transpose bit set (allowed for 16-bit inputs) through an MN-major descriptor. The
// boxes also replace the launcher's zero padding: TMA fills what lies outside A and B with zeros.
// Everything else is rung 7: 256 threads = 2 warpgroups of 64 x 256, 4 stages, every K-tile waits for
// its wgmmas (wait_group 0) and a __syncthreads before thread 0 refills the stage.
// Predicted: x1.3 over rung 7 timed with its transpose (the transpose was a third of rung 7's time at
// 4096); no gain over rung 7's kernel alone.
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box 128 rows x 64 k, B's 64 k x 64 columns); C: M x N row-major float. M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")).
// Needs sm_90a; other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors

#define HBM 128                               // rows of C per block tile
#define HBN 256                               // columns of C per block tile
#define HBK 64                                // K per stage: 64 halves = 128 bytes = one swizzle row
#define BOX_N 64                              // columns of B per TMA box (128 bytes)
#ifndef HSTAGES
#define HSTAGES 4                             // pipeline stages (a knob: helpers.try_kernel(8, STAGES=2))
#endif
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define B_STAGE_BYTES (HBK * HBN * 2)         // 32 KB of B per stage: 4 boxes
static_assert(HSTAGES >= 2 && HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] fits 128 bytes");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// How many of a tile's 4 boxes of B start inside B (tn: the tile's column): TMA fills the part of a
// box beyond N with zeros; boxes that start beyond N are not loaded (their columns of C are not written).
__device__ __forceinline__ int b_boxes_in(int tn, int N)
{
    return min(HBN / BOX_N, (N - tn * HBN + BOX_N - 1) / BOX_N);
}

// One K-tile (64 deep) of a warpgroup's 64 x 256 slice: four wgmma k-steps of 16, in K order.
// a: the slice's 64 rows of the A stage; b: the first box of the B stage.
__device__ __forceinline__ void mma_ktile(float (&d)[128], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        wgmma_m64n256k16<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
}

// Accumulator layout (PTX ISA, wgmma .m64nNk16 D fragments): warp w of the warpgroup holds rows
// 16w..16w+15 of the 64 x 256 slice; lane (g = lane/4, t = lane%4) holds, for each 8-column
// block j, d[4j], d[4j+1] at (row g, columns 8j+2t, +1) and d[4j+2], d[4j+3] at (row g+8, same).
// Written straight from the registers, only inside C (N is a multiple of 8, so c < N covers c+1).
__device__ __forceinline__ void store_slice(const float (&d)[128], float* C, int M, int N, int row0, int col0)
{
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < 128 / 4; ++j) {
        const int c = col0 + j * 8 + 2 * (lane % 4);
        if (c < N) {
            if (r < M) store2(&C[(size_t)r * N + c], d[4 * j], d[4 * j + 1]);
            if (r + 8 < M) store2(&C[(size_t)(r + 8) * N + c], d[4 * j + 2], d[4 * j + 3]);
        }
    }
}
#endif

// Grid: (tiles along N, tiles along M); 256 threads; dynamic shared memory HSTAGES x 48 KB + 1152.
extern "C" __global__ void __launch_bounds__(256, 1) hopper_b_rowmajor(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_b_rowmajor(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 4 boxes of (64 k x 64 columns)
    u64* full = reinterpret_cast<u64*>(sB + HSTAGES * B_STAGE_BYTES);

    const int tid = threadIdx.x, wg = tid / 128;               // warpgroup wg: rows 64 wg .. 64 wg + 63
    const int row0 = blockIdx.y * HBM, col0 = blockIdx.x * HBN;
    const int ktiles = (K + HBK - 1) / HBK;

    if (tid == 0) {
        for (int s = 0; s < HSTAGES; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    const int nb = b_boxes_in(blockIdx.x, N);                  // boxes of B that start inside B
    auto load_stage = [&](int s, int kt) {                     // thread 0: ask TMA for K-tile kt
        mbar_expect_tx(&full[s], A_STAGE_BYTES + nb * B_BOX_BYTES);   // the bytes TMA will deliver
        tma_load(sA + s * A_STAGE_BYTES, &tmA, &full[s], kt * HBK, row0);
#pragma unroll
        for (int c = 0; c < HBN / BOX_N; ++c)
            if (c < nb)
                tma_load(sB + s * B_STAGE_BYTES + c * B_BOX_BYTES, &tmB, &full[s], col0 + c * BOX_N, kt * HBK);
    };
    if (tid == 0)
        for (int s = 0; s < HSTAGES && s < ktiles; ++s) load_stage(s, s);

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % HSTAGES;
        mbar_wait(&full[s], (kt / HSTAGES) & 1);               // TMA has delivered K-tile kt
        wgmma_fence();
        mma_ktile(d, sA + s * A_STAGE_BYTES + wg * 64 * 128, sB + s * B_STAGE_BYTES);
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();                                        // both warpgroups are done with stage s
        if (tid == 0 && kt + HSTAGES < ktiles) load_stage(s, kt + HSTAGES);
    }
    store_slice(d, C, M, N, row0 + wg * 64, col0);
#endif
}
