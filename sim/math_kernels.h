// PinMathKernels: makes serene-sim's training math the same on every x86-64
// CPU with AVX2, so that a scenario with a fixed compute model gives the same
// report, bit for bit, on any such machine.
//
// OpenBLAS, ATen and oneDNN each pick their kernels for the CPU they run on
// (OpenBLAS takes Cooperlake's sgemm on a Zen 4, Haswell's on a Skylake), and
// kernels of different widths round differently: two machines then train
// models that differ in the last bits, and the time to a target accuracy can
// move by an evaluation point. The libraries read their choice from the
// environment only while they load, before main runs, so this re-executes the
// binary once with the AVX2 kernels named (OPENBLAS_CORETYPE=Haswell,
// ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2).
//
// SERENE_MATH_KERNELS in the environment says what was done and stops the
// loop: "avx2" after the re-execution; a user may set "native" to keep the
// machine's own kernels (faster on AVX-512 CPUs, not comparable across
// machines). A CPU without AVX2 and FMA keeps its kernels ("native").
#pragma once

#include <string>

namespace serene::sim {

// Re-executes /proc/self/exe with `argv` and the pinned environment unless
// SERENE_MATH_KERNELS is set or the CPU lacks AVX2/FMA. Returns only when it
// does not re-execute (or execv failed: then the kernels are the machine's
// and the returned text says why).
std::string PinMathKernels(char** argv);

// What the process computes with: "avx2" (pinned) or "native".
std::string MathKernels();

}  // namespace serene::sim
