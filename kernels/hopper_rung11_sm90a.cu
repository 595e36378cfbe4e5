// hopper_rung11_sm90a.cu -- Lesson 6, rung 11: an L2-aware tile order.
//
// Adds, over rung 10: the scheduler walks the tiles in groups of GROUP_M = 8 tile rows, column
// by column inside a group (tile_of), so the ~132 tiles in flight at one moment span 8 rows of
// A tiles and ~17 columns of B tiles; in plain order, at 8192 (32 columns of tiles), ~4 rows of A
// and all of B. At 4096 (16 columns) the two orders differ little.
// Predicted: x1.02 over rung 10 (more at 8192, where A and B are 128 MiB each and L2 holds 60 MiB
// on the H200, 50 MiB on the H100).
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box 128 rows x 64 k, B's 64 k x 64 columns); C: M x N row-major float. M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")).
// Needs sm_90a; other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors, setmaxnreg

#define HBM 128                               // rows of C per block tile
#define HBN 256                               // columns of C per block tile
#define HBK 64                                // K per stage: 64 halves = 128 bytes = one swizzle row
#define BOX_N 64                              // columns of B per TMA box (128 bytes)
#ifndef HSTAGES
#define HSTAGES 4                             // pipeline stages (a knob)
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40                      // the producer's registers after setmaxnreg.dec (a knob)
#endif
#ifndef GROUP_M
#define GROUP_M 8                             // tile rows per group of the L2-aware order (a knob)
#endif
// The consumers take what the producer gives away: the CTA's pool is the 168 registers per thread that
// __launch_bounds__(384, 1) allows at entry, times 384 threads; each consumer gets half of the rest, in
// steps of 8 (setmaxnreg's unit). 40 -> 232.
#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define B_STAGE_BYTES (HBK * HBN * 2)         // 32 KB of B per stage: 4 boxes
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] + empty[] fit 128 bytes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes multiples of 8 from 24 to 256");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// How many of a tile's 4 boxes of B start inside B (tn: the tile's column): TMA fills the part of a
// box beyond N with zeros; boxes that start beyond N are not loaded (their columns of C are not written).
__device__ __forceinline__ int b_boxes_in(int tn, int N)
{
    return min(HBN / BOX_N, (N - tn * HBN + BOX_N - 1) / BOX_N);
}

// The tile scheduler: work unit t -> tile (tm, tn), walking GROUP_M tile rows column by column, so
// that the tiles computed at one moment share fewer, more reused rows of A and columns of B.
__device__ __forceinline__ void tile_of(int t, int tiles_m, int tiles_n, int& tm, int& tn)
{
    const int per_group = GROUP_M * tiles_n;                   // tiles per group of GROUP_M rows
    const int first = (t / per_group) * GROUP_M;               // the group's first tile row
    const int rows = min(tiles_m - first, GROUP_M);            // the last group may be shorter
    const int in = t % per_group;
    tm = first + in % rows;
    tn = in / rows;
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

// Grid: one CTA per SM; 384 threads; dynamic shared memory HSTAGES x 48 KB + 1152.
extern "C" __global__ void __launch_bounds__(384, 1) hopper_grouped(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, float* __restrict__ C,
    int M, int N, int K);
extern "C" __global__ void hopper_grouped(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 4 boxes of (64 k x 64 columns)
    u64* full = reinterpret_cast<u64*>(smem + HSTAGES * STAGE_BYTES);
    u64* empty = full + HSTAGES;                               // full[s]: stage s loaded; empty[s]: stage s free

    const int wg = threadIdx.x / 128;                          // 0: producer; 1, 2: consumers
    const int tiles_m = (M + HBM - 1) / HBM, tiles_n = (N + HBN - 1) / HBN, ktiles = (K + HBK - 1) / HBK;
    const int units = tiles_m * tiles_n;                       // this CTA computes t = blockIdx.x, + gridDim.x, ...

    if (threadIdx.x == 0) {
        for (int s = 0; s < HSTAGES; ++s) {
            mbar_init(&full[s], 1);                            // the producer's arrive (+ TMA's bytes)
            mbar_init(&empty[s], 8);                           // one arrive per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {
        // ------------------------------------------------------------ producer warpgroup
        // [region: producer]
        regs_dec<PRODUCER_REGS>();                             // it needs few registers: give them away
        if (threadIdx.x == 0) {
            int s = 0;
            u32 phase = 0;
            for (int t = blockIdx.x; t < units; t += gridDim.x) {
                int tm, tn;
                tile_of(t, tiles_m, tiles_n, tm, tn);
                const int nb = b_boxes_in(tn, N);
                const u32 bytes = A_STAGE_BYTES + nb * B_BOX_BYTES;
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&empty[s], phase ^ 1);           // every consumer warp freed stage s
                    mbar_expect_tx(&full[s], bytes);           // the bytes TMA will deliver
                    tma_load(sA + s * A_STAGE_BYTES, &tmA, &full[s], kt * HBK, tm * HBM);
                    unsigned char* b = sB + s * B_STAGE_BYTES;
#pragma unroll
                    for (int c = 0; c < HBN / BOX_N; ++c)
                        if (c < nb) tma_load(b + c * B_BOX_BYTES, &tmB, &full[s], tn * HBN + c * BOX_N, kt * HBK);
                    if (++s == HSTAGES) { s = 0; phase ^= 1; }
                }
            }
        }
        // [end region: producer]
    } else {
        // ------------------------------------------------------------ consumer warpgroups
        // [region: consumer]
        regs_inc<CONSUMER_REGS>();                             // the accumulators + addresses
        const int cw = wg - 1;                                 // consumer 0 or 1: rows 64 cw .. 64 cw + 63
        const int lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        float d[128];
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);                    // TMA has delivered this stage
                wgmma_fence();
                mma_ktile(d, sA + s * A_STAGE_BYTES + cw * 64 * 128, sB + s * B_STAGE_BYTES);
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);   // ... so its stage can be refilled
                prev = s;
                if (++s == HSTAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[prev]);
            store_slice(d, C, M, N, tm * HBM + cw * 64, tn * HBN);
        }
        // [end region: consumer]
    }
#endif
}
