#include "exec/run_traces.hpp"

#include <filesystem>
#include <system_error>

namespace hetsim::exec {

namespace fs = std::filesystem;

std::string rank_trace_file(const std::string& dir, int rank)
{
  return (fs::path(dir) / ("rank" + std::to_string(rank) + ".json")).string();
}

std::string failed_rank_trace_file(const std::string& dir, int rank)
{
  return (fs::path(dir) / ("rank" + std::to_string(rank) + ".failed.json")).string();
}

int set_aside_rank_traces(const std::string& dir, int ranks)
{
  int moved = 0;
  for (int r = 0; r < ranks; ++r) {
    std::error_code error;
    if (!fs::is_regular_file(rank_trace_file(dir, r), error))
      continue;
    fs::rename(rank_trace_file(dir, r), failed_rank_trace_file(dir, r), error);
    moved += error ? 0 : 1;
  }
  return moved;
}

} // namespace hetsim::exec
