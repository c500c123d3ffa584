/// End-to-end: out-of-memory as published training runs met it. A memory model that leaves out what the
/// framework holds, or the attention scores of a model trained without flash attention, calls these runs fine.

#include "cli_runner.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace hetsim::e2e;

/// GPT-2 medium (345 M) as OpenAI released it; trained in 2019-2020 without flash attention.
constexpr const char* kGpt2Medium = R"({"model_type": "gpt2", "n_embd": 1024, "n_head": 16, "n_layer": 24,
  "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257, "seq_len": 1024, "flash_attention": false})";

/// One 16 GB V100, as in AWS's p3.2xlarge.
constexpr const char* kOneV100 =
    R"({"name": "p3.2xlarge", "regions": [{"name": "aws", "nodes": [{"name": "p3", "gpu": "V100-SXM2-16GB", "devices": 1}]}]})";

/// Fine-tuning with Adam in fp32 at `micro_batch` sequences, nothing recomputed, no sharding.
std::string fp32_adam_plan(int micro_batch)
{
  const std::string batch = std::to_string(micro_batch);
  return R"({"tp": 1, "pp": 1, "dp": 1, "micro_batch": )" + batch + R"(, "global_batch": )" + batch +
         R"(, "zero_stage": 0, "schedule": "1f1b", "recompute": false, "dtype": "fp32"})";
}

} // namespace

TEST_CASE("GPT-2 medium on one 16 GB V100 in fp32 with Adam: one sequence of 1,024 tokens fits, two do not")
{
  // nshepperd/gpt-2 issue #52 (2020-06-19): train.py (TensorFlow, fp32, Adam, 1,024-token samples, memory-saving
  // gradients off by default) fine-tuning the 345M model on an ml.p3.2xlarge runs at batch size 1 and fails out
  // of memory at batch size 2.
  TempDir dir("published_oom");
  const std::string inputs = "--cluster " + dir.file("cluster.json", kOneV100) + " --model " +
                             dir.file("gpt2-medium.json", kGpt2Medium);

  const RunResult one = run_hetsim("simulate " + inputs + " --plan " + dir.file("mb1.json", fp32_adam_plan(1)));
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK(one.output.find("iteration time") != std::string::npos);

  const RunResult two = run_hetsim("simulate " + inputs + " --plan " + dir.file("mb2.json", fp32_adam_plan(2)));
  INFO(two.output);
  CHECK(two.exit_code == 2);
  CHECK(two.output.find("plan does not fit: device 0 (V100-SXM2-16GB)") != std::string::npos);
  // Two sequences' saved activations, attention scores among them, are what no longer fits.
  CHECK(two.output.find("most of it activations") != std::string::npos);
}
