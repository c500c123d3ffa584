#pragma once
/// A fresh rendezvous directory (where ranks meet: Gloo's file store, the NCCL unique id), removed however its
/// owner ends.

#include <string>

namespace hetsim::exec {

struct StoreDirectory {
  std::string path;
  /// Under the system's temporary directory; throws Error when it cannot be created.
  StoreDirectory();
  ~StoreDirectory();
  StoreDirectory(const StoreDirectory&)            = delete;
  StoreDirectory& operator=(const StoreDirectory&) = delete;
};

} // namespace hetsim::exec
