// fp8_wgmma_store_sm90a.cu -- Lesson 7's appendix (Hopper only): the FP8 GEMM without promotion, its C stored
// through shared memory and TMA.
//
// kernels/fp8_wgmma_sm90a.cu's fp8_wgmma (lesson 6's rung 11 with FP8 wgmma, E4M3 A and Bt, FP32 C, 128 x 256
// block tiles; the Tensor Cores accumulate all of K) with two changes:
//
//   1. The epilogue of lesson 6's rung 13: each consumer writes its 64 x 256 slice of C as boxes of 64 rows x 32
//      floats into a swizzled shared-memory buffer and hands each box to a TMA store. The consumer goes back to
//      its wgmmas as soon as its last box is handed over: the stores of one tile run on while the next tile's
//      first K-tiles are multiplied, where fp8_wgmma's consumers store from registers with the Tensor Cores idle.
//   2. The warpgroup index is broadcast from lane 0 (__shfl_sync, as CUTLASS's canonical_warp_group_idx does).
//      A wgmma takes its descriptors in uniform registers (one value for the whole warp); threadIdx.x / 128 is
//      not provably the same across a warp, and ptxas then builds the descriptors in ordinary registers and
//      moves them into uniform ones before every wgmma. Broadcast, they can stay uniform: fewer instructions.
//
//   fp8_wgmma_store  block tile 128 x 256, on 128 CTAs (helpers/fp8_gemm.py)
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box 256 rows x 128 bytes); C: M x N row-major float, also a TMA map
// (box 64 rows x 32 floats, 128-byte swizzle; the pointer C is not written through).
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros), N a multiple
// of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros, and drops what a store
// box holds outside C.
// Grid: persistent (at most one CTA per SM and per tile); 384 threads; dynamic shared memory
// F8_SMEM(256) + F8_EPI_BYTES (4 stages: 225 KB).
// Needs sm_90a (wgmma, setmaxnreg). Other targets compile an empty kernel (make kernels-check).

#include "fp8_wgmma.cuh"                      // lesson 6's TMA, mbarriers, descriptors; the FP8 wgmma

#define F8_BM 128                             // rows of C per block tile
#define F8_BK 128                             // K per pipeline stage: 128 E4M3 = 128 bytes = one swizzle row
#ifndef F8_STAGES
#define F8_STAGES 4                           // TMA/mbarrier stages (a knob: helpers.fp8_gemm.launcher(stages=))
#endif
#define F8_THREADS 384                        // 1 producer + 2 consumer warpgroups
#define F8_GROUP_M 8                          // tile rows per group of the L2-aware order
#define F8_A_BYTES (F8_BM * F8_BK)            // 16 KB of A per stage
#define F8_SMEM(BN) (F8_STAGES * (F8_A_BYTES + (BN) * F8_BK) + 1024 + 128)
#define F8_EPI_BYTES (2 * 2 * 64 * 32 * 4)    // 2 consumers x 2 buffers of 64 x 32 floats (8 KB), past F8_SMEM

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
__device__ __forceinline__ void store2_shared(u32 addr, float x, float y)   // two floats to a shared address
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" :: "r"(addr), "f"(x), "f"(y) : "memory");
}

// A consumer's 64 x BN slice of C through shared memory and TMA stores (lesson 6's rung 13, FP32 C): boxes of
// 64 rows x 32 floats (128 bytes a row, written with the 128-byte swizzle the map of C expects: 16-byte chunk q of
// row r at chunk q ^ (r % 8)), through the consumer's two 8 KB buffers `bufs`, one written while TMA reads the other.
// The accumulator layout of wgmma m64nN: warp w holds rows 16w..16w+15; lane (g = lane/4, tq = lane%4) holds, per
// 8-column block j, d[4j], d[4j+1] at (row g, columns 8j+2tq, +1) and d[4j+2], d[4j+3] at (row g+8, same).
// Box b uses buffer b % 2, and every tile goes through all BN / 32 boxes (an even number; a box wholly right of C is
// written to its buffer but not stored), so that consecutive boxes always alternate buffers, across tiles too, and a
// buffer is written only after the store that last read it has finished reading (bulk_wait_read0, before the
// barrier of the box before).
template <int BN>
__device__ __forceinline__ void store_slice_tma(const float (&d)[BN / 2], float* bufs, const TensorMap* tmC,
                                                int M, int N, int row0, int col0, int cw)
{
    static_assert(BN % 64 == 0, "an even number of boxes per slice: consecutive boxes alternate buffers across tiles");
    if (row0 >= M) return;                                     // a slice below M has nothing to store
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32, g = lane / 4, tq = lane % 4;
    const bool leader = threadIdx.x % 128 == 0;
    // this thread's rows g and g + 8 of its warp's 16 (both have r % 8 = g), in bytes from the buffer's start
    const u32 row = smem_addr(bufs) + (u32)((warp * 16 + g) * 128 + (tq & 1) * 8);
#pragma unroll
    for (int box = 0; box < BN / 32; ++box) {
        float* buf = bufs + (box & 1) * (64 * 32);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const int j = box * 4 + jj;                        // 8-column block of the slice
            const int q = 2 * jj + tq / 2;                     // 16-byte chunk of the box row
#pragma unroll
            for (int h = 0; h < 2; ++h)                        // rows g, g + 8: 1024 bytes apart
                store2_shared(row + (box & 1) * (64 * 32 * 4) + h * 1024 + (q ^ g) * 16,
                              d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
        fence_proxy_async();                                   // my stores, visible to the copy engine
        if (leader) bulk_wait_read0();                         // the box before has been read from its buffer
        warpgroup_bar(1 + cw);                                 // all 128 threads wrote this box
        if (leader && col0 + box * 32 < N) {                  // (a box wholly right of C is not stored)
            tma_store(tmC, buf, col0 + box * 32, row0);        // parts outside C are dropped
            bulk_commit();
        }
    }
}

// The FP8 GEMM, BN columns per block tile: fp8_wgmma's, with C through store_slice_tma.
template <int BN>
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC,
                                         int M, int N, int K)
{
    constexpr int B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
    constexpr int KSTEPS = F8_BK / 32;                         // wgmma k-steps per stage
    unsigned char* smem = smem_base();
    float* sC = reinterpret_cast<float*>(smem + F8_STAGES * STAGE);   // the C buffers, past the stages
    u64* full = reinterpret_cast<u64*>(smem + F8_STAGES * STAGE + F8_EPI_BYTES);
    u64* empty = full + F8_STAGES;

    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);   // the same for the whole warp, as ptxas sees
    const int tiles_m = (M + F8_BM - 1) / F8_BM, tiles_n = (N + BN - 1) / BN, ktiles = (K + F8_BK - 1) / F8_BK;
    const int units = tiles_m * tiles_n;
    auto tile_of = [&](int t, int& tm, int& tn) {              // grouped order (lesson 6, rung 11)
        const int per_group = F8_GROUP_M * tiles_n, first = (t / per_group) * F8_GROUP_M;
        const int rows = min(tiles_m - first, F8_GROUP_M), in = t % per_group;
        tm = first + in % rows;
        tn = in / rows;
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < F8_STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8);                           // one arrive per consumer warp
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {                                             // ---------------- producer
        regs_dec<40>();
        if (threadIdx.x == 0) {
            u32 phase = 0;
            int s = 0;
            for (int t = blockIdx.x; t < units; t += gridDim.x) {
                int tm, tn;
                tile_of(t, tm, tn);
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&empty[s], phase ^ 1);
                    mbar_expect_tx(&full[s], STAGE);           // whole boxes count, zero-filled too
                    unsigned char* st = smem + s * STAGE;
                    tma_load(st, tmA, &full[s], kt * F8_BK, tm * F8_BM);
                    tma_load(st + F8_A_BYTES, tmB, &full[s], kt * F8_BK, tn * BN);
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
    } else {                                                   // ---------------- consumers
        regs_inc<232>();
        const int cw = wg - 1, lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        float d[NREG];                                         // the Tensor Cores' accumulators
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) d[i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);
                const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int ks = 0; ks < KSTEPS; ++ks)            // 4 k-steps of 32, one group
                    wgmma_e4m3(d, desc_kmajor(a + ks * 32), desc_kmajor(b + ks * 32), 1);
                wgmma_commit();
                wgmma_wait<1>();                               // K-tile kt's group runs on; kt - 1's is done:
                if (prev >= 0) release(prev);                  // its stage goes back to the producer
                prev = s;
                if (++s == F8_STAGES) { s = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            if (prev >= 0) release(prev);
            store_slice_tma<BN>(d, sC + cw * 2 * 64 * 32, tmC, M, N, tm * F8_BM + cw * 64, tn * BN, cw);
        }
    }
    // a consumer's stores have finished before its CTA leaves
    if (wg > 0 && threadIdx.x % 128 == 0) bulk_wait0();
}
#endif

// 128 x 256 tiles, the Tensor Cores accumulate all of K, C through shared memory and TMA stores. cuBLASLt's FP8
// kernels keep about 20 KB of shared memory past their stages, room for such a buffer.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma_store(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, float* __restrict__ C, int M, int N,
    int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<256>(&tmA, &tmB, &tmC, M, N, K);
#endif
}
