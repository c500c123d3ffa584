/// Published Hugging Face config.json files of the families HetSim reads (tests/models/data/hf, sources in its
/// SOURCES.md): each model's parameter count within 1% of its published size, and mixture-of-experts configs
/// refused rather than loaded as their dense part.

#include "models/workload.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>

using namespace hetsim::models;

namespace {

std::string fixture(const std::string& name)
{
  return std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/" + name;
}

struct Published {
  const char* file;
  double params; ///< published total (SOURCES.md)
};

} // namespace

TEST_CASE("every family's parameter count is within 1% of the published size")
{
  const Published models[] = {
      {"llama-2-7b.json", 6'738'415'616},   {"llama-3-8b.json", 8'030'261'248},
      {"llama-3.1-8b.json", 8'030'261'248}, {"llama-3.2-1b.json", 1'235'814'400},
      {"mistral-7b.json", 7'241'732'096},   {"qwen2-7b.json", 7'615'616'512},
      {"gemma-2-9b.json", 9'241'705'984},   {"phi-3-mini.json", 3'821'079'552},
      {"gpt2.json", 124'439'808},           {"gpt2-medium.json", 354'823'168},
      {"bert-base-uncased.json", 109'482'240}, {"gemma-2b.json", 2'506'172'416},
      {"pythia-1b.json", 1'011'781'632},      {"opt-125m.json", 125'239'296},
  };
  for (const Published& model : models) {
    CAPTURE(model.file);
    const Workload workload = load_workload(fixture(model.file));
    CHECK(workload.total_params() == doctest::Approx(model.params).epsilon(0.01));
  }
}

TEST_CASE("what a config leaves unsaid is said: the sequence length, flash attention, a shorter sliding window")
{
  const Workload llama = load_workload(fixture("llama-3.2-1b.json"));
  CHECK(llama.seq_len == 131072);
  REQUIRE(llama.assumptions.size() == 2);
  CHECK(llama.assumptions[0].find("llama-3.2-1b.json: flash_attention not given: on") != std::string::npos);
  CHECK(llama.assumptions[1].find("seq_len not given: training at the model's maximum of 131072") !=
        std::string::npos);
  const Workload shorter = with_seq_len(llama, 4096, "--seq-len");
  CHECK(shorter.seq_len == 4096);
  CHECK(shorter.assumptions.size() == 1);
  CHECK(shorter.total_params() == llama.total_params());
  CHECK(shorter.forward_flops_per_sample() < llama.forward_flops_per_sample() / 30);

  const Workload mistral = load_workload(fixture("mistral-7b.json"));
  bool window_said = false;
  for (const auto& line : mistral.assumptions)
    window_said = window_said || line.find("sliding_window 4096 is shorter than seq_len 32768") != std::string::npos;
  CHECK(window_said);
}

TEST_CASE("mixture-of-experts configs are refused, never counted as their dense part")
{
  for (const char* file : {"mixtral-8x7b.json", "qwen2-moe-57b-a14b.json"}) {
    CAPTURE(file);
    try {
      (void)load_workload(fixture(file));
      FAIL("expected an InputError");
    } catch (const hetsim::InputError& e) {
      CHECK(std::string(e.what()).find("mixture-of-experts") != std::string::npos);
    }
  }
}

TEST_CASE("torch_dtype is the model's dtype: the published configs' own, kept through --seq-len")
{
  const struct {
    const char* file;
    std::optional<hetsim::Dtype> dtype;
  } models[] = {{"llama-3-8b.json", hetsim::Dtype::bf16},
                {"llama-2-7b.json", hetsim::Dtype::fp16},
                {"gemma-2-9b.json", hetsim::Dtype::fp32},
                {"gpt2.json", std::nullopt}};
  for (const auto& model : models) {
    CAPTURE(model.file);
    const Workload workload = load_workload(fixture(model.file));
    CHECK(workload.dtype == model.dtype);
    CHECK(workload.default_dtype() == model.dtype.value_or(hetsim::Dtype::fp16));
    if (model.dtype)
      CHECK(workload.dtype_origin == fixture(model.file) + ": torch_dtype");
    bool fp32_said = false; // training in fp32 because the file says so is said on stderr
    for (const auto& line : workload.assumptions)
      fp32_said = fp32_said || line.find("torch_dtype float32: plans, searches and profiles") != std::string::npos;
    CHECK(fp32_said == (model.dtype == hetsim::Dtype::fp32));
    CHECK(with_seq_len(workload, 512, "--seq-len").dtype == model.dtype);
  }
}
