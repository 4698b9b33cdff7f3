// SERENE_VECTOR_KERNEL: marks a per-value loop (row kernels, wire byte order,
// fixed point) to be cloned for AVX2 beside a baseline x86-64 version, the
// one that runs chosen at load time (GCC target_clones), so the binary still
// runs on any x86-64. The file must be compiled -O3 for the loops to
// vectorize: GCC 12 at -O2 leaves even the AVX2 clone scalar.
//
// Not under ThreadSanitizer: GCC instruments the ifunc resolver of the clones,
// which the dynamic loader runs before libtsan is set up (SIGSEGV before
// main). The TSan build has the portable version only (docs/sanitizers.md).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define SERENE_VECTOR_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define SERENE_VECTOR_KERNEL
#endif
