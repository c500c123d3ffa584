/// End-to-end: what an independent pass over the command line found, each refused in one line with exit code 2
/// and nothing the user gave lost: outputs over files a jobs file names, commands smuggled into a chart's labels,
/// gates that gate nothing, outputs named twice, links planted among an export's files, names that break lines.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

using namespace hetsim::e2e;

const std::string kSource   = HETSIM_SOURCE_DIR;
const std::string kDefault  = "--cluster preset:case5_worldwide_geo --model preset:gpt3-1.3b";
const std::string kTwoSites = kSource + "/docs/examples/two_sites.json";

/// A refusal: exit code 2 and one line (after any progress) holding `expected`.
void check_refused(const RunResult& r, const std::string& expected)
{
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(last_line(r.output).find(expected) != std::string::npos);
  CHECK(last_line(r.output).rfind("hetsim: ", 0) == 0);
}

/// `text` as one shell word (single-quoted); `printf`'s escapes are what put a newline inside.
std::string shell_word_with_newlines(const std::string& text)
{
  return "\"$(printf '" + text + "')\"";
}

} // namespace

TEST_CASE("a report over a model that the jobs file names is refused, and the model kept")
{
  TempDir dir("jobs_inputs");
  const std::string model = dir.file("model.json", read_file(kSource + "/presets/model/gpt3-1.3b.json"));
  const std::string jobs  = dir.file(
      "jobs.json", R"({"jobs": [{"name": "a", "nodes": ["e.0", "w.0"], "model": "model.json", "planner": "megatron",
                                 "global_batch": 16, "seq_len": 2048}]})");
  const RunResult r = run_hetsim("simulate --cluster " + kTwoSites + " --jobs " + jobs + " --report " + model);
  check_refused(r, "--report " + model + ": refusing to overwrite an input file");
  CHECK(read_file(model) == read_file(kSource + "/presets/model/gpt3-1.3b.json"));
}

TEST_CASE("a chart's labels cannot carry gnuplot commands")
{
  TempDir dir("plot_labels");
  const std::string csv     = dir.file("t.csv", "cluster,planner,simulated_s\na,amp,1\nb,amp,2\n");
  const std::string planted = (dir.path / "planted").string();
  for (const char* option : {"--ylabel", "--title"}) {
    const RunResult r = run_hetsim("plot --csv " + csv + " --out " + (dir.path / "c.png").string() + " " + option +
                                   " " + shell_word_with_newlines("x\"\\nsystem(\"touch " + planted +
                                                                  "\")\\nset ylabel \"y"));
    check_refused(r, std::string(option) + ": expected text without control characters");
    CHECK_FALSE(fs::exists(planted));
  }
}

TEST_CASE("validate's gates refuse values that gate nothing, with a readable message")
{
  const std::string base = "validate --trace " + kSource + "/tests/exec/data/dp4.json --plan x --cluster c --model m";
  check_refused(run_hetsim(base + " --max-error nan"), "--max-error: expected a number above 0 and up to 10, got 'nan'");
  check_refused(run_hetsim(base + " --max-error 0"), "--max-error: expected a number above 0 and up to 10, got '0'");
  CHECK(run_hetsim(base + " --max-error 0").output.size() < 300); // not DBL_MAX in 309 digits
  check_refused(run_hetsim(base + " --min-spearman -1"), "expected a number above -1 and up to 1, got '-1'");
  check_refused(run_hetsim(base + " --min-spearman inf"), "got 'inf'");
  check_refused(run_hetsim(base + " --min-spearman 1e308"), "got '1e308'");
}

TEST_CASE("one file named for two outputs, an empty file name, a negative seed: refused before any work")
{
  TempDir dir("outputs_twice");
  const std::string x = (dir.path / "x.json").string();
  check_refused(run_hetsim("simulate --report " + x + " --trace " + x), "--trace " + x + ": is also the --report file");
  CHECK_FALSE(fs::exists(x));
  check_refused(run_hetsim("search " + kDefault + " --global-batch 64 --out " + x + " --best " + x),
                "--best " + x + ": is also the --out file");
  check_refused(run_hetsim("simulate --report ''"), "--report: expected a value, got an empty string");
  check_refused(run_hetsim("search " + kDefault + " --global-batch 64 --seed -1"),
                "--seed: expected a number of at least 0, got '-1'");
}

TEST_CASE("export neither writes through a link planted among its files nor makes a folder's missing parents")
{
  TempDir dir("export_links");
  const std::string plan = kSource + "/presets/plan/gpt3-1.3b-case5.json";
  const std::string fresh = (dir.path / "fresh").string();
  const RunResult first   = run_hetsim("export " + kDefault + " --plan " + plan + " --format slurm --out " + fresh);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const std::string victim = dir.file("victim.txt", "mine\n");
  const fs::path planted   = dir.path / "planted";
  fs::create_directory(planted);
  for (const auto& entry : fs::directory_iterator(fresh))
    fs::create_symlink(victim, planted / entry.path().filename());
  check_refused(run_hetsim("export " + kDefault + " --plan " + plan + " --format slurm --out " + planted.string()),
                "is a link; export writes its own files and never through a link");
  CHECK(read_file(victim) == "mine\n");
  const std::string deep = (dir.path / "a" / "b").string();
  check_refused(run_hetsim("export " + kDefault + " --plan " + plan + " --format slurm --out " + deep),
                "its directory '" + (dir.path / "a").string() + "' does not exist");
  CHECK_FALSE(fs::exists(dir.path / "a"));
}

TEST_CASE("names that would break a message onto two lines are refused, and errors stay on one line")
{
  TempDir dir("names");
  const std::string out = (dir.path / "c.json").string();
  check_refused(run_hetsim("generate-cluster --out " + out + " --regions " + shell_word_with_newlines("a,b\\nc")),
                "--regions: expected names of 1 to 200 characters without control characters, got 'b\\nc'");
  check_refused(run_hetsim("generate-cluster --out " + out + " --regions a,b,a"), "expected each region once");
  check_refused(run_hetsim("generate-cluster --out " + out + " --bandwidth-gbps 1e-300"),
                "--bandwidth-gbps: expected MIN:MAX or a number, each from 1e-06 to 100000, got '1e-300'");
  CHECK_FALSE(fs::exists(out));
  // A preset name holding a newline is echoed escaped.
  const RunResult preset = run_hetsim("inspect cluster " + shell_word_with_newlines("preset:x\\ny"));
  check_refused(preset, "preset:x\\ny: unknown cluster preset");
  CHECK(preset.output.find("preset:x\ny") == std::string::npos);
}

TEST_CASE("a slowdown naming a repeated node's base name lists the names its copies have")
{
  TempDir dir("slowdown_names");
  const std::string slowdowns = dir.file("s.json", R"({"nics": [{"node": "e", "rate": 0.5}]})");
  const RunResult r = run_hetsim("simulate --cluster " + kTwoSites + " --jobs " + kSource +
                                 "/docs/examples/two_jobs.json --slowdowns " + slowdowns);
  check_refused(r, "got string \"e\", a node written with \"repeat\": its copies are named 'e.0', 'e.1', 'e.2', "
                   "'e.3'");
}

TEST_CASE("a global batch that leaves only dp 1 says which degrees it excluded")
{
  const RunResult r = run_hetsim("search --cluster " + kTwoSites +
                                 " --model preset:gpt3-1.3b --global-batch 509 --planner megatron --top 1");
  INFO(r.output);
  CHECK(r.output.find("hetsim: note: --global-batch: global batch 509 divides evenly among none of the "
                      "data-parallel degrees 2, 4, 8") != std::string::npos);
}

TEST_CASE("sweep --out x.csv beside a spec x.json names the options that keep the spec")
{
  TempDir dir("sweep_json");
  const std::string spec = dir.file("x.json", read_file(kSource + "/docs/examples/sweep.json"));
  const RunResult r      = run_hetsim("sweep --spec " + spec + " --out " + (dir.path / "x.csv").string());
  check_refused(r, "give --json FILE to name it, or --no-json");
}

TEST_CASE("run: a trace directory another run holds is refused; a refused run leaves no directory it made")
{
  TempDir dir("run_dirs");
  const std::string inputs = "--cluster " + kSource + "/tests/exec/data/cluster4.json --model " + kSource +
                             "/tests/exec/data/model4.json --plan " + kSource + "/tests/exec/data/dp4.json";
  const fs::path held = dir.path / "held";
  fs::create_directory(held);
  const int fd = ::open(held.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0); // as a running `hetsim run` holds it
  check_refused(run_hetsim("run " + inputs + " --trace-dir " + held.string()),
                "another `hetsim run` is writing its traces there");
  ::close(fd);
  // A rank whose executor does not exist: refused before its trace directory is made.
  const fs::path fresh = dir.path / "fresh";
  check_refused(run_command("HETSIM_RANK=0 HETSIM_WORLD_SIZE=4 " + std::string(HETSIM_CLI_PATH) + " run " +
                            inputs + " --executor none --store-dir " + (dir.path / "store").string() +
                            " --trace-dir " + fresh.string()),
                "none");
  CHECK_FALSE(fs::exists(fresh));
}

TEST_CASE("simulate --jobs with a calibration that fits none of the cluster's GPUs says so")
{
  const RunResult r = run_hetsim("simulate --cluster " + kTwoSites + " --jobs " + kSource +
                                 "/docs/examples/two_jobs.json --calibration " + kSource +
                                 "/fuzz/seeds/calibration/kernels.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("fits cpu, none of this cluster's GPUs (A100-SXM4-80GB): their compute is priced "
                      "uncalibrated") != std::string::npos);
}

TEST_CASE("run: an earlier run's files in the trace directory are replaced together, and it says so")
{
  TempDir dir("run_replace");
  const std::string inputs = "--cluster " + kSource + "/tests/exec/data/cluster4.json --model " + kSource +
                             "/tests/exec/data/model4.json --plan " + kSource + "/tests/exec/data/dp4.json";
  const fs::path traces = dir.path / "traces";
  const std::string run = "run " + inputs + " --trace-dir " + traces.string() + " --warmup 0 --iterations 1";
  const RunResult first = run_hetsim(run);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  // A rank of an earlier run of more ranks, as `hetsim run` writes them.
  fs::copy_file(traces / "rank0.json", traces / "rank7.failed.json");
  const RunResult second = run_hetsim(run);
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(second.output.find("hetsim: note: --trace-dir " + traces.string() +
                           ": replacing the 7 trace and report files of an earlier run") != std::string::npos);
  CHECK_FALSE(fs::exists(traces / "rank7.failed.json"));
  CHECK(fs::exists(traces / "rank3.json"));
  CHECK(fs::exists(traces / "report.json"));
}
