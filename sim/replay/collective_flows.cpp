#include "sim/replay/collective_flows.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/collective.hpp"
#include "strategies/plan/plan.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <map>

namespace hetsim::sim {

using strategies::TaskKind;
namespace sg4 = simgrid::s4u;

/// A ring over some devices, with per-position counters of steps started and receives done.
struct CollectiveRun::Ring {
  Ring(std::vector<int> members, bool one_flow)
      : devices(std::move(members)), one_flow_per_phase(one_flow), started(devices.size()), received(devices.size())
  {
  }
  std::vector<int> devices;
  bool one_flow_per_phase;       ///< each phase moves as one pipelined flow per member instead of step by step
  std::vector<Counter> started;  ///< k+1 once the member has started step k
  std::vector<Counter> received; ///< step by step: k+1 once the member's step-k receive is done
  Counter joined;                ///< pipelined phases started, summed over the members
  Counter edges_done;            ///< pipelined phases ended, summed over the members' outgoing edges
  std::vector<long> phases = std::vector<long>(devices.size()); ///< pipelined phases each member has started
};

std::unique_ptr<CollectiveRun::Ring> CollectiveRun::make_ring(std::vector<int> devices) const
{
  bool one_flow = pipelined_rings_;
  if (!one_flow && folded_rings_in_one_flow_) { // only the rings whose every edge joins two nodes
    const Cluster& cluster = network_.platform().cluster();
    one_flow               = true;
    for (std::size_t i = 0; i < devices.size(); ++i)
      one_flow = one_flow &&
                 cluster.device(devices[i]).node != cluster.device(devices[(i + 1) % devices.size()]).node;
  }
  return std::make_unique<Ring>(std::move(devices), one_flow);
}

CollectiveRun::CollectiveRun(const strategies::Collective& collective, const Network& network,
                             double analytic_seconds, bool pipelined_rings, bool folded_rings_in_one_flow)
    : collective_(collective), network_(network), pipelined_rings_(pipelined_rings),
      folded_rings_in_one_flow_(folded_rings_in_one_flow), joined_(collective.devices.size())
{
  const int n = size();
  if (n <= 1) {
    kind_ = Kind::none;
    return;
  }
  if (analytic_seconds >= 0) {
    kind_             = Kind::analytic;
    analytic_seconds_ = analytic_seconds;
    return;
  }
  if (collective.kind == TaskKind::all_to_all) {
    kind_ = Kind::all_to_all;
    return;
  }
  const auto algorithm = static_cast<strategies::CollectiveAlgorithm>(collective.algorithm);
  if (algorithm == strategies::CollectiveAlgorithm::tree && collective.kind == TaskKind::all_reduce) {
    kind_ = Kind::tree;
    from_children_.resize(n);
    from_parent_.resize(n);
    return;
  }
  if (algorithm == strategies::CollectiveAlgorithm::hierarchical) {
    const Cluster& cluster = network.platform().cluster();
    std::map<int, std::vector<int>> by_node; // node id -> member indices, in collective order
    for (int i = 0; i < n; ++i)
      by_node[cluster.device(collective.devices[i]).node].push_back(i);
    const std::size_t local = by_node.begin()->second.size();
    bool uniform            = true;
    for (const auto& [node, members] : by_node)
      uniform = uniform && members.size() == local;
    if (uniform && by_node.size() > 1 && local > 1) {
      kind_        = Kind::hierarchical;
      local_count_ = static_cast<int>(local);
      node_count_  = collective.member_count() / local_count_; // the real nodes, when folded
      HETSIM_ASSERT(node_count_ * local_count_ == collective.member_count());
      group_of_.resize(n);
      position_of_.resize(n);
      std::vector<std::vector<int>> inter_devices(local);
      int group = 0;
      for (const auto& [node, members] : by_node) {
        std::vector<int> devices;
        for (std::size_t p = 0; p < members.size(); ++p) {
          group_of_[members[p]]    = group;
          position_of_[members[p]] = static_cast<int>(p);
          devices.push_back(collective.devices[members[p]]);
          inter_devices[p].push_back(collective.devices[members[p]]);
        }
        intra_.push_back(make_ring(std::move(devices)));
        ++group;
      }
      for (auto& devices : inter_devices)
        inter_.push_back(make_ring(std::move(devices)));
      return;
    }
  }
  kind_ = Kind::ring;
  ring_ = make_ring(collective.devices);
}

CollectiveRun::~CollectiveRun() = default;

void CollectiveRun::run_member(int index)
{
  HETSIM_ASSERT(index >= 0 && index < size());
  joined_[index].raise_to(1);
  const int n          = collective_.member_count(); // a folded ring steps as the real one (fold.hpp)
  const double bytes   = collective_.bytes;
  const bool all_steps = collective_.kind == TaskKind::all_reduce;
  switch (kind_) {
    case Kind::none:
      break;
    case Kind::ring:
      run_ring(*ring_, index, 0, all_steps ? 2 * (n - 1) : n - 1, bytes / n);
      break;
    case Kind::tree:
      run_tree(index);
      break;
    case Kind::hierarchical:
      run_hierarchical(index);
      break;
    case Kind::all_to_all:
      run_all_to_all(index);
      break;
    case Kind::analytic:
      run_analytic(index);
      break;
  }
  ++finished_;
}

void CollectiveRun::run_ring(Ring& ring, int position, int first_step, int steps, double chunk_bytes)
{
  const int n    = static_cast<int>(ring.devices.size());
  const int next = (position + 1) % n;
  const int src = ring.devices[position], dst = ring.devices[next];
  // The wire's latency comes with each transfer; the collective library's own per-step cost beyond it does not.
  const double wire      = network_.platform().latency(src, dst);
  const bool same_node   = network_.platform().cluster().device(src).node ==
                           network_.platform().cluster().device(dst).node;
  const double step      = costmodel::ring_step_latency(wire, same_node);
  if (ring.one_flow_per_phase && steps > 1) {
    ring.started[position].raise_to(first_step + steps);
    const long phase = ++ring.phases[position];
    // Past its first chunk, an edge forwards what its sender has received from the edge before, and NCCL's FIFO
    // holds only NCCL_BUFFSIZE (4 MiB by default) ahead of its receiver: the phase's bytes move once every member
    // has joined it.
    ring.joined.increment();
    ring.joined.wait_for(static_cast<long>(n) * phase);
    sg4::this_actor::sleep_for(steps * step - wire);
    network_.transfer(src, dst, steps * chunk_bytes);
    // The phase's data crosses every edge of the ring, so no member has its result before the slowest edge is
    // done: a member behind fast links waits for the data still on the slow ones.
    ring.edges_done.increment();
    ring.edges_done.wait_for(static_cast<long>(n) * phase);
    return;
  }
  for (int k = first_step; k < first_step + steps; ++k) {
    ring.started[position].raise_to(k + 1);
    ring.started[next].wait_for(k + 1); // the receiver is at this step too
    if (step > wire)
      sg4::this_actor::sleep_for(step - wire);
    network_.transfer(src, dst, chunk_bytes);
    ring.received[next].raise_to(k + 1);
    ring.received[position].wait_for(k + 1);
  }
}

void CollectiveRun::run_tree(int index)
{
  const int n        = size();
  const int chunks   = costmodel::kTreeChunks;
  const double chunk = collective_.bytes / chunks;
  const int parent   = (index - 1) / 2;
  std::vector<int> children;
  for (int c : {2 * index + 1, 2 * index + 2})
    if (c < n)
      children.push_back(c);

  // Reduce towards the root, chunk by chunk.
  for (int c = 0; c < chunks; ++c) {
    for (std::size_t k = 0; k < children.size(); ++k)
      from_children_[index][k].wait_for(c + 1);
    if (index == 0)
      continue;
    joined_[parent].wait_for(1);
    network_.transfer(collective_.devices[index], collective_.devices[parent], chunk);
    from_children_[parent][(index - 1) % 2].raise_to(c + 1);
  }
  // Broadcast back, chunk by chunk, to both children at once.
  for (int c = 0; c < chunks; ++c) {
    if (index != 0)
      from_parent_[index].wait_for(c + 1);
    if (children.empty())
      continue;
    std::vector<Network::Flow> flows;
    for (int child : children)
      flows.push_back({collective_.devices[index], collective_.devices[child], chunk});
    network_.transfer_all(std::move(flows));
    for (int child : children)
      from_parent_[child].raise_to(c + 1);
  }
}

void CollectiveRun::run_hierarchical(int index)
{
  const int group    = group_of_[index];
  const int position = position_of_[index];
  const int local    = local_count_;
  const int nodes    = node_count_;
  const double bytes = collective_.bytes;
  Ring& intra        = *intra_[group];
  Ring& inter        = *inter_[position];
  switch (collective_.kind) {
    case TaskKind::all_reduce:
      run_ring(intra, position, 0, local - 1, bytes / local);
      run_ring(inter, group, 0, 2 * (nodes - 1), bytes / local / nodes);
      run_ring(intra, position, local - 1, local - 1, bytes / local);
      break;
    case TaskKind::reduce_scatter:
      run_ring(intra, position, 0, local - 1, bytes / local);
      run_ring(inter, group, 0, nodes - 1, bytes / local / nodes);
      break;
    case TaskKind::all_gather:
      run_ring(inter, group, 0, nodes - 1, bytes / local / nodes);
      run_ring(intra, position, 0, local - 1, bytes / local);
      break;
    default:
      throw InternalError("collective of kind '" + std::string(strategies::task_kind_name(collective_.kind)) +
                          "'");
  }
}

void CollectiveRun::run_all_to_all(int index)
{
  HETSIM_ASSERT(collective_.member_count() == size()); // never folded (fold.hpp)
  const int n = size();
  everyone_.increment();
  everyone_.wait_for(n);
  const double share = collective_.bytes / n;
  std::vector<Network::Flow> flows;
  flows.reserve(static_cast<std::size_t>(n - 1));
  for (int k = 1; k < n; ++k) // in ring order from the member's successor, as NCCL posts them
    flows.push_back({collective_.devices[index], collective_.devices[(index + k) % n], share});
  network_.transfer_all(std::move(flows));
  sent_.increment();
  sent_.wait_for(n); // what this member receives is in the others' flows
}

void CollectiveRun::run_analytic(int index)
{
  if (everyone_.value() + 1 == size()) // the last member to arrive starts the clock
    analytic_end_s_ = simgrid::s4u::Engine::get_clock() + analytic_seconds_;
  everyone_.increment();
  everyone_.wait_for(size());
  if (analytic_seconds_ <= 0) { // a profiled layer's all-reduce, already inside the layer's time
    simgrid::s4u::this_actor::sleep_until(analytic_end_s_);
    return;
  }
  // The links' usage gets what the ring would have moved on the member's edge to its successor.
  const int n       = collective_.member_count();
  const int steps   = collective_.kind == TaskKind::all_reduce ? 2 * (n - 1) : n - 1;
  const double sent = steps * static_cast<double>(units::whole_bytes(collective_.bytes / n));
  network_.occupy_until(collective_.devices[index], collective_.devices[(index + 1) % size()], sent,
                        analytic_end_s_);
}

} // namespace hetsim::sim
