#include "exec/store_directory.hpp"

#include "core/error.hpp"

#include <cstdlib>
#include <filesystem>

namespace hetsim::exec {

namespace fs = std::filesystem;

StoreDirectory::StoreDirectory()
{
  std::string pattern = (fs::temp_directory_path() / "hetsim-store-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error("cannot create a rendezvous directory in " + fs::temp_directory_path().string());
  path = pattern;
}

StoreDirectory::~StoreDirectory()
{
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

} // namespace hetsim::exec
