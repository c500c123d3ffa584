#pragma once
/// The local launcher: starts one process per rank on this machine (optionally each in its own network
/// namespace), watches them, and makes sure none is left behind.

#include <string>
#include <vector>

namespace hetsim::exec {

struct LaunchOptions {
  int ranks = 1;
  std::vector<std::string> command;     ///< program and arguments every rank runs
  std::vector<std::string> namespaces;  ///< empty, or one network namespace name (/var/run/netns) per rank
  std::string store_dir;                ///< rendezvous directory passed to the ranks
  /// After the first rank fails, how long the others may take to notice and exit on their own before they are
  /// killed.
  double grace_s = 25;
  /// How long a rank stopped by SIGSTOP (a debugger attaching, a job controller) may take to continue before it
  /// fails the run.
  double stop_tolerance_s = 18;
};

/// Runs the ranks with HETSIM_RANK, HETSIM_WORLD_SIZE and HETSIM_STORE_DIR set (and HETSIM_BIND=127.0.0.1 when
/// they share this machine's network), each killed if the launcher dies. The first rank to fail (exit code,
/// signal, or a SIGSTOP not continued within the tolerance, which kills it) ends the run: the others are
/// told through the rendezvous directory (Liveness::abort_run) and killed if they have not exited after the grace period. Returns when every rank has
/// exited; throws RankFailure naming each rank that failed. SIGINT or SIGTERM to the launcher kills the ranks.
void launch(const LaunchOptions& options);

/// A rank the launcher saw end with a failure: its wait status (waitpid's) and pid.
struct EndedRank {
  int rank   = 0;
  int status = 0;
  int pid    = 0;
};

/// Orders ranks that ended between two looks of the launcher as they are reported, the first being blamed for
/// the run's failure: those a signal ended (the cause) before those that exited on an error of their own (the
/// consequence: a peer's sockets closed), whatever order waitpid gave them in; otherwise as seen.
void order_by_cause(std::vector<EndedRank>& ended);

/// The first non-loopback IPv4 address of an interface that is up, or 127.0.0.1.
std::string default_bind_address();

} // namespace hetsim::exec
