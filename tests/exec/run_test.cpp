/// `hetsim run` with the cpu executor: real processes, real Gloo over loopback.

#include "exec_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

using namespace hetsim::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> scenario(const std::string& plan, const fs::path& dir)
{
  return {"run", "--cluster", data_file("cluster4.json"), "--model", data_file("model4.json"), "--plan",
          data_file(plan), "--trace-dir", dir.string()};
}

/// Runs one iteration of `plan` of `model` on the four ranks into `dir` and returns the merged trace.
nlohmann::json run_once(const std::string& model, const std::string& plan, const ScratchDir& dir)
{
  Child run({"run", "--cluster", data_file("cluster4.json"), "--model", data_file(model), "--plan", data_file(plan),
             "--trace-dir", dir.path.string(), "--iterations", "1"},
            dir.path / "log");
  REQUIRE_MESSAGE(run.wait(120) == 0, read_text(dir.path / "log"));
  return nlohmann::json::parse(read_text(dir.path / "trace.json"));
}

} // namespace

TEST_CASE("run: every task of a ZeRO-3 pipeline plan appears once, per rank and merged, with the report")
{
  ScratchDir dir("zero3");
  auto args = scenario("pp2dp2z3.json", dir.path);
  args.insert(args.end(), {"--iterations", "2"});
  Child run(args, dir.path / "log");
  REQUIRE(run.wait(120) == 0);

  const auto merged = nlohmann::json::parse(read_text(dir.path / "trace.json"));
  std::map<int, int> seen;
  std::map<int, nlohmann::json> by_id;
  for (const auto& e : merged["traceEvents"])
    if (e["ph"] == "X") {
      ++seen[e["args"]["task_id"].get<int>()];
      by_id[e["args"]["task_id"].get<int>()] = e["args"];
    }
  REQUIRE(!seen.empty());
  CHECK(seen.begin()->first == 0);
  CHECK(seen.rbegin()->first == static_cast<int>(seen.size()) - 1);
  CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& s) { return s.second == 1; }));
  // Every kind the plan lowers to ran for real.
  std::map<std::string, int> kinds;
  for (const auto& [id, args_of] : by_id)
    ++kinds[args_of["kind"].get<std::string>()];
  for (const char* kind : {"forward", "backward", "optimizer", "send", "recv", "all_gather", "reduce_scatter"})
    CHECK_MESSAGE(kinds[kind] > 0, kind);
  // The devices' hardware rides along for calibration.
  CHECK(merged["otherData"]["devices"].size() == 4);

  int rank_events = 0;
  for (int r = 0; r < 4; ++r) {
    const auto rank = nlohmann::json::parse(read_text(dir.path / ("rank" + std::to_string(r) + ".json")));
    for (const auto& e : rank["traceEvents"])
      if (e["ph"] == "X") {
        CHECK(e["pid"] == r);
        ++rank_events;
      }
  }
  CHECK(rank_events == static_cast<int>(seen.size()));

  const auto report = nlohmann::json::parse(read_text(dir.path / "report.json"));
  CHECK(report["iteration_time_s"].get<double>() > 0);
  CHECK(report["devices"].size() == 4);
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK_MESSAGE(entry.path().extension() != ".tmp", entry.path().string());

  // Rank 0 alone reports progress, a line per iteration in a log: 1 warm-up and 2 timed, counted from 0 to 3.
  const std::string log = read_text(dir.path / "log");
  const std::string what = "running iterations (1 warm-up, 2 timed): ";
  for (int done = 0; done <= 3; ++done) {
    const std::string line = what + std::to_string(done) + "/3, ";
    const auto first = log.find(line);
    CHECK_MESSAGE(first != std::string::npos, line);
    CHECK_MESSAGE(log.find(line, first + 1) == std::string::npos, "reported more than once: " << line);
  }
  // While iterations remain, the line says how long they will take; the last says none.
  const auto line_of = [&](int done) {
    const auto at = log.find(what + std::to_string(done) + "/3, ");
    return at == std::string::npos ? std::string() : log.substr(at, log.find('\n', at) - at);
  };
  CHECK(line_of(1).find(" elapsed, about ") != std::string::npos);
  CHECK(line_of(1).ends_with(" left"));
  CHECK(line_of(3).ends_with(" elapsed"));
}

TEST_CASE("run: send and recv of a pair span the same transfer in the merged trace")
{
  ScratchDir dir("pipeline");
  Child run(scenario("pp4.json", dir.path), dir.path / "log");
  REQUIRE(run.wait(120) == 0);
  const auto merged = nlohmann::json::parse(read_text(dir.path / "trace.json"));
  std::map<std::string, std::pair<double, double>> sends, recvs;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    std::string name = e["name"];
    const auto span  = std::make_pair(e["args"]["start_s"].get<double>(), e["args"]["end_s"].get<double>());
    if (e["args"]["kind"] == "send")
      sends[name] = span;
    else if (e["args"]["kind"] == "recv")
      recvs[name] = span;
  }
  CHECK(sends.size() == recvs.size());
  CHECK(sends.size() == 2 * 3 * 4); // activations and gradients over 3 boundaries, 4 micro-batches
}

TEST_CASE("run: the executor list, and an executor this build lacks is one clear error with exit 2")
{
  ScratchDir dir("list");
  Child list({"run", "--list-executors"}, dir.path / "log");
  REQUIRE(list.wait(30) == 0);
  CHECK(read_text(dir.path / "log").find("cpu\n") != std::string::npos);

  Child missing({"run", "--executor", "tpu"}, dir.path / "log2");
  CHECK(missing.wait(30) == 2);
  const std::string text = read_text(dir.path / "log2");
  CHECK(text.find("no executor 'tpu'") != std::string::npos);
  CHECK(text.find("available: cpu") != std::string::npos);
}

TEST_CASE("run: --ranks must match the cluster")
{
  ScratchDir dir("ranks");
  auto args = scenario("dp4.json", dir.path);
  args.insert(args.end(), {"--ranks", "3"});
  Child run(args, dir.path / "log");
  CHECK(run.wait(30) == 2);
  CHECK(read_text(dir.path / "log").find("--ranks: the cluster has 4 devices") != std::string::npos);
}

TEST_CASE("run: a --trace-dir that is a file, or a bad --host-dispatch, is one line with exit 2 before any rank")
{
  ScratchDir dir("trace_dir_file");
  std::ofstream(dir.path / "a-file") << "the user's";
  auto args = scenario("dp4.json", dir.path / "a-file");
  Child run(args, dir.path / "log");
  CHECK(run.wait(30) == 2);
  const std::string text = read_text(dir.path / "log");
  INFO(text);
  CHECK(text.find("--trace-dir " + (dir.path / "a-file").string() + ": is a file") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.find("started") == std::string::npos);
  CHECK(read_text(dir.path / "a-file") == "the user's");

  args = scenario("dp4.json", dir.path / "traces");
  args.insert(args.end(), {"--host-dispatch", "fast"});
  Child dispatch(args, dir.path / "log2");
  CHECK(dispatch.wait(30) == 2);
  CHECK(read_text(dir.path / "log2").find("--host-dispatch: expected 'eager' or microseconds") != std::string::npos);
}

TEST_CASE("run: the cuda executor on a machine without a GPU is one clear error with exit 2, before any rank")
{
  if (fs::exists("/dev/nvidiactl")) {
    MESSAGE("this machine has an NVIDIA driver: skipped");
    return;
  }
  ScratchDir dir("cuda");
  auto args = scenario("pp4.json", dir.path);
  args.insert(args.end(), {"--executor", "cuda"});
  Child run(args, dir.path / "log");
  CHECK(run.wait(30) == 2);
  const std::string text = read_text(dir.path / "log");
  INFO(text);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  const bool built  = text.find("cannot run on this machine: no usable GPU") != std::string::npos;
  const bool absent = text.find("no executor 'cuda'") != std::string::npos;
  CHECK((built || absent));
  CHECK(text.find("started") == std::string::npos);
}

TEST_CASE("run --trace-kernels: every compute task's kernels, in launch order inside its interval; validate sums "
          "them per kernel")
{
  ScratchDir dir("kernels");
  const std::vector<std::string> inputs = {"--cluster", data_file("cluster4.json"), "--model",
                                           data_file("tiny_gpt2.json"), "--plan", data_file("pp4_tiny_gpt2.json")};
  std::vector<std::string> args = {"run", "--trace-dir", dir.path.string(), "--trace-kernels", "--iterations", "1"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  Child run(args, dir.path / "log");
  REQUIRE(run.wait(120) == 0);

  const auto merged = nlohmann::json::parse(read_text(dir.path / "trace.json"));
  std::map<int, std::pair<double, double>> compute; // forward and backward tasks' intervals
  std::map<int, std::vector<nlohmann::json>> kernels_of;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    const auto& a = e["args"];
    if (e["cat"] == "kernel")
      kernels_of[a["task_id"].get<int>()].push_back(a);
    else if (a["kind"] == "forward" || a["kind"] == "backward")
      compute[a["task_id"].get<int>()] = {a["start_s"].get<double>(), a["end_s"].get<double>()};
  }
  REQUIRE(!compute.empty());
  CHECK(kernels_of.size() == compute.size());
  for (const auto& [id, span] : compute) {
    CAPTURE(id);
    const auto& kernels = kernels_of[id];
    REQUIRE(!kernels.empty());
    double previous_end = span.first;
    for (const auto& k : kernels) {
      CHECK(k["start_s"].get<double>() >= previous_end - 1e-9);
      CHECK(k["end_s"].get<double>() <= span.second + 1e-9);
      previous_end = k["end_s"].get<double>();
    }
  }

  std::vector<std::string> validate = {"validate", "--trace", (dir.path / "trace.json").string(),
                                       "--report", (dir.path / "validation.json").string()};
  validate.insert(validate.end(), inputs.begin(), inputs.end());
  Child check(validate, dir.path / "validate.log");
  REQUIRE(check.wait(60) == 0);
  const auto report  = nlohmann::json::parse(read_text(dir.path / "validation.json"));
  const auto& totals = report["plans"][0]["kernels"];
  for (const char* name : {"qkv", "qkv.dgrad", "mlp_up", "softmax", "logits", "cross_entropy"}) {
    CAPTURE(name);
    REQUIRE(totals.contains(name));
    CHECK(totals[name]["measured_s"].get<double>() > 0);
    CHECK(totals[name]["predicted_s"].get<double>() > 0);
  }
  CHECK(totals["qkv"]["launches"] == 4 * 2); // 4 blocks x 2 micro-batches
}

TEST_CASE("run: a file in --trace-dir that is not an earlier run's output is refused, not replaced")
{
  ScratchDir dir("keep");
  for (const char* name : {"rank0.json", "report.json"}) {
    CAPTURE(name);
    fs::remove_all(dir.path);
    fs::create_directories(dir.path);
    { std::ofstream(dir.path / name) << "precious"; }
    Child run(scenario("dp4.json", dir.path), dir.path / "log");
    CHECK(run.wait(60) == 2);
    CHECK(read_text(dir.path / "log").find("is not a trace or report of an earlier run") != std::string::npos);
    CHECK(read_text(dir.path / name) == "precious");
  }
}

TEST_CASE("run: an interleaved 1F1B plan (2 chunks per stage) runs every task once, the last stage feeding the first")
{
  ScratchDir dir("interleaved");
  const auto merged = run_once("tiny_gpt2.json", "pp2dp2v2.json", dir);
  std::map<int, int> seen;
  std::set<std::string> wrapped; // activations sent from stage 1 back to stage 0's second chunk
  for (const auto& e : merged["traceEvents"])
    if (e["ph"] == "X") {
      ++seen[e["args"]["task_id"].get<int>()];
      const std::string name = e["name"];
      if (name.rfind("send-act s1c0", 0) == 0)
        wrapped.insert(name);
    }
  REQUIRE(!seen.empty());
  CHECK(seen.rbegin()->first == static_cast<int>(seen.size()) - 1);
  CHECK(std::all_of(seen.begin(), seen.end(), [](const auto& s) { return s.second == 1; }));
  CHECK(wrapped.size() == 2 * 4); // 2 replicas x 4 micro-batches
}

TEST_CASE("run: an expert-parallel plan exchanges tokens by Gloo all-to-all and reduces experts over their holders")
{
  ScratchDir dir("ep");
  const auto merged = run_once("tiny_mixtral.json", "dp4ep2.json", dir);
  int exchanges = 0, expert_reductions = 0;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] != "X" || !e.contains("args") || !e["args"].contains("kind"))
      continue;
    if (e["args"]["kind"] == "all_to_all") {
      ++exchanges;
      CHECK(e["args"]["members"] == 2);
    }
    if (e["name"].get<std::string>().rfind("rs-grad-experts", 0) == 0)
      ++expert_reductions;
  }
  // 4 ranks x 2 sparse blocks x (dispatch, combine) x (forward, backward) x 2 micro-batches.
  CHECK(exchanges == 4 * 2 * 2 * 2 * 2);
  CHECK(expert_reductions >= 4);
}

TEST_CASE("run: a context-parallel plan passes keys and values round each pair by Gloo and reduces over all ranks")
{
  ScratchDir dir("cp");
  const auto merged = run_once("tiny_llama.json", "cp2dp2.json", dir);
  int gathers = 0, scatters = 0, reductions = 0;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    const std::string name = e["name"];
    if (name.rfind("ag-kv-", 0) == 0 || name.rfind("rs-kv-", 0) == 0) {
      CHECK(e["args"]["members"] == 2);
      (name.rfind("ag-kv-", 0) == 0 ? gathers : scatters) += 1;
    }
    if (name.rfind("rs-grad", 0) == 0) {
      CHECK(e["args"]["members"] == 4);
      ++reductions;
    }
  }
  // 4 ranks x 2 blocks x 2 micro-batches: a gather forward, a gather and a scatter backward.
  CHECK(gathers == 4 * 2 * 2 * 2);
  CHECK(scatters == 4 * 2 * 2);
  CHECK(reductions >= 4);
}

TEST_CASE("run: a zero-bubble plan runs each backward as an input-gradient step and a later weight-gradient step")
{
  ScratchDir dir("zb");
  const auto merged = run_once("tiny_gpt2.json", "pp4_zero_bubble.json", dir);
  std::map<std::string, std::pair<double, double>> span; // name -> (start, end), microseconds
  for (const auto& e : merged["traceEvents"])
    if (e["ph"] == "X")
      span[e["name"]] = {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
  int weights = 0;
  for (const auto& [name, times] : span) {
    if (name.rfind("bwd-w ", 0) != 0)
      continue;
    ++weights;
    const auto input = span.find("bwd " + name.substr(6)); // the same stage and micro-batch's input gradients
    REQUIRE_MESSAGE(input != span.end(), name);
    CHECK(input->second.second <= times.first);
  }
  CHECK(weights == 4 * 4); // stages x micro-batches
}

TEST_CASE("run: a full temporary or trace directory is named in one line before any rank starts")
{
  ScratchDir dir("full_disk");
  const fs::path full = dir.path / "full";
  fs::create_directories(full);
  // A 64 KiB tmpfs filled to its last block, mounted in a mount namespace of the child's own; where the test may
  // not make one (no root, a container without the capability) it says so and checks nothing.
  const std::string fill = "mount -t tmpfs -o size=64k tmpfs \"$0\" || exit 77; "
                           "dd if=/dev/zero of=\"$0/fill\" bs=4k 2>/dev/null; exec \"$@\"";
  for (const bool trace_dir_full : {false, true}) {
    CAPTURE(trace_dir_full);
    const fs::path traces = trace_dir_full ? full / "traces" : dir.path / "traces";
    std::vector<std::string> args = {"-m", "sh", "-c", fill, full.string(), "env",
                                     "TMPDIR=" + (trace_dir_full ? dir.path : full).string(), HETSIM_CLI_PATH};
    const auto run_args = scenario("dp4.json", traces);
    args.insert(args.end(), run_args.begin(), run_args.end());
    Child run("unshare", args, dir.path / "log");
    const int code         = run.wait(60);
    const std::string text = read_text(dir.path / "log");
    INFO(text);
    if (code == 77 || text.rfind("unshare:", 0) == 0) {
      MESSAGE("not checked: this machine does not let the test mount a full file system");
      return;
    }
    CHECK(code == 2);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
    CHECK(text.find("started") == std::string::npos);
    CHECK(text.find(trace_dir_full ? "--trace-dir " + traces.string() + ": 0.0 MiB free"
                                   : "(under TMPDIR) " + full.string() + "/hetsim-store-") != std::string::npos);
    CHECK(text.find("free, the run writes about") != std::string::npos);
  }
}
