// fp8_sm90a.cu -- Lesson 7 (Hopper only): an FP8 GEMM on the Tensor Cores, and what accuracy costs.
//
// The kernels take E4M3 inputs (1 sign, 4 exponent, 3 fraction bits; the bytes of ml_dtypes'
// float8_e4m3fn) and write an FP32 C. They are lesson 6's warp-specialised, persistent kernel
// (rung 11: a TMA producer warpgroup, two wgmma consumer warpgroups, a ring of full/empty
// mbarriers, one CTA per SM walking the tiles in groups of 8 tile rows; 128 CTAs where the registry sets
// `ctas`, helpers/fp8_gemm.py) with three changes:
//
//   1. wgmma's FP8 form, m64nNk32: 32 products per instruction instead of 16. A K-tile of 128
//      E4M3 values is 128 bytes, one swizzle row, as 64 halves were: the shared-memory layouts,
//      descriptors and TMA boxes are the FP16 ones, measured in bytes.
//   2. Both operands K-major. wgmma's transpose bit exists only for 16-bit inputs, so B comes in
//      transposed: Bt is N x K row-major (the "TN" layout cuBLASLt also asks of FP8).
//   3. (fp8_promote_*) promotion: the Tensor Cores accumulate N_C products of each output, then the
//      partial sum is added to an FP32 total on the CUDA cores (an ordinary FP32 add, rounded to
//      nearest) and the Tensor Cores start again from zero (wgmma's scale-d = 0). This is the fix
//      of DeepSeek-V3's report (arXiv:2412.19437, sec. 3.3.2) for the few bits Hopper's FP8
//      accumulator keeps. Lesson 7 measures those bits and what promotion costs in speed.
//
//   fp8_wgmma        block tile 128 x 256, no promotion (the fast one)
//   fp8_wgmma_n128   block tile 128 x 128, no promotion (the same tile as the promoting kernels)
//   fp8_promote_NC   block tile 128 x 128, promotion every NC = 32, 64, 128, 256, 512 products
//                    (128 x 256 would need 128 + 128 accumulator registers per thread)
//   fp8_promote_pingpong  promotion every 128 products, overlapped with the Tensor Cores: the two
//                    consumer warpgroups issue their wgmmas in turn, so one adds its partial sum to its
//                    total while the other's wgmmas run (the same sums as fp8_promote_128, bit for bit)
//   fp8_promote_2acc  promotion every 128 products with two partial sums in one warpgroup: K-tile kt's
//                    wgmmas run into one set of registers while K-tile kt - 1's set is added to the total
//   fp8_promote_2acc_lean  fp8_promote_2acc with descriptors advanced by adds (in uniform registers) and a
//                    ring of 6 stages, on 128 CTAs: the course's fastest promoting kernel
//   fp8_wgmma_store  fp8_wgmma whose C leaves through shared memory and a TMA store, on 128 CTAs
//   fp8_block_scaled fp8_promote_128 with DeepSeek-V3's fine-grained scales applied at promotion: every
//                    K-tile of 128 is one scale block, and its partial sum is multiplied by the scale of
//                    its 1 x 128 activation tile and of its 128 x 128 weight block before it joins the
//                    total (kernel fp8_block_scaled, at the end of the file)
//
// Contract: A: M x K row-major E4M3 (TMA map, box 128 rows x 128 bytes, 128-byte swizzle);
// Bt: N x K row-major E4M3 (TMA map, box BN rows x 128 bytes); C: M x N row-major float.
// K a multiple of 16 (TMA needs 16-byte row strides; the launcher pads K with zeros), N a multiple
// of 8; M, N, K otherwise free: TMA fills what lies outside A and Bt with zeros.
// Needs sm_90a (wgmma, setmaxnreg). Other targets compile empty kernels (make kernels-check).

#include "hopper_primitives.cuh"              // smem_addr, smem_base, mbarriers, tma_load, wgmma fences, setmaxnreg

#define F8_BM 128                             // rows of C per block tile
#define F8_BK 128                             // K per pipeline stage: 128 E4M3 = 128 bytes = one swizzle row
#ifndef F8_STAGES
#define F8_STAGES 4                           // TMA/mbarrier stages (-DF8_STAGES sets it: 7 fit with 128 x 128 tiles)
#endif
#define F8_THREADS 384                        // 1 producer + 2 consumer warpgroups
#define F8_GROUP_M 8                          // tile rows per group of the L2-aware order
#define F8_A_BYTES (F8_BM * F8_BK)            // 16 KB of A per stage
#define F8_SMEM(BN) (F8_STAGES * (F8_A_BYTES + (BN) * F8_BK) + 1024 + 128)
#define F8_EPI_BYTES (2 * 2 * 64 * 32 * 4)    // fp8_wgmma_store: 2 consumers x 2 buffers of 64 x 32 floats (8 KB), past F8_SMEM

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)

// K-major operand in shared memory (A, and Bt): rows of 128 bytes, 128-byte swizzle, 8-row atoms
// 1024 bytes apart (SBO); a k-step of 32 E4M3 moves the start 32 bytes inside the swizzled row.
__device__ __forceinline__ u64 desc_kmajor(const void* p)
{
    const u32 a = smem_addr(p);
    return (u64)((a & 0x3FFFF) >> 4) | ((u64)(16 >> 4) << 16) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}

// F8_DESC_ADD, a build switch (0 by default): 1 builds a consumer's two descriptors once, for stage 0 and k-step 0,
// and reaches stage s, k-step ks by adding (s * STAGE + 32 ks) / 16 to the address field (hopper_primitives.cuh,
// desc_plus), where 0 rebuilds both from the address before every wgmma (the mask, shift and ORs of desc_kmajor,
// then moves into uniform registers). cuBLASLt's FP8 kernel advances its descriptors by adds too. The descriptors,
// and the sums, are the same bit for bit. fp8_promote_2acc_lean passes DESC = 1 itself.
#ifndef F8_DESC_ADD
#define F8_DESC_ADD 0
#endif

// --------------------------------------------------------------------------- the FP8 MMA
// scale-d (the predicate p) = accumulate: 0 starts the accumulators from zero (D = A B).
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
            if (r < M) *reinterpret_cast<float2*>(&C[(size_t)r * N + c]) = make_float2(d[4 * j], d[4 * j + 1]);
            if (r + 8 < M) *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + c]) = make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}

__device__ __forceinline__ void store2_shared(u32 addr, float x, float y)   // two floats to a shared address
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" :: "r"(addr), "f"(x), "f"(y) : "memory");
}

// F8_STORE_SPREAD, a build switch of fp8_wgmma_store (0 by default). Take as a model that 8-byte stores are served
// half a warp at a time: with 0 the 16 lanes of a half (g = 0-3 or 4-7) write chunks (q ^ g) that all lie in one half
// of the 128-byte row, 128 bytes into 64 bytes of banks, two wavefronts where one would do (Nsight Compute counts bank
// conflicts in these stores). With 1, lanes with tq = 2, 3 write 8-column block jj ^ 2 at step jj (chunk q ^ 4: the
// row's other half), so a half-warp covers all 32 banks once; every lane still writes all four blocks, the same
// values to the same places. It halves the wavefronts but measured no faster, so the default stays 0.
#ifndef F8_STORE_SPREAD
#define F8_STORE_SPREAD 0
#endif

// F8_FLOW, a build switch of the two-sum kernels (0 by default). With 0 a consumer ends each tile with wgmma_wait<0>,
// the last add and store_slice: its Tensor Core work stops while it stores 64 x 128 floats. With 1 the K-tiles of all
// its tiles are one stream: K-tile i goes into partial sum i % 2 whatever tile it belongs to, so the next tile's first
// K-tile is issued before the previous tile's last sum is added and its C stored, and those wgmmas run during the
// store. The same sums in the same order: C bit for bit the same. The stream is more than twice the code, with more
// integer bookkeeping per K-tile than the store it hides: it ran slower, so the default stays 0.
#ifndef F8_FLOW
#define F8_FLOW 0
#endif

// F8_UNIFORM, a build switch (0 by default; fp8_wgmma_store and fp8_promote_2acc_lean pass UNIFORM = true
// themselves). A wgmma takes its descriptors in uniform registers (one value for the whole warp). With 0 the
// warpgroup index is threadIdx.x / 128, which ptxas cannot prove the same across a warp: the A descriptor (its rows
// depend on the consumer) is then built in ordinary registers and moved into uniform ones (R2UR) before every wgmma,
// with the constant half of both descriptors too. With 1 the index is broadcast from lane 0 (__shfl_sync), as
// CUTLASS's canonical_warp_group_idx does, so ptxas may keep the descriptors in uniform registers: the same wgmmas on
// the same data, C bit for bit the same, and fewer instructions. The other kernels keep the build their record
// measured.
#ifndef F8_UNIFORM
#define F8_UNIFORM 0
#endif
// F8_PERIOD: how fp8_promote_256 and _512 end a K-tile (2 by default). With 0 their K loop decides at run time,
// K-tile by K-tile, whether this one ends a promotion period: one that does not keeps its group of wgmmas in flight
// (wgmma_wait<1>) and lets the stage before go; one that does waits for all (wgmma_wait<0>) and adds. Where the two
// paths meet, ptxas cannot tell whether a group still writes the accumulators, and it injects a wait for all of them
// (its message C7517, "warpgroup.wait is injected ... to allow use of registers defined by GMMA"): every K-tile then
// waits as fp8_promote_128's does, yet a K-tile that does not promote lets its stage go only after the next K-tile's
// wgmmas, so the producer has one stage less to fill ahead. With 2 every K-tile waits for its group and lets its
// stage go at once, as fp8_promote_128's do, and only a period's last K-tile adds: fp8_promote_128 with fewer adds.
// The same wgmmas in the same order either way: C bit for bit the same. Lesson 7 ("A common trap") compares the two.
#ifndef F8_PERIOD
#define F8_PERIOD 2
#endif
#if F8_PERIOD == 1
#error "F8_PERIOD is 0 (the period decided at run time) or 2 (the default); this file has no build 1"
#endif
#if F8_PERIOD != 0 && F8_PERIOD != 1 && F8_PERIOD != 2
#error "F8_PERIOD is 0 (the period decided at run time) or 2 (the default)"
#endif
// F8_PAIR=1 (two K-tiles per stage) and F8_FLOW=2 (only a tile's first K-tile issued before its store) name builds
// the lab's probes tried (lab/README.md) that this file does not hold: they are refused rather than built as
// something else.
#if defined(F8_PAIR) && F8_PAIR != 0
#error "F8_PAIR=1 (two K-tiles per stage) is not a build of this file"
#endif
// F8_EXTRA_L2, a build switch (0 by default) that prices L2 reads in energy: with 1 the producer loads each K-tile's
// box of A twice, both copies into the same place, and the stage's mbarrier waits for both. The same wgmmas on the
// same data, C bit for bit the same, with half as many L2 reads again as the kernel needs.
#ifndef F8_EXTRA_L2
#define F8_EXTRA_L2 0
#endif
#if F8_EXTRA_L2 != 0 && F8_EXTRA_L2 != 1
#error "F8_EXTRA_L2 is 0 (the default) or 1 (A's box loaded twice per K-tile)"
#endif
#if F8_FLOW == 2
#error "F8_FLOW is 0 (the default) or 1 (one stream of K-tiles); F8_FLOW=2 is not a build of this file"
#endif

// The same slice through shared memory and TMA stores (fp8_wgmma_store; lesson 6's rung 13, FP32 C): boxes of
// 64 rows x 32 floats (128 bytes a row, written with the 128-byte swizzle the map of C expects: 16-byte chunk q of
// row r at chunk q ^ (r % 8)), through the consumer's two 8 KB buffers `bufs`, one written while TMA reads the other.
// The consumer goes back to its wgmmas as soon as its last box is handed to TMA: the stores of one tile run on while
// the next tile's first K-tiles are multiplied. Box b uses buffer b % 2, and every tile goes through all BN / 32 boxes
// (an even number; a box wholly right of C is written to its buffer but not stored), so that consecutive boxes always
// alternate buffers, across tiles too, and a buffer is written only after the store that last read it has finished
// reading (bulk_wait_read0, before the barrier of the box before).
template <int BN>
__device__ __forceinline__ void store_slice_tma(const float (&d)[BN / 2], float* bufs, const TensorMap* tmC,
                                                int M, int N, int row0, int col0, int cw)
{
    static_assert(BN % 64 == 0, "an even number of boxes per slice: consecutive boxes alternate buffers across tiles");
    if (row0 >= M) return;                                     // a slice below M has nothing to store
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32, g = lane / 4, tq = lane % 4;
    const bool leader = threadIdx.x % 128 == 0;
    // this thread's rows g and g + 8 of its warp's 16 (both have r % 8 = g), in bytes from the buffer's start
    const u32 row = smem_addr(bufs) + (u32)((warp * 16 + g) * 128 + (tq & 1) * 8);
#pragma unroll
    for (int box = 0; box < BN / 32; ++box) {
        float* buf = bufs + (box & 1) * (64 * 32);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const bool other = F8_STORE_SPREAD && (tq & 2);    // this lane's block: jj, or jj ^ 2 (see the switch)
            const int j = box * 4 + jj, jo = box * 4 + (jj ^ 2);   // 8-column blocks of the slice
            const int q = 2 * (other ? jj ^ 2 : jj) + tq / 2;  // 16-byte chunk of the box row
#pragma unroll
            for (int h = 0; h < 2; ++h)                        // rows g, g + 8: 1024 bytes apart
                store2_shared(row + (box & 1) * (64 * 32 * 4) + h * 1024 + (q ^ g) * 16,
                              other ? d[4 * jo + 2 * h] : d[4 * j + 2 * h], other ? d[4 * jo + 2 * h + 1] : d[4 * j + 2 * h + 1]);
        }
        fence_proxy_async();                                   // my stores, visible to the copy engine
        if (leader) bulk_wait_read0();                         // the box before has been read from its buffer
        warpgroup_bar(1 + cw);                                 // all 128 threads wrote this box
        if (leader && col0 + box * 32 < N) {                  // (a box wholly right of C is not stored)
            tma_store(tmC, buf, col0 + box * 32, row0);        // parts outside C are dropped
            bulk_commit();
        }
    }
}

// The FP8 GEMM: lesson 6's rung 11 with FP8 wgmma. BN: block tile columns (256 or 128);
// NC: 0 = the Tensor Cores accumulate all of K; else promotion to FP32 every NC products.
// OVERLAP (NC = 128): the two consumer warpgroups take turns issuing, so that one's promotion runs while
// the other's wgmmas are in flight. (Two accumulator sets in one warpgroup instead need 64 + 64 + 64 registers a
// thread for the sets and the total, 192: within the 232 of setmaxnreg, though ptxas reports the 168 a thread has
// at the kernel's start. That is TWO, below.)
// SCALED (NC = 128, BN = 128, not OVERLAP): block scaling at promotion (fp8_block_scaled); `scales` is
// then (sa, sb), its two scale arrays, and empty otherwise. (A parameter pack, and `if constexpr` around
// what uses it, leave the other kernels' code exactly as it was: even an unused pointer parameter with a
// default value renumbers their PTX registers.)
// Argument i of the pack (all of type T): SCALED's sa, sb; TSTORE's tmC.
template <typename T, typename... S>
__device__ __forceinline__ T extra_arg(int i, S... extra)
{
    const T p[] = {extra...};
    return p[i];
}

// TWO (NC = 128, BN = 128): each consumer warpgroup keeps two partial sums and promotes K-tile kt - 1's while
// K-tile kt's wgmmas run (fp8_promote_2acc). Registers: 64 + 64 for the partial sums and 64 for the totals, 192 a
// thread, inside the 232 that setmaxnreg gives a consumer.
// DESC: descriptors built once and advanced by adds (F8_DESC_ADD, the build switch, for every kernel but
// fp8_promote_2acc_lean, which passes 1).
// TSTORE (NC = 0): C through shared memory and TMA stores (store_slice_tma); `scales` is then (tmC), the map of C
// (boxes of 64 rows x 32 floats), the pack carrying it for the reason given above.
// UNIFORM: the warpgroup index broadcast from lane 0, so that the wgmma descriptors live in uniform registers
// (F8_UNIFORM, the build switch, for every kernel but fp8_wgmma_store and fp8_promote_2acc_lean, which pass true).
template <int BN, int NC, bool OVERLAP = false, bool SCALED = false, bool TWO = false, int DESC = F8_DESC_ADD,
          bool TSTORE = false, bool UNIFORM = F8_UNIFORM, typename... Scales>
__device__ __forceinline__ void fp8_gemm(const TensorMap* tmA, const TensorMap* tmB, float* __restrict__ C,
                                         int M, int N, int K, Scales... scales)
{
    constexpr int B_BYTES = BN * F8_BK, STAGE = F8_A_BYTES + B_BYTES, NREG = BN / 2;
    constexpr int KSTEPS = F8_BK / 32;                         // wgmma k-steps per stage
    constexpr int EVERY = NC / 32;                             // k-steps per promotion (0: never)
    constexpr int PSTAGES = EVERY >= KSTEPS ? EVERY / KSTEPS : 1; // NC >= 128: stages per promotion
    static_assert(NC == 0 || (NC % 32 == 0 && (EVERY <= KSTEPS ? KSTEPS % EVERY == 0 : EVERY % KSTEPS == 0)),
                  "NC: a multiple of 32 that divides, or is divided by, the 128 of a stage");
    static_assert(!OVERLAP || (NC == F8_BK && BN == 128), "the overlapped promotion: every stage, 128 x 128 tiles");
    static_assert(!TWO || (NC == F8_BK && BN == 128 && !OVERLAP && !SCALED), "two partial sums: NC 128, 128 x 128");
    static_assert(!SCALED || (NC == F8_BK && BN == 128 && !OVERLAP && sizeof...(Scales) == 2),
                  "block scaling: one promotion per K-tile of 128 (one scale block), 128 x 128 tiles, (sa, sb)");
    static_assert(!TSTORE || (NC == 0 && sizeof...(Scales) == 1), "the TMA-store epilogue: no promotion, (tmC)");
    unsigned char* smem = smem_base();
    [[maybe_unused]] float* sC = reinterpret_cast<float*>(smem + F8_STAGES * STAGE);   // TSTORE: the C buffers
    u64* full = reinterpret_cast<u64*>(smem + F8_STAGES * STAGE + (TSTORE ? F8_EPI_BYTES : 0));
    u64* empty = full + F8_STAGES;

    const int wg = UNIFORM ? __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) : threadIdx.x / 128;
    // a consumer's descriptors of stage s, k-step ks: its 64 rows of A, and B (DESC: from stage 0's)
    const DescBase da0 = DESC ? desc_split(desc_kmajor(smem + (wg == 2) * 64 * F8_BK)) : DescBase{0, 0},
                   db0 = DESC ? desc_split(desc_kmajor(smem + F8_A_BYTES)) : DescBase{0, 0};
    auto desc_a = [&](const unsigned char* a, int s, int ks) {
        return DESC ? desc_plus(da0, (u32)(s * STAGE + ks * 32) >> 4) : desc_kmajor(a + ks * 32);
    };
    auto desc_b = [&](const unsigned char* b, int s, int ks) {
        return DESC ? desc_plus(db0, (u32)(s * STAGE + ks * 32) >> 4) : desc_kmajor(b + ks * 32);
    };
    // a consumer's K-tile: wait for stage s to fill, then its KSTEPS k-steps into d as one group (committed, not
    // waited for); `fresh`: the first k-step starts d from zero, the rest add to it
    auto issue_stage = [&](float (&d)[NREG], int s, u32 phase, int cw, bool fresh) {
        mbar_wait(&full[s], phase);
        const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
        const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks)
            wgmma_e4m3(d, desc_a(a, s, ks), desc_b(b, s, ks), !fresh || ks > 0);
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
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {                                             // ---------------- producer
        regs_dec<40>();
        if (threadIdx.x == 0) {
            int s = 0;
            u32 phase = 0;
            for (int t = blockIdx.x; t < units; t += gridDim.x) {
                int tm, tn;
                tile_of(t, tm, tn);
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&empty[s], phase ^ 1);
                    mbar_expect_tx(&full[s], STAGE + F8_EXTRA_L2 * F8_A_BYTES);   // whole boxes count, zero-filled too
                    unsigned char* st = smem + s * STAGE;
                    tma_load(st, tmA, &full[s], kt * F8_BK, tm * F8_BM);
                    tma_load(st + F8_A_BYTES, tmB, &full[s], kt * F8_BK, tn * BN);
#if F8_EXTRA_L2
                    tma_load(st, tmA, &full[s], kt * F8_BK, tm * F8_BM);          // F8_EXTRA_L2: A's box again
#endif
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            }
        }
    } else if (OVERLAP) {                                      // ---------------- consumers, taking turns
        // fp8_promote_128's loop, with the two consumer warpgroups issuing their wgmmas in turn: warpgroup
        // 1 issues stage s only after warpgroup 0 has, and warpgroup 0 issues stage s + 1 only after
        // warpgroup 1 has issued s (two named barriers, ids 3 and 4, of 256 threads: one side arrives,
        // the other waits). The Tensor Cores then run 0's group, 1's group, 0's next, ...: while one
        // warpgroup adds its partial sum to its total, the other's wgmmas keep the Tensor Cores busy.
        regs_inc<232>();
        const int cw = wg - 1, lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        bool first_turn = true;
        float d[NREG], total[NREG];
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        auto my_turn = [&]() {                                 // wait until the other warpgroup has issued
            if (cw == 0 && first_turn) { first_turn = false; return; }
            asm volatile("bar.sync %0, 256;\n" :: "r"(cw == 0 ? 3 : 4) : "memory");
        };
        auto your_turn = [&]() { asm volatile("bar.arrive %0, 256;\n" :: "r"(cw == 0 ? 4 : 3) : "memory"); };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[s], phase);
                const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                my_turn();
                wgmma_fence();
#pragma unroll
                for (int ks = 0; ks < KSTEPS; ++ks)            // one promotion period: from zero
                    wgmma_e4m3(d, desc_a(a, s, ks), desc_b(b, s, ks), ks != 0);
                wgmma_commit();
                your_turn();
                wgmma_wait<0>();
                release(s);                                    // the stage first: the producer refills it
#pragma unroll
                for (int i = 0; i < NREG; ++i) total[i] += d[i];    // ... while the other's wgmmas run
                if (++s == F8_STAGES) { s = 0; phase ^= 1; }
            }
            store_slice<BN>(total, C, M, N, tm * F8_BM + cw * 64, tn * BN);
        }
        if (cw == 0 && !first_turn) asm volatile("bar.sync 3, 256;\n" ::: "memory");   // warpgroup 1's last arrive
    } else if (TWO) {                                          // ---------------- consumers, two partial sums
        // fp8_promote_128's sums in its order (total += K-tile 0's, then 1's, ...), but the add of K-tile kt - 1
        // waits only for that K-tile's group (wgmma_wait<1>): K-tile kt's group, just committed, keeps the Tensor
        // Cores busy meanwhile, into the other set of registers. The stage of kt - 1 is released before its adds.
        regs_inc<232>();
        const int cw = wg - 1, lane = threadIdx.x % 32;
        int s = 0, prev = -1;
        u32 phase = 0;
        float d0[NREG], d1[NREG], total[NREG];
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        auto issue = [&](float (&d)[NREG]) { issue_stage(d, s, phase, cw, true); };   // the next K-tile, from zero
        auto add = [&](float (&p)[NREG]) {                     // the K-tile before: its stage released, its sum added
            release(prev);
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] += p[i];
        };
        auto next = [&]() { prev = s; if (++s == F8_STAGES) { s = 0; phase ^= 1; } };
#if F8_FLOW == 1
        // One stream of K-tiles over all of this CTA's tiles: (t, kt) is the next one to issue, into set d0 or d1 in
        // turn. After each issue the K-tile before it (in the other set) is retired: wait for its group (<1>: the one
        // just issued runs on), release its stage, add it to the total and, if it was its tile's last K-tile, store
        // the total and start the next tile's from zero. The stream's last K-tile is retired after the loop (<0>).
        // (tmX, tnX, lX, rX: the tile, whether it is the tile's last K-tile, and the stage of the K-tile in set X.)
        if (blockIdx.x < units) {
            int t = blockIdx.x, kt = 0, tm, tn;
            tile_of(t, tm, tn);
            bool more = true, l0 = false, l1 = false;
            int tm0 = 0, tn0 = 0, tm1 = 0, tn1 = 0, r0 = 0, r1 = 0;
#pragma unroll
            for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
            auto take = [&](int& ptm, int& ptn, bool& last, int& stage) {   // note the K-tile just issued, move on
                ptm = tm; ptn = tn; last = kt == ktiles - 1; stage = s;
                next();
                if (++kt == ktiles) {
                    kt = 0;
                    t += gridDim.x;
                    more = t < units;
                    if (more) tile_of(t, tm, tn);
                }
            };
            auto retire = [&](float (&p)[NREG], int stage, bool last, int ptm, int ptn) {
                if (lane == 0) mbar_arrive(&empty[stage]);
#pragma unroll
                for (int i = 0; i < NREG; ++i) total[i] += p[i];
                if (last) {
                    store_slice<BN>(total, C, M, N, ptm * F8_BM + cw * 64, ptn * BN);
#pragma unroll
                    for (int i = 0; i < NREG; ++i) total[i] = 0.0f;
                }
            };
            issue(d0);
            take(tm0, tn0, l0, r0);
            bool in0 = true;                                   // the last K-tile issued is in d0
            while (more) {
                if (in0) {
                    issue(d1);
                    take(tm1, tn1, l1, r1);
                    wgmma_wait<1>();
                    retire(d0, r0, l0, tm0, tn0);
                } else {
                    issue(d0);
                    take(tm0, tn0, l0, r0);
                    wgmma_wait<1>();
                    retire(d1, r1, l1, tm1, tn1);
                }
                in0 = !in0;
            }
            wgmma_wait<0>();
            if (in0) retire(d0, r0, l0, tm0, tn0); else retire(d1, r1, l1, tm1, tn1);
        }
#else
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
#endif
    } else {                                                   // ---------------- consumers
        regs_inc<232>();
        const int cw = wg - 1, lane = threadIdx.x % 32;
        int s = 0;
        u32 phase = 0;
        float d[NREG];                                         // the Tensor Cores' accumulators
        float total[NC ? NREG : 1];                            // the FP32 totals (promotion only)
        auto release = [&](int stage) { if (lane == 0) mbar_arrive(&empty[stage]); };
        for (int t = blockIdx.x; t < units; t += gridDim.x) {
            int tm, tn;
            tile_of(t, tm, tn);
#pragma unroll
            for (int i = 0; i < NREG; ++i) d[i] = 0.0f;
            if (NC) {
#pragma unroll
                for (int i = 0; i < (NC ? NREG : 1); ++i) total[i] = 0.0f;
            }
            int prev = -1;
            // SCALED: this thread's rows of C (rows g and g + 8 of its warp's 16, store_slice's layout) and
            // the weight block's row of sb; the scales of each K-tile are read from global memory (__ldg:
            // read-only, and small: sa is M x ktiles floats, sb ceil(N / 128) x ktiles) at the top of the
            // K-tile's iteration, so that their latency passes while this warpgroup waits for the stage and
            // its wgmmas run; they are needed only after wgmma_wait.
            [[maybe_unused]] const float *sa0 = nullptr, *sa1 = nullptr, *sbt = nullptr;
            if constexpr (SCALED) {
                const float* __restrict__ sa = extra_arg<const float*>(0, scales...);
                const float* __restrict__ sb = extra_arg<const float*>(1, scales...);
                const int srow = tm * F8_BM + cw * 64 + ((threadIdx.x % 128) / 32) * 16 + lane / 4;
                sa0 = sa + (size_t)min(srow, M - 1) * ktiles;         // rows past M read row M - 1's scales:
                sa1 = sa + (size_t)min(srow + 8, M - 1) * ktiles;     // a valid address; those rows of C are
                sbt = sb + (size_t)tn * ktiles;                        // never stored
            }
            if constexpr (F8_PERIOD == 2 && PSTAGES > 1 && !SCALED && !OVERLAP && !TWO) {
                // F8_PERIOD=2: fp8_promote_128's stage (wait for the group, let the stage go), the add only at a
                // period's last stage (and at the last K-tile)
                for (int kt = 0; kt < ktiles; ++kt) {
                    issue_stage(d, s, phase, cw, kt % PSTAGES == 0);   // stage s into d, from zero at a period's start
                    wgmma_wait<0>();
                    release(s);
                    if ((kt + 1) % PSTAGES == 0 || kt == ktiles - 1) {
#pragma unroll
                        for (int i = 0; i < NREG; ++i) total[i] += d[i];
                    }
                    if (++s == F8_STAGES) { s = 0; phase ^= 1; }
                }
            } else
            for (int kt = 0; kt < ktiles; ++kt) {
                [[maybe_unused]] float a0, a1, bs;
                if constexpr (SCALED) {
                    a0 = __ldg(sa0 + kt);
                    a1 = __ldg(sa1 + kt);
                    bs = __ldg(sbt + kt);
                }
                mbar_wait(&full[s], phase);
                const unsigned char* a = smem + s * STAGE + cw * 64 * F8_BK;
                const unsigned char* b = smem + s * STAGE + F8_A_BYTES;
                wgmma_fence();
                if (NC == 0 || EVERY >= KSTEPS) {
                    // no promotion inside this stage: 4 k-steps, one group, one group kept in flight
#pragma unroll
                    for (int ks = 0; ks < KSTEPS; ++ks) {
                        // a promotion period's first k-step starts the Tensor Cores from zero
                        const bool fresh = NC && ks == 0 && kt % PSTAGES == 0;
                        wgmma_e4m3(d, desc_a(a, s, ks), desc_b(b, s, ks), !fresh);
                    }
                    wgmma_commit();
                    const bool promote = NC && ((kt + 1) % PSTAGES == 0 || kt == ktiles - 1);
                    if (!promote) {
                        wgmma_wait<1>();
                        if (prev >= 0) release(prev);
                        prev = s;
                    } else {
                        wgmma_wait<0>();
                        if constexpr (SCALED) {
                            // DeepSeek-V3 sec. 3.3.2: the partial sum of this K-tile (128 products, from zero)
                            // times the scale of its activation tile and of its weight block, added to the
                            // FP32 total. The two scales' product once per row and K-tile; then one multiply
                            // and one add per element, each rounded to nearest (no FMA: NVRTC contracts
                            // a * b + c into one rounding by default, and helpers.fp8_scaled's model rounds twice).
                            const float s0 = __fmul_rn(a0, bs), s1 = __fmul_rn(a1, bs);
#pragma unroll
                            for (int j = 0; j < NREG / 4; ++j) {
                                total[4 * j] = __fadd_rn(total[4 * j], __fmul_rn(d[4 * j], s0));           // row g
                                total[4 * j + 1] = __fadd_rn(total[4 * j + 1], __fmul_rn(d[4 * j + 1], s0));
                                total[4 * j + 2] = __fadd_rn(total[4 * j + 2], __fmul_rn(d[4 * j + 2], s1)); // g + 8
                                total[4 * j + 3] = __fadd_rn(total[4 * j + 3], __fmul_rn(d[4 * j + 3], s1));
                            }
                        } else {
#pragma unroll
                            for (int i = 0; i < (NC ? NREG : 1); ++i) total[i] += d[i];
                        }
                        if (prev >= 0) release(prev);
                        release(s);
                        prev = -1;
                    }
                } else {
                    // promotion every EVERY (< 4) k-steps: each group ends in an FP32 add
#pragma unroll
                    for (int ks = 0; ks < KSTEPS; ks += (EVERY ? EVERY : 1)) {
#pragma unroll
                        for (int j = 0; j < (EVERY ? EVERY : 1); ++j)
                            wgmma_e4m3(d, desc_a(a, s, ks + j), desc_b(b, s, ks + j), j != 0);
                        wgmma_commit();
                        wgmma_wait<0>();
#pragma unroll
                        for (int i = 0; i < (NC ? NREG : 1); ++i) total[i] += d[i];
                        wgmma_fence();
                    }
                    release(s);
                }
                if (++s == F8_STAGES) { s = 0; phase ^= 1; }
            }
            if (NC == 0) {
                wgmma_wait<0>();
                if (prev >= 0) release(prev);
                if constexpr (TSTORE)
                    store_slice_tma<BN>(d, sC + cw * 2 * 64 * 32, extra_arg<const TensorMap*>(0, scales...), M, N,
                                        tm * F8_BM + cw * 64, tn * BN, cw);
                else
                    store_slice<BN>(d, C, M, N, tm * F8_BM + cw * 64, tn * BN);
            } else {
                store_slice<BN>(*reinterpret_cast<float(*)[NREG]>(total), C, M, N, tm * F8_BM + cw * 64, tn * BN);
            }
        }
    }
    // TSTORE: a consumer's stores have finished before its CTA leaves. (After the roles' if/else: at the end of the
    // consumers' branch this wait made ptxas spill registers in a two-sum build.)
    if (TSTORE && wg > 0 && threadIdx.x % 128 == 0) bulk_wait0();
}
#endif

// The fast kernel: 128 x 256 tiles, the Tensor Cores accumulate all of K.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<256, 0>(&tmA, &tmB, C, M, N, K);
#endif
}

// fp8_wgmma with C through shared memory and TMA stores (store_slice_tma): the tile's stores run on while the next
// tile's wgmmas start, where fp8_wgmma's consumers store from registers, 64 float2 stores a thread, with the Tensor
// Cores idle. cuBLASLt's FP8 kernels keep about 20 KB of shared memory past their stages, room for such a buffer.
// 4 stages + 32 KB of buffers: 225 KB. With uniform descriptors (UNIFORM), on 128 CTAs (helpers/fp8_gemm.py).
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma_store(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, const __grid_constant__ TensorMap tmC, float* __restrict__ C, int M, int N,
    int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<256, 0, false, false, false, F8_DESC_ADD, true, true>(&tmA, &tmB, C, M, N, K, &tmC);
#endif
}

// The same with 128 x 128 tiles: the baseline the promoting kernels are timed against.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_wgmma_n128(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 0>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion to FP32 every 32 products of each output (every wgmma k-step).
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_32(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 32>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 64 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_64(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 64>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 128 products (one K-tile; DeepSeek-V3's N_C).
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_128(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 128>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 128 products, the two consumer warpgroups taking turns at the Tensor Cores.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_pingpong(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 128, true>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 128 products, each consumer warpgroup with two partial sums: K-tile kt - 1's is added to the
// total while K-tile kt's wgmmas run (DeepSeek-V3 sec. 3.3.2 overlaps promotion with MMA across two warpgroups, this
// overlaps it inside one), so the Tensor Cores no longer drain at every K-tile; the FP32 adds (64 a thread per
// K-tile) stay on the issue path. The same sums as fp8_promote_128, in the same order.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_2acc(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 128, false, false, true>(&tmA, &tmB, C, M, N, K);
#endif
}

// fp8_promote_2acc with descriptors built once and advanced by adds (DESC = 1, as cuBLASLt's kernel does), uniform
// descriptors (UNIFORM), a ring of 6 stages (its registry entry asks for -DF8_STAGES=6, helpers/fp8_gemm.py;
// cuBLASLt's default-accumulation kernel at 4096^3 has 6) and 128 CTAs: the course's fastest promoting kernel.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_2acc_lean(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 128, false, false, true, 1, false, true>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 256 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_256(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 256>(&tmA, &tmB, C, M, N, K);
#endif
}

// Promotion every 512 products.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_promote_512(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 512>(&tmA, &tmB, C, M, N, K);
#endif
}


// DeepSeek-V3's recipe (arXiv:2412.19437, sec. 3.3.2): FP8 inputs with fine-grained scales, applied where
// the partial sums are promoted. Activations A carry one scale per 1 x 128 tile (per row, per 128 of K),
// weights one per 128 x 128 block; a K-tile of 128 is then one scale block of both, so fp8_promote_128's
// promotion is the place to apply them: the Tensor Cores sum the 128 products of the raw E4M3 values from
// zero, and the CUDA cores do total = total + partial * (sa * sb), in FP32, rounded to nearest at each
// step (__fmul_rn, __fadd_rn; the total starts at +0). No single accumulator could run over all of K:
// the scales change from one K-tile to the next. Per-tensor scaling needs only one multiply at the end,
// but then one outlier sets the scale of the whole matrix (lesson 7).
//   sa: M x ceil(K / 128) floats, row-major: sa[r][k / 128] multiplies A's row r, K-tile k / 128.
//   sb: ceil(N / 128) x ceil(K / 128) floats, row-major: sb[n / 128][k / 128] (the layout of Bt, N x K;
//       helpers.fp8.quantize_blocks of B, K x N, gives [k / 128][n / 128]: helpers.fp8_scaled.kernel_scales
//       transposes it, and the launcher refuses that layout where its shape tells).
//   The scales are what C's values are multiplied by (amax / 448: 1 / helpers.fp8's scale), not what
//   the inputs were. M, N, K as for the other kernels (K passed padded to 16: ceil(K / 128) is unchanged).
// The promotion is not overlapped (within a warpgroup it waits for the Tensor Cores; the two warpgroups' adds and
// wgmmas overlap only as they happen to fall), and a multiply beside each add lengthens it: the scales cost speed.
extern "C" __global__ void __launch_bounds__(F8_THREADS, 1) fp8_block_scaled(const __grid_constant__ TensorMap tmA,
    const __grid_constant__ TensorMap tmB, float* __restrict__ C, int M, int N, int K,
    const float* __restrict__ sa, const float* __restrict__ sb)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    fp8_gemm<128, 128, false, true>(&tmA, &tmB, C, M, N, K, sa, sb);
#endif
}
