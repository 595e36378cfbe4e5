// hopper_cluster_probe_sm90a.cu -- Lesson 6 (Hopper only): does a plain launch form thread-block clusters?
//
// The rungs that use clusters (from rung 12 on) declare the cluster size in the kernel, with __cluster_dims__,
// and CuPy launches them with a plain cuLaunchKernel, which has no field for a cluster. This kernel, declared
// with clusters of 2, asks the hardware what it got: each block writes, for itself,
//
//     out[blockIdx.x] = (cluster size << 16) | (its rank in the cluster << 8) | (cluster id % 256)
//
// Launched as 8 blocks of 32 threads, clusters formed means sizes of 2 and ranks 0, 1, 0, 1, ...
// (helpers.experiments.hopper.cluster_probe reads it; where the plain launch is refused, it launches again
// with cuLaunchKernelEx, which names the cluster size explicitly).
//
// Clusters exist from sm_90 on. `make kernels-check` also builds this file for sm_80: there the kernel
// has no cluster attribute and an empty body.

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900)
#define CLUSTER_DIMS
#else
#define CLUSTER_DIMS __cluster_dims__(2, 1, 1)         // 2 blocks per cluster, along x
#endif

extern "C" __global__ void CLUSTER_DIMS hopper_cluster_probe(int* out)
{
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
    unsigned size, rank, id;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(size));   // blocks in this block's cluster
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));    // this block's rank in it
    asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(id));          // which cluster (along x)
    if (threadIdx.x == 0) out[blockIdx.x] = (int)((size << 16) | (rank << 8) | (id & 255));
#endif
}
