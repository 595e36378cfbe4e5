// fp8_promote_sm90a.cu -- Lesson 7 (Hopper only): the FP8 GEMM with promotion to FP32.
//
// kernels/fp8_wgmma_sm90a.cu's kernel (lesson 6's rung 11 with FP8 wgmma, E4M3 A and Bt, FP32 C,
// 128 x 128 block tiles) with one change, promotion: the Tensor Cores accumulate NC products of each
// output, then the partial sum is added to an FP32 total on the CUDA cores (an ordinary FP32 add,
// rounded to nearest) and the Tensor Cores start again from zero (wgmma's scale-d = 0). This is the fix
// of DeepSeek-V3's report (arXiv:2412.19437, sec. 3.3.2) for the few bits Hopper's FP8 accumulator
// keeps (14 significant bits, cut toward zero). Lesson 7 measures those bits and what promotion costs.
//
//   fp8_promote_NC   promotion every NC = 32, 64, 128, 256, 512 products (fp8_gemm<NC>): below 128 inside
//                    a K-tile, from 128 on at the end of every NC / 128 K-tiles
//                    (128 x 256 tiles would need 128 + 128 accumulator registers per thread)
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box 128 rows x 128 bytes); C: M x N row-major float.
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros), N a multiple
// of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros.
// Grid: one CTA per SM (at most one per tile); 384 threads; dynamic shared memory F8_SMEM(128).
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
// F8_PERIOD: how fp8_promote_256 and _512 end a K-tile (a knob, 2 by default; lesson 7, "A common trap").
// 2: every K-tile waits for its group and lets its stage go at once, as fp8_promote_128's do, and only a
// period's last K-tile adds. 0: the K loop decides at run time whether this K-tile ends a period; one that
// does not keeps its group in flight (wgmma_wait<1>) and lets the stage before go. Where the two paths meet
// ptxas cannot tell whether a group still writes the accumulators and injects a wait for all of them (its
// message C7517). The same wgmmas in the same order either way: C bit for bit the same.
#ifndef F8_PERIOD
#define F8_PERIOD 2
#endif
static_assert(F8_PERIOD == 0 || F8_PERIOD == 2, "F8_PERIOD is 0 (the period decided at run time) or 2 (the default)");

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

// The FP8 GEMM with promotion every NC products: 128 x 128 block tiles (BN), 64 accumulators and 64 totals a thread.
template <int NC>
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, float* __restrict__ C,
                                         int M, int N, int K)
{
    constexpr int BN = 128, B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
    constexpr int KSTEPS = F8_BK / 32;                         // wgmma k-steps per stage
    constexpr int EVERY = NC / 32;                             // k-steps per promotion
    constexpr int PSTAGES = EVERY >= KSTEPS ? EVERY / KSTEPS : 1; // NC >= 128: stages per promotion
    static_assert(NC % 32 == 0 && NC > 0 && (EVERY <= KSTEPS ? KSTEPS % EVERY == 0 : EVERY % KSTEPS == 0),
                  "NC: a multiple of 32 that divides, or is divided by, the 128 of a stage");
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
        float total[NREG];                                     // the FP32 totals
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) d[i] = 0.0f;
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
            int prev = -1;
            if constexpr (F8_PERIOD == 2 && PSTAGES > 1) {
                // F8_PERIOD=2: each K-tile waits for its group and lets its stage go; only a period's last K-tile
                // (and the tile's last) adds
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&full[s], phase);
                    const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                    const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                    const bool fresh = kt % PSTAGES == 0;     // a period's first K-tile starts d from zero
                    wgmma_fence();
#pragma unroll
                    for (int ks = 0; ks < KSTEPS; ++ks)
                        wgmma_e4m3(d, desc_kmajor(a + ks * 32), desc_kmajor(b + ks * 32), !fresh || ks > 0);
                    wgmma_commit();
                    wgmma_wait<0>();
                    release(s);
                    if ((kt + 1) % PSTAGES == 0 || kt == ktiles - 1) {
#pragma unroll
                        for (int i = 0; i < NREG; ++i) total[i] += d[i];
                    }
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            } else if constexpr (EVERY >= KSTEPS) {
                // promotion every PSTAGES K-tiles (fp8_promote_128: every K-tile): 4 k-steps, one group
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&full[s], phase);
                    const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                    const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                    wgmma_fence();
#pragma unroll
                    for (int ks = 0; ks < KSTEPS; ++ks) {
                        // a promotion period's first k-step starts the Tensor Cores from zero
                        const bool fresh = ks == 0 && kt % PSTAGES == 0;
                        wgmma_e4m3(d, desc_kmajor(a + ks * 32), desc_kmajor(b + ks * 32), !fresh);
                    }
                    wgmma_commit();
                    const bool promote = (kt + 1) % PSTAGES == 0 || kt == ktiles - 1;
                    if (!promote) {                            // (F8_PERIOD=0 only) keep the group in flight
                        wgmma_wait<1>();
                        if (prev >= 0) release(prev);
                        prev = s;
                    } else {                                   // the promotion: wait for all, add to the total
                        wgmma_wait<0>();
#pragma unroll
                        for (int i = 0; i < NREG; ++i) total[i] += d[i];
                        if (prev >= 0) release(prev);
                        release(s);
                        prev = -1;
                    }
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            } else {
                // promotion every EVERY (< 4) k-steps: each group ends in an FP32 add
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&full[s], phase);
                    const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                    const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                    wgmma_fence();
#pragma unroll
                    for (int ks = 0; ks < KSTEPS; ks += EVERY) {
#pragma unroll
                        for (int j = 0; j < EVERY; ++j)
                            wgmma_e4m3(d, desc_kmajor(a + (ks + j) * 32), desc_kmajor(b + (ks + j) * 32), j != 0);
                        wgmma_commit();
                        wgmma_wait<0>();
#pragma unroll
                        for (int i = 0; i < NREG; ++i) total[i] += d[i];
                        wgmma_fence();
                    }
                    release(s);
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            }
            store_slice<BN>(total, C, M, N, tm * F8_BM + cw * 64, tn * BN);
        }
    }
}
#endif

// Promotion to FP32 every 32 products of each output (every wgmma k-step).
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_32(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<32>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 64 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_64(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<64>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion to FP32 every 128 products (one K-tile; DeepSeek-V3's N_C).
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_128(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion to FP32 every 256 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_256(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<256>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion to FP32 every 512 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_512(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<512>(&tmA, &tmB, C, M, N, K);
#endif
}
