// hopper_wgmma.cuh -- the primitives lesson 6's rungs share, shown once: everything in
// hopper_primitives.cuh (shared-memory addresses, mbarriers, TMA loads, multicast and stores, fences,
// wgmma's fence / commit / wait, setmaxnreg, clusters), plus the wgmma shared-memory descriptors, the FP16
// m64n256k16 instruction (and its 128- and 64-column forms for the skinny tile of rungs 17-24; rungs 25-26
// use the 128-column one too), and the FP16
// epilogue's pack and stmatrix.
// Each rung file (lesson 5's kernels/ladder_sm90a.cu, lesson 6's kernels/hopper_rungNN_sm90a.cu) includes this
// header and nothing else of the course but, for rungs 25-30's tiles, the generated wgmma_widths.cuh; lesson 7's
// FP8 files include it through fp8_wgmma.cuh.

#pragma once

#include "hopper_primitives.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)

// Release this thread's mbarrier.init operations at cluster scope; the __syncthreads / cluster barrier that follows
// publishes them to the CTA's other threads, to TMA and to the other CTAs of the cluster.
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
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
// Stepping 16 along K moves the start address 32 bytes inside the swizzled row.
__device__ __forceinline__ u64 desc_kmajor(const void* p)
{
    return desc_encode(smem_addr(p), 16, 1024);
}

// B, "MN-major" (row-major B: consecutive n are adjacent): each TMA box is 64 k-rows of 64 n
// (128 bytes, swizzled). 8 k-rows make a 1024-byte atom: SBO = 1024 bytes to the next 8 k;
// the next 64 columns are the next box, 64 x 128 = 8192 bytes further: LBO. Stepping 16 along K
// moves the start 16 rows = 2048 bytes (two whole atoms, so the swizzle phase is unchanged).
__device__ __forceinline__ u64 desc_mnmajor(const void* p)
{
    return desc_encode(smem_addr(p), 8192, 1024);
}

// --------------------------------------------------------------------------- the MMA
// D (64 x 256, FP32, 128 registers per thread) += A (64 x 16, K-major, from desc_a) *
// B (16 x 256, from desc_b): one warpgroup, asynchronous (wgmma_commit / wgmma_wait).
// The immediates: scale-d 1 (add to D), scale-a and scale-b 1, A not transposed, B's transpose
// bit TRANS_B (1: B is MN-major, allowed for 16-bit types).
#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
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
        : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56),
          WG_D8(64), WG_D8(72), WG_D8(80), WG_D8(88), WG_D8(96), WG_D8(104), WG_D8(112), WG_D8(120)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}

// The same instruction 128 columns wide (the skinny tile's one consumer, rungs 19-24; rungs 25-26 with a 128-wide
// tile): D is 64 x 128, 64 registers per thread.
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
        : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}

// ... and 64 columns wide (the skinny tile's two consumers, rungs 17-18): D is 64 x 64, 32 registers per thread.
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
        : WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
        : "l"(desc_a), "l"(desc_b), "n"(TRANS_B));
}
#undef WG_D8

// --------------------------------------------------------------------------- the FP16 epilogue
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

#endif
