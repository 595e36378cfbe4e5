// hopper_rung26_sm90a.cu -- Lesson 6, rung 26: rung 25 writing FP32 C (rung 13 with clusters of 4 by shape).
//
// Adds, over rungs 14 and 13: four CTAs on four tiles stacked along M share their B tile, and each loads one of its
// four boxes and multicasts it to all four (rung 12 did this with two CTAs and two boxes each). A CTA then asks L2 for
// 128 + 64 box rows of 128 bytes per K-tile instead of 128 + 128. At 5000^3 a row of 10000 bytes starts 16 bytes into
// a 128-byte line, so each box row costs two L2 requests: there the saved requests pay. But the driver fits fewer
// clusters of 4 at once than clusters of 2 (not every GPC's SMs divide into fours), so the same tiles can take one
// more wave. The launcher therefore builds each problem its own way (helpers.kernels.quad_choice): clusters of 4 where
// a row of A or B starts inside a 128-byte line and they take no more waves than clusters of 2; else
// QUAD_CLUSTER = 2, which is rung 14's kernel (rung 26: 13's). The sums are rungs 14's and 13's, bit for bit.
// Rung 26 is rung 25 writing FP32 C (rung 13's epilogue). Predicted: x1.0 over rung 13, x1.12 at 5000^3, as rung 25.
// TILE_N, a knob (256 as recorded): the tile's width, any multiple of 8 from 128 to 256, wgmma's widths
// (kernels/wgmma_widths.cuh). B still comes in boxes of 64 columns (a 152-wide tile loads 3, the last partly the next
// tile's), and C's columns past the last whole box of C are stored from the registers (store_rest). A width chosen
// per problem fills the waves better (at 5000^3 128 x 152 tiles in clusters of 2 make 10 whole waves of 66), but a
// narrower tile asks L2 for more box rows per FLOP, and the 152-wide one loads 192 columns of B: it is a knob to try,
// not a rung.
//
// Contract: A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte
// swizzle (A's box 128 rows x 64 k, B's 64 k x 64 columns); C: M x N row-major float, also a
// tensor map (box 64 rows x 32 columns, 128-byte swizzle). M, N, K
// multiples of 8 (16-byte rows for TMA). One FP32 accumulator per output walks K in order, 16
// products per wgmma (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")).
// The epilogue is rung 13's (the accumulator layout, the swizzle: its store_slice_tma), written out in the
// kernel body.
// Needs sm_90a; other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors, setmaxnreg
#include "wgmma_widths.cuh"                   // wgmma for the widths TILE_N may give (generated)

#define HBM 128                               // rows of C per block tile
#ifndef TILE_N
#define TILE_N 256                            // columns of C per block tile (a knob)
#endif
#define HBN TILE_N
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
#ifndef QUAD_CLUSTER
#define QUAD_CLUSTER 4                        // CTAs per cluster, along M, sharing B (a knob: 4, or 2: rung 14's)
#endif
#define CLUSTER_M QUAD_CLUSTER                // (named CLUSTER_M below, as in rungs 12-16)
// The consumers take what the producer gives away: the CTA's pool is the 168 registers per thread that
// __launch_bounds__(384, 1) allows at entry, times 384 threads; each consumer gets half of the rest, in
// steps of 8 (setmaxnreg's unit). 40 -> 232.
#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B
#define NBOX ((HBN + BOX_N - 1) / BOX_N)      // boxes of B per stage: 4 (TILE_N: the last one partly the next tile's)
#define B_STAGE_BYTES (NBOX * B_BOX_BYTES)    // 32 KB of B per stage
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define EPI_COLS 32                           // FP32 columns per TMA store box (128 bytes)
#define EPI_BOX_FLOATS (64 * EPI_COLS)        // one box of C: 64 rows x 32 floats = 8 KB
#define EPI_BYTES (2 * 2 * EPI_BOX_FLOATS * 4) // 2 consumer warpgroups x 2 buffers
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= 128, "HSTAGES: 2 or more, and full[] + empty[] fit 128 bytes");
static_assert(PRODUCER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg takes multiples of 8 from 24 to 256");
static_assert(GROUP_M % QUAD_CLUSTER == 0 && 4 % QUAD_CLUSTER == 0, "QUAD_CLUSTER must divide GROUP_M and B's 4 boxes");
static_assert(TILE_N % 8 == 0 && TILE_N >= 128 && TILE_N <= 256, "TILE_N: a multiple of 8 from 128 to 256");

// __cluster_dims__ exists from sm_90 on; `make kernels-check` also builds this file for sm_80
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#define CLUSTER_DIMS
#else
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// How many of a tile's NBOX boxes of B start inside B (tn: the tile's column): TMA fills the part of a
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

// One K-tile (64 deep) of a warpgroup's 64 x HBN slice (NACC = HBN / 2 accumulators per thread): four wgmma
// k-steps of 16, in K order. a: the slice's 64 rows of the A stage; b: the first box of the B stage.
template <int NACC>
__device__ __forceinline__ void mma_ktile(float (&d)[NACC], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks) {
        if constexpr (NACC == 128)
            wgmma_m64n256k16<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
        else if constexpr (NACC == 64)
            wgmma_m64n128k16<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
        else
            Wgmma<2 * NACC>::template mma<1>(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
    }
}

// TILE_N: the columns of a slice past its last whole box of C (a width that is no multiple of the box), 8-column
// blocks j0 .. NACC / 4 - 1, written straight from the registers in the accumulator's layout, only inside C (a TMA
// box there would also write the first columns of the next tile).
template <int NACC>
__device__ __forceinline__ void store_rest(const float (&d)[NACC], float* C, int M, int N, int row0, int col0,
                                           int j0)
{
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = j0; j < NACC / 4; ++j) {
        const int c = col0 + j * 8 + 2 * (lane % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const size_t at = (size_t)(r + 8 * h) * N + c;
            if (c >= N || r + 8 * h >= M) continue;
            store2(C + at, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
}
#endif

// Grid: one CTA per SM, in clusters of QUAD_CLUSTER; 384 threads; dynamic shared memory HSTAGES x (16 KB + NBOX x 8 KB)
// + 32 KB + 1152.
extern "C" __global__ void __launch_bounds__(384, 1) CLUSTER_DIMS hopper_quad_cluster_f32c(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_quad_cluster_f32c(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, float* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x NBOX boxes of (64 k x 64 columns)
    float* sC = reinterpret_cast<float*>(sB + HSTAGES * B_STAGE_BYTES);   // 2 x 2 boxes of C, 8 KB each
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
                    // my share of the boxes, to every CTA (TILE_N: NBOX / CLUSTER_M need not be whole: CTA r takes
                    // boxes r NBOX / CLUSTER_M .. (r + 1) NBOX / CLUSTER_M - 1)
                    constexpr bool EVEN = NBOX % CLUSTER_M == 0;
                    constexpr int per = NBOX / CLUSTER_M;
                    const int cb = EVEN ? (int)rank * per : (int)rank * NBOX / CLUSTER_M;
                    const int ce = EVEN ? ((int)rank + 1) * per : ((int)rank + 1) * NBOX / CLUSTER_M;
#pragma unroll
                    for (int c = cb; c < ce; ++c)
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
        const int cw = wg - 1, r0 = cw * 64, c0 = 0;           // consumer 0 or 1: rows r0 .. r0 + 63, all columns
        const int lane = threadIdx.x % 32;
        int s = 0, ebox = 0;
        u32 phase = 0;
        float d[HBN / 2];
        for (int t = first; t < units; t += step) {
            int tm, tn;
            tile_of(t, units_m, tiles_n, rank, tm, tn);
#pragma unroll
            for (int i = 0; i < HBN / 2; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);                    // TMA has delivered this stage
                wgmma_fence();
#pragma unroll
                for (int h = 0; h < 1; ++h)                    // (a loop of one: it compiles to the very instructions
                    mma_ktile(d, sA + s * A_STAGE_BYTES + r0 * 128 + h * 64 * 128, sB + s * B_STAGE_BYTES);   // measured)
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0 && lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);   // ... in every CTA
                prev = s;
                if (++s == HSTAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive_all<CLUSTER_M>(&empty[prev]);
            // [region: epilogue]
            const int row = tm * HBM + r0;                     // the slice's first row of C
            if (row < M) {                                     // (a slice below M has nothing to store)
                const int warp = (threadIdx.x % 128) / 32, g = lane / 4, tq = lane % 4;
                const bool leader = threadIdx.x % 128 == 0;
                float* mine = sC + cw * 2 * EPI_BOX_FLOATS;    // this consumer's two buffers
                // an odd number of boxes a slice (TILE_N) alternates the buffers across tiles (ebox), so that the
                // store still reading the previous tile's buffer is never overwritten; an even one alternates by box
                constexpr bool ODD_BOXES = (HBN / EPI_COLS) % 2 == 1;
#pragma unroll
                for (int box = 0; box < HBN / EPI_COLS; ++box) {   // (TILE_N: the whole boxes; the rest below)
                    float* buf = mine + ((ODD_BOXES ? ebox++ : box) & 1) * EPI_BOX_FLOATS;
#pragma unroll
                    for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
                        const int j = box * (EPI_COLS / 8) + jj;   // 8-column block of the slice
                        const int q = 2 * jj + tq / 2;         // 16-byte chunk of the box row
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int r = warp * 16 + g + 8 * h;
                            store2(buf + r * EPI_COLS + ((q ^ (r & 7)) * 4) + (tq & 1) * 2, d[4 * j + 2 * h],
                                   d[4 * j + 2 * h + 1]);
                        }
                    }
                    fence_proxy_async();                       // my stores, visible to the copy engine
                    if (leader) bulk_wait_read0();             // the previous box's store has read its buffer
                    warpgroup_bar(1 + cw);                     // all 128 threads wrote this box
                    if (leader && tn * HBN + c0 + box * EPI_COLS < N) {   // (a box wholly right of C is not stored)
                        tma_store(&tmC, buf, tn * HBN + c0 + box * EPI_COLS, row);
                        bulk_commit();
                    }
                }
                if constexpr (HBN % EPI_COLS != 0)             // TILE_N: the columns past the last whole box
                    store_rest(d, C, M, N, row, tn * HBN + c0, HBN / EPI_COLS * EPI_COLS / 8);
            }
            // [end region: epilogue]
        }
        if (threadIdx.x % 128 == 0) bulk_wait0();              // the stores are done before the CTA leaves
        // [end region: consumer]
    }
    cluster_sync();                                            // no CTA leaves while its peer may write to it
#endif
}
