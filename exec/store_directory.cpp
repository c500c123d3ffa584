#include "exec/store_directory.hpp"

#include "core/error.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace hetsim::exec {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "hetsim-store-";

/// Removes the stores in `dir` whose launcher no longer runs (one killed with SIGKILL had no chance to) and that
/// nothing has written for a minute: a running rank's heartbeat renames a file in its store every fraction of a
/// second, so a store seen from another process namespace, whose launcher this one cannot see, stays.
void remove_orphaned_stores(const fs::path& dir)
{
  const auto quiet_since = fs::file_time_type::clock::now() - std::chrono::minutes(1);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !entry.is_directory(error))
      continue;
    // hetsim-store-<launcher pid>-XXXXXX; a store of another naming is left alone.
    pid_t owner       = 0;
    const char* first = name.data() + kPrefix.size();
    const char* last  = name.data() + name.size();
    const auto [end, parsed] = std::from_chars(first, last, owner);
    if (parsed != std::errc() || end == last || *end != '-' || owner <= 0)
      continue;
    if (::kill(owner, 0) != 0 && errno == ESRCH && fs::last_write_time(entry.path(), error) < quiet_since && !error)
      fs::remove_all(entry.path(), error);
  }
}

} // namespace

StoreDirectory::StoreDirectory()
{
  const fs::path temporary = fs::temp_directory_path();
  remove_orphaned_stores(temporary);
  std::string pattern = (temporary / (std::string(kPrefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw InputError("the temporary directory " + temporary.string() +
                     ": cannot create a rendezvous directory there (" + std::strerror(errno) + "); set TMPDIR");
  path = pattern;
}

StoreDirectory::~StoreDirectory()
{
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

} // namespace hetsim::exec
