#include "exec/plugin.hpp"

#include "core/error.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

namespace hetsim::exec {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "libhetsim_exec_";
constexpr std::string_view kSuffix = ".so";

std::vector<fs::path> search_dirs()
{
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("HETSIM_EXECUTOR_PATH")) {
    std::stringstream list(env);
    std::string dir;
    while (std::getline(list, dir, ':'))
      if (!dir.empty())
        dirs.emplace_back(dir);
  }
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    dirs.push_back(self.parent_path());
    dirs.push_back(self.parent_path() / ".." / "lib" / "hetsim");
  }
  return dirs;
}

} // namespace

std::vector<std::string> list_executors()
{
  std::set<std::string> names;
  for (const auto& dir : search_dirs()) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      const std::string file = entry.path().filename().string();
      if (file.size() > kPrefix.size() + kSuffix.size() && file.starts_with(kPrefix) && file.ends_with(kSuffix))
        names.insert(file.substr(kPrefix.size(), file.size() - kPrefix.size() - kSuffix.size()));
    }
  }
  return {names.begin(), names.end()};
}

std::unique_ptr<Executor> load_executor(const std::string& name)
{
  const std::string file = std::string(kPrefix) + name + std::string(kSuffix);
  std::string load_errors;
  for (const auto& dir : search_dirs()) {
    const fs::path path = dir / file;
    std::error_code error;
    if (!fs::exists(path, error))
      continue;
    // RTLD_LOCAL: each plugin keeps its own copy of the HetSim libraries it links to itself.
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      load_errors += std::string("; ") + dlerror();
      continue;
    }
    auto create = reinterpret_cast<Executor* (*)()>(dlsym(library, "hetsim_create_executor"));
    if (!create)
      throw BackendUnavailable("executor '" + name + "': " + path.string() + " exports no hetsim_create_executor");
    std::unique_ptr<Executor> executor(create());
    if (const std::string reason = executor->unusable_reason(); !reason.empty())
      throw BackendUnavailable("--executor " + name + ": cannot run on this machine: " + reason);
    return executor;
  }
  std::string known;
  for (const auto& other : list_executors())
    known += (known.empty() ? "" : ", ") + other;
  std::string message = "--executor: no executor " + quote(name) + " in this build; available: " +
                        (known.empty() ? "none" : known);
  if (name == "cuda")
    message += " (the cuda executor is built only when CMake finds the CUDA toolkit and NCCL)";
  throw BackendUnavailable(message + load_errors);
}

} // namespace hetsim::exec
