// RetainFreedMemory: keeps the memory a training step frees for the next step.
//
// A step allocates and frees the same tensors every time. By default glibc's
// malloc gives freed memory back to the kernel: it shrinks the heap's top
// once more than 128 KiB is free there and unmaps blocks above an adaptive
// size, so every step asks the kernel for the same pages again and faults
// them in (tens of page faults and a few brk calls per MLP step). On a
// 2-core VM the ranks of dynamic runs, which then held a gRPC channel (and
// its threads), computed a third slower than those of fixed runs when four
// ranks shared the two cores (docs/experiments.md); with glibc's thresholds
// raised (GLIBC_TUNABLES) the two computed alike. Why a second thread makes
// the hand-back costly is not established: one rank alone showed no
// difference, and /proc/interrupts counted no TLB-shootdown interrupts.
//
// After this call the heap is never trimmed and blocks up to 32 MiB (the
// largest threshold glibc accepts; a CNN step's largest tensor is ~5 MiB)
// come from the heap, so a step in steady state makes no memory system call
// and takes no page fault. The cost is the process keeping its high-water
// mark of heap, a few MiB for these models.
//
// Process-wide; call once at start-up, before training. An allocator other
// than glibc's (a sanitizer's, one preloaded) may refuse it: the error says
// so, and training is as correct without it, only slower.
#pragma once

#include "common/status.h"

namespace serene::train {

Status RetainFreedMemory();

}  // namespace serene::train
