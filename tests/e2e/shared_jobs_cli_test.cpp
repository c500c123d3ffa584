/// End-to-end: `hetsim simulate --cluster C --jobs FILE`, the jobs file's example and its refusals.

#include "cli_runner.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace {

using namespace hetsim::e2e;

const std::string kSource  = HETSIM_SOURCE_DIR;
const std::string kCluster = " --cluster " + kSource + "/docs/examples/two_sites.json";

} // namespace

TEST_CASE("simulate --jobs: two jobs that cross one WAN link, each slowed against running alone")
{
  TempDir dir("jobs");
  const std::string report = dir.file("report.json");
  const RunResult r =
      run_hetsim("simulate" + kCluster + " --jobs " + kSource + "/docs/examples/two_jobs.json --report " + report);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_file(report));
  REQUIRE(j.at("jobs").size() == 2);
  for (const auto& job : j["jobs"]) {
    const double alone    = job["alone"]["iteration_time_s"].get<double>();
    const double together = job["together"]["iteration_time_s"].get<double>();
    CHECK(job["slowdown"].get<double>() == doctest::Approx(together / alone));
    CHECK(together >= alone * (1 - 1e-9)); // sharing links never speeds a job up here
    CHECK(job["devices"].size() == 32);
  }
  // Each job spans both sites: they meet on the WAN link each way and nowhere else (their nodes are their own).
  REQUIRE(j.at("shared_links").size() == 2);
  for (const auto& link : j["shared_links"]) {
    CHECK(link["kind"] == "wan");
    CHECK(link["bytes"][0].get<double>() > 0);
    CHECK(link["bytes"][1].get<double>() > 0);
  }
  CHECK(j["jobs"][0]["slowdown"].get<double>() > 1.01);
}

TEST_CASE("simulate --jobs: a bad jobs file is one line naming the file and the field")
{
  TempDir dir("jobs_bad");
  const std::string job_a = R"({"name": "a", "nodes": ["e.0"], "model": "preset:gpt3-1.3b", "planner": "megatron",
                                "global_batch": 8, "seq_len": 512})";
  const auto jobs_file = [&](const std::string& name, const std::string& second) {
    return dir.file(name + ".json", R"({"jobs": [)" + job_a + ", " + second + "]}");
  };
  struct Case {
    std::string what, args, expected;
  };
  const std::string simulate = "simulate" + kCluster + " --jobs ";
  const std::vector<Case> cases = {
      {"unknown node", simulate + jobs_file("node", R"({"name": "b", "nodes": ["x.9"], "model": "preset:gpt3-1.3b",
        "planner": "megatron", "global_batch": 8})"),
       "jobs[1].nodes[0]: expected a node of cluster 'two-sites'"},
      {"a node of two jobs", simulate + jobs_file("twice", R"({"name": "b", "regions": ["east"],
        "model": "preset:gpt3-1.3b", "planner": "megatron", "global_batch": 8})"),
       "jobs[1].regions[0]: expected a node no other job runs on (node 'e.0' already runs job 'a')"},
      {"plan and planner", simulate + jobs_file("both", R"({"name": "b", "nodes": ["w.0"], "model": "preset:gpt3-1.3b",
        "planner": "megatron", "plan": "p.json", "global_batch": 8})"),
       "jobs[1]: expected either `plan` (a plan file) or `planner`"},
      {"same name", simulate + jobs_file("name", R"({"name": "a", "nodes": ["w.0"], "model": "preset:gpt3-1.3b",
        "planner": "megatron", "global_batch": 8})"),
       "jobs[1].name: expected a name no other job has"},
      {"unknown field", simulate + jobs_file("field", R"({"name": "b", "node": ["w.0"]})"), "jobs[1]"},
      {"no cluster", "simulate --jobs " + jobs_file("nocluster", job_a), "--jobs: expected --cluster FILE"},
      {"a model beside", simulate + jobs_file("model", job_a) + " --model preset:gpt3-1.3b",
       "--jobs: --model is for one job"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const RunResult r = run_hetsim(c.args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expected) != std::string::npos);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
}
