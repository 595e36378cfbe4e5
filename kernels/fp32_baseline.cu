// fp32_baseline.cu -- Lesson 1: the CUDA-core baseline.
//
// What it teaches: the simplest correct GEMM, C = A * B, with every matrix
// row-major and every element in FP32. One thread owns one element of C and
// walks the whole K dimension with a chain of fused multiply-adds (the compiler
// turns `acc += a * b` into one FFMA instruction: one rounding per step).
//
// Why it is slow: nothing is reused on chip. Each thread streams a full row of
// A and a full column of B from global memory; neighbouring threads in a warp
// read the same A element (a broadcast) and consecutive B elements (coalesced),
// so the caches do most of the work, and the arithmetic units mostly wait.
//
// Launch (the seed article's mapping): block = dim3(16, 16),
// grid = dim3(ceil(N / 16), ceil(M / 16)). Any M, N, K: the bounds check below
// makes the edge threads idle.

extern "C" __global__ void gemm_fp32_kernel(const float* __restrict__ A,
                                            const float* __restrict__ B,
                                            float* __restrict__ C,
                                            int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;   // row of C
    const int col = blockIdx.x * blockDim.x + threadIdx.x;   // column of C
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        // A[row][k] is the same for the 16 threads of a block row: a broadcast.
        // B[k][col] is consecutive across threadIdx.x: one coalesced load.
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    }
    C[(size_t)row * N + col] = acc;
}
