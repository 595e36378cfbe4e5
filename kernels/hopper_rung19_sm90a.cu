// hopper_rung19_sm90a.cu -- Lesson 6, rung 19: one consumer warpgroup on the skinny tile.
//
// Adds, over rung 17: the 64 x 128 tile is computed by ONE consumer warpgroup (wgmma m64n128k16, 64 accumulators
// per thread) instead of two that split its columns; 256 threads (the producer warpgroup and the consumer), no
// setmaxnreg. Each stage is freed by 4 warps of each CTA, not 8, once the one group that read it is done. This is
// how cuBLAS's kernel at M = 128 runs (one warpgroup issues all 8 m64n64k16 of a stage), and one warpgroup of
// m64n128k16 with one group in flight keeps the Tensor Cores at their peak (measured by lab/probes/wgmma_rate.py).
// Arithmetic: rung 17's (one FP32 accumulator per output walking K in order; FP16 C).
// Predicted: x1.0 over rung 17 at 4096^3 (the same bytes per FLOP); at M = 128, N = K = 8192 (predicted
// separately), x1.10 over rung 17 (about 0.81x cuBLAS: half the releases and of the issue work per stage; the
// loads alone already run at cuBLAS's speed).
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box 64 rows x 64 k, B's 64 k x 64 columns); C: M x N row-major half, also a
// tensor map (box 64 rows x 64 columns, 128-byte swizzle). M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")), then
// rounded to FP16 to nearest.
// The epilogue is rung 14's (the accumulator layout, the swizzle, stmatrix: its store_slice_tma), written out
// in the kernel body.
// Needs sm_90a; other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors, setmaxnreg

#define HBM 64                                // rows of C per block tile
#define HBN 128                               // columns of C per block tile
#define HBK 64                                // K per stage: 64 halves = 128 bytes = one swizzle row
#define BOX_N 64                              // columns of B per TMA box (128 bytes)
#ifndef SKINNY_STAGES
#define SKINNY_STAGES 8                       // pipeline stages of 24 KB (a knob)
#endif
#define HSTAGES SKINNY_STAGES                 // (named HSTAGES below, as in rungs 8-16)
#ifndef SKINNY_CLUSTER
#define SKINNY_CLUSTER 2                      // CTAs per cluster, along M, sharing B (a knob: 1 or 2, B has 2 boxes)
#endif
#define CLUSTER_M SKINNY_CLUSTER               // (named CLUSTER_M below, as in rungs 12-16)
#ifndef SKINNY_WAIT
#define SKINNY_WAIT 0                         // how a thread waits for a stage (a knob: hopper_primitives.cuh, 0 1 2)
#endif
#define GROUP_M 8                             // tile rows per group of the L2-aware order
#define A_STAGE_BYTES (HBM * HBK * 2)         // 8 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define B_STAGE_BYTES (HBK * HBN * 2)         // 16 KB of B per stage: 2 boxes
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define EPI_HCOLS 64                          // FP16 columns per TMA store box (128 bytes)
#define EPI_BOX_BYTES (64 * EPI_HCOLS * 2)    // one box of C: 64 rows x 64 halves = 8 KB
#define EPI_BYTES (2 * 2 * EPI_BOX_BYTES)     // room for 2 consumer warpgroups x 2 buffers (one consumer uses 2)
static_assert(SKINNY_STAGES >= 2 && 2 * SKINNY_STAGES * 8 <= 128, "SKINNY_STAGES: 2 or more, full[] + empty[] fit 128 bytes");
static_assert(SKINNY_CLUSTER == 1 || SKINNY_CLUSTER == 2, "SKINNY_CLUSTER must divide the 2 boxes of B");

// __cluster_dims__ exists from sm_90 on; `make kernels-check` also builds this file for sm_80
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#define CLUSTER_DIMS
#else
#define CLUSTER_DIMS __cluster_dims__(SKINNY_CLUSTER, 1, 1)
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// How many of a tile's 2 boxes of B start inside B (tn: the tile's column): TMA fills the part of a
// box beyond N with zeros; boxes that start beyond N are not loaded (their columns of C are not written).
__device__ __forceinline__ int b_boxes_in(int tn, int N)
{
    return min(HBN / BOX_N, (N - tn * HBN + BOX_N - 1) / BOX_N);
}

// The tile scheduler: work unit t -> tile (tm, tn). A unit is a column of CLUSTER_M tiles (the CTAs of
// a cluster take tiles tm = CLUSTER_M um + rank, which share B); the units are walked GROUP_M tile rows
// at a time, column by column.
__device__ __forceinline__ void tile_of(int t, int units_m, int tiles_n, u32 rank, int& tm, int& tn)
{
    const int group = GROUP_M / CLUSTER_M;                     // unit rows per group
    const int per_group = group * tiles_n;
    const int first = (t / per_group) * group;                 // the group's first unit row
    const int rows = min(units_m - first, group);              // the last group may be shorter
    const int in = t % per_group;
    tm = (first + in % rows) * CLUSTER_M + (int)rank;
    tn = in / rows;
}

// One K-tile (64 deep) of the 64 x 128 tile: four wgmma k-steps of 16, in K order.
// a: the tile's 64 rows of the A stage; b: the first box of the B stage.
__device__ __forceinline__ void mma_ktile(float (&d)[64], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        wgmma_m64n128k16<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
}

#endif

// Grid: one CTA per SM, in clusters of SKINNY_CLUSTER; 256 threads; dynamic shared memory SKINNY_STAGES x 24 KB
// + 32 KB + 1152.
extern "C" __global__ void __launch_bounds__(256, 1) CLUSTER_DIMS hopper_skinny_one(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_skinny_one(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (64 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 2 boxes of (64 k x 64 columns)
    float* sC = reinterpret_cast<float*>(sB + HSTAGES * B_STAGE_BYTES);   // 2 x 2 boxes of C, 8 KB each
    u64* full = reinterpret_cast<u64*>(smem + HSTAGES * STAGE_BYTES + EPI_BYTES);
    u64* empty = full + HSTAGES;                               // full[s]: stage s loaded; empty[s]: stage s free

    const int wg = threadIdx.x / 128;                          // 0: producer; 1: the consumer
    const u32 rank = CLUSTER_M > 1 ? cluster_rank() : 0;       // this CTA's place in its cluster
    const int tiles_m = (M + HBM - 1) / HBM, tiles_n = (N + HBN - 1) / HBN, ktiles = (K + HBK - 1) / HBK;
    const int units_m = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, units = units_m * tiles_n;
    // this cluster's units: first, + step, ...
    const int first = CLUSTER_M > 1 ? (int)cluster_id() : (int)blockIdx.x;
    const int step = CLUSTER_M > 1 ? (int)cluster_count() : (int)gridDim.x;

    if (threadIdx.x == 0) {
        for (int s = 0; s < HSTAGES; ++s) {
            mbar_init(&full[s], 1);                            // the producer's arrive (+ TMA's bytes)
            mbar_init(&empty[s], 4 * CLUSTER_M);               // one arrive per consumer warp, of every CTA
        }
        mbar_init_fence();
    }
    if (CLUSTER_M > 1) {
        if (cluster_size() != CLUSTER_M) __trap();             // launched without its cluster: stop loudly
        cluster_sync();                                        // the peer's barriers exist before we touch them
    } else {
        __syncthreads();
    }

    if (wg == 0) {
        // ------------------------------------------------------------ producer warpgroup
        // [region: producer]
        if (threadIdx.x == 0) {
            int s = 0;
            u32 phase = 0;
            for (int t = first; t < units; t += step) {
                int tm, tn;
                tile_of(t, units_m, tiles_n, rank, tm, tn);
                // a cluster's second tile can lie below M (M has an odd number of tiles): no A then
                const bool a_in = tm * HBM < M;
                const int nb = b_boxes_in(tn, N);
                const u32 bytes = (a_in ? A_STAGE_BYTES : 0) + nb * B_BOX_BYTES;
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait<SKINNY_WAIT>(&empty[s], phase ^ 1);   // every consumer warp (of every CTA) freed stage s
                    mbar_expect_tx(&full[s], bytes);           // A, and all of B (half of it from the peer)
                    if (a_in) tma_load(sA + s * A_STAGE_BYTES, &tmA, &full[s], kt * HBK, tm * HBM);
                    unsigned char* b = sB + s * B_STAGE_BYTES;
                    if (CLUSTER_M == 1) {                      // both boxes
#pragma unroll
                        for (int c = 0; c < HBN / BOX_N; ++c)
                            if (c < nb) tma_load(b + c * B_BOX_BYTES, &tmB, &full[s], tn * HBN + c * BOX_N, kt * HBK);
                    } else {
                        constexpr int per = HBN / BOX_N / CLUSTER_M;   // my share of the boxes, to every CTA
#pragma unroll
                        for (int c = (int)rank * per; c < ((int)rank + 1) * per; ++c)
                            if (c < nb)
                                tma_load_multicast(b + c * B_BOX_BYTES, &tmB, &full[s], tn * HBN + c * BOX_N, kt * HBK,
                                                   (unsigned short)((1u << CLUSTER_M) - 1));
                    }
                    if (++s == HSTAGES) { s = 0; phase ^= 1; }
                }
            }
        }
        // [end region: producer]
    } else {
        // ------------------------------------------------------------ the consumer warpgroup
        // [region: consumer]
        // (256 threads: registers enough without setmaxnreg)
        const int cw = wg - 1, c0 = cw * 128;                  // consumer 0: all 128 columns
        const int lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        float d[64];
        for (int t = first; t < units; t += step) {
            int tm, tn;
            tile_of(t, units_m, tiles_n, rank, tm, tn);
#pragma unroll
            for (int i = 0; i < 64; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait<SKINNY_WAIT>(&full[s], phase);       // TMA has delivered this stage
                wgmma_fence();
                mma_ktile(d, sA + s * A_STAGE_BYTES, sB + s * B_STAGE_BYTES + c0 / BOX_N * B_BOX_BYTES);
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0 && lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);   // ... in every CTA
                prev = s;
                if (++s == HSTAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);
            // [region: epilogue]
            const int row = tm * HBM;                          // the tile's first row of C
            if (row < M) {                                     // (a tile below M has nothing to store)
                const int warp = (threadIdx.x % 128) / 32;
                const bool leader = threadIdx.x % 128 == 0;
                float* mine = sC + cw * 2 * (EPI_BOX_BYTES / 4);   // this consumer's two buffers
#pragma unroll
                for (int box = 0; box < 128 / EPI_HCOLS; ++box) {
                    float* buf = mine + (box & 1) * (EPI_BOX_BYTES / 4);   // the two buffers in turn
                    const int m = lane / 8, r = warp * 16 + (m & 1) * 8 + lane % 8;   // the box row this lane addresses
#pragma unroll
                    for (int p = 0; p < EPI_HCOLS / 16; ++p) {
                        const int j = box * (EPI_HCOLS / 8) + 2 * p;   // 8-column block of the slice
                        const int q = 2 * p + (m >> 1);        // this lane's 16-byte chunk of the box row
                        stmatrix_x4(reinterpret_cast<unsigned char*>(buf) + r * 128 + ((q ^ (r & 7)) * 16),
                                    pack_half2(d[4 * j], d[4 * j + 1]), pack_half2(d[4 * j + 2], d[4 * j + 3]),
                                    pack_half2(d[4 * j + 4], d[4 * j + 5]), pack_half2(d[4 * j + 6], d[4 * j + 7]));
                    }
                    fence_proxy_async();                       // my stores, visible to the copy engine
                    if (leader) bulk_wait_read0();             // the previous box's store has read its buffer
                    warpgroup_bar(1 + cw);                     // all 128 threads wrote this box
                    if (leader && tn * HBN + c0 + box * EPI_HCOLS < N) {   // (a box wholly right of C is not stored)
                        tma_store(&tmC, buf, tn * HBN + c0 + box * EPI_HCOLS, row);
                        bulk_commit();
                    }
                }
            }
            // [end region: epilogue]
        }
        if (threadIdx.x % 128 == 0) bulk_wait0();              // the stores are done before the CTA leaves
        // [end region: consumer]
    }
    if (CLUSTER_M > 1) cluster_sync();                         // no CTA leaves while its peer may write to it
#endif
}
