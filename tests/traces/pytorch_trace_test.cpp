#include "traces/pytorch_trace.hpp"
#include "traces/event_stream.hpp"

#include "core/error.hpp"
#include "traces/trace.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using namespace hetsim;
using namespace hetsim::traces;

namespace {

const std::string kTraces = std::string(HETSIM_SOURCE_DIR) + "/tests/data/h100/pytorch/";

std::string write_temp(const std::string& name, const std::string& text)
{
  const auto path = std::filesystem::temp_directory_path() / ("hetsim_pytorch_" + name);
  std::ofstream(path) << text;
  return path.string();
}

void check_refused(const std::string& file, const std::string& expected)
{
  try {
    read_pytorch_trace(file);
    FAIL("accepted " << file);
  } catch (const InputError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.rfind(file + ": ", 0) == 0);
    CHECK(message.find(expected) != std::string::npos);
  }
}

} // namespace

TEST_CASE("pytorch traces: the profiler's steps, kernels and the operators that launched them")
{
  const PytorchTrace trace = read_pytorch_trace(kTraces + "kineto-gpt2-medium-mb1.json.gz");
  CHECK(trace.device_name == "NVIDIA H100 80GB HBM3");
  REQUIRE(trace.steps.size() == 2);
  std::map<ProfiledKind, int> kinds;
  for (const ProfiledKernel& k : trace.kernels)
    ++kinds[k.kind];
  for (const ProfiledStep& step : trace.steps) {
    CAPTURE(step.name);
    // 2,054 kernels, 144 memsets and 3 copies a step; the host's span (113 ms with the profiler) far beyond the
    // GPU's 25 ms.
    CHECK(step.launches == 2054 + 144 + 3);
    CHECK(step.seconds == doctest::Approx(0.112).epsilon(0.02));
    CHECK(step.busy_s == doctest::Approx(0.0249).epsilon(0.02));
  }
  // Per step: 4 products per linear module (24 blocks of 4 and the head), flash attention forward and backward
  // in each block, the optimizer step's 21 kernels (18 of them fused AdamW's multi-tensor launches).
  CHECK(kinds[ProfiledKind::matmul] >= 2 * 3 * 97);
  CHECK(kinds[ProfiledKind::attention] >= 2 * 2 * 24);
  CHECK(kinds[ProfiledKind::optimizer] == 2 * 21);
  CHECK(kinds[ProfiledKind::loss] > 0);
  CHECK(kinds[ProfiledKind::communication] == 0);
  // record_shapes: a product knows its operands.
  bool shaped = false;
  for (const ProfiledKernel& k : trace.kernels)
    if (k.op == "aten::mm" && k.input_dims.size() == 2 && k.input_element_bytes[0] == 2)
      shaped = true;
  CHECK(shaped);
}

TEST_CASE("pytorch traces: told apart from HetSim's own, plain or gzipped")
{
  CHECK(is_pytorch_trace(kTraces + "kineto-gpt2-medium-mb1.json.gz"));
  Trace own;
  own.source = "simulation";
  TraceEvent forward;
  forward.name   = "fwd s0 r0 t0 mb0";
  forward.kind   = "forward";
  forward.stream = "compute";
  forward.end_s  = 1;
  own.events.push_back(forward);
  own.kernels.push_back(KernelEvent{0, 0, "qkv", 0, 0.5});
  const auto path = std::filesystem::temp_directory_path() / "hetsim_pytorch_own.json";
  write_chrome_trace(own, path.string());
  CHECK_FALSE(is_pytorch_trace(path.string()));
}

TEST_CASE("pytorch traces: what cannot be read is one line naming the file")
{
  check_refused(write_temp("not_json.json", "{\"traceEvents\": ["), "not a JSON trace");
  check_refused(write_temp("no_events.json", "{\"schemaVersion\": 1}"), "traceEvents: expected the array");
  check_refused(write_temp("cpu_only.json",
                           R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                               "args": {"External id": 1, "Input Dims": [[2, 2], [2, 2]]}}]})"),
                "no GPU kernels");
  check_refused(write_temp("no_shapes.json",
                           R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                               "args": {"External id": 1}},
                              {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 2, "dur": 1,
                               "args": {"External id": 1}}]})"),
                "record_shapes=True");
  check_refused(write_temp("bad_time.json",
                           R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": "soon", "dur": 1}]})"),
                "expected events as torch.profiler writes them");
  // A gzip file cut short.
  const std::string whole = trace_start(kTraces + "kineto-gpt2-medium-mb1.json.gz", std::size_t{1} << 30);
  std::ifstream in(kTraces + "kineto-gpt2-medium-mb1.json.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(whole.size() > bytes.size());
  const auto cut = std::filesystem::temp_directory_path() / "hetsim_pytorch_cut.json.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  CHECK_THROWS_AS(read_pytorch_trace(cut.string()), InputError);
}
