// The client's per-value conversions, over every value of every Pull and
// Push: host int32 <-> big-endian wire values (proto/values.h: PushFixed,
// ExchangeFixed, every received row) and float <-> fixed point
// (client/fixed_point.cc: Push and Pull of floats). Bytes per second of the
// source vector; the demo's MLP (79,510 values) and 1M values:
//   build/bin/conversion_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "proto/values.h"
#include "serene/client.h"

namespace serene {
namespace {

void BM_StoreValues(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<int32_t> values(n, 12345);
  std::vector<uint8_t> wire(4 * n);
  for (auto _ : state) {
    proto::StoreValues(values, wire.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 4 * n));
}

void BM_LoadValues(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> wire(4 * n, 7);
  std::vector<int32_t> values(n);
  for (auto _ : state) {
    proto::LoadValues(wire.data(), values);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 4 * n));
}

void BM_Quantize(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 1000) * 1e-3f - 0.5f;
  std::vector<int32_t> out(n);
  for (auto _ : state) {
    if (!Quantize(in, 24, out).ok()) state.SkipWithError("Quantize refused a value in range");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 4 * n));
}

void BM_Dequantize(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<int32_t> in(n, 1 << 20);
  std::vector<float> out(n);
  for (auto _ : state) {
    Dequantize(in, 24, out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 4 * n));
}

BENCHMARK(BM_StoreValues)->Arg(79510)->Arg(1000000);
BENCHMARK(BM_LoadValues)->Arg(79510)->Arg(1000000);
BENCHMARK(BM_Quantize)->Arg(79510)->Arg(1000000);
BENCHMARK(BM_Dequantize)->Arg(79510)->Arg(1000000);

}  // namespace
}  // namespace serene

BENCHMARK_MAIN();
