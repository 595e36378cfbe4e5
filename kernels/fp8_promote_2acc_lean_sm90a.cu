// fp8_promote_2acc_lean_sm90a.cu -- Lesson 7's appendix (Hopper only): promotion every 128 products, overlapped
// with the Tensor Cores inside one warpgroup: the course's fastest promoting kernel.
//
// kernels/fp8_promote_sm90a.cu's fp8_promote_128 (lesson 6's rung 11 with FP8 wgmma, E4M3 A and Bt, FP32 C,
// 128 x 128 block tiles, the partial sum of every K-tile of 128 promoted to an FP32 total) with three changes:
//
//   1. Two partial sums per consumer warpgroup: K-tile kt's wgmmas run into one set of registers while K-tile
//      kt - 1's set is added to the total, so the Tensor Cores no longer drain at every K-tile (DeepSeek-V3,
//      sec. 3.3.2, overlaps promotion with MMA across two warpgroups; this overlaps it inside one). The FP32 adds
//      (64 a thread per K-tile) stay on the issue path. The same sums as fp8_promote_128, in the same order.
//      Registers: 64 + 64 for the partial sums and 64 for the totals, 192 a thread, inside the 232 that
//      setmaxnreg gives a consumer.
//   2. Descriptors built once, for stage 0 and k-step 0, and advanced by adds: stage s, k-step ks is
//      (s * STAGE + 32 ks) / 16 further in the address field (hopper_primitives.cuh, desc_plus), where
//      fp8_promote_128 rebuilds both from the address before every wgmma. cuBLASLt's FP8 kernel advances its
//      descriptors by adds too. The descriptors, and the sums, are the same bit for bit.
//   3. The warpgroup index broadcast from lane 0 (__shfl_sync, as CUTLASS's canonical_warp_group_idx does), so
//      that ptxas may keep the descriptors in uniform registers, where a wgmma takes them.
// Its registry entry (helpers/fp8_gemm.py) builds it with a ring of 6 stages (-DF8_STAGES=6; cuBLASLt's
// default-accumulation kernel at 4096^3 has 6) and launches it on 128 CTAs.
//
//   fp8_promote_2acc_lean  block tile 128 x 128, promotion every 128 products, two partial sums
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box 128 rows x 128 bytes); C: M x N row-major float.
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros), N a multiple
// of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros.
// Grid: persistent (at most one CTA per SM and per tile); 384 threads; dynamic shared memory F8_SMEM(128).
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

// The FP8 GEMM with promotion every 128 products and two partial sums per consumer warpgroup: 128 x 128 block tiles
// (BN), 64 + 64 accumulators and 64 totals a thread.
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, float* __restrict__ C,
                                         int M, int N, int K)
{
    constexpr int BN = 128, B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
    constexpr int KSTEPS = F8_BK / 32;                         // wgmma k-steps per stage
    unsigned char* smem = smem_base();
    u64* full = reinterpret_cast<u64*>(smem + F8_STAGES * STAGE);
    u64* empty = full + F8_STAGES;

    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);   // the same for the whole warp, as ptxas sees
    // a consumer's descriptors of stage 0, k-step 0: its 64 rows of A, and B; stage s, k-step ks by adds
    const DescBase da0 = desc_split(desc_kmajor(smem + (wg == 2) * 64 * F8_BK)),
                   db0 = desc_split(desc_kmajor(smem + F8_A_BYTES));
    // a consumer's K-tile: wait for stage s to fill, then its KSTEPS k-steps into d, from zero, as one group
    // (committed, not waited for)
    auto issue_stage = [&](float (&d)[NREG], int s, u32 phase) {
        mbar_wait(&full[s], phase);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks)
            wgmma_e4m3(d, desc_plus(da0, (u32)(s * STAGE + ks * 32) >> 4),
                       desc_plus(db0, (u32)(s * STAGE + ks * 32) >> 4), ks > 0);
        wgmma_commit();
    };
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
    } else {                                                   // ---------------- consumers, two partial sums
        // fp8_promote_128's sums in its order (total += K-tile 0's, then 1's, ...), but the add of K-tile kt - 1
        // waits only for that K-tile's group (wgmma_wait<1>): K-tile kt's group, just committed, keeps the Tensor
        // Cores busy meanwhile, into the other set of registers. The stage of kt - 1 is released before its adds.
        regs_inc<232>();
        const int cw = wg - 1, lane = threadIdx.x % 32;
        int s = 0, prev = -1;
        u32 phase = 0;
        float d0[NREG], d1[NREG], total[NREG];
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        auto issue = [&](float (&d)[NREG]) { issue_stage(d, s, phase); };   // the next K-tile, from zero
        auto add = [&](float (&p)[NREG]) {                     // the K-tile before: its stage released, its sum added
            release(prev);
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] += p[i];
        };
        auto next = [&]() { prev = s; if (++s == F8_STAGES) { s = 0; phase ^= 1; } };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
            for (int kt = 0; kt < ktiles; kt += 2) {           // K-tiles in pairs: kt into d0, kt + 1 into d1
                issue(d0);
                if (kt > 0) {
                    wgmma_wait<1>();                           // K-tile kt - 1's group is done; kt's runs on
                    add(d1);
                }
                next();
                if (kt + 1 < ktiles) {
                    issue(d1);
                    wgmma_wait<1>();
                    add(d0);
                    next();
                }
            }
            // the last K-tile. (Spelt out: written as add(d0) / add(d1), ptxas spills about 600 bytes a thread.)
            wgmma_wait<0>();
            release(prev);
            if (ktiles % 2) {
#pragma unroll
                for (int i = 0; i < NREG; ++i) total[i] += d0[i];
            } else {
#pragma unroll
                for (int i = 0; i < NREG; ++i) total[i] += d1[i];
            }
            store_slice<BN>(total, C, M, N, tm * F8_BM + cw * 64, tn * BN);
        }
    }
}
#endif

// Promotion every 128 products, each consumer warpgroup with two partial sums, descriptors advanced by adds.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_2acc_lean(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm(&tmA, &tmB, C, M, N, K);
#endif
}
