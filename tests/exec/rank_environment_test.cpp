/// Who a rank is and where it meets the others, from each launcher's environment.

#include "exec/rank_environment.hpp"

#include "core/error.hpp"
#include "exec_fixtures.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <optional>

using namespace hetsim;
using namespace hetsim::test;

namespace {

/// Sets variables for one test and puts every one back (the exec tests start children that inherit them).
class ScopedEnvironment {
public:
  explicit ScopedEnvironment(const std::map<std::string, std::string>& values)
  {
    for (const char* name : {"HETSIM_RANK", "HETSIM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                             "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMIX_NAMESPACE",
                             "OMPI_MCA_ess_base_jobid", "SLURM_JOB_ID", "SLURM_STEP_ID"}) {
      const char* old = std::getenv(name);
      saved_[name]    = old ? std::optional<std::string>(old) : std::nullopt;
      ::unsetenv(name);
    }
    for (const auto& [name, value] : values)
      ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment()
  {
    for (const auto& [name, value] : saved_)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

private:
  std::map<std::string, std::optional<std::string>> saved_;
};

} // namespace

TEST_CASE("rank environment: each launcher's rank, size and run id")
{
  {
    ScopedEnvironment env({});
    CHECK(!exec::rank_from_environment());
  }
  {
    ScopedEnvironment env({{"HETSIM_RANK", "1"}, {"HETSIM_WORLD_SIZE", "4"}, {"PMIX_NAMESPACE", "ignored"}});
    const auto identity = exec::rank_from_environment();
    REQUIRE(identity);
    CHECK(identity->rank == 1);
    CHECK(identity->from_local_launcher);
    CHECK(identity->job.empty());
  }
  {
    ScopedEnvironment env(
        {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"PMIX_NAMESPACE", "prterun-host-42@1"}});
    const auto identity = exec::rank_from_environment();
    REQUIRE(identity);
    CHECK(identity->rank == 3);
    CHECK(identity->world_size == 4);
    CHECK(!identity->from_local_launcher);
    CHECK(identity->job == "prterun-host-42_1");
  }
  {
    ScopedEnvironment env(
        {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"}});
    CHECK(exec::rank_from_environment()->job == "77.3");
  }
  {
    ScopedEnvironment env({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}});
    CHECK_THROWS_WITH_AS(exec::rank_from_environment(), "environment: PMI_RANK 2 is not below PMI_SIZE 2", InputError);
  }
}

TEST_CASE("rank environment: a named run meets in a directory of its own, created when missing")
{
  ScratchDir dir("rendezvous");
  exec::RankIdentity identity;
  CHECK(exec::rendezvous_dir((dir.path / "a").string(), identity) == (dir.path / "a").string());
  identity.job          = "42";
  const std::string own = exec::rendezvous_dir((dir.path / "b").string(), identity);
  CHECK(own == (dir.path / "b" / "job-42").string());
  CHECK(std::filesystem::is_directory(own));

  std::ofstream(dir.path / "file") << "x";
  CHECK_THROWS_AS(exec::rendezvous_dir((dir.path / "file").string(), identity), InputError);
}
