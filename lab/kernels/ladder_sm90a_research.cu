// ladder_sm90a.cu -- Lesson 5, rung 7 (Hopper only): wgmma fed by TMA with mbarriers.
//
// Adds, over rung 6, Hopper's own path to the Tensor Cores:
//   * TMA (cp.async.bulk.tensor): ONE thread asks the copy engine for a whole
//     128 x 64 tile of A and a 256 x 64 tile of B^T; the engine writes them to
//     shared memory in the 128-byte swizzled layout wgmma reads, and counts the
//     bytes on an mbarrier ("complete_tx"); the other 255 threads issue nothing.
//   * mbarriers: each of the 4 pipeline stages has one; a consumer waits on the
//     barrier's phase (parity) instead of a __syncthreads after every copy.
//   * wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies a 64 x 16
//     slice of A by a 16 x 256 slice of B straight from shared memory (no
//     ldmatrix, no fragments of A or B in registers): 64 x 256 x 16 per
//     instruction, 16x the work of one mma.sync m16n8k16 per warp.
// Predicted: about 2x rung 6 (the Tensor Core rate reachable on Hopper only
// through wgmma; the 128 x 256 tile also halves the bytes requested per FLOP).
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
// Needs sm_90a (wgmma and setmaxnreg exist only there, not on sm_90 or later
// GPUs): compile with -arch=sm_90a (NVRTC) or -gencode=arch=compute_90a,code=sm_90a.

typedef unsigned long long u64;
typedef unsigned int u32;

#define BM7 128
#define BN7 256
#define BK7 64                      // 64 halves = 128 bytes: one 128-byte swizzle row
#define ST7 4                       // pipeline stages
#define THREADS7 256
#define TILE_A7 (BM7 * BK7)         // halves per stage of A (16 KB)
#define TILE_B7 (BN7 * BK7)         // halves per stage of B^T (32 KB)
#define LADDER7_SMEM (ST7 * (TILE_A7 + TILE_B7) * 2 + 1024 + 64)   // + alignment slack + barriers

struct __align__(64) TensorMap { u64 bytes[16]; };   // layout-compatible with CUtensorMap

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// (the host pass and sm_90a see the real code; other targets compile an empty kernel
// so that `make kernels-check` can build this file for sm_80 and sm_90 too)
__device__ __forceinline__ u32 smem_addr(const void* p)
{
    unsigned addr;   // the shared-window address of a generic pointer to shared memory
    asm("{\n .reg .u64 a;\n cvta.to.shared.u64 a, %1;\n cvt.u32.u64 %0, a;\n}\n" : "=r"(addr) : "l"(p));
    return addr;
}

// An 8-byte store of two floats (c must be even: 8-byte aligned).
__device__ __forceinline__ void store2(float* p, float x, float y)
{
    float2 v;
    v.x = x;
    v.y = y;
    *reinterpret_cast<float2*>(p) = v;
}

// Shared-memory matrix descriptor for wgmma (PTX ISA, "Matrix Descriptor Format"):
// start address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29 (unused for
// K-major swizzled layouts: 16 bytes by convention), stride byte offset >> 4 in
// 32-45 (1024 bytes: from one group of 8 rows of 128 bytes to the next), swizzle
// mode in 62-63 (1 = 128-byte swizzle). Tiles start 1024-byte aligned.
__device__ __forceinline__ u64 make_desc(const void* p)
{
    const u64 addr = smem_addr(p);
    return ((addr & 0x3FFFF) >> 4) | ((u64)(16 >> 4) << 16) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void mbar_init(u64* bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(u64* bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// Wait until the barrier's phase with this parity has completed. try_wait suspends the thread
// for a while in hardware before it answers "not yet"; after about 2^22 answers (seconds, where a
// real wait takes microseconds) the kernel traps instead of hanging, e.g. on a bad tensor map.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity)
{
    const u32 addr = smem_addr(bar);
    u32 done = 0;
    for (u32 tries = 0; !done; ++tries) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
        if (tries > (1u << 22)) __trap();
    }
}

// 2-D TMA load of the box at (c0 = inner coordinate, c1 = outer) into shared memory.
__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, u64* bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n"
        :: "r"(smem_addr(dst)), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
        : "memory");
}

__device__ __forceinline__ void wgmma_fence()  { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0()  { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// D (64 x 256, FP32, 128 registers per thread) += A (64 x 16, from desc_a) * B (16 x 256, from desc_b)
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 desc_a, u64 desc_b)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, 1, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b));
}

#endif

extern "C" __global__ void ladder_wgmma_tma(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // wgmma's 128-byte swizzle needs 1024-byte aligned tiles: round the base up
    const u32 base = smem_addr(smem_raw);
    unsigned char* smem = smem_raw + ((1024 - (base & 1023)) & 1023);
    unsigned short* sA = reinterpret_cast<unsigned short*>(smem);          // ST7 tiles of 128 x 64 halves
    unsigned short* sB = sA + ST7 * TILE_A7;                               // ST7 tiles of 256 x 64 halves
    u64* full = reinterpret_cast<u64*>(sB + ST7 * TILE_B7);                // one mbarrier per stage

    const int tid = threadIdx.x;
    const int wg = tid / 128;                 // warpgroup: rows 64 wg .. 64 wg + 63 of the tile
    const int row0 = blockIdx.y * BM7, col0 = blockIdx.x * BN7;
    const int ktiles = K / BK7;
    const u32 stage_bytes = (TILE_A7 + TILE_B7) * 2;

    if (tid == 0) {
        for (int s = 0; s < ST7; ++s) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        for (int s = 0; s < ST7 && s < ktiles; ++s) {
            mbar_expect_tx(&full[s], stage_bytes);
            tma_load_2d(sA + s * TILE_A7, &tmA, &full[s], s * BK7, row0);
            tma_load_2d(sB + s * TILE_B7, &tmB, &full[s], s * BK7, col0);
        }
    }

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;

    for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % ST7;
        mbar_wait(&full[s], (kt / ST7) & 1);          // the copy engine has delivered tile kt
        const unsigned short* a = sA + s * TILE_A7 + wg * 64 * BK7;
        const unsigned short* b = sB + s * TILE_B7;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK7 / 16; ++k)            // 16 halves = 32 bytes further along K
            wgmma_m64n256k16(d, make_desc(a + k * 16), make_desc(b + k * 16));
        wgmma_commit();
        wgmma_wait0();
        __syncthreads();                               // both warpgroups are done with stage s
        if (tid == 0 && kt + ST7 < ktiles) {
            mbar_expect_tx(&full[s], stage_bytes);
            tma_load_2d(sA + s * TILE_A7, &tmA, &full[s], (kt + ST7) * BK7, row0);
            tma_load_2d(sB + s * TILE_B7, &tmB, &full[s], (kt + ST7) * BK7, col0);
        }
    }

    // Accumulator layout (PTX ISA, wgmma .m64nNk16 D fragments): warp w of the warpgroup holds
    // rows 16w..16w+15; lane (g = lane/4, t = lane%4) holds, for each n8 block j,
    // d[4j], d[4j+1] at (row g, cols 8j+2t, +1) and d[4j+2], d[4j+3] at (row g+8, same cols).
    const int warp = (tid % 128) / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int r = row0 + wg * 64 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < BN7 / 8; ++j) {
        const int c = col0 + j * 8 + 2 * t;
        store2(&C[(size_t)r * N + c], d[4 * j], d[4 * j + 1]);
        store2(&C[(size_t)(r + 8) * N + c], d[4 * j + 2], d[4 * j + 3]);
    }
#endif
}
