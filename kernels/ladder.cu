// ladder.cu -- Lesson 5: closing the gap to cuBLAS, one idea per rung.
//
// Rung 1 is wmma_gemm_naive in wmma.cu (lesson 2): one warp per 16x16 tile of C,
// A and B read from global memory at every K step. Rungs 2-6 live here; each
// adds ONE idea to the rung before it, and its comment says what it adds and
// the gain predicted before it was measured (the lesson shows prediction and
// measurement side by side).
//
// Common contract of rungs 2-6 (the helpers pad with zeros to meet it; the
// lesson says so):
//   A: M x K row-major half, B: K x N row-major half, C: M x N row-major float;
//   FP16 inputs, FP32 accumulators, FP32 output;
//   M and N multiples of 128 (the block tile), K a multiple of 32 (BK);
//   block = 256 threads (8 warps), grid = (N / 128, M / 128).
// Each kernel is first declared with __launch_bounds__(256, 2): at least 2
// blocks per SM, so the compiler keeps to 128 registers per thread (65536 / 512).
// Every block computes a 128 x 128 tile of C. The 8 warps form a 2 (M) x 4 (N)
// grid; each warp owns a 64 x 32 sub-tile: 4 x 2 WMMA 16x16 fragments (rungs
// 2-5) or 4 x 4 mma.sync m16n8 tiles (rung 6). Every output element has one
// accumulator and walks K in order, 16 at a time, so all rungs compute the same
// sums in the same order as rung 1 (same emulation on the CPU).

#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

#define BM 128
#define BN 128
#ifndef BK
#define BK 32          // K-depth of a shared-memory tile (a knob, see below)
#endif
#define NTHREADS 256
#define WM 64          // warp tile rows
#define WN 32          // warp tile columns
#define FM (WM / 16)   // 4 fragments down
#define FN (WN / 16)   // 2 fragments across

// ---------------------------------------------------------------------------
// Knobs: compile-time values to change without editing the code
// (helpers.try_kernel(like, KNOB=value) compiles this file with -DKNOB=value;
// helpers.tryout.KNOBS lists the values each rung allows and what each
// teaches). Every default is the rung as recorded.
//   BK          K-depth of a tile, all rungs (32; 16 or 64)
//   RUNG2_PAD   rung 2's padding per shared-memory row, in halves (0)
//   SMEM_PAD    rungs 3-6's padding per shared-memory row, in halves (8)
//   STAGES      rungs 5-6: shared-memory buffers of the cp.async pipeline (4)
//   WAIT_GROUP  rungs 5-6: cp.async groups left in flight when a thread
//               waits for its tile (STAGES - 2: all but the one it needs)
//   LDMATRIX    rung 6: 1 = ldmatrix.x4 loads the fragments, 0 = each thread
//               loads its own fragment registers with 32-bit shared loads (1)
#ifndef RUNG2_PAD
#define RUNG2_PAD 0
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 8
#endif
static_assert(BK % 16 == 0, "BK must be a multiple of 16, the k of one MMA");
static_assert(RUNG2_PAD % 8 == 0 && SMEM_PAD % 8 == 0,
              "padding must be a multiple of 8 halves: WMMA's ldm and 16-byte copies need it");

// ---------------------------------------------------------------------------
// The inner step shared by the WMMA rungs: one BK-deep slice of the block tile
// in shared memory (As: BM x BK with leading dimension lda, Bs: BK x BN with
// leading dimension ldb) multiplied into the warp's 4 x 2 accumulators.
__device__ __forceinline__ void wmma_block_step(
    const half* As, int lda, const half* Bs, int ldb, int warp_m, int warp_n,
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> (&acc)[FM][FN])
{
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[FM];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
            wmma::load_matrix_sync(a[i], As + (warp_m * WM + i * 16) * lda + kk, lda);
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::load_matrix_sync(b[j], Bs + kk * ldb + warp_n * WN + j * 16, ldb);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j)
                wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
}

__device__ __forceinline__ void wmma_store_tile(
    float* C, int N, int row0, int col0, int warp_m, int warp_n,
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> (&acc)[FM][FN])
{
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + warp_m * WM + i * 16) * N
                                      + col0 + warp_n * WN + j * 16,
                                    acc[i][j], N, wmma::mem_row_major);
}

// ---------------------------------------------------------------------------
// Rungs 2 and 3 share one body; PAD is the only difference.
//   PAD = 0: rows of As are 32 halves = 64 bytes, rows of Bs 128 halves = 256
//   bytes. The WMMA loads read 16-byte pieces of 8 consecutive rows at once:
//   for Bs all 8 rows start in the same bank (256 is a multiple of 128), an
//   8-way bank conflict; for As rows fall 64 bytes apart, 2 rows per 128-byte
//   line, a 4-way conflict.
//   PAD = 8: each row grows by 8 halves = 16 bytes, so 8 consecutive rows start
//   in 8 different 16-byte bank groups: conflict-free.
// Copies global -> shared one half (2 bytes) per thread per instruction.
template <int PAD>
__device__ __forceinline__ void tiled_body(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) half As[BM][BK + PAD];
    __shared__ __align__(128) half Bs[BK][BN + PAD];
    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int warp_m = warp / 4, warp_n = warp % 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // BM*BK = BK*BN = 4096 halves per tile: 16 per thread, consecutive threads
        // on consecutive addresses (coalesced, but 2 bytes per load).
#pragma unroll
        for (int e = tid; e < BM * BK; e += NTHREADS) {
            const int r = e / BK, c = e % BK;
            As[r][c] = A[(size_t)(row0 + r) * K + k0 + c];
        }
#pragma unroll
        for (int e = tid; e < BK * BN; e += NTHREADS) {
            const int r = e / BN, c = e % BN;
            Bs[r][c] = B[(size_t)(k0 + r) * N + col0 + c];
        }
        __syncthreads();
        wmma_block_step(&As[0][0], BK + PAD, &Bs[0][0], BN + PAD, warp_m, warp_n, acc);
        __syncthreads();   // everyone is done with the tile before it is overwritten
    }
    wmma_store_tile(C, N, row0, col0, warp_m, warp_n, acc);
}

// Rung 2 -- shared-memory block tiling.
// Adds: a 128 x 128 block tile staged through shared memory, 8 warps with 4 x 2
// fragments each; every element of A and B loaded from global memory is reused
// by 128 / 16 = 8x more fragments than in rung 1 (rung 1 reuses a loaded A tile
// only inside one warp). Predicted: about 3x rung 1 (the loads stop dominating,
// but bank conflicts and 2-byte copies remain).
extern "C" __global__ void __launch_bounds__(NTHREADS, 2) ladder_smem_tiled(const half* __restrict__ A,
    const half* __restrict__ B, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void ladder_smem_tiled(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    tiled_body<RUNG2_PAD>(A, B, C, M, N, K);
}

// Rung 3 -- padding (skew) against bank conflicts.
// Adds: 8 halves (16 bytes) of padding per shared-memory row, nothing else.
// Predicted: about 1.5x rung 2 (the fragment loads from shared memory stop
// replaying 4-8 times).
extern "C" __global__ void __launch_bounds__(NTHREADS, 2) ladder_smem_padded(const half* __restrict__ A,
    const half* __restrict__ B, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void ladder_smem_padded(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    tiled_body<SMEM_PAD>(A, B, C, M, N, K);
}

// ---------------------------------------------------------------------------
#define PAD 8
#if SMEM_PAD != 8      // knob SMEM_PAD: another padding for rungs 4-6 (rung 3 reads SMEM_PAD)
#undef PAD
#define PAD SMEM_PAD
#endif
#define LDA_S (BK + PAD)   // 40 halves = 80 bytes per As row
#define LDB_S (BN + PAD)   // 136 halves = 272 bytes per Bs row

// Rung 4 -- 16-byte vectorized global -> shared copies.
// Adds: each thread copies 8 halves (one uint4) per instruction instead of 1:
// a 128 x 32 tile is 512 uint4, 2 per thread, instead of 16 scalar loads and
// 16 scalar stores. Requires K and N multiples of 8 and 16-byte aligned rows
// (true under the contract). Predicted: about 1.3x rung 3 (8x fewer load/store
// instructions; the same bytes).
extern "C" __global__ void __launch_bounds__(NTHREADS, 2) ladder_vec16(const half* __restrict__ A,
    const half* __restrict__ B, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void ladder_vec16(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) half As[BM * LDA_S];
    __shared__ __align__(128) half Bs[BK * LDB_S];
    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int warp_m = warp / 4, warp_n = warp % 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int v = tid; v < BM * BK / 8; v += NTHREADS) {      // A: 4 uint4 per row
            const int r = v / (BK / 8), c = (v % (BK / 8)) * 8;
            *reinterpret_cast<uint4*>(&As[r * LDA_S + c]) =
                *reinterpret_cast<const uint4*>(&A[(size_t)(row0 + r) * K + k0 + c]);
        }
#pragma unroll
        for (int v = tid; v < BK * BN / 8; v += NTHREADS) {      // B: 16 uint4 per row
            const int r = v / (BN / 8), c = (v % (BN / 8)) * 8;
            *reinterpret_cast<uint4*>(&Bs[r * LDB_S + c]) =
                *reinterpret_cast<const uint4*>(&B[(size_t)(k0 + r) * N + col0 + c]);
        }
        __syncthreads();
        wmma_block_step(As, LDA_S, Bs, LDB_S, warp_m, warp_n, acc);
        __syncthreads();
    }
    wmma_store_tile(C, N, row0, col0, warp_m, warp_n, acc);
}

// ---------------------------------------------------------------------------
// cp.async (sm_80+): a copy from global to shared memory that does not pass
// through registers and does not block the thread; commit_group / wait_group
// count groups of such copies.
#ifndef STAGES
#define STAGES 4
#endif
#ifndef WAIT_GROUP
#define WAIT_GROUP (STAGES - 2)
#endif
static_assert(STAGES >= 2, "the pipeline needs at least 2 stages: one computed, one loading");
static_assert(WAIT_GROUP >= 0 && WAIT_GROUP <= STAGES - 2,
              "WAIT_GROUP above STAGES - 2 would let a thread read a tile whose copies are still in flight");
#define STAGE_A (BM * LDA_S)                     // halves per stage of A (10240 bytes)
#define STAGE_B (BK * LDB_S)                     // halves per stage of B (8704 bytes)
#define PIPE_SMEM_BYTES (STAGES * (STAGE_A + STAGE_B) * 2)   // 75776 bytes: needs the >48 KB opt-in

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    unsigned addr;   // the shared-window address of a generic pointer to shared memory
    asm("{\n .reg .u64 a;\n cvta.to.shared.u64 a, %1;\n cvt.u32.u64 %0, a;\n}\n" : "=r"(addr) : "l"(p));
    return addr;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_u32(smem)), "l"(gmem));
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N_PENDING));
#endif
}

// Issue the cp.async copies of K-tile `kt` into stage `s` (same mapping as rung 4).
__device__ __forceinline__ void load_stage_async(half* smem, int s, int kt,
                                                 const half* __restrict__ A, const half* __restrict__ B,
                                                 int N, int K, int row0, int col0, int tid)
{
    half* As = smem + s * STAGE_A;
    half* Bs = smem + STAGES * STAGE_A + s * STAGE_B;
    const int k0 = kt * BK;
#pragma unroll
    for (int v = tid; v < BM * BK / 8; v += NTHREADS) {
        const int r = v / (BK / 8), c = (v % (BK / 8)) * 8;
        cp_async16(&As[r * LDA_S + c], &A[(size_t)(row0 + r) * K + k0 + c]);
    }
#pragma unroll
    for (int v = tid; v < BK * BN / 8; v += NTHREADS) {
        const int r = v / (BN / 8), c = (v % (BN / 8)) * 8;
        cp_async16(&Bs[r * LDB_S + c], &B[(size_t)(k0 + r) * N + col0 + c]);
    }
}

// Rung 5 -- cp.async multi-stage pipeline (sm_80+).
// Adds: STAGES = 4 shared-memory buffers; while the warps multiply K-tile kt,
// the copies of tiles kt+1 .. kt+3 are in flight, so memory latency hides behind
// Tensor Core work (rungs 2-4 load, wait, compute, in lock step). Dynamic shared
// memory: PIPE_SMEM_BYTES = 75776 bytes, above the 48 KB default, so the launcher
// raises the kernel's max_dynamic_shared_size_bytes first. Predicted: about 1.6x
// rung 4.
extern "C" __global__ void __launch_bounds__(NTHREADS, 2) ladder_cp_async(const half* __restrict__ A,
    const half* __restrict__ B, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void ladder_cp_async(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* smem = reinterpret_cast<half*>(smem_raw);
    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int warp_m = warp / 4, warp_n = warp % 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int ktiles = K / BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    // prologue: tiles 0 .. STAGES-2 in flight (one commit group each, empty when past the end)
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage_async(smem, s, s, A, B, N, K, row0, col0, tid);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<WAIT_GROUP>();   // this thread's copies of tile kt have landed
        __syncthreads();               // ... everyone's have; and tile kt-1 is no longer read
        const int next = kt + STAGES - 1;
        if (next < ktiles) load_stage_async(smem, next % STAGES, next, A, B, N, K, row0, col0, tid);
        cp_async_commit();
        const int s = kt % STAGES;
        wmma_block_step(smem + s * STAGE_A, LDA_S, smem + STAGES * STAGE_A + s * STAGE_B, LDB_S,
                        warp_m, warp_n, acc);
    }
    cp_async_wait<0>();
    wmma_store_tile(C, N, row0, col0, warp_m, warp_n, acc);
}

// ---------------------------------------------------------------------------
// Rung 6 -- ldmatrix + PTX mma.sync m16n8k16 (sm_80+).
// Adds: the WMMA calls are replaced by the instructions they compile to, under
// our control: ldmatrix.x4 loads four 8x8 matrices from shared memory in one
// instruction, in exactly the register layout mma.sync wants (.trans transposes
// B on the way), and the warp tile becomes 4 x 4 m16n8k16 products whose
// fragments are reused across the tile from registers. Same pipeline, tile,
// padding and summation order as rung 5 (mma.sync m16n8k16 is the operation
// WMMA m16n16k16 issues twice). Predicted: about 1.3x rung 5.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, .f16 inputs, .f32 accumulators),
// g = lane / 4, t = lane % 4:
//   A 16x16 : a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B 16x8  : b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C 16x8  : c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// An 8-byte store of two floats (c must be even: 8-byte aligned).
__device__ __forceinline__ void store2(float* p, float x, float y)
{
    float2 v;
    v.x = x;
    v.y = y;
    *reinterpret_cast<float2*>(p) = v;
}

#define MT (WM / 16)   // 4 m16 tiles per warp
#define NT (WN / 8)    // 4 n8 tiles per warp
#ifndef LDMATRIX
#define LDMATRIX 1
#endif

#if !LDMATRIX
// knob LDMATRIX=0: two halves in one register, `lo` in the low 16 bits (the fragment order)
__device__ __forceinline__ unsigned pack_halves(half lo, half hi)
{
    __half2 v = __halves2half2(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}
#endif

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const half* p)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const half* p)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
#endif
}

__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 2) ladder_mma_sync(const half* __restrict__ A,
    const half* __restrict__ B, float* __restrict__ C, int M, int N, int K);
extern "C" __global__ void ladder_mma_sync(const half* __restrict__ A, const half* __restrict__ B,
    float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* smem = reinterpret_cast<half*>(smem_raw);
    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int warp_m = warp / 4, warp_n = warp % 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int ktiles = K / BK;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // ldmatrix addressing: lane l gives the row address of matrix l / 8:
    // row (l % 16), column block (l / 16) * 8 -- for A rows are m, for B rows are k.
    const int lrow = lane % 16;
    const int lcol = (lane / 16) * 8;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage_async(smem, s, s, A, B, N, K, row0, col0, tid);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<WAIT_GROUP>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < ktiles) load_stage_async(smem, next % STAGES, next, A, B, N, K, row0, col0, tid);
        cp_async_commit();
        const int s = kt % STAGES;
        const half* As = smem + s * STAGE_A;
        const half* Bs = smem + STAGES * STAGE_A + s * STAGE_B;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MT][4];
            unsigned b[NT][2];
#if LDMATRIX
#pragma unroll
            for (int i = 0; i < MT; ++i)
                ldmatrix_x4(a[i], As + (warp_m * WM + i * 16 + lrow) * LDA_S + kk + lcol);
#pragma unroll
            for (int j = 0; j < NT; j += 2) {   // one x4.trans = two n8 tiles
                unsigned r[4];
                ldmatrix_x4_trans(r, Bs + (kk + lrow) * LDB_S + warp_n * WN + j * 8 + lcol);
                b[j][0] = r[0]; b[j][1] = r[1];
                b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
            }
#else
            // knob LDMATRIX=0: every thread loads its own registers of the layouts above
            // (g = lane / 4, t = lane % 4): A with one 32-bit load per register, B (k runs down
            // the rows of Bs) with two 16-bit loads per register
            const int g = lane / 4, t = lane % 4;
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                const half* p = As + (warp_m * WM + i * 16 + g) * LDA_S + kk + 2 * t;
                a[i][0] = *reinterpret_cast<const unsigned*>(p);                  // (g,     2t)
                a[i][1] = *reinterpret_cast<const unsigned*>(p + 8 * LDA_S);      // (g + 8, 2t)
                a[i][2] = *reinterpret_cast<const unsigned*>(p + 8);              // (g,     2t + 8)
                a[i][3] = *reinterpret_cast<const unsigned*>(p + 8 * LDA_S + 8);  // (g + 8, 2t + 8)
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const half* p = Bs + (kk + 2 * t) * LDB_S + warp_n * WN + j * 8 + g;
                b[j][0] = pack_halves(p[0], p[LDB_S]);                  // k 2t, 2t + 1
                b[j][1] = pack_halves(p[8 * LDB_S], p[9 * LDB_S]);      // k 2t + 8, 2t + 9
            }
#endif
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_16816(acc[i][j], a[i], b[j][0], b[j][1]);
        }
    }
    cp_async_wait<0>();

    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int r = row0 + warp_m * WM + i * 16 + g;
            const int c = col0 + warp_n * WN + j * 8 + 2 * t;
            store2(&C[(size_t)r * N + c], acc[i][j][0], acc[i][j][1]);
            store2(&C[(size_t)(r + 8) * N + c], acc[i][j][2], acc[i][j][3]);
        }
}
