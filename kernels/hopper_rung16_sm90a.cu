// hopper_rung16_sm90a.cu -- Lesson 6, rung 16: split only the last wave.
//
// Adds, over rung 15: the split is kept for the units that do not fill a whole wave, and clusters come
// back (rung 14's 2-CTA pairs sharing B). A problem of U units (pairs of tiles) on G clusters runs
// U / G whole waves and then a last wave of U % G units: at 5000^3, 400 units on 66 clusters are 6 whole
// waves and 4 units, so 62 of 66 clusters idle through the seventh wave while 4 compute all of K. Here
// the first dp = 6 x 66 units are whole, as in rung 14, and each of the 4 tail units is cut into
// `splits` parts of K (helpers.kernels.tail_split_plan: 9 parts of 9 K-tiles at 5000^3, the last 7), added up by the
// last part to arrive, in part order, as rung 15 does. Where the last wave is more than half full, or
// there is no whole wave to keep, the plan gives the same units as rung 14 (no split) or rung 15.
// Work units: t < dp is whole unit t (all of K); unit dp + u is part u / tail of tail unit dp + u % tail
// (tail = the units left after dp), so each cluster runs its whole waves and then one part.
// Predicted: x0.98 over rung 15 where the plan does not split (4096, 8192, 2048, 8192 x 8192 x 1024: rung
// 14's units; the figure repeats rung 15's x0.98 over rung 14, though rung 14's units make it nearer x1.02 over
// rung 15); at 5000^3, x1.11 over rung 14 (each CTA's K-tiles: 6 x 79 + 9 = 483
// instead of 7 x 79 = 553, plus the last part's reading of 9 parts x 128 KB from L2 and its own store,
// about 16 K-tiles' time: 553 / 499).
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box 128 rows x 64 k, B's 64 k x 64 columns); C: M x N row-major half, also a
// tensor map (box 64 rows x 64 columns, 128-byte swizzle). M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")), then
// rounded to FP16 to nearest. With S parts, each part is that accumulator over its K range from
// zero, and C = fp16(((p0 + p1) + p2) + ...), FP32 adds to nearest. partial: 2 x 128 x 128 floats per
// split tail tile and part; flags: 2 ints per split tail tile (zero before the first launch; each
// launch leaves them zero). Every other tile is rung 14's.
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
// Not knobs here: they decide which tiles form the last wave, and so which are split
// (helpers.kernels.tail_split_plan assumes these values).
#define GROUP_M 8                             // tile rows per group of the L2-aware order
#define CLUSTER_M 2                           // CTAs per cluster, along M, sharing B
// The consumers take what the producer gives away: the CTA's pool is the 168 registers per thread that
// __launch_bounds__(384, 1) allows at entry, times 384 threads; each consumer gets half of the rest, in
// steps of 8 (setmaxnreg's unit). 40 -> 232.
#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define B_STAGE_BYTES (HBK * HBN * 2)         // 32 KB of B per stage: 4 boxes
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define EPI_HCOLS 64                          // FP16 columns per TMA store box (128 bytes)
#define EPI_BOX_BYTES (64 * EPI_HCOLS * 2)    // one box of C: 64 rows x 64 halves = 8 KB
#define EPI_BYTES (2 * 2 * EPI_BOX_BYTES)     // 2 consumer warpgroups x 2 buffers
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] + empty[] fit 128 bytes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes multiples of 8 from 24 to 256");

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

// Split-K: this part's FP32 sums d go to its own slot of the workspace, in the accumulator's layout
// (register i of thread x at [i][x]: each warp's 32 floats are one 128-byte line, so no bounds apply);
// then the part counts itself in on the slice's counter. The part that arrives last adds all of them
// in part order, ((p0 + p1) + p2) + ..., whoever it is, so C does not depend on which part finished
// first; it resets the counter and returns true: it writes C. (A counter per 64-row slice: slice.)
__device__ __forceinline__ bool sum_parts(float (&d)[128], float* partial, int* flags, int slice, int part,
                                          int parts, int cw)
{
    __shared__ int last_part[2];
    const bool leader = threadIdx.x % 128 == 0;
    const size_t slot = (size_t)128 * 128, lane_off = threadIdx.x % 128;
    float* base = partial + (size_t)slice * parts * slot + lane_off;   // slot q at base + q * slot
#pragma unroll
    for (int i = 0; i < 128; ++i) __stcg(base + part * slot + i * 128, d[i]);
    warpgroup_bar(1 + cw);                                     // all 128 threads stored their share
    if (leader) {
        __threadfence();                                       // the stores, before the count
        last_part[cw] = atomicAdd(&flags[slice], 1) == parts - 1;
        if (last_part[cw]) __threadfence();                    // ... and the others' stores, before our loads
    }
    warpgroup_bar(1 + cw);
    if (!last_part[cw]) return false;                          // another part adds this tile up
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = __ldcg(base + i * 128);   // part 0 (ours included: its slot holds d)
    for (int q = 1; q < parts; ++q) {
        const float* src = base + q * slot;
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] += __ldcg(src + i * 128);
    }
    if (leader) flags[slice] = 0;                              // ready for the next launch
    return true;
}

// One K-tile (64 deep) of a warpgroup's 64 x 256 slice: four wgmma k-steps of 16, in K order.
// a: the slice's 64 rows of the A stage; b: the first box of the B stage.
__device__ __forceinline__ void mma_ktile(float (&d)[128], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        wgmma_m64n256k16<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
}

// Consumer cw's 64 x 256 slice of C, rows row.., columns col0.., as 4 boxes of 64 rows x 64 halves
// through its two 8 KB buffers (mine). Accumulator layout (PTX ISA, wgmma D fragments): warp w holds
// rows 16w..16w+15; lane (g = lane/4, t = lane%4) holds, per 8-column block j, d[4j], d[4j+1] at row g,
// columns 8j+2t, +1, and d[4j+2], d[4j+3] at row g+8. A box row is 128 bytes, stored with the 128-byte
// swizzle the tensor map expects: 16-byte chunk q of row r sits at chunk q ^ (r % 8).
// One stmatrix.x4 stores a 16 x 16 piece: 8-column blocks j, j + 1, rows 0-7 and 8-15 of this warp's 16.
__device__ __forceinline__ void store_slice_tma(const float (&d)[128], unsigned char* mine, const TensorMap* tmC,
                                                int N, int row, int col0, int cw)
{
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const bool leader = threadIdx.x % 128 == 0;
    const int m = lane / 8, r = warp * 16 + (m & 1) * 8 + lane % 8;   // the box row this lane addresses
#pragma unroll
    for (int box = 0; box < 256 / EPI_HCOLS; ++box) {
        unsigned char* buf = mine + (box & 1) * EPI_BOX_BYTES;  // the two buffers in turn
#pragma unroll
        for (int p = 0; p < EPI_HCOLS / 16; ++p) {
            const int j = box * (EPI_HCOLS / 8) + 2 * p;       // 8-column block of the slice
            const int q = 2 * p + (m >> 1);                    // this lane's 16-byte chunk of the box row
            stmatrix_x4(buf + r * 128 + ((q ^ (r & 7)) * 16),
                        pack_half2(d[4 * j], d[4 * j + 1]), pack_half2(d[4 * j + 2], d[4 * j + 3]),
                        pack_half2(d[4 * j + 4], d[4 * j + 5]), pack_half2(d[4 * j + 6], d[4 * j + 7]));
        }
        fence_proxy_async();                                   // my stores, visible to the copy engine
        if (leader) bulk_wait_read0();                         // the previous box's store has read its buffer
        warpgroup_bar(1 + cw);                                 // all 128 threads wrote this box
        if (leader && col0 + box * EPI_HCOLS < N) {            // (a box wholly right of C is not stored)
            tma_store(tmC, buf, col0 + box * EPI_HCOLS, row);
            bulk_commit();
        }
    }
}
#endif

// Grid: one CTA per SM, in clusters of CLUSTER_M; 384 threads; dynamic shared memory HSTAGES x 48 KB + 32 KB + 1152
// (and last_part's static 8 bytes, which ptxas places in a 1 KB slot of their own).
extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_DIMS hopper_tail_split(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C, int M, int N, int K,
    float* __restrict__ partial, int* __restrict__ flags, int splits, int dp);
extern "C" __global__ void hopper_tail_split(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C,
    int M, int N, int K, float* __restrict__ partial, int* __restrict__ flags, int splits, int dp)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x 4 boxes of (64 k x 64 columns)
    unsigned char* sC = smem + HSTAGES * STAGE_BYTES;          // 2 x 2 boxes of C, 8 KB each
    u64* full = reinterpret_cast<u64*>(smem + HSTAGES * STAGE_BYTES + EPI_BYTES);
    u64* empty = full + HSTAGES;                               // full[s]: stage s loaded; empty[s]: stage s free

    const int wg = threadIdx.x / 128;                          // 0: producer; 1, 2: consumers
    const int tiles_m = (M + HBM - 1) / HBM, tiles_n = (N + HBN - 1) / HBN, ktiles = (K + HBK - 1) / HBK;
    const u32 rank = cluster_rank();                           // this CTA's place in its cluster
    const int units_m = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, whole = units_m * tiles_n;
    const int tail = whole - dp, units = dp + tail * splits;   // the last wave's units, each in `splits` parts
    const int kper = (ktiles + splits - 1) / splits;           // K-tiles per part (the last may have fewer)
    const int first = (int)cluster_id(), step = (int)cluster_count();   // this cluster's units: first, + step, ...
    // work unit t -> its unit of tiles, its part, how many parts it has, its workspace slot
    auto work_of = [&](int t, int& unit, int& part, int& nparts, int& wslot) {
        const bool is_whole = t < dp;
        unit = is_whole ? t : dp + (t - dp) % tail;
        part = is_whole ? 0 : (t - dp) / tail;
        nparts = is_whole ? 1 : splits;
        wslot = is_whole ? 0 : (t - dp) % tail;
    };

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
                int tm, tn, unit, part, nparts, wslot;
                work_of(t, unit, part, nparts, wslot);
                tile_of(unit, units_m, tiles_n, rank, tm, tn);
                const int k0 = part * kper, k1 = min(ktiles, k0 + (nparts == 1 ? ktiles : kper));
                // a cluster's second tile can lie below M (M has an odd number of tiles): no A then
                const bool a_in = tm * HBM < M;
                const int nb = b_boxes_in(tn, N);
                const u32 bytes = (a_in ? A_STAGE_BYTES : 0) + nb * B_BOX_BYTES;
                for (int kt = k0; kt < k1; ++kt) {             // this unit's K-tiles
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
            int tm, tn, unit, part, nparts, wslot;
            work_of(t, unit, part, nparts, wslot);
            tile_of(unit, units_m, tiles_n, rank, tm, tn);
            const int k0 = part * kper, k1 = min(ktiles, k0 + (nparts == 1 ? ktiles : kper));
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = k0; kt < k1; ++kt) {
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
            if (prev >= 0 && lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);   // (a part can be empty)
            // (a cluster's tile below M has nothing to add up); each CTA of a cluster its own counters
            // [region: split-k]
            if (nparts > 1 && tm * HBM < M
                && !sum_parts(d, partial, flags, (wslot * CLUSTER_M + (int)rank) * 2 + cw, part, splits, cw))
                continue;                                      // another part writes this tile
            // [end region: split-k]
            // [region: epilogue]
            const int row = tm * HBM + cw * 64;                // the slice's first row of C
            if (row < M)                                       // (a slice below M has nothing to store)
                store_slice_tma(d, sC + cw * 2 * EPI_BOX_BYTES, &tmC, N, row, tn * HBN, cw);
            // [end region: epilogue]
        }
        if (threadIdx.x % 128 == 0) bulk_wait0();              // the stores are done before the CTA leaves
        // [end region: consumer]
    }
    cluster_sync();                                            // no CTA leaves while its peer may write to it
#endif
}
