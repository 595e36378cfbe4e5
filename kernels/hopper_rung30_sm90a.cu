// hopper_rung30_sm90a.cu -- Lesson 6, rung 30: rung 29 writing FP32 C, chosen per shape as rung 29.
//
// Adds, over rung 26 where its own tile is built: rung 29's C^T tile and mainloop; the epilogue writes single floats
// (no stmatrix for 32-bit values) into boxes of 16 rows x 32 columns, two per step, in the same 16 KB. Elsewhere the
// launcher builds rung 26's kernel (helpers.launch.orientation_build).
// Predicted: x1.0 over rung 26 where it builds rung 26's kernel, x1.05 at 5000^3 (the same waves and mainloop as
// rung 29; both FP32 epilogues write twice the bytes of the FP16 ones).
// CT_M, a knob: the tile's rows, as rung 29's.
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box CT_M rows x 64 k, B's 64 k x 64 columns); C: M x N row-major float, also a
// tensor map (box 16 rows x 32 columns, 128-byte swizzle). M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")).
// Needs sm_90a; other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors, setmaxnreg
#include "wgmma_widths.cuh"                   // wgmma for the widths CT_M gives (generated)

#ifndef CT_M
#define CT_M 160                              // rows of C per block tile (a knob)
#endif
#define HBM CT_M
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
#define CLUSTER_M 2                           // CTAs per cluster, along M, sharing B
// The consumers take what the producer gives away: the CTA's pool is the 168 registers per thread that
// __launch_bounds__(384, 1) allows at entry, times 384 threads; each consumer gets half of the rest, in
// steps of 8 (setmaxnreg's unit). 40 -> 232.
#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)
#define A_STAGE_BYTES (HBM * HBK * 2)         // 20 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define B_STAGE_BYTES (HBK * HBN * 2)         // 32 KB of B per stage: 4 boxes
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define EPI_ROWS 16                           // rows of C per step: 2 TMA store boxes of 16 x 32 FP32 (4 KB)
#define EPI_BOX_BYTES (EPI_ROWS * 2 * 128)
#define EPI_BYTES (2 * 2 * EPI_BOX_BYTES)     // 2 consumer warpgroups x 2 buffers of 4 KB
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] + empty[] fit 128 bytes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes multiples of 8 from 24 to 256");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M: a multiple of the cluster");
static_assert(CT_M % 32 == 0 && CT_M >= 128 && CT_M <= 192, "CT_M: a multiple of 32 from 128 to 192");
static_assert(HSTAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + EPI_BYTES + 1024 + 128 <= 227 * 1024,
              "CT_M: HSTAGES stages of CT_M rows of A and 256 columns of B, beside the 16 KB epilogue");

// __cluster_dims__ exists from sm_90 on; `make kernels-check` also builds this file for sm_80
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#define CLUSTER_DIMS
#else
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// How many of a tile's 4 boxes of B start inside B (tn: the tile's column): TMA fills the part of a
// box beyond N with zeros; boxes that start beyond N are not loaded (their columns of C are not written).
__device__ __forceinline__ int b_boxes_in(int tn, int N)
{
    return min((HBN + BOX_N - 1) / BOX_N, (N - tn * HBN + BOX_N - 1) / BOX_N);
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

// One K-tile of a 64-column slice of C, computed as its transpose D' = B^T A^T (64 x HBM): wgmma's A is the slice's
// box of B (64 k-rows x 64 columns, read MN-major: the transpose bit of A), its B is the tile's HBM rows of A (K-major,
// HBM = 2 NACC). b: the box in this stage; a: the A stage.
template <int NACC>
__device__ __forceinline__ void mma_ktile_ct(float (&d)[NACC], const unsigned char* b, const unsigned char* a)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        Wgmma<2 * NACC>::template mma<0, 1>(d, desc_mnmajor(b + ks * 16 * 128), desc_kmajor(a + ks * 32));
}

#endif

// Grid: one CTA per SM, in clusters of 2; 384 threads; dynamic shared memory HSTAGES x (CT_M x 128 + 32 KB) + 16 KB
// + 1152.
extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_DIMS hopper_ct_tile_f32c(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_ct_tile_f32c(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, float* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (CT_M rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 4 boxes of (64 k x 64 columns)
    float* sC = reinterpret_cast<float*>(sB + HSTAGES * B_STAGE_BYTES);   // 2 x 2 boxes of C, 4 KB each
    u64* full = reinterpret_cast<u64*>(smem + HSTAGES * STAGE_BYTES + EPI_BYTES);
    u64* empty = full + HSTAGES;                               // full[s]: stage s loaded; empty[s]: stage s free

    const int wg = threadIdx.x / 128;                          // 0: producer; 1, 2: consumers
    const u32 rank = cluster_rank();                           // this CTA's place in its cluster
    const int tiles_m = (M + HBM - 1) / HBM, tiles_n = (N + HBN - 1) / HBN, ktiles = (K + HBK - 1) / HBK;
    const int units_m = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, units = units_m * tiles_n;
    const int first = (int)cluster_id(), step = (int)cluster_count();   // this cluster's units: first, + step, ...

    if (threadIdx.x == 0) {
        for (int s = 0; s < HSTAGES; ++s) {
            mbar_init(&full[s], 1);                            // the producer's arrive (+ TMA's bytes)
            mbar_init(&empty[s], 8 * CLUSTER_M);               // one arrive per consumer warp, of every CTA
        }
        mbar_init_fence();
    }
    if (cluster_size() != CLUSTER_M) __trap();                 // launched without its cluster: stop loudly
    cluster_sync();                                            // the peer's barriers exist before we touch them

    if (wg == 0) {
        // ------------------------------------------------------------ producer warpgroup
        // [region: producer]
        regs_dec<PRODUCER_REGS>();                             // it needs few registers: give them away
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
                    mbar_wait(&empty[s], phase ^ 1);           // every consumer warp (of every CTA) freed stage s
                    mbar_expect_tx(&full[s], bytes);           // A, and all of B (half of it from the peer)
                    if (a_in) tma_load(sA + s * A_STAGE_BYTES, &tmA, &full[s], kt * HBK, tm * HBM);
                    unsigned char* b = sB + s * B_STAGE_BYTES;
                    constexpr int per = HBN / BOX_N / CLUSTER_M;   // my share of the boxes, to every CTA
#pragma unroll
                    for (int c = (int)rank * per; c < ((int)rank + 1) * per; ++c)
                        if (c < nb)
                            tma_load_multicast(b + c * B_BOX_BYTES, &tmB, &full[s], tn * HBN + c * BOX_N, kt * HBK,
                                               (unsigned short)((1u << CLUSTER_M) - 1));
                    if (++s == HSTAGES) { s = 0; phase ^= 1; }
                }
            }
        }
        // [end region: producer]
    } else {
        // ------------------------------------------------------------ consumer warpgroups
        // [region: consumer]
        regs_inc<CONSUMER_REGS>();                             // the accumulators + addresses
        const int cw = wg - 1, c0 = cw * 128;                  // consumer 0 or 1: columns c0 .. c0 + 127, all rows
        const int lane = threadIdx.x % 32;
        int s = 0, ebox = 0;
        u32 phase = 0;
        float acc[2][HBM / 2];                                 // its two 64-column slices, as D' (64 x HBM each)
        for (int t = first; t < units; t += step) {
            int tm, tn;
            tile_of(t, units_m, tiles_n, rank, tm, tn);
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int i = 0; i < HBM / 2; ++i) acc[h][i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);                    // TMA has delivered this stage
                wgmma_fence();
#pragma unroll
                for (int h = 0; h < 2; ++h)                    // slice h is box c0 / 64 + h of B, in one group
                    mma_ktile_ct(acc[h], sB + s * B_STAGE_BYTES + (c0 / BOX_N + h) * B_BOX_BYTES, sA + s * A_STAGE_BYTES);
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0 && lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);   // ... in every CTA
                prev = s;
                if (++s == HSTAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);
            // [region: epilogue]
            // Slice sub is C's columns col .. col + 63 (D' rows), all HBM rows of the tile (D' columns), stored in
            // steps of 16 rows through two 4 KB buffers per consumer, each step two boxes of 16 rows x 32 columns:
            // warps 0-1 hold the slice's columns 0-31 (the first box), warps 2-3 columns 32-63. Thread (g, t) of warp
            // w holds D' rows 16 w + g (+8) at D' columns 8 j + 2 t, +1: C's rows 8 j + 2 t, +1 at one column each,
            // written as single floats with the 128-byte swizzle (16-byte chunk q of row r at chunk q ^ (r % 8); 4 rows
            // x 8 columns per store: no bank conflict).
#pragma unroll
            for (int sub = 0; sub < 2; ++sub) {
                const float (&e)[HBM / 2] = acc[sub];
                const int warp = (threadIdx.x % 128) / 32, col = tn * HBN + c0 + 64 * sub;
                const bool leader = threadIdx.x % 128 == 0;
                unsigned char* mine = reinterpret_cast<unsigned char*>(sC) + cw * 2 * EPI_BOX_BYTES;
#pragma unroll
                for (int b = 0; b < HBM / EPI_ROWS; ++b) {
                    unsigned char* buf = mine + (ebox++ & 1) * EPI_BOX_BYTES;
                    const int g = lane / 4, tq = lane % 4;
                    unsigned char* box = buf + (warp / 2) * (EPI_BOX_BYTES / 2);
#pragma unroll
                    for (int jj = 0; jj < 2; ++jj)
#pragma unroll
                        for (int hi = 0; hi < 2; ++hi)
#pragma unroll
                            for (int x = 0; x < 2; ++x) {
                                const int j = 2 * b + jj, r = 8 * jj + 2 * tq + x;   // C's row in the box
                                const int c = 16 * (warp & 1) + 8 * hi + g;          // its column
                                unsigned char* at = box + r * 128 + (((c / 4) ^ (r & 7)) * 16) + (c % 4) * 4;
                                *reinterpret_cast<float*>(at) = e[4 * j + 2 * hi + x];
                            }
                    fence_proxy_async();                       // my stores, visible to the copy engine
                    if (leader) bulk_wait_read0();             // the previous step's stores have read their buffer
                    warpgroup_bar(1 + cw);                     // all 128 threads wrote this step
                    if (leader && tm * HBM + b * EPI_ROWS < M) {   // (boxes outside C are not stored)
#pragma unroll
                        for (int h2 = 0; h2 < 2; ++h2)
                            if (col + h2 * 32 < N)
                                tma_store(&tmC, buf + h2 * (EPI_BOX_BYTES / 2), col + h2 * 32, tm * HBM + b * EPI_ROWS);
                        bulk_commit();
                    }
                }
            }
            // [end region: epilogue]
        }
        // [end region: consumer]
    }
    // the stores are done before the CTA leaves (after the branches: inside the consumer's, ptxas keeps half of
    // the 2 x 80 accumulators in local memory)
    if (wg > 0 && threadIdx.x % 128 == 0) bulk_wait0();
    cluster_sync();                                            // no CTA leaves while its peer may write to it
#endif
}
