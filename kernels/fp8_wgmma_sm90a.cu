// fp8_wgmma_sm90a.cu -- Lesson 7 (Hopper only): an FP8 GEMM on the Tensor Cores, no promotion.
//
// The kernels take E4M3 inputs (1 sign, 4 exponent, 3 fraction bits; the bytes of ml_dtypes'
// float8_e4m3fn) and write an FP32 C. They are lesson 6's warp-specialised, persistent kernel
// (rung 11: a TMA producer warpgroup, two wgmma consumer warpgroups, a ring of full/empty
// mbarriers, one CTA per SM walking the tiles in groups of 8 tile rows) with two changes:
//
//   1. wgmma's FP8 form, m64nNk32: 32 products per instruction instead of 16. A K-tile of 128
//      E4M3 values is 128 bytes, one swizzle row, as 64 halves were: A's layout, descriptor and TMA
//      box are rung 11's, measured in bytes; B's are K-major like A's (rung 7's, point 2).
//   2. Both operands K-major. wgmma's transpose bit exists only for 16-bit inputs, so B comes in
//      transposed: Bt is N x K row-major (the "TN" layout cuBLASLt also asks of FP8).
//
// The Tensor Cores accumulate all of K: each output's running sum keeps 14 significant bits (lesson 7
// measures them). kernels/fp8_promote_sm90a.cu is this kernel with promotion to FP32.
//
//   fp8_wgmma        block tile 128 x 256 (the fast one)
//   fp8_wgmma_n128   block tile 128 x 128 (the same tile as the promoting kernels)
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box BN rows x 128 bytes); C: M x N row-major float.
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros), N a multiple
// of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros.
// Grid: one CTA per SM (at most one per tile); 384 threads; dynamic shared memory F8_SMEM(BN).
// Needs sm_90a (wgmma, setmaxnreg). Other targets compile empty kernels (make kernels-check).

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

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// The accumulator layout of wgmma m64nN (PTX ISA): warp w of the warpgroup holds rows 16w..16w+15;
// lane (g = lane/4, t = lane%4) holds, per 8-column block j, d[4j], d[4j+1] at (row g, columns
// 8j+2t, +1) and d[4j+2], d[4j+3] at (row g+8, same). Written only inside C (N % 8 == 0).
template <int BN>
__device__ __forceinline__ void store_slice(const float (&d)[BN / 2], float* C, int M, int N, int row0, int col0)
{
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int c = col0 + j * 8 + 2 * (lane % 4);
        if (c < N) {
            if (r < M) store2(&C[(size_t)r * N + c], d[4 * j], d[4 * j + 1]);
            if (r + 8 < M) store2(&C[(size_t)(r + 8) * N + c], d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

// The FP8 GEMM, BN columns per block tile (256 or 128): lesson 6's rung 11 with FP8 wgmma.
template <int BN>
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, float* __restrict__ C,
                                         int M, int N, int K)
{
    constexpr int B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
    constexpr int KSTEPS = F8_BK / 32;                         // wgmma k-steps per stage
    unsigned char* smem = smem_base();
    u64* full = reinterpret_cast<u64*>(smem + F8_STAGES * STAGE);
    u64* empty = full + F8_STAGES;

    const int wg = threadIdx.x / 128;
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
            store_slice<BN>(d, C, M, N, tm * F8_BM + cw * 64, tn * BN);
        }
    }
}
#endif

// The fast kernel: 128 x 256 tiles, the Tensor Cores accumulate all of K.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<256>(&tmA, &tmB, C, M, N, K);
#endif
}

// The same with 128 x 128 tiles: the baseline the promoting kernels are timed against.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma_n128(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128>(&tmA, &tmB, C, M, N, K);
#endif
}
