// Reading inputs: a strict parse (duplicate keys, depth, the path of an error) of a long array of objects, the
// shape of a layer list or a trace. Goal: linear in the objects; nlohmann's callback parser took 2.5 s for
// 50,000 layers and 40 s for 200,000.

#include "core/json_input.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

std::string layer_list(long layers)
{
  std::string text = R"({"name": "long", "seq_len": 32, "layers": [)";
  for (long i = 0; i < layers; ++i)
    text += (i ? "," : "") + std::string(R"({"name": "l)") + std::to_string(i) +
            R"(", "kind": "transformer", "params": 1e5, "forward_flops_per_sample": 5e6})";
  return text + "]}";
}

void BM_StrictParseLayers(benchmark::State& state)
{
  const std::string text = layer_list(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(hetsim::JsonInput::parse_text(text, "layers.json"));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_StrictParseLayers)->Arg(50'000)->Arg(200'000)->Unit(benchmark::kMillisecond)->Complexity();

} // namespace

BENCHMARK_MAIN();
