#pragma once
/// Which rank to blame when a run breaks. Every rank touches `alive.<rank>` in the rendezvous directory several
/// times a second and writes `failed.<rank>` when it fails, so that a rank whose operation fails can tell a
/// peer that died or stopped answering (its heartbeat went stale) from one that reported an error. The local
/// launcher, which sees a rank die or stop at once, writes `abort` there, so that the others end within a beat
/// even while they are blocked in a rendezvous or a collective that would otherwise wait for its timeout.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace hetsim::exec {

class Liveness {
public:
  /// Called from the heartbeat thread once the launcher ends the run, with what the rank says of it ("the
  /// launcher ended the run: " and the launcher's reason); must end the process (the rank's own thread may be
  /// blocked inside the executor).
  using OnAbort = std::function<void(const std::string& message)>;

  /// Starts the heartbeat of `rank`. Throws InputError when `dir` already holds this rank's files (another run's).
  Liveness(std::string dir, int rank, int world_size, OnAbort on_abort = {});
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  /// Records that this rank failed with `message` (others name it), and stops the heartbeat. Returns false, and
  /// records nothing, when the rank had already failed (the launcher's abort and the rank's own error race).
  bool mark_failed(const std::string& message);
  /// Records that this rank finished, so that a finished rank is never taken for a dead one.
  void mark_done();

  /// The ranks to blame, as text: "rank 3 died or stopped answering (no heartbeat for 2.1 s)" as soon as a
  /// rank's heartbeat goes stale within `grace_s`; else the launcher's reason once it ends the run ("the launcher
  /// ended the run: rank 2 (pid 81) was killed by signal 9"); else, after `grace_s`, the ranks without a
  /// heartbeat ("rank 2 never started") or those that reported failures ("rank 2 failed: ..."); empty when
  /// every rank looks healthy.
  std::string blame(double grace_s) const;

  /// Tells every rank meeting in `dir` that the run is over, and why ("rank 2 (pid 81) was killed by signal 9").
  static void abort_run(const std::string& dir, const std::string& reason);

  static constexpr double kBeatSeconds  = 0.2;
  static constexpr double kStaleSeconds = 1.5;

private:
  std::string path(const char* what, int rank) const;

  std::string dir_;
  int rank_;
  int world_size_;
  OnAbort on_abort_;
  std::atomic<bool> beating_{true};
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

} // namespace hetsim::exec
