// fp8.cu -- Lesson 7: the smallest FP8 Tensor Core kernel, on any GPU from sm_89 (Ada, Hopper) on.
//
// fp8_mma_sync: one warp computes a 16 x 8 tile of C with the warp-level instruction
//   mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// (32 products per output per instruction, FP32 accumulator in registers), reading its fragments
// straight from global memory: no shared memory, no reuse. It is slow on purpose; it shows the
// fragment layout of an 8-bit MMA, and lets lesson 7 compare this instruction's accumulation with
// wgmma's (kernels/fp8_wgmma_sm90a.cu) on the same GPU.
//
// Inputs are E4M3 bytes (ml_dtypes float8_e4m3fn). A: M x K row-major. B comes transposed,
// Bt: N x K row-major ("col" in the instruction's name: B's columns are contiguous in k).
// K must be a multiple of 32 (the launcher pads K with zeros); M and N are free.
// Block: 128 threads = 4 warps as 2 x 2, a 32 x 16 tile of C. Grid: (ceil(N / 16), ceil(M / 32)).
//
// Fragment layout (PTX ISA, mma.m16n8k32 with 8-bit inputs), lane = 4 g + t:
//   a0: A[g][4t .. 4t+3]       a1: A[g+8][4t .. 4t+3]   a2, a3: the same 16 columns further on
//   b0: B[4t .. 4t+3][g]       b1: B[16+4t .. 16+4t+3][g]      (four bytes of one 32-bit register)
//   c0, c1: C[g][2t], C[g][2t+1]          c2, c3: C[g+8][2t], C[g+8][2t+1]

typedef unsigned int u32;

// four consecutive E4M3 values of one row (k, k+1, k+2, k+3), or zeros for a row outside the matrix
__device__ __forceinline__ u32 load4(const unsigned char* X, int rows, int K, int row, int k)
{
    return row < rows ? *reinterpret_cast<const u32*>(X + (size_t)row * K + k) : 0u;
}

extern "C" __global__ void fp8_mma_sync(const unsigned char* __restrict__ A, const unsigned char* __restrict__ Bt,
                                        float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * 32 + (warp / 2) * 16, col0 = blockIdx.x * 16 + (warp % 2) * 8;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 32) {
        const u32 a0 = load4(A, M, K, row0 + g, k0 + 4 * t), a1 = load4(A, M, K, row0 + g + 8, k0 + 4 * t);
        const u32 a2 = load4(A, M, K, row0 + g, k0 + 16 + 4 * t), a3 = load4(A, M, K, row0 + g + 8, k0 + 16 + 4 * t);
        const u32 b0 = load4(Bt, N, K, col0 + g, k0 + 4 * t), b1 = load4(Bt, N, K, col0 + g, k0 + 16 + 4 * t);
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    const int r = row0 + g, c = col0 + 2 * t;
    if (r < M && c < N) C[(size_t)r * N + c] = d[0];
    if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = d[1];
    if (r + 8 < M && c < N) C[(size_t)(r + 8) * N + c] = d[2];
    if (r + 8 < M && c + 1 < N) C[(size_t)(r + 8) * N + c + 1] = d[3];
#endif
}

// fp8_convert: the GPU's own FP32 -> FP8 conversion, for lesson 7's check of what it does past the
// largest number. cvt.rn.satfinite.e4m3x2.f32 (and .e5m2x2) converts two floats into two bytes (the
// first operand into the high byte, the second into the low byte); PTX has no form of it without
// .satfinite. One thread converts one value to both formats.
extern "C" __global__ void fp8_convert(const float* __restrict__ x, unsigned char* __restrict__ e4m3,
                                       unsigned char* __restrict__ e5m2, int n)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned short a, b;
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(a) : "f"(0.0f), "f"(x[i]));
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(b) : "f"(0.0f), "f"(x[i]));
        e4m3[i] = (unsigned char)(a & 0xFF);
        e5m2[i] = (unsigned char)(b & 0xFF);
    }
#endif
}
