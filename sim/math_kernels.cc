#include "sim/math_kernels.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace serene::sim {
namespace {

constexpr const char* kMarker = "SERENE_MATH_KERNELS";

bool CpuHasAvx2AndFma() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    line += ' ';
    return line.find(" avx2 ") != std::string::npos && line.find(" fma ") != std::string::npos;
  }
  return false;
}

}  // namespace

std::string PinMathKernels(char** argv) {
  if (std::getenv(kMarker) != nullptr) return "";
  if (!CpuHasAvx2AndFma()) {
    setenv(kMarker, "native", 1);
    return "this CPU has no AVX2/FMA: the simulator computes with its own kernels, so training "
           "results may differ in the last bits from an AVX2 machine's";
  }
  setenv(kMarker, "avx2", 1);
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
  execv("/proc/self/exe", argv);
  const int error = errno;
  setenv(kMarker, "native", 1);
  return std::string("could not re-execute to pin the AVX2 kernels (") + std::strerror(error) +
         "): computing with this CPU's own";
}

std::string MathKernels() {
  const char* v = std::getenv(kMarker);
  return v != nullptr && std::strcmp(v, "avx2") == 0 ? "avx2" : "native";
}

}  // namespace serene::sim
