// fp8_wgmma.cuh -- what lesson 7's FP8 kernels add to lesson 6's primitives (hopper_wgmma.cuh): the FP8 wgmma,
// m64nNk32 with E4M3 inputs, in the two widths the kernels use. Everything else (TMA, mbarriers, the K-major
// descriptor, fences, setmaxnreg) is lesson 6's. Included by each kernels/fp8_*_sm90a.cu.

#pragma once

#include "hopper_wgmma.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)

// scale-d (the predicate p) = accumulate: 0 starts the accumulators from zero (D = A B), the start of a promotion
// period; 1 adds to them. Both operands K-major (wgmma's transpose bits exist only for 16-bit inputs).
#define D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
              "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

// D (64 x 256, FP32, 128 registers per thread) = A (64 x 32) * B (32 x 256) + (accumulate ? D : 0).
__device__ __forceinline__ void wgmma_e4m3(float (&d)[128], u64 desc_a, u64 desc_b, int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1;\n"
        "}\n"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56),
          D8(64), D8(72), D8(80), D8(88), D8(96), D8(104), D8(112), D8(120)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D (64 x 128, FP32, 64 registers per thread) = A (64 x 32) * B (32 x 128) + (accumulate ? D : 0).
__device__ __forceinline__ void wgmma_e4m3(float (&d)[64], u64 desc_a, u64 desc_b, int accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1;\n"
        "}\n"
        : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#undef D8

#endif
