#pragma once
/// The SimGrid engine of one simulation, configured for HetSim's network model.
///
/// Network model: CM02 flows with max-min fair sharing and no correction factors, so that a lone transfer of S bytes
/// over a route of latency L and bottleneck bandwidth B takes exactly L + S/B:
///  - `network/model:CM02`, `network/bandwidth-factor:1`, `network/weight-S:0`, `network/crosstraffic:0`
///    (no 5% reverse traffic on the way back);
///  - `network/TCP-gamma:0`: CM02 caps each flow at gamma / (2 * route latency) when gamma > 0; 0 removes the cap;
///  - `network/latency-factor:0`: CM02 weighs each flow's share of a bottleneck by 1/latency (TCP-like RTT
///    unfairness: a 2 µs NVLink flow would take 50,000 times the share of a 100 ms WAN flow on a shared port). With
///    the factor at 0 every flow has the same weight (plain max-min fairness) and SimGrid pays no latency itself:
///    the replay (sim::Network) sleeps the route's latency, read from the platform, before starting each flow, which
///    is what CM02 does during a flow's latency phase (no bandwidth used).
/// SimGrid's log output is silenced (threshold `critical`).
///
/// SimGrid keeps global state that an engine's destructor does not reset (the clock keeps running, the network
/// model cannot be changed), so a process can run one simulation only: a second Engine throws InternalError.
/// Use run_isolated() (isolate.hpp) to run each simulation in its own child process.

#include <memory>

namespace simgrid::s4u {
class Engine;
}

namespace hetsim::sim {

class Engine {
public:
  /// `guard_pages`: SimGrid's guard page below each actor's stack, which costs two of the process's memory
  /// mappings per actor (see stack_guards_fit).
  explicit Engine(bool guard_pages = true);
  ~Engine();
  Engine(const Engine&)            = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs the actors created so far until none is left (or all are blocked forever).
  void run();
  /// Simulated time, in seconds.
  double clock() const;
  simgrid::s4u::Engine& s4u() { return *engine_; }

  /// True when this process already created an Engine (and can create no other).
  static bool used_in_this_process();

private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
};

} // namespace hetsim::sim
