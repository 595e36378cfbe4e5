// hopper_primitives.cuh -- the Hopper building blocks that lessons 6 and 7 share
// (included, through hopper_wgmma.cuh, by the rung files and the FP8 files).
//
// Each is one PTX instruction (or a short loop of one) in an inline function: shared-memory
// addresses, the dynamic shared memory aligned for the 128-byte swizzle, mbarriers (init, the
// producer's expect_tx, arrive, and a wait that traps instead of hanging), the 2-D TMA load and
// store (lesson 6 teaches the store with rung 13; lesson 7's *_store kernels use it), wgmma's
// fence / commit / wait, setmaxnreg, a warpgroup's barrier, and clusters (a CTA's rank, a peer's
// barrier, the multicast load: lesson 6 teaches them with rung 12). What a lesson teaches otherwise
// (the wgmma descriptors, the MMA itself, how an epilogue uses the store) stays in its own file.
// The helpers compile with NVRTC and -I kernels/; nvcc finds this file next to the .cu files.

#pragma once

typedef unsigned long long u64;
typedef unsigned int u32;

struct __align__(64) TensorMap { u64 bytes[16]; };   // layout-compatible with CUtensorMap

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
// (the host pass and sm_90a see the real code; other targets, which `make kernels-check` also
// builds, compile the including files' kernels empty)

// The 32-bit shared-memory address of a generic pointer: what PTX's .shared instructions take.
__device__ __forceinline__ u32 smem_addr(const void* p)
{
    return static_cast<u32>(__cvta_generic_to_shared(p));
}

// The dynamic shared memory, its start rounded up to 1024 bytes: a 128-byte swizzle repeats every
// 8 rows of 128 bytes, and TMA and wgmma agree on it only for tiles that start on such a boundary.
__device__ __forceinline__ unsigned char* smem_base()
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = smem_addr(smem_raw);
    return smem_raw + ((1024 - (base & 1023)) & 1023);
}

// --------------------------------------------------------------------------- mbarriers
// A barrier in shared memory whose phase completes after `count` arrivals (and the bytes announced to it).
__device__ __forceinline__ void mbar_init(u64* bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(smem_addr(bar)), "r"(count));
}

// The producer's arrival, announcing how many bytes TMA will deliver to this barrier's phase.
__device__ __forceinline__ void mbar_expect_tx(u64* bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// One arrival: this thread is done with what the barrier guards (a consumer warp frees a stage).
__device__ __forceinline__ void mbar_arrive(u64* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(smem_addr(bar)) : "memory");
}

// Wait until the barrier's phase of this parity has completed. A barrier starts in phase 0;
// waiting for parity 1 first returns at once (the phase "before" phase 0 counts as completed),
// which is how a producer finds every stage of the ring empty on its first lap. try_wait
// suspends the thread in hardware for a while before answering "not yet". A wait that lasts
// HANG_NS (where a real one takes microseconds) traps instead of hanging: a wrong byte count or
// a barrier nobody arrives on then ends the kernel with an error the launcher can report.
#define HANG_NS 10000000000ull                // 10 s, by the GPU's global nanosecond timer

// How a thread waits (HOW): 0 try_wait with no time hint: the thread is suspended until the phase completes or a
// time limit the hardware chooses passes, then the loop asks again (how every kernel waits, but rungs 21-24);
// 1 try_wait with a suspend-time hint of 10 ms: the same, with that limit instead (rungs 21-24 by default: macro
// SKINNY_HINT_WAIT; macro SKINNY_WAIT of rungs 17-20; the WAIT_HINT knob of both); 2 test_wait, which never suspends: a spin. MBAR_WAIT, a
// build option (0 by default), changes the default for every kernel of a build.
#ifndef MBAR_WAIT
#define MBAR_WAIT 0
#endif
template <int HOW = MBAR_WAIT>
__device__ __forceinline__ bool mbar_try(u32 addr, u32 parity)
{
    u32 done;
    if constexpr (HOW == 1) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n" : "=r"(done) : "r"(addr), "r"(parity), "r"(10000000u) : "memory");
    } else if constexpr (HOW == 2) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
    } else {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
    }
    return done != 0;
}

// The GPU's global nanosecond timer, for the wait's time limit.
__device__ __forceinline__ u64 globaltimer_ns()
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    return t;
}

// Wait for the phase of this parity: try once, and only if it is not complete yet, loop with the time limit.
template <int HOW = MBAR_WAIT>
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity)
{
    const u32 addr = smem_addr(bar);
    if (mbar_try<HOW>(addr, parity)) return;
    const u64 start = globaltimer_ns();
    while (!mbar_try<HOW>(addr, parity))
        if (globaltimer_ns() - start > HANG_NS) __trap();
}

// --------------------------------------------------------------------------- TMA
// 2-D TMA load of the box at (c0 = column, c1 = row) into shared memory, counted on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, u64* bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n"
        :: "r"(smem_addr(dst)), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
        : "memory");
}

// 2-D TMA store of a box from shared memory to (c0 = column, c1 = row); parts outside C are dropped.
// (Lesson 6's rung 13 teaches it; lesson 7's *_store kernels use it for their FP32 C.)
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n"
                 :: "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(smem_addr(src)) : "memory");
}

// The TMA stores issued so far form one bulk group; wait_read 0: every group has read its shared memory (the
// buffer may be written again); wait 0: every group has written global memory (before the CTA leaves).
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Ordinary stores to shared memory that the copy engine reads next must be made visible to it.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Two floats in one 8-byte store (p 8-byte aligned).
__device__ __forceinline__ void store2(float* p, float x, float y)
{
    *reinterpret_cast<float2*>(p) = make_float2(x, y);
}

// --------------------------------------------------------------------------- warpgroups
// A barrier for the 128 threads of one consumer warpgroup only (ids 1, 2; 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_bar(int id) { asm volatile("bar.sync %0, 128;\n" :: "r"(id) : "memory"); }

// wgmma: fence (register writes before it, accumulators included, are ordered before the next wgmma; shared memory
// written by ordinary stores would also need fence.proxy.async, while TMA's writes are ordered by the mbarrier),
// commit (the wgmmas issued so far form one group), wait<N> (at most N groups still running: their accumulators are
// ready).
__device__ __forceinline__ void wgmma_fence()  { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()   { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// A wgmma descriptor advanced by adding to its address field (rungs 23-24: macro SKINNY_DESC, the DESC_ADD knob, 1 by
// default; always in fp8_promote_2acc_lean_sm90a.cu). The descriptor's two 32-bit words are split once (the asm keeps the compiler from
// rebuilding the low word from the address at every use); adding (byte offset / 16) to the low word then gives the
// descriptor of the address that many bytes further: its field, address bits 4-17, cannot carry out, because
// shared-memory addresses stay below 2^18 bytes. cuBLAS's kernels do this in uniform registers (UIADD3) between
// their wgmmas (Nsight Compute's instruction counts).
struct DescBase { u32 lo, hi; };
__device__ __forceinline__ DescBase desc_split(u64 d)
{
    DescBase b;
    asm("mov.b64 {%0, %1}, %2;" : "=r"(b.lo), "=r"(b.hi) : "l"(d));
    return b;
}
__device__ __forceinline__ u64 desc_plus(DescBase b, u32 off16)
{
    u64 d;
    asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(b.lo + off16), "r"(b.hi));
    return d;
}

// setmaxnreg: a warpgroup lowers (dec) or raises (inc) its registers per thread; the registers one
// warpgroup gives back are what another can take. Needs a register cap at entry (__launch_bounds__
// with minBlocks 1) and each role as one branch of one if/else.
template <int R> __device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R)); }
template <int R> __device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R)); }

// ---------------------------------------------------------------- clusters (lesson 6's rungs 12 on): a CTA's rank
// and count, its peers' barriers, multicast loads
// This CTA's rank in its cluster, the cluster's size, the cluster's index in the grid, and how many clusters.
__device__ __forceinline__ u32 cluster_rank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 cluster_size()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 cluster_id()
{
    u32 r;
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 cluster_count()
{
    u32 r;
    asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
    return r;
}
// Every thread of every CTA in the cluster arrives, then waits for all the others.
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// Arrive on the barrier at the same offset in CTA `cta` of this cluster (mapa: its address there).
// The default (CTA-scope) release is enough: what the arrival announces is that this warp's wgmmas
// have finished reading the stage (wgmma.wait_group), not any memory write of ours. A cluster-scope
// release would put a GPU-wide memory barrier (MEMBAR.ALL.GPU) before every arrival.
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 cta)
{
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(cta) : "memory");
}

// A consumer warp is done reading a stage: arrive on that stage's barrier in every CTA of the cluster (their
// producers multicast into it), or only in this one (CLUSTER = 1).
template <int CLUSTER>
__device__ __forceinline__ void mbar_arrive_all(u64* bar)
{
    if (CLUSTER == 1) {
        mbar_arrive(bar);
    } else {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(bar, r);
    }
}

// The same box written to the same shared-memory offset in every CTA of `mask` (a bit per CTA
// rank), each copy counted on the barrier at `bar`'s offset in that CTA.
__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, u64* bar, int c0, int c1,
                                                   unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;\n"
        :: "r"(smem_addr(dst)), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "h"(mask)
        : "memory");
}

#endif
