// ladder_sm90a.cu -- Lesson 5, rung 7 (Hopper only): wgmma fed by TMA with mbarriers.
//
// Adds, over rung 6, Hopper's own path to the Tensor Cores:
//   * TMA (cp.async.bulk.tensor): ONE thread asks the copy engine for a whole
//     128 x 64 tile of A and a 256 x 64 tile of B^T; the engine writes them to
//     shared memory in the 128-byte swizzled layout wgmma reads, and counts the
//     bytes on an mbarrier ("complete_tx"); the other 255 threads issue nothing.
//   * mbarriers: each of the 4 pipeline stages has one; a consumer waits on the
//     barrier's phase (parity) to know its data has arrived; a __syncthreads per
//     K-tile still says when a stage is free to refill.
//   * wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies a 64 x 16
//     slice of A by a 16 x 256 slice of B straight from shared memory (no
//     ldmatrix, no fragments of A or B in registers): 64 x 256 x 16 per
//     instruction, 128x the work of one mma.sync m16n8k16 (32x per warp).
// Predicted: about 2x rung 6 (the Tensor Core rate reachable on Hopper only
// through wgmma; the 128 x 256 tile also cuts the bytes requested per FLOP to
// 3/4 of 128 x 128's).
//
// Contract (the helpers zero-pad to meet it, and transpose B, see below):
//   A: M x K row-major half; Bt: N x K row-major half (= B transposed, so both
//   operands are "K-major", the layout wgmma reads without a transpose);
//   C: M x N row-major float; M multiple of 128, N multiple of 256, K of 64.
//   block = 256 threads = 2 warpgroups; warpgroup w computes rows 64w..64w+63
//   of the block's 128 x 256 tile of C. grid = (N / 256, M / 128).
//   Dynamic shared memory: LADDER7_SMEM bytes (> 48 KB: needs the opt-in).
//   The tensor maps (CUtensorMap, 128 bytes) are built on the host with
//   cuTensorMapEncodeTiled and passed by value as __grid_constant__ parameters.
// Each warpgroup walks K in order, 16 at a time, into one FP32 accumulator per
// output element.
//
// Needs sm_90a (wgmma exists only there, not on sm_90 or later GPUs): compile with -arch=sm_90a (NVRTC) or -gencode=arch=compute_90a,code=sm_90a;
// other targets compile an empty kernel (make kernels-check).

#include "hopper_wgmma.cuh"                   // TMA, mbarriers, wgmma and its descriptors (lesson 6 shows them)

#define HBM 128                               // rows of C per block tile
#define HBN 256                               // columns of C per block tile
#define HBK 64                                // K per stage: 64 halves = 128 bytes = one swizzle row
#define HSTAGES 4                             // pipeline stages
#define A_STAGE_BYTES (HBM * HBK * 2)         // 16 KB of A per stage
#define B_STAGE_BYTES (HBN * HBK * 2)         // 32 KB of B^T per stage
#define LADDER7_SMEM (HSTAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 1024 + 64)   // + alignment slack + barriers

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// One K-tile (64 deep) of a warpgroup's 64 x 256 slice: four wgmma k-steps of 16, in K order.
// a: the slice's 64 rows of the A stage; b: the B^T stage. 16 halves = 32 bytes further along K.
__device__ __forceinline__ void mma_ktile(float (&d)[128], const unsigned char* a, const unsigned char* b)
{
#pragma unroll
    for (int ks = 0; ks < HBK / 16; ++ks)
        wgmma_m64n256k16<0>(d, desc_kmajor(a + ks * 32), desc_kmajor(b + ks * 32));
}

// Accumulator layout (PTX ISA, wgmma .m64nNk16 D fragments): warp w of the warpgroup holds rows
// 16w..16w+15 of the 64 x 256 slice; lane (g = lane/4, t = lane%4) holds, for each 8-column
// block j, d[4j], d[4j+1] at (row g, columns 8j+2t, +1) and d[4j+2], d[4j+3] at (row g+8, same).
// Written straight from the registers (C is padded to whole tiles: no bounds to check).
__device__ __forceinline__ void store_slice(const float (&d)[128], float* C, int N, int row0, int col0)
{
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < 128 / 4; ++j) {
        const int c = col0 + j * 8 + 2 * (lane % 4);
        store2(&C[(size_t)r * N + c], d[4 * j], d[4 * j + 1]);
        store2(&C[(size_t)(r + 8) * N + c], d[4 * j + 2], d[4 * j + 3]);
    }
}
#endif

// Grid: (N / 256, M / 128); 256 threads; dynamic shared memory LADDER7_SMEM.
extern "C" __global__ void ladder_wgmma_tma(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char* smem = smem_base();
    unsigned char* sA = smem;                                  // HSTAGES x (128 rows x 64 k)
    unsigned char* sB = smem + HSTAGES * A_STAGE_BYTES;        // HSTAGES x (256 rows x 64 k) of B^T
    u64* full = reinterpret_cast<u64*>(sB + HSTAGES * B_STAGE_BYTES);

    const int tid = threadIdx.x, wg = tid / 128;               // warpgroup wg: rows 64 wg .. 64 wg + 63
    const int row0 = blockIdx.y * HBM, col0 = blockIdx.x * HBN;
    const int ktiles = K / HBK;

    if (tid == 0) {
        for (int s = 0; s < HSTAGES; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    auto load_stage = [&](int s, int kt) {                     // thread 0: ask TMA for K-tile kt
        mbar_expect_tx(&full[s], A_STAGE_BYTES + B_STAGE_BYTES);      // the bytes TMA will deliver
        tma_load(sA + s * A_STAGE_BYTES, &tmA, &full[s], kt * HBK, row0);
        tma_load(sB + s * B_STAGE_BYTES, &tmB, &full[s], kt * HBK, col0);
    };
    if (tid == 0)
        for (int s = 0; s < HSTAGES && s < ktiles; ++s) load_stage(s, s);

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % HSTAGES;
        mbar_wait(&full[s], (kt / HSTAGES) & 1);               // TMA has delivered K-tile kt
        wgmma_fence();
        mma_ktile(d, sA + s * A_STAGE_BYTES + wg * 64 * 128, sB + s * B_STAGE_BYTES);
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads();                                        // both warpgroups are done with stage s
        if (tid == 0 && kt + HSTAGES < ktiles) load_stage(s, kt + HSTAGES);
    }
    store_slice(d, C, N, row0 + wg * 64, col0);
#endif
}
