#include "exec/rank_environment.hpp"

#include "core/error.hpp"

#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace hetsim::exec {
namespace {

int environment_int(const char* name, const char* value)
{
  char* end         = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || parsed < 0 || parsed > (1 << 20))
    throw InputError(std::string("environment: ") + name + ": expected a non-negative integer, got '" + value + "'");
  return static_cast<int>(parsed);
}

/// The run's id from an external launcher, as a file name.
std::string job_from_environment()
{
  std::string job;
  if (const char* pmix = std::getenv("PMIX_NAMESPACE")) // Open MPI 4 and 5, other PMIx launchers
    job = pmix;
  else if (const char* ompi = std::getenv("OMPI_MCA_ess_base_jobid"))
    job = ompi;
  else if (const char* slurm = std::getenv("SLURM_JOB_ID"))
    job = std::string(slurm) + "." + (std::getenv("SLURM_STEP_ID") ? std::getenv("SLURM_STEP_ID") : "0");
  for (char& c : job)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      c = '_';
  return job;
}

} // namespace

std::optional<RankIdentity> rank_from_environment()
{
  static constexpr std::array<std::array<const char*, 2>, 4> kSources = {
      {{"HETSIM_RANK", "HETSIM_WORLD_SIZE"},
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
       {"PMI_RANK", "PMI_SIZE"},
       {"SLURM_PROCID", "SLURM_NTASKS"}}};
  for (std::size_t i = 0; i < kSources.size(); ++i) {
    const char* rank = std::getenv(kSources[i][0]);
    const char* size = std::getenv(kSources[i][1]);
    if (!rank || !size)
      continue;
    RankIdentity identity;
    identity.rank                = environment_int(kSources[i][0], rank);
    identity.world_size          = environment_int(kSources[i][1], size);
    identity.from_local_launcher = i == 0;
    if (identity.rank >= identity.world_size)
      throw InputError(std::string("environment: ") + kSources[i][0] + " " + rank + " is not below " + kSources[i][1] +
                       " " + size);
    if (!identity.from_local_launcher)
      identity.job = job_from_environment();
    return identity;
  }
  return std::nullopt;
}

std::string rendezvous_dir(const std::string& store_dir, const RankIdentity& identity)
{
  namespace fs      = std::filesystem;
  const fs::path to = identity.job.empty() ? fs::path(store_dir) : fs::path(store_dir) / ("job-" + identity.job);
  std::error_code error;
  fs::create_directories(to, error); // every rank may try at once: only the outcome matters
  if (!fs::is_directory(to))
    throw InputError("--store-dir: cannot create " + to.string() + (error ? ": " + error.message() : ""));
  return to.string();
}

} // namespace hetsim::exec
