// hopper_rung29_sm90a.cu -- Lesson 6, rung 29: cuBLAS's tile orientation, C^T, 160 x 256, chosen per shape.
//
// Adds, over rung 14: a tile of 160 rows of C by 256 columns, computed as its transpose, D' = B^T A^T, because wgmma's
// M is 64 rows per instruction and 160 is no multiple of 64, while its N may be any multiple of 8. wgmma's A is then a
// box of B (64 k-rows x 64 columns, MN-major: wgmma's transpose bit for A), its B the tile's 160 rows of A (K-major);
// each consumer owns 128 columns of C, two 64-column slices, 2 x 80 accumulators per thread.
// The epilogue stores D' transposed (stmatrix .trans) in boxes of 32 rows x 64 columns. A stage is 160 rows of A
// (20 KB, no padding: K is the swizzled dimension) and 4 boxes of B (32 KB): 4 stages fit beside a 16 KB epilogue.
// Clusters of 2 along M share B by multicast, as rung 14.
// At 5000^3: 32 x 20 tiles = 320 units of 2 for 66 clusters, 5 waves (4.85 of work), each tile 1.25 of rung 14's:
// 6.25 tile-times where rung 25 takes 7 (7 waves of 30 clusters of 4); per K-tile a CTA asks L2 for 160 + 128 box rows
// for 160 x 256 outputs (142 outputs per row) against rung 25's 128 + 64 for 128 x 256 (171). Where its tiles waste a
// wave (4096^3) it loses, so the launcher builds this tile only where the wave model gives it x1.05 or more over rung
// 25, else rung 25's own kernel (helpers.launch.orientation_build).
// Predicted: x1.0 over rung 25 where it builds rung 25's kernel, x1.05 at 5000^3 (x1.12 from the waves, less some for
// the box rows), x1.07 at 5496^3.
// CT_M, a knob: the tile's rows, a multiple of 32 (the epilogue's boxes) from 128 whose stages fit in 227 KB: 160 as
// recorded; 128 is rung 14's tile and ring computed as C^T, the orientation alone.
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box CT_M rows x 64 k, B's 64 k x 64 columns); C: M x N row-major half, also a
// tensor map (box 32 rows x 64 columns, 128-byte swizzle). M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")), then
// rounded to FP16 to nearest.
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
#define EPI_ROWS 32                           // rows of C per TMA store box (32 x 64 FP16: 4 KB)
#define EPI_BOX_BYTES (EPI_ROWS * 128)
#define EPI_BYTES (2 * 2 * EPI_BOX_BYTES)     // 2 consumer warpgroups x 2 buffers of 4 KB
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] + empty[] fit 128 bytes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes multiples of 8 from 24 to 256");
static_assert(GROUP_M % CLUSTER_M == 0, "GROUP_M: a multiple of the cluster");
static_assert(CT_M % EPI_ROWS == 0 && CT_M >= 128 && CT_M <= 192, "CT_M: a multiple of 32 from 128 to 192");
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

// stmatrix .x4 .trans: each 8 x 8 matrix is stored transposed, so register i's two elements (row lane / 4, columns
// 2 (lane % 4), +1) land in rows 2 (lane % 4), +1 at column lane / 4: lane l supplies the address of row l % 8 of the
// transposed matrix l / 8.
__device__ __forceinline__ void stmatrix_x4_trans(void* row_addr, u32 r0, u32 r1, u32 r2, u32 r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(smem_addr(row_addr)), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
#endif

// Grid: one CTA per SM, in clusters of 2; 384 threads; dynamic shared memory HSTAGES x (CT_M x 128 + 32 KB) + 16 KB
// + 1152.
extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_DIMS hopper_ct_tile(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_ct_tile(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C,
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
            // boxes of 32 rows x 64 columns through two 4 KB buffers per consumer. stmatrix .trans turns each 8 x 8
            // block of D' into 8 rows of C: lane l addresses row 8 (j - 4 b) + l % 8 of the box, where 16-byte chunk
            // 2 warp + (l / 8) % 2 holds its 8 columns (warp w owns D' rows, C's columns, 16 w .. 16 w + 15), with the
            // 128-byte swizzle: 16-byte chunk q of row r sits at chunk q ^ (r % 8).
#pragma unroll
            for (int sub = 0; sub < 2; ++sub) {
                const float (&e)[HBM / 2] = acc[sub];
                const int warp = (threadIdx.x % 128) / 32, col = tn * HBN + c0 + 64 * sub;
                const bool leader = threadIdx.x % 128 == 0;
                unsigned char* mine = reinterpret_cast<unsigned char*>(sC) + cw * 2 * EPI_BOX_BYTES;
#pragma unroll
                for (int b = 0; b < HBM / EPI_ROWS; ++b) {
                    unsigned char* buf = mine + (ebox++ & 1) * EPI_BOX_BYTES;
                    const int m = lane / 8;
#pragma unroll
                    for (int p = 0; p < EPI_ROWS / 16; ++p) {
                        const int j = b * (EPI_ROWS / 8) + 2 * p;  // 8-row block of C (D' columns)
                        const int r = 8 * (2 * p + (m >> 1)) + lane % 8, q = 2 * warp + (m & 1);
                        stmatrix_x4_trans(buf + r * 128 + ((q ^ (r & 7)) * 16),
                                          pack_half2(e[4 * j], e[4 * j + 1]), pack_half2(e[4 * j + 2], e[4 * j + 3]),
                                          pack_half2(e[4 * j + 4], e[4 * j + 5]), pack_half2(e[4 * j + 6], e[4 * j + 7]));
                    }
                    fence_proxy_async();                       // my stores, visible to the copy engine
                    if (leader) bulk_wait_read0();             // the previous box's store has read its buffer
                    warpgroup_bar(1 + cw);                     // all 128 threads wrote this box
                    if (leader && tm * HBM + b * EPI_ROWS < M && col < N) {   // (boxes outside C are not stored)
                        tma_store(&tmC, buf, col, tm * HBM + b * EPI_ROWS);
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
