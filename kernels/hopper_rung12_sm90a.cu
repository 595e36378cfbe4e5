// hopper_rung12_sm90a.cu -- Lesson 6, rung 12: thread-block clusters with TMA multicast.
//
// Adds, over rung 11: clusters of 2 CTAs (__cluster_dims__, so a plain launch forms them) on
// tiles (2u, n) and (2u + 1, n), which need the same 256-column tile of B. Each CTA's producer
// loads its own A and half of B, and multicasts that half into both CTAs' shared memory: B is
// read from L2 once per pair instead of twice. A stage is refilled only when the consumers of
// both CTAs have freed it (they arrive on both CTAs' empty barriers: mapa + a remote arrive).
// The scheduler hands out units of CLUSTER_M tiles stacked along M, one per cluster.
// Predicted: x1.03 over rung 11.
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
#ifndef CLUSTER_M
#define CLUSTER_M 2                           // CTAs per cluster, along M, sharing B (a knob)
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
static_assert((HBN / BOX_N) % CLUSTER_M == 0 && GROUP_M % CLUSTER_M == 0,
              "CLUSTER_M must divide the 4 boxes of B and GROUP_M");

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

// Grid: one CTA per SM, in clusters of CLUSTER_M; 384 threads; dynamic shared memory HSTAGES x 48 KB + 1152.
extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_DIMS hopper_cluster(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB, float* __restrict__ C,
    int M, int N, int K);
extern "C" __global__ void hopper_cluster(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 4 boxes of (64 k x 64 columns)
    u64* full = reinterpret_cast<u64*>(smem + HSTAGES * STAGE_BYTES);
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
        const int cw = wg - 1;                                 // consumer 0 or 1: rows 64 cw .. 64 cw + 63
        const int lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        float d[128];
        for (int t = first; t < units; t += step) {
            int tm, tn;
            tile_of(t, units_m, tiles_n, rank, tm, tn);
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);                    // TMA has delivered this stage
                wgmma_fence();
                mma_ktile(d, sA + s * A_STAGE_BYTES + cw * 64 * 128, sB + s * B_STAGE_BYTES);
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0 && lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);   // ... in every CTA
                prev = s;
                if (++s == HSTAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);
            store_slice(d, C, M, N, tm * HBM + cw * 64, tn * HBN);
        }
        // [end region: consumer]
    }
    cluster_sync();                                            // no CTA leaves while its peer may write to it
#endif
}
