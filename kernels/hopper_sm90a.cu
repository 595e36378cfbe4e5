// hopper_sm90a.cu -- Lesson 6 (Hopper only): the kernels outside the ladder, which the lab measures.
//
// Every rung of the ladder is one complete kernel in a file of its own (kernels/hopper_rungNN_sm90a.cu, rungs
// 8-26, 29 and 30). What is left here are rungs measured slower than the ladder's (the lab registers them,
// lab/labkit/rungs.py) and two probes, on one templated body, ws_gemm:
//
//   rung 27  hopper_tall_tile        a 256-row tile whose width is chosen per shape, so that the tiles
//                                    fill whole waves (5000^3); else rung 14's tile (slower than rung 25)
//   rung 28  hopper_tall_tile_f32c   rung 27 writing FP32 C
//   rung 31  hopper_ct_pair_n        cuBLAS's pairs along N: 152 x 256 C^T tiles, a cluster's two side
//                                    by side sharing A (slower than rung 29)
//   hopper_wgmma_rate_n64/n128/n256  how many clocks a K-tile of wgmma takes (no TMA, no barriers)
//   hopper_cluster_probe             whether a plain launch forms the clusters __cluster_dims__ asks for
//
// Contract (rungs 27, 28, 31):
//   A: M x K row-major half, B: K x N row-major half, each a TMA tensor map with 128-byte swizzle
//   and K-boxes of 64 (A's box as tall as the tile: 256 rows for rungs 27-28, 80 for 31; B's boxes 64 x 64);
//   C: M x N row-major, half (rungs 27 and 31) or float (rung 28), leaving through shared memory and a TMA
//   store; M, N, K: multiples of 8 (TMA needs 16-byte row strides); TMA fills the parts of a box outside the
//   matrix with zeros (and still counts the whole box's bytes on the mbarrier), and the epilogue writes only
//   elements inside C.
// Arithmetic: every output is one FP32 accumulator that walks K in order, 16 products per wgmma k-step
// (m64nNk16), exactly as rung 7 (helpers.emulate.tensor_core_gemm(A, B, inputs="fp16", acc="fp32")), then
// rounded to FP16 to nearest where C is half.
//
// Needs sm_90a (wgmma, setmaxnreg): NVRTC -arch=sm_90a, or nvcc
// -gencode=arch=compute_90a,code=sm_90a. Other targets compile empty kernels (make kernels-check).

#include "hopper_primitives.cuh"              // smem_addr, smem_base, mbarriers, tma_load, wgmma fences, setmaxnreg
#include "wgmma_widths.cuh"                  // wgmma m64nNk16 for widths 128 .. 248 (generated): rungs 27-31's

#define HBM 128                               // rows of C per block tile
#define HBN 256                               // columns of C per block tile
#define HBK 64                                // K per pipeline stage: 64 halves = 128 bytes = one swizzle row
#ifndef HSTAGES
#define HSTAGES 4                             // pipeline stages (a knob, see below)
#endif
#define BOX_N 64                              // columns of B per TMA box (128 bytes: one swizzle row)
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_BOX_BYTES (HBK * BOX_N * 2)         // 8 KB: one box of B, 64 k-rows x 64 columns
#define B_STAGE_BYTES (HBK * HBN * 2)         // 32 KB of B per stage: 4 boxes
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define EPI_COLS 32                           // rung 13: FP32 columns per TMA store box (128 bytes)
#define EPI_BOX_BYTES (64 * EPI_COLS * 4)     // 8 KB: 64 rows x 32 floats
#define EPI_BYTES (2 * 2 * EPI_BOX_BYTES)     // 2 consumer warpgroups x 2 buffers
#define EPI_HCOLS 64                          // rungs 14-16: FP16 columns per TMA store box (128 bytes)
static_assert(64 * EPI_HCOLS * 2 == EPI_BOX_BYTES, "an FP16 box of C fills the same 8 KB buffer");
#define CT_EPI_ROWS 32                        // rung 29: rows of C per TMA store box (32 x 64 FP16: 4 KB)
#define CT_EPI_BOX (CT_EPI_ROWS * 128)
#define CT_EPI_BYTES (2 * 2 * CT_EPI_BOX)     // 2 consumer warpgroups x 2 buffers of 4 KB
#define BAR_BYTES 128                         // the mbarriers (2 x HSTAGES x 8 bytes, rounded up)
#define SMEM_SLACK 1024                       // room to round the base up to 1024 bytes (swizzle atoms)
#define WS_THREADS 384                        // 3 warpgroups (1 producer, 2 consumers)
#ifndef GROUP_M
#define GROUP_M 8                             // tile rows per group of the L2-aware order
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2                           // hopper_cluster_probe's CTAs per cluster
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40                      // the producer's registers after setmaxnreg.dec
#endif
// The consumers take what the producer gives away: the CTA's pool is the 168 registers per thread that
// __launch_bounds__(384, 1) allows at entry, times 384 threads; each consumer gets half of the rest, in
// steps of 8 (setmaxnreg's unit). 40 -> 232.
#define CONSUMER_REGS ((168 * 3 - PRODUCER_REGS) / 2 / 8 * 8)

// Build options (-DNAME=value; every default is the build the lab measured): HSTAGES (rung 31's stages), PRODUCER_REGS
// (CONSUMER_REGS follows), GROUP_M, CLUSTER_M (the cluster probe's), and TALL_M, TALL_N, TALL_STAGES, CTN_M below.
static_assert(HSTAGES >= 2 && 2 * HSTAGES * 8 <= BAR_BYTES, "HSTAGES: 2 or more, and full[] + empty[] fit BAR_BYTES");
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
// (the host pass and sm_90a see the real code; other targets compile empty kernels)

// --------------------------------------------------------------------------- small helpers
// (store2, two floats in one 8-byte store: hopper_primitives.cuh, with the TMA store that lesson 7 uses too)

// How many of a tile's boxes of B (4 of 64 columns; TILE_N: BN / 64 rounded up, the last one partly
// the next tile's columns) start inside B (tn: the tile's column): TMA fills the part of a box beyond N
// with zeros, and boxes that start beyond N are not loaded at all (their columns of C are never written,
// so what the stage holds there does not matter).
template <int BN = HBN>
__device__ __forceinline__ int b_boxes_in(int tn, int N)
{
    return min((BN + BOX_N - 1) / BOX_N, (N - tn * BN + BOX_N - 1) / BOX_N);
}

// --------------------------------------------------------------------------- wgmma descriptors
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in
// bits 0-13, leading-dimension byte offset (LBO) >> 4 in 16-29, stride-dimension byte offset
// (SBO) >> 4 in 32-45, swizzle mode in 62-63 (1 = 128-byte swizzle).
__device__ __forceinline__ u64 desc_encode(u32 addr, u32 lbo, u32 sbo)
{
    return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32) | (1ull << 62);
}

// A, "K-major": each row of the tile holds 64 consecutive k (128 bytes, swizzled); 8 rows make
// a 1024-byte swizzle atom, the next 8 rows are SBO = 1024 bytes further (LBO unused: 16).
// Stepping 16 along K moves the start address 32 bytes inside the swizzled row (as rung 7).
__device__ __forceinline__ u64 desc_kmajor(const void* p)
{
    return desc_encode(smem_addr(p), 16, 1024);
}

// B, "MN-major" (row-major B: consecutive n are adjacent): each TMA box is 64 k-rows of 64 n
// (128 bytes, swizzled). 8 k-rows make a 1024-byte atom: SBO = 1024 bytes to the next 8 k;
// the next 64 columns are the next box: LBO = B_BOX_BYTES. Stepping 16 along K moves the start
// 16 rows = 2048 bytes (two whole atoms, so the swizzle phase is unchanged).
__device__ __forceinline__ u64 desc_mnmajor(const void* p)
{
    return desc_encode(smem_addr(p), B_BOX_BYTES, 1024);
}

// --------------------------------------------------------------------------- mbarriers
// (all in hopper_primitives.cuh, the arrive on a peer CTA's barrier too)

// ---------------------------------------------------------------- TMA (loads, multicast, the store and its bulk groups:
// hopper_primitives.cuh, since lesson 7's kernels store through TMA too)

// Two FP32 values rounded to nearest FP16, packed: lo in the low 16 bits (the lower column).
__device__ __forceinline__ u32 pack_half2(float lo, float hi)
{
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));   // first source -> upper half
    return r;
}

// stmatrix .x4: the warp stores four 8 x 8 matrices of 16-bit values. Lane l supplies the address of
// row l % 8 of matrix l / 8; register i holds this lane's two elements of matrix i, at row lane / 4,
// columns 2 (lane % 4), +1: the layout of the wgmma accumulator, so no shuffling is needed.
__device__ __forceinline__ void stmatrix_x4(void* row_addr, u32 r0, u32 r1, u32 r2, u32 r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(smem_addr(row_addr)), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

// The same with .trans (rung 29): each 8 x 8 matrix is stored transposed, so register i's two elements (row lane / 4,
// columns 2 (lane % 4), +1) land in rows 2 (lane % 4), +1 at column lane / 4: lane l then supplies the address of row
// l % 8 of the transposed matrix l / 8.
__device__ __forceinline__ void stmatrix_x4_trans(void* row_addr, u32 r0, u32 r1, u32 r2, u32 r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(smem_addr(row_addr)), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

// ---------------------------------------------------------------- warpgroups (clusters, and warpgroup_bar: a barrier of
// one warpgroup's 128 threads: hopper_primitives.cuh)

// --------------------------------------------------------------------------- the MMA
// D (64 x 256, FP32, 128 registers per thread) += A (64 x 16, K-major, from desc_a) *
// B (16 x 256, from desc_b). TRANS_B = 1: B is MN-major (wgmma's transpose bit, 16-bit types only).
#define D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
              "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, 1, 1, 1, 0, %130;\n"
        "}\n"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56),
          D8(64), D8(72), D8(80), D8(88), D8(96), D8(104), D8(112), D8(120)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}

// Rung 17: the same instruction 64 columns wide: D (64 x 64, FP32, 32 registers per thread) += A B.
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, 1, 1, 1, 0, %34;\n"
        "}\n"
        : D8(0), D8(8), D8(16), D8(24)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}
// Rung 19 and the wgmma-rate probe: 128 columns wide: D (64 x 128, FP32, 64 registers per thread) += A B.
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, 1, 1, 1, 0, %66;\n"
        "}\n"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}
#undef D8

// One wgmma k-step of 16 on a consumer's slice, by its width: NACC accumulators per thread (64 x NACC * 2 of C).
template <int NACC>
__device__ __forceinline__ void wgmma_slice(float (&d)[NACC], u64 desc_a, u64 desc_b)
{
    if constexpr (NACC == 128)
        wgmma_m64n256k16<1>(d, desc_a, desc_b);
    else if constexpr (NACC == 64)
        wgmma_m64n128k16<1>(d, desc_a, desc_b);
    else if constexpr (NACC == 32)
        wgmma_m64n64k16<1>(d, desc_a, desc_b);
    else
        Wgmma<2 * NACC>::template mma<1>(d, desc_a, desc_b);   // TILE_N: the other widths (wgmma_widths.cuh)
}

// One K-tile (64 deep) of a 64 x 256 slice of C (rung 17: 64 x 64; rung 19: 64 x 128): four wgmma k-steps of
// 16, in K order, into d. a: the slice's 64 rows of the A stage; b: its first box of the B stage (boxes of 64
// k-rows x 64 columns).
template <int NACC>
__device__ __forceinline__ void mma_ktile(float (&d)[NACC], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        wgmma_slice(d, desc_kmajor(a + ks * 32), desc_mnmajor(b + ks * 16 * 128));
}

// Rung 29 (C^T): one K-tile of a 64-column slice of C, computed as its transpose D' = B^T A^T (64 x BM): wgmma's A is
// the slice's box of B (64 k-rows x 64 columns, read MN-major: the transpose bit of A), its B is the tile's BM rows of
// A (K-major, BM = 2 NACC). b: the box in this stage; a: the A stage.
template <int NACC>
__device__ __forceinline__ void mma_ktile_ct(float (&d)[NACC], const unsigned char* b, const unsigned char* a)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        Wgmma<2 * NACC>::template mma<0, 1>(d, desc_mnmajor(b + ks * 16 * 128), desc_kmajor(a + ks * 32));
}

// Rungs 27-28 (a width that is no multiple of the box): the columns of a slice past its last whole box of C,
// 8-column blocks j0 .. NACC / 4 - 1, written straight from the registers (the accumulator's layout), only inside C
// (a TMA box there would also write the first columns of the next tile). FP16 (HALF) as the boxes round it.
template <bool HALF, int NACC>
__device__ __forceinline__ void store_rest(const float (&d)[NACC], void* C, int M, int N, int row0, int col0, int j0)
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
            if (HALF)
                *reinterpret_cast<u32*>(static_cast<unsigned short*>(C) + at) = pack_half2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            else
                store2(static_cast<float*>(C) + at, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
}

#endif

// ============================================================================ ws_gemm
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// The tile scheduler: work unit t -> tile (tm, tn). A unit is a CLUSTER x 1 column of tiles (the CTAs of a
// cluster take tiles tm = CLUSTER um + rank, which share B); the units are walked GROUP_M tile rows at a time,
// column by column (rung 11's order).
template <int CLUSTER>
__device__ __forceinline__ void tile_of(int t, int units_m, int tiles_n, u32 rank, int& tm, int& tn)
{
    const int group = GROUP_M / CLUSTER;                        // unit rows per group
    const int per_group = group * tiles_n;
    const int first = (t / per_group) * group;
    const int rows = min(units_m - first, group);               // the last group may be shorter
    const int in = t % per_group;
    tm = (first + in % rows) * CLUSTER + (int)rank;
    tn = in / rows;
}

// The warp-specialised GEMM of rungs 27, 28 and 31 (rung 14's kernel with their tiles): a persistent grid in
// clusters of 2 whose CTAs share B (rung 31: A) by multicast, the grouped tile order, the epilogue through shared
// memory and TMA stores. HALF_C: C is FP16; BM x BN: the tile; STAGES: the ring; CT: the tile computed as C^T
// (rung 29's orientation); PAIR_N: a cluster's two tiles side by side along N.
template <bool HALF_C, int BM, int BN, int STAGES, bool CT = false, bool PAIR_N = false>
__device__ __forceinline__ void ws_gemm(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC,
                                        void* __restrict__ Cout, int M, int N, int K)
{
    constexpr int CLUSTER = 2, WAIT = MBAR_WAIT;
    // The block tile (rung 17: BM x BN = 64 x 128) and what follows from it. A consumer warpgroup owns a
    // 64-row slice of SN columns: with 128 rows the two consumers take rows 0-63 and 64-127 of all BN
    // columns; with 64 rows they take columns 0 .. BN/2 - 1 and BN/2 .. BN - 1 of all 64 rows.
    // TILE_N (rungs 25-26): 128 x BN, BN any multiple of 8 from 128 to 256 (wgmma's widths); B still comes in boxes of 64
    // columns, NBOX of them, the last one partly the next tile's.
    // Rung 27: 256 x BN, BN from 128 to 192: each consumer owns 128 rows, two 64-row slices (SUB) of all BN columns,
    // 2 x BN / 2 accumulators per thread.
    // Rung 29 (CT): BM x 256, BM 160, 192 or (a knob) 128 (multiples of the epilogue's 32-row boxes), as C^T (cuBLAS's
    // orientation): each consumer owns 128 columns, two 64-column slices (SUB) of all BM rows, 2 x BM / 2 accumulators
    // per thread.
    // Rung 31 (CT, PAIR_N): the C^T tile, BM any multiple of 8, its cluster's two tiles side by side along N, sharing A:
    // each CTA loads one half of the tile's rows (A_HALF, a multiple of 8 so that each half starts on a 1024-byte
    // swizzle atom; the second half may reach into the next tile's rows) and multicasts it; each loads its own B.
    static_assert((!CT && BM == HBM && BN == HBN)
                  || (!CT && BM == 2 * HBM && BN % 8 == 0 && BN >= 128 && BN <= 192)
                  || (CT && BN == HBN && BM % (PAIR_N ? 8 : CT_EPI_ROWS) == 0 && BM >= HBM && BM <= 192),
                  "tiles 128 x 256, 256 x BN (BN = 128 .. 192), or C^T BM x 256");
    static_assert(!PAIR_N || (CT && CLUSTER == 2 && HALF_C), "pairs along N: the C^T tile, FP16 C, clusters of 2");
    constexpr int NBOX = (BN + BOX_N - 1) / BOX_N;
    constexpr int A_HALF = PAIR_N ? (BM / 2 + 7) / 8 * 8 : BM;          // rows of A each CTA loads (rung 31: 80)
    constexpr int A_ROWS = PAIR_N ? 2 * A_HALF : BM;                    // rows of A a stage holds
    constexpr int A_BYTES = A_ROWS * HBK * 2, B_BYTES = NBOX * B_BOX_BYTES, ST_BYTES = A_BYTES + B_BYTES;
    constexpr int SN = CT ? BN / 2 : BN;                       // columns a consumer owns
    constexpr int SUB = BM == 256 || CT ? 2 : 1;   // slices per consumer: 64-row (rung 27: 2), 64-column (rung 29)
    constexpr int NACC = CT ? BM / 2 : SN / 2;                 // FP32 accumulators per thread and slice (64 x SN / 128)
    static_assert(STAGES >= 2 && 2 * STAGES * 8 <= BAR_BYTES, "full[] + empty[] fit BAR_BYTES");
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // STAGES x (BM rows x 64 k)
    unsigned char* sB = smem + STAGES * A_BYTES;               // STAGES x BN / 64 boxes of (64 k x 64 columns)
    float* sC = reinterpret_cast<float*>(sB + STAGES * B_BYTES);   // rungs 13-17: 2 x 2 boxes of 8 KB
    u64* full = reinterpret_cast<u64*>(smem + STAGES * ST_BYTES + (CT ? CT_EPI_BYTES : EPI_BYTES));
    u64* empty = full + STAGES;                                // full[s]: stage s loaded; empty[s]: stage s free

    const int wg = threadIdx.x / 128;                          // 0: producer; 1, 2: consumers
    const u32 rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, ktiles = (K + HBK - 1) / HBK;
    // units of tiles: a cluster's CTAs take tiles stacked along M (rung 31, PAIR_N: side by side along N)
    const int units_m = PAIR_N ? tiles_m : (tiles_m + CLUSTER - 1) / CLUSTER;
    const int units_n = PAIR_N ? (tiles_n + 1) / 2 : tiles_n, units = units_m * units_n;
    // unit of tiles -> this CTA's tile (tm, tn)
    auto locate = [&](int tile, int& tm, int& tn) {
        if constexpr (PAIR_N) {
            tile_of<1>(tile, units_m, units_n, 0, tm, tn);
            tn = 2 * tn + (int)rank;
        } else {
            tile_of<CLUSTER>(tile, units_m, tiles_n, rank, tm, tn);
        }
    };
    // the work units this CTA computes: t = first, first + step, ... (< units)
    int first, step;
    first = CLUSTER > 1 ? (int)cluster_id() : (int)blockIdx.x;
    step = CLUSTER > 1 ? (int)cluster_count() : (int)gridDim.x;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                            // the producer's arrive (+ TMA's bytes)
            mbar_init(&empty[s], 8 * CLUSTER);                 // one arrive per consumer warp, of every CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (CLUSTER > 1) {
        if (cluster_size() != CLUSTER) __trap();               // launched without its cluster: stop loudly
        cluster_sync();                                        // the peer's barriers exist before we touch them
    } else {
        __syncthreads();
    }

    if (wg == 0) {
        // ------------------------------------------------------------ producer warpgroup
        regs_dec<PRODUCER_REGS>();                             // it needs few registers: give them away
        if (threadIdx.x == 0) {
            int s = 0;
            u32 phase = 0;
            for (int t = first; t < units; t += step) {
                int tm, tn;
                locate(t, tm, tn);
                const int k0 = 0, k1 = ktiles;
                // a cluster's second tile can lie below M (M has an odd number of tiles): no A then
                const bool a_in = tm * BM < M;
                // (rung 31: the last pair's second CTA, past N where N has an odd number of tile columns, loads no B;
                // b_boxes_in would count negative boxes there, and the stage would expect fewer bytes than A's)
                const int nb = PAIR_N && tn * BN >= N ? 0 : b_boxes_in<BN>(tn, N);
                // rung 31: the second half of A is loaded only where it starts above M (both CTAs agree on it)
                const int halves = PAIR_N && tm * BM + A_HALF >= M ? 1 : 2;
                const u32 bytes = (PAIR_N ? halves * A_HALF * HBK * 2 : a_in ? A_BYTES : 0) + nb * B_BOX_BYTES;
                for (int kt = k0; kt < k1; ++kt) {
                    mbar_wait<WAIT>(&empty[s], phase ^ 1);     // every consumer (of every CTA) freed stage s
                    mbar_expect_tx(&full[s], bytes);           // A, and all of B (rungs 12-13: half from the peer)
                    if constexpr (PAIR_N) {                    // rung 31: my half of A, to both CTAs
                        if ((int)rank < halves)
                            tma_load_multicast(sA + s * A_BYTES + rank * A_HALF * 128, tmA, &full[s], kt * HBK,
                                               tm * BM + (int)rank * A_HALF, (unsigned short)3);
                    } else if (a_in) {
                        tma_load(sA + s * A_BYTES, tmA, &full[s], kt * HBK, tm * BM);
                    }
                    unsigned char* b = sB + s * B_BYTES;
                    if (CLUSTER == 1 || PAIR_N) {                // (rung 31: each CTA its own B)
#pragma unroll
                        for (int c = 0; c < NBOX; ++c)
                            if (c < nb) tma_load(b + c * B_BOX_BYTES, tmB, &full[s], tn * BN + c * BOX_N, kt * HBK);
                    } else {                                   // my share of the boxes, to every CTA (TILE_N:
                        // NBOX / CLUSTER need not be whole: CTA r takes boxes r NBOX / CLUSTER .. (r + 1) NBOX / CLUSTER - 1)
                        constexpr bool EVEN = NBOX % CLUSTER == 0;
                        constexpr int per = NBOX / CLUSTER;
                        const int cb = EVEN ? (int)rank * per : (int)rank * NBOX / CLUSTER;
                        const int ce = EVEN ? ((int)rank + 1) * per : ((int)rank + 1) * NBOX / CLUSTER;
#pragma unroll
                        for (int c = cb; c < ce; ++c)
                            if (c < nb)
                                tma_load_multicast(b + c * B_BOX_BYTES, tmB, &full[s], tn * BN + c * BOX_N,
                                                   kt * HBK, (unsigned short)((1u << CLUSTER) - 1));
                    }
                    if (++s == STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
    } else {
        // ------------------------------------------------------------ consumer warpgroups
        regs_inc<CONSUMER_REGS>();                             // the accumulators + addresses
        const int cw = wg - 1;                                 // consumer 0 or 1: its slice of the tile
        const int r0 = BM >= 128 && !CT ? cw * (BM / 2) : 0, c0 = BM >= 128 && !CT ? 0 : cw * SN;   // its slice's origin
        const int lane = threadIdx.x % 32;
        int s = 0, ebox = 0;                                   // ebox: epilogue boxes stored (rung 17)
        u32 phase = 0;
        float acc[SUB][NACC];                                  // rung 27: rows r0 .. r0 + 63, then r0 + 64 .. r0 + 127
        float (&d)[NACC] = acc[0];
        const int a_off = BM >= 128 && !CT ? cw * (BM / 2) * 128 : 0;   // bytes into an A stage: row r0's
        // this warp is done reading `stage` (every CTA's barrier: the producers multicast into it)
        auto release = [&](int stage) { if (lane == 0) mbar_arrive_all<CLUSTER>(&empty[stage]); };
        for (int t = first; t < units; t += step) {
            int tm, tn;
            locate(t, tm, tn);
            const int k0 = 0, k1 = ktiles;
#pragma unroll
            for (int h = 0; h < SUB; ++h)
#pragma unroll
                for (int i = 0; i < NACC; ++i) acc[h][i] = 0.0f;
            int prev = -1;
            for (int kt = k0; kt < k1; ++kt) {
                mbar_wait<WAIT>(&full[s], phase);              // TMA has delivered this stage
                wgmma_fence();
                // the slice's rows of A (r0 x 128 bytes) and its columns of B (rung 17: consumer cw's box);
                // rung 27: both slices, the second 64 rows (8 KB of A) further, in one group
#pragma unroll
                for (int h = 0; h < SUB; ++h) {
                    if constexpr (CT)                          // rung 29: slice h is box c0 / 64 + h of B
                        mma_ktile_ct(acc[h], sB + s * B_BYTES + (c0 / BOX_N + h) * B_BOX_BYTES, sA + s * A_BYTES);
                    else
                        mma_ktile(acc[h], sA + s * A_BYTES + a_off + h * 64 * 128,
                                  sB + s * B_BYTES + c0 / BOX_N * B_BOX_BYTES);
                }
                wgmma_commit();
                wgmma_wait<1>();                               // the previous K-tile's group is done ...
                if (prev >= 0) release(prev);                  // ... so its stage can be refilled
                prev = s;
                if (++s == STAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            release(prev);
            // rung 27: the consumer's two 64-row slices, one after the other (the others: one)
#pragma unroll
            for (int sub = 0; sub < SUB; ++sub) {
                const float (&e)[NACC] = acc[sub];
                const int row = tm * BM + r0 + 64 * sub;   // the slice's first row of C
                if constexpr (CT) {
                    // rungs 29-30: slice sub is C's columns col .. col + 63 (D' rows), all BM rows of the tile (D'
                    // columns), stored in steps of SR rows through two 4 KB buffers per consumer: FP16, one box of 32 rows
                    // x 64 columns a step; FP32 (rung 30), two boxes of 16 rows x 32 columns. Box rows are 128 bytes.
                    constexpr int SR = HALF_C ? CT_EPI_ROWS : 16, NB = HALF_C ? 1 : 2;   // rows and boxes a step
                    const int warp = (threadIdx.x % 128) / 32, col = tn * BN + c0 + 64 * sub;
                    const bool leader = threadIdx.x % 128 == 0;
                    unsigned char* mine = reinterpret_cast<unsigned char*>(sC) + cw * 2 * CT_EPI_BOX;
#pragma unroll
                    for (int b = 0; b < (BM + SR - 1) / SR; ++b) {      // (rung 31: the last step 24 of 32 rows)
                        unsigned char* buf = mine + (ebox++ & 1) * CT_EPI_BOX;
                        if constexpr (HALF_C) {
                            // stmatrix .trans turns each 8 x 8 block of D' into 8 rows of C: lane l addresses row
                            // 8 (j - 4 b) + l % 8 of the box, where 16-byte chunk 2 warp + (l / 8) % 2 holds its 8 columns
                            // (warp w owns D' rows, C's columns, 16 w .. 16 w + 15), swizzled as above.
                            const int m = lane / 8;
#pragma unroll
                            for (int p = 0; p < SR / 16; ++p) {
                                const int j = b * (SR / 8) + 2 * p;              // 8-row block of C (D' columns)
                                if (j >= BM / 8) continue;                       // (rung 31: past the tile's rows)
                                const int jh = j + 1 < BM / 8 ? j + 1 : j;       // (its last block has no partner:
                                const int r = 8 * (2 * p + (m >> 1)) + lane % 8, q = 2 * warp + (m & 1);   // unused rows)
                                stmatrix_x4_trans(buf + r * 128 + ((q ^ (r & 7)) * 16),
                                                  pack_half2(e[4 * j], e[4 * j + 1]),
                                                  pack_half2(e[4 * j + 2], e[4 * j + 3]),
                                                  pack_half2(e[4 * jh], e[4 * jh + 1]),
                                                  pack_half2(e[4 * jh + 2], e[4 * jh + 3]));
                            }
                        } else {
                            // FP32: warps 0-1 hold the slice's columns 0-31 (the first box), warps 2-3 columns 32-63.
                            // Thread (g, t) of warp w holds D' rows 16 w + g (+8) at D' columns 8 j + 2 t, +1: C's rows
                            // 8 j + 2 t, +1 at one column each, written as single floats with the same swizzle (4 rows x
                            // 8 columns per store: no bank conflict).
                            const int g = lane / 4, t = lane % 4;
                            unsigned char* box = buf + (warp / 2) * (CT_EPI_BOX / 2);
#pragma unroll
                            for (int jj = 0; jj < 2; ++jj)
#pragma unroll
                                for (int hi = 0; hi < 2; ++hi)
#pragma unroll
                                    for (int x = 0; x < 2; ++x) {
                                        const int j = 2 * b + jj, r = 8 * jj + 2 * t + x;    // C's row in the box
                                        const int c = 16 * (warp & 1) + 8 * hi + g;          // its column
                                        unsigned char* at = box + r * 128 + (((c / 4) ^ (r & 7)) * 16) + (c % 4) * 4;
                                        *reinterpret_cast<float*>(at) = e[4 * j + 2 * hi + x];
                                    }
                        }
                        fence_proxy_async();                       // my stores, visible to the copy engine
                        if (leader) bulk_wait_read0();             // the previous step's stores have read their buffer
                        warpgroup_bar(1 + cw);                     // all 128 threads wrote this step
                        if constexpr (PAIR_N) {                    // rung 31: boxes of 8 rows, none past the tile
                            if (leader && col < N) {
#pragma unroll
                                for (int h8 = 0; h8 < SR / 8; ++h8)
                                    if (b * SR + 8 * h8 < BM && tm * BM + b * SR + 8 * h8 < M)
                                        tma_store(tmC, buf + h8 * 8 * 128, col, tm * BM + b * SR + 8 * h8);
                                bulk_commit();
                            }
                        } else if (leader && tm * BM + b * SR < M && (NB > 1 || col < N)) {   // (NB 2: each box below)
#pragma unroll
                            for (int h2 = 0; h2 < NB; ++h2)
                                if (col + h2 * (64 / NB) < N)
                                    tma_store(tmC, buf + h2 * (CT_EPI_BOX / NB), col + h2 * (64 / NB), tm * BM + b * SR);
                            bulk_commit();
                        }
                    }
                } else if (row < M) {               // (a slice below M has nothing to store)
                    // rungs 13-15: boxes of 64 rows x 128 bytes, through two 8 KB buffers per warpgroup.
                    // A box row is 128 bytes, stored with the 128-byte swizzle the tensor map expects:
                    // 16-byte chunk q of row r sits at chunk q ^ (r % 8), so a warp's 8 rows of 32 bytes
                    // spread over all 32 banks instead of hitting the same 8.
                    const int warp = (threadIdx.x % 128) / 32, g = lane / 4, tq = lane % 4;
                    const bool leader = threadIdx.x % 128 == 0;
                    float* mine = sC + cw * 2 * (64 * EPI_COLS);
                    constexpr int box_cols = HALF_C ? EPI_HCOLS : EPI_COLS;
                    // A slice of an odd number of boxes (rung 17: one) alternates the two buffers across tiles, so
                    // that the store still reading the previous tile's buffer is never overwritten; with an even
                    // number, box & 1 already does (the last box of a tile and the first of the next differ). So
                    // every box is written, also one right of C (only its store is skipped): a slice that stopped
                    // there would leave an odd number of boxes, and the next tile's box 0 could overwrite a buffer
                    // that a store still reads.
                    constexpr bool ODD_BOXES = (SN / box_cols) % 2 == 1;
#pragma unroll
                    for (int box = 0; box < SN / box_cols; ++box) {    // (TILE_N: the whole boxes; the rest below)
                        float* buf = mine + ((ODD_BOXES ? ebox++ : box) & 1) * (64 * EPI_COLS);
                        if (HALF_C) {
                            // rungs 14-16: 64 FP16 columns = 8 chunks of 8; one stmatrix.x4 stores a 16 x 16
                            // piece (8-column blocks j, j + 1, rows 0-7 and 8-15 of this warp's 16).
                            const int m = lane / 8, r = warp * 16 + (m & 1) * 8 + lane % 8;
#pragma unroll
                            for (int p = 0; p < EPI_HCOLS / 16; ++p) {
                                const int j = box * (EPI_HCOLS / 8) + 2 * p;     // 8-column block of the slice
                                const int q = 2 * p + (m >> 1);                  // this lane's row chunk in the box
                                stmatrix_x4(reinterpret_cast<unsigned char*>(buf) + r * 128 + ((q ^ (r & 7)) * 16),
                                            pack_half2(e[4 * j], e[4 * j + 1]), pack_half2(e[4 * j + 2], e[4 * j + 3]),
                                            pack_half2(e[4 * j + 4], e[4 * j + 5]), pack_half2(e[4 * j + 6], e[4 * j + 7]));
                            }
                        } else {
#pragma unroll
                            for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
                                const int j = box * (EPI_COLS / 8) + jj;     // 8-column block of the slice
                                const int q = 2 * jj + tq / 2;               // 16-byte chunk of the box row
#pragma unroll
                                for (int h = 0; h < 2; ++h) {
                                    const int r = warp * 16 + g + 8 * h;
                                    store2(buf + r * EPI_COLS + ((q ^ (r & 7)) * 4) + (tq & 1) * 2, e[4 * j + 2 * h],
                                           e[4 * j + 2 * h + 1]);
                                }
                            }
                        }
                        fence_proxy_async();                       // my stores, visible to the copy engine
                        if (leader) bulk_wait_read0();             // the previous box's store has read its buffer
                        warpgroup_bar(1 + cw);                     // all 128 threads wrote this box
                        if (leader && tn * BN + c0 + box * box_cols < N) {   // (a box wholly right of C is not stored)
                            tma_store(tmC, buf, tn * BN + c0 + box * box_cols, row);
                            bulk_commit();
                        }
                    }
                    if constexpr (SN % box_cols != 0)              // TILE_N: the columns past the last whole box
                        store_rest<HALF_C>(e, Cout, M, N, row, tn * BN + c0, SN / box_cols * box_cols / 8);
                }
            }
        }
        if (SUB == 1 && threadIdx.x % 128 == 0) bulk_wait0();   // stores done before the CTA leaves
    }
    // Rung 27: the same wait, after the branches: inside the consumer's branch ptxas (CUDA 13.0) keeps half of the
    // 2 x 76 accumulators in local memory and serializes the wgmmas (-Xptxas -v: 664 bytes of spill stores).
    if (SUB == 2 && wg > 0 && threadIdx.x % 128 == 0) bulk_wait0();   // (rung 29 too)
    if (CLUSTER > 1) cluster_sync();                           // no CTA leaves while its peer may write to it
}
#endif

// TALL_M, TALL_N: rungs 27-28's tile (256 x 152 as built by default; the launcher chooses per problem,
// helpers.kernels.tall_choice): 256 rows and a width from 128 to 192 in steps of 8, or TALL_M = 128, TALL_N = 256,
// which is rung 14's (13's) template call. TALL_STAGES: as many stages as fit in 227 KB beside the epilogue's
// 32 KB: 3 of 56 KB (256 rows of A, 3 boxes of B), 4 where B is 2 boxes (TALL_N = 128) or the tile is rung 14's.
#ifndef TALL_M
#define TALL_M 256
#endif
#ifndef TALL_N
#define TALL_N 152
#endif
#ifndef TALL_STAGES
#define TALL_STAGES (TALL_M == 128 || TALL_N <= 128 ? 4 : 3)
#endif
static_assert((TALL_M == 256 && TALL_N % 8 == 0 && TALL_N >= 128 && TALL_N <= 192) || (TALL_M == 128 && TALL_N == 256),
              "TALL_M x TALL_N: 256 x (128 .. 192, a multiple of 8), or 128 x 256");
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#define TALL_DIMS
#else
#define TALL_DIMS __cluster_dims__(2, 1, 1)
#endif
// Rung 27 -- a 256-row tile, its width chosen per shape (not in the ladder: slower than rung 25 where it differs).
// Adds, over rung 14: where 128 x 256 tiles leave the last wave mostly empty, a tile of 256 rows and a width w
// chosen so that the tiles fill whole waves. At 5000^3 rung 14's 40 x 20 tiles are 400 units of 2 for 66 clusters:
// 6.06 waves, run as 7 (83% of the work the chip could do in that time is useful); 256 x 152 tiles are 20 x 33 =
// 330 units, 5 whole waves (97%), the tile cuBLAS picks there (its 256x152 kernel computes C^T, so its tile is 152
// rows of C by 256 columns). Each consumer warpgroup owns 128 rows: two 64-row slices, 2 x 76 accumulators per thread;
// B's 152 columns come in 3 boxes of 64, one from one CTA of the pair and two from the other. 3 stages of 56 KB fit.
// Per K-tile a CTA asks L2 for 256 + 96 box rows for 256 x 152 outputs (110 outputs per row) against rung 14's
// 128 + 128 for 128 x 256 (128 per row): where L2 limits, the tall tile loses some of what the waves give, and rows
// that start inside a line cost it most (256 rows of A per K-tile, each two requests); a ring of 3 stages costs more.
// Elsewhere the launcher builds rung 14's tile (TALL_M = 128, TALL_N = 256), where the tall one saves under 10% of the
// waves x tile area (helpers.kernels.tall_choice). The sums are rung 14's, bit for bit (the same K order per output).
// Predicted: x1.05 over rung 25 at 5000^3 (the waves give x1.18, L2 takes back some); x1.00 over rung 14 where it
// builds rung 14's tile.
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) TALL_DIMS hopper_tall_tile(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_tall_tile(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ws_gemm<true, TALL_M, TALL_N, TALL_STAGES>(&tmA, &tmB, &tmC, C, M, N, K);
#endif
}

// Rung 28 -- rung 27 writing FP32 C (rung 13's epilogue, boxes of 32 columns: 152 = 4 boxes + 24 columns from the
// registers). Predicted: x1.05 over rung 26 at 5000^3, x1.00 over rung 13 where it builds rung 13's tile.
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) TALL_DIMS hopper_tall_tile_f32c(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_tall_tile_f32c(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, float* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ws_gemm<false, TALL_M, TALL_N, TALL_STAGES>(&tmA, &tmB, &tmC, C, M, N, K);
#endif
}

// CTN_M: rung 31's tile rows, a multiple of 8 (cuBLAS's 152 at 5000^3); a stage holds 2 x 80 rows of A (CT_SMEM's 160).
#ifndef CTN_M
#define CTN_M 152
#endif
static_assert((CTN_M / 2 + 7) / 8 * 8 * 2 <= 160, "CTN_M: a stage holds at most 160 rows of A (CT_SMEM)");
// Rung 31 -- the C^T tile in pairs along N, sharing A (not in the ladder: slower than rung 29). cuBLAS's tile
// at 5000^3: 152 x 256, computed as C^T as rung 29's, but a cluster's two CTAs take tiles side by side along N: each
// loads 80 of the tile's rows of A (a half that starts on a 1024-byte swizzle atom; the second reaches 8 rows into the
// next tile) and multicasts it to both, and each loads all of its own B. C leaves in boxes of 8 rows (152 is no
// multiple of 32: a 32-row box would write the next tile's rows). Where N has an odd number of tile columns, the last
// pair's second CTA lies past N and loads no boxes of B.
// At 5000^3: 33 x 20 tiles = 330 units of 2 for 66 clusters, 5 whole waves, each tile 1.19 of rung 14's: 5.94
// tile-times where rung 29 takes 6.25 (x1.05); but a CTA asks L2 for 80 + 256 box rows per K-tile for 152 x 256
// outputs (116 outputs per row) against rung 29's 160 + 128 (142), so some of it goes. At 4096^3 216 units (4 waves of
// 1.19) against rung 29's 208 (4 of 1.25): x1.05 from the waves; at 5496^3 407 units (7 waves) against 396 (6): x0.90.
// Predicted, over rung 29 (its C^T tile forced): x1.03 at 5000^3 and 4096^3, x0.88 at 5496^3.
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) TALL_DIMS hopper_ct_pair_n(
    const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
    const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C, int M, int N, int K);
extern "C" __global__ void hopper_ct_pair_n(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, unsigned short* __restrict__ C,
    int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ws_gemm<true, CTN_M, HBN, HSTAGES, true, true>(
        &tmA, &tmB, &tmC, C, M, N, K);
#endif
}

// Not a rung: how many clocks one K-tile of wgmma takes in one
// SM, by the instruction's width N (64, 128, 256) and by how many warpgroups issue at once. Each warpgroup of the
// block (blockDim.x = 128 x warpgroups) runs `iters` K-tiles of four m64nNk16 k-steps on the same 64 x 64 tile of
// A and 64 x N of B in shared memory (zeros), each K-tile a commit group, then waits as the rungs' consumers do
// (`depth` = 1: one group left in flight) or drains (`depth` = 0). Thread 0 of warpgroup w writes the loop's
// clocks to out[blockIdx.x * warpgroups + w]. No TMA and no barrier between warpgroups: the Tensor Cores and the
// shared-memory reads they make, alone. Dynamic shared memory: 8 KB of A, N / 64 boxes of 8 KB, 1 KB to align.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int NACC>
__device__ __forceinline__ void wgmma_rate(long long* out, int iters, int depth)
{
    unsigned char* a = smem_base();                        // 64 rows x 64 k (8 KB, 128-byte swizzle)
    unsigned char* b = a + 8192;                           // N / 64 boxes of 64 k x 64 columns
    uint4* z = reinterpret_cast<uint4*>(a);
    for (int i = threadIdx.x; i < (8192 + NACC / 32 * B_BOX_BYTES) / 16; i += blockDim.x) z[i] = make_uint4(0, 0, 0, 0);
    fence_proxy_async();                                   // the zeros, visible to wgmma's reads
    __syncthreads();
    float d[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) d[i] = 0.0f;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
        wgmma_fence();
        mma_ktile(d, a, b);
        wgmma_commit();
        if (depth) wgmma_wait<1>(); else wgmma_wait<0>();
    }
    wgmma_wait<0>();
    const long long t1 = clock64();
    float keep = 0.0f;                                     // use d, so no wgmma is optimised away
#pragma unroll
    for (int i = 0; i < NACC; ++i) keep += d[i];
    if (threadIdx.x % 128 == 0) out[blockIdx.x * (blockDim.x / 128) + threadIdx.x / 128] = t1 - t0 + (keep != 0.0f);
}
#endif
extern "C" __global__ void __launch_bounds__(384, 1) hopper_wgmma_rate_n64(long long* out, int iters, int depth);
extern "C" __global__ void hopper_wgmma_rate_n64(long long* out, int iters, int depth)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_rate<32>(out, iters, depth);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hopper_wgmma_rate_n128(long long* out, int iters, int depth);
extern "C" __global__ void hopper_wgmma_rate_n128(long long* out, int iters, int depth)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_rate<64>(out, iters, depth);
#endif
}
extern "C" __global__ void __launch_bounds__(384, 1) hopper_wgmma_rate_n256(long long* out, int iters, int depth);
extern "C" __global__ void hopper_wgmma_rate_n256(long long* out, int iters, int depth)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    wgmma_rate<128>(out, iters, depth);
#endif
}

// Not a rung: does a plain launch (cuLaunchKernel, what CuPy does) form the clusters that
// __cluster_dims__ asks for? Block b writes (cluster size << 16) | (its rank << 8) | cluster id % 256.
extern "C" __global__ void CLUSTER_DIMS hopper_cluster_probe(int* out);
extern "C" __global__ void hopper_cluster_probe(int* out)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
    u32 size, rank, id;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(size));
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(id));
    if (threadIdx.x == 0) out[blockIdx.x] = (int)((size << 16) | (rank << 8) | (id & 255));
#endif
}

