// NCCL's collectives as HetSim prices them (costmodel/nccl_collective.hpp) against whole public nccl-tests sweeps
// (tests/data/nccl_tests/published_curves.md, machines in sweeps.json).

#include "core/json_input.hpp"
#include "costmodel/nccl_collective.hpp"
#include "nccl_machine.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

struct SweepRow {
  double bytes   = 0;
  double seconds = 0; ///< out of place
  double bus_GBps = 0;
};

/// The out-of-place rows from 1 MB up of the `block`-th fenced block after the line starting with `section`.
std::vector<SweepRow> read_block(const std::string& file, const std::string& section, int block)
{
  std::ifstream in(file);
  std::string line;
  bool in_section = false, inside = false;
  int opened = 0;
  std::vector<SweepRow> rows;
  while (std::getline(in, line)) {
    if (!in_section) {
      in_section = line.rfind(section, 0) == 0;
      continue;
    }
    if (line.rfind("```", 0) == 0) {
      if (inside && opened - 1 == block)
        break;
      inside = !inside;
      opened += inside ? 1 : 0;
      continue;
    }
    if (!inside || opened - 1 != block)
      continue;
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;)
      if (token.back() != ':')
        tokens.push_back(token);
    if (tokens.size() < 8 || tokens[0].find_first_not_of("0123456789") != std::string::npos)
      continue;
    const double bytes = std::stod(tokens[0]);
    if (bytes >= (1 << 20))
      rows.push_back({bytes, std::stod(tokens[5]) * 1e-6, std::stod(tokens[7])});
  }
  return rows;
}

} // namespace

TEST_CASE("NCCL's collectives against whole nccl-tests sweeps: within 15% at every size from 1 MB to 4 GB")
{
  const std::string dir = std::string(HETSIM_SOURCE_DIR) + "/tests/data/nccl_tests/";
  const nlohmann::json parsed = JsonInput::parse_file(dir + "sweeps.json");
  const JsonInput data(parsed, dir + "sweeps.json");
  int held = 0;
  for (const JsonInput& sweep : data.at("sweeps").elements()) {
    if (sweep.has("not_modelled"))
      continue;
    const std::string name = sweep.at("name").string();
    CAPTURE(name);
    const auto rows =
        read_block(dir + "published_curves.md", sweep.at("section").string(), sweep.at("block").non_negative_int());
    REQUIRE(!rows.empty());
    const Cluster cluster = nccl_test_machine(sweep);
    std::vector<int> devices(cluster.device_count());
    for (int d = 0; d < cluster.device_count(); ++d)
      devices[d] = d;
    const CollectiveOp op =
        sweep.at("function").string() == "all_reduce" ? CollectiveOp::all_reduce : CollectiveOp::all_gather;
    NcclEnvironment environment;
    environment.algorithms = sweep.at("algo").string();
    const bool known_gap   = sweep.has("known_gap");
    std::ostringstream errors;
    double worst = 0, worst_tuner = 0;
    for (const SweepRow& row : rows) {
      if (row.bytes > 4.3e9)
        continue;
      const double error = nccl_collective_seconds(cluster, devices, op, row.bytes, environment) / row.seconds - 1;
      const double tuner = nccl_collective(cluster, devices, op, row.bytes, environment).seconds / row.seconds - 1;
      errors << " " << std::lround(100 * error);
      worst       = std::max(worst, std::fabs(error));
      worst_tuner = std::max(worst_tuner, std::fabs(tuner));
      if (!known_gap)
        CHECK(std::fabs(error) <= 0.15);
    }
    MESSAGE(name << std::string(known_gap ? " (known gap)" : "") << ": worst " << 100 * worst << "% (tuner alone "
                 << 100 * worst_tuner << "%); per size, %:" << errors.str());
    held += known_gap ? 0 : 1;
  }
  CHECK(held >= 4); // the four systems at least
}

TEST_CASE("The pipeline slows mid-size Simple calls, not LL ones, and closes past channels x ranks x step")
{
  NcclChoice simple{NcclAlgorithm::ring, NcclProtocol::simple, 100e-6, 16};
  const double pipeline = 16 * 16 * (4 << 20) / 8.0; // channels x ranks x NCCL_BUFFSIZE / NCCL_STEPS
  // At the pipeline's size, half of k; far past it, the tuner's time.
  CHECK(nccl_achieved_seconds(simple, pipeline, 16, NcclTransport::infiniband) ==
        doctest::Approx(100e-6 * (1 + nccl_pipeline_fill_cost(NcclTransport::infiniband) / 2)));
  CHECK(nccl_achieved_seconds(simple, 1000 * pipeline, 16, NcclTransport::efa) < 100e-6 * 1.002);
  // EFA's steps cost more than IB verbs' (2 x p5 against A3 Ultra).
  CHECK(nccl_achieved_seconds(simple, pipeline / 8, 16, NcclTransport::efa) >
        nccl_achieved_seconds(simple, pipeline / 8, 16, NcclTransport::infiniband));
  // A larger NCCL_BUFFSIZE is a longer pipeline: the same call is further from full.
  CHECK(nccl_achieved_seconds(simple, pipeline, 16, NcclTransport::infiniband, 8 << 20) >
        nccl_achieved_seconds(simple, pipeline, 16, NcclTransport::infiniband));
  NcclChoice ll{NcclAlgorithm::ring, NcclProtocol::ll, 30e-6, 16};
  CHECK(nccl_achieved_seconds(ll, 1 << 20, 16, NcclTransport::efa) == 30e-6);
}
