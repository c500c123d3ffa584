#pragma once
/// Which rank to blame when a run breaks. Every rank touches `alive.<rank>` in the rendezvous directory several
/// times a second and writes `failed.<rank>` when it fails, so that a rank whose operation fails can tell a
/// peer that died or stopped answering (its heartbeat went stale) from one that reported an error.

#include <atomic>
#include <string>
#include <thread>

namespace hetsim::exec {

class Liveness {
public:
  /// Starts the heartbeat of `rank`. Throws InputError when `dir` already holds this rank's files (another run's).
  Liveness(std::string dir, int rank, int world_size);
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  /// Records that this rank failed with `message` (others name it), and stops the heartbeat.
  void mark_failed(const std::string& message);
  /// Records that this rank finished, so that a finished rank is never taken for a dead one.
  void mark_done();

  /// The ranks to blame, as text: "rank 3 died or stopped answering (no heartbeat for 2.1 s)" as soon as a
  /// rank's heartbeat goes stale within `grace_s`, otherwise the ranks that reported failures ("rank 2 failed:
  /// ..."); empty when every rank looks healthy.
  std::string blame(double grace_s) const;

  static constexpr double kBeatSeconds  = 0.2;
  static constexpr double kStaleSeconds = 1.5;

private:
  std::string path(const char* what, int rank) const;

  std::string dir_;
  int rank_;
  int world_size_;
  std::atomic<bool> beating_{true};
  std::thread thread_;
};

} // namespace hetsim::exec
