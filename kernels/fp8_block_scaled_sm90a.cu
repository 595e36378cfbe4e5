// fp8_block_scaled_sm90a.cu -- Lesson 7's appendix (Hopper only): DeepSeek-V3's recipe, FP8 inputs with
// fine-grained scales applied where the partial sums are promoted (arXiv:2412.19437, sec. 3.3.2).
//
// kernels/fp8_promote_sm90a.cu's fp8_promote_128 (lesson 6's rung 11 with FP8 wgmma, E4M3 A and Bt, FP32 C,
// 128 x 128 block tiles, the partial sum of every K-tile of 128 promoted to an FP32 total) with one change: the
// scales. Activations A carry one scale per 1 x 128 tile (per row, per 128 of K), weights one per 128 x 128
// block; a K-tile of 128 is then one scale block of both, so the promotion is the place to apply them: the
// Tensor Cores sum the 128 products of the raw E4M3 values from zero, and the CUDA cores do
// total = total + partial * (sa * sb), in FP32, rounded to nearest at each step (__fmul_rn, __fadd_rn; the total
// starts at +0). No single accumulator could run over all of K: the scales change from one K-tile to the next.
// Per-tensor scaling needs only one multiply at the end, but then one outlier sets the scale of the whole matrix
// (lesson 7).
//
//   fp8_block_scaled  block tile 128 x 128, the scales applied at every K-tile's promotion
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box 128 rows x 128 bytes); C: M x N row-major float.
//   sa: M x ceil(K / 128) floats, row-major: sa[r][k / 128] multiplies A's row r, K-tile k / 128.
//   sb: ceil(N / 128) x ceil(K / 128) floats, row-major: sb[n / 128][k / 128] (the layout of Bt, N x K;
//       helpers.fp8.quantize_blocks of B, K x N, gives [k / 128][n / 128]: helpers.fp8_scaled.kernel_scales
//       transposes it, and the launcher refuses that layout where its shape tells).
//   The scales are what C's values are multiplied by (amax / 448: 1 / helpers.fp8's scale), not what
//   the inputs were.
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros: ceil(K / 128) is
// unchanged), N a multiple of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros.
// Grid: one CTA per SM (at most one per tile); 384 threads; dynamic shared memory F8_SMEM(128).
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

// The FP8 GEMM with block scales applied at each K-tile's promotion: 128 x 128 block tiles (BN), 64 accumulators
// and 64 totals a thread.
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, float* __restrict__ C,
                                         int M, int N, int K, const float* __restrict__ sa,
                                         const float* __restrict__ sb)
{
    constexpr int BN = 128, B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
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
        float total[NREG];                                     // the FP32 totals
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) d[i] = 0.0f;
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
            // this thread's rows of C (rows g and g + 8 of its warp's 16, store_slice's layout) and the weight
            // block's row of sb; the scales of each K-tile are read from global memory (__ldg: read-only, and small:
            // sa is M x ktiles floats, sb ceil(N / 128) x ktiles) at the top of the K-tile's iteration, so that
            // their latency passes while this warpgroup waits for the stage and its wgmmas run; they are needed
            // only after wgmma_wait.
            const int srow = tm * F8_BM + cw * 64 + ((threadIdx.x % 128) / 32) * 16 + lane / 4;
            const float* sa0 = sa + (size_t)min(srow, M - 1) * ktiles;     // rows past M read row M - 1's scales:
            const float* sa1 = sa + (size_t)min(srow + 8, M - 1) * ktiles; // a valid address; those rows of C are
            const float* sbt = sb + (size_t)tn * ktiles;                    // never stored
            for (int kt = 0; kt < ktiles; ++kt) {
                const float a0 = __ldg(sa0 + kt), a1 = __ldg(sa1 + kt), bs = __ldg(sbt + kt);
                mbar_wait(&full[s], phase);
                const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int ks = 0; ks < KSTEPS; ++ks)            // one K-tile, one promotion period: from zero
                    wgmma_e4m3(d, desc_kmajor(a + ks * 32), desc_kmajor(b + ks * 32), ks != 0);
                wgmma_commit();
                wgmma_wait<0>();
                // the partial sum of this K-tile (128 products, from zero) times the scale of its activation tile
                // and of its weight block, added to the FP32 total. The two scales' product once per row and
                // K-tile; then one multiply and one add per element, each rounded to nearest (no FMA: NVRTC
                // contracts a * b + c into one rounding by default, and helpers.fp8_scaled's model rounds twice).
                const float s0 = __fmul_rn(a0, bs), s1 = __fmul_rn(a1, bs);
#pragma unroll
                for (int j = 0; j < NREG / 4; ++j) {
                    total[4 * j] = __fadd_rn(total[4 * j], __fmul_rn(d[4 * j], s0));           // row g
                    total[4 * j + 1] = __fadd_rn(total[4 * j + 1], __fmul_rn(d[4 * j + 1], s0));
                    total[4 * j + 2] = __fadd_rn(total[4 * j + 2], __fmul_rn(d[4 * j + 2], s1)); // g + 8
                    total[4 * j + 3] = __fadd_rn(total[4 * j + 3], __fmul_rn(d[4 * j + 3], s1));
                }
                release(s);
                if (++s == F8_STAGES) { s = 0; phase ^= 1; }
            }
            store_slice<BN>(total, C, M, N, tm * F8_BM + cw * 64, tn * BN);
        }
    }
}
#endif

// The promotion is not overlapped (within a warpgroup it waits for the Tensor Cores; the two warpgroups' adds and
// wgmmas overlap only as they happen to fall), and a multiply beside each add lengthens it: the scales cost speed.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_block_scaled(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K,
    const float* __restrict__ sa, const float* __restrict__ sb)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm(&tmA, &tmB, C, M, N, K, sa, sb);
#endif
}
