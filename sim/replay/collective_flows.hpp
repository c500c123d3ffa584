#pragma once
/// Collectives as point-to-point flows. Each member's stream actor runs its own part of the algorithm; members
/// meet through counters, and every transfer is a Network flow on the real route, so collectives that share a
/// link slow each other down. The decompositions are those of costmodel/collective.hpp (the α-β twin):
///
///  - ring: all-reduce in 2(n-1) steps, reduce-scatter and all-gather in n-1; at each step every member sends
///    bytes/n to the next member in Collective::devices order and receives from the previous one. A step's
///    transfer starts when both its sender and its receiver have started that step, and a member starts step k+1
///    once its own step-k send and receive are done;
///  - tree (all-reduce only; the others fall back to ring): binary tree over the members' index order (the parent
///    of i is (i-1)/2), reduce to the root then broadcast back, pipelined in costmodel::kTreeChunks chunks. A node
///    forwards chunk c once it holds chunk c from all its children (reduce) or from its parent (broadcast, to
///    both children at once), and finishes its reduce part before it broadcasts; a child sends only once its
///    parent has joined the collective;
///  - hierarchical: members grouped by node (node id order; members keep their collective order inside a node).
///    All-reduce: intra-node ring reduce-scatter, inter-node ring all-reduce of bytes/local_count among the
///    members with the same local position, intra-node ring all-gather. Reduce-scatter: the intra-node then the
///    inter-node reduce-scatter; all-gather: the inter-node then the intra-node all-gather. Falls back to ring
///    when nodes hold different member counts, or when there is one node or one member per node;
///  - pipelined rings (ReplayOptions::pipelined_rings): every ring phase above moves as one flow per member to
///    the next member, carrying all its steps' chunks, once every member has joined the phase and after waiting
///    the latencies of the steps but one. This is how NCCL's chunk pipelining keeps every ring link busy at once,
///    and it takes 2(n-1) times fewer transfers. An edge forwards what it has received, and NCCL's FIFO lets only
///    NCCL_BUFFSIZE (4 MiB) ahead of the receiver, so no edge moves its phase before the whole ring is there.
///    With `folded_rings_in_one_flow` (ReplayOptions::folded_ring_in_one_flow says when), the collective's rings
///    whose every edge joins two nodes move this way too;
///  - all-to-all (whatever the algorithm): once every member has joined, each sends bytes/n to every other member
///    at once, n-1 concurrent flows on their own routes, and is done when every member's flows are (NCCL runs it as
///    one group of sends and receives, which returns when all of them have completed);
///  - analytic (ReplayOptions::analytic_collective_seconds, for collectives whose members share one node): once
///    the last member has joined, every member waits the given time.
///
/// Every member's part starts when that member arrives and ends when its own part is done.

#include "sim/replay/counter.hpp"
#include "sim/replay/network.hpp"
#include "strategies/lowering/schedule.hpp"

#include <array>
#include <memory>
#include <vector>

namespace hetsim::sim {

class CollectiveRun {
public:
  /// `analytic_seconds` >= 0 selects the analytic shortcut with that duration; `pipelined_rings` moves each ring
  /// phase as one flow per member, `folded_rings_in_one_flow` those of its rings that join nodes at every edge.
  CollectiveRun(const strategies::Collective& collective, const Network& network, double analytic_seconds = -1,
                bool pipelined_rings = false, bool folded_rings_in_one_flow = false);
  ~CollectiveRun();

  /// Runs member `index`'s part (from that member's actor); returns when this member is done.
  void run_member(int index);
  /// Members that have finished their part.
  int finished() const { return finished_; }
  int size() const { return static_cast<int>(collective_.devices.size()); }

private:
  struct Ring;
  enum class Kind { none, ring, tree, hierarchical, all_to_all, analytic };

  /// A ring over `devices`, moving one flow per phase under pipelined_rings, or under folded_rings_in_one_flow
  /// when every edge joins two nodes.
  std::unique_ptr<Ring> make_ring(std::vector<int> devices) const;
  void run_ring(Ring& ring, int position, int first_step, int steps, double chunk_bytes);
  void run_tree(int index);
  void run_hierarchical(int index);
  void run_all_to_all(int index);
  void run_analytic(int index);

  const strategies::Collective& collective_;
  const Network& network_;
  Kind kind_ = Kind::ring;
  double analytic_seconds_ = 0;
  bool pipelined_rings_    = false;
  bool folded_rings_in_one_flow_ = false;
  double analytic_end_s_   = 0;
  int finished_            = 0;

  std::vector<Counter> joined_; ///< per member: 1 once it has arrived
  std::unique_ptr<Ring> ring_;  ///< ring: all members

  // tree
  std::vector<std::array<Counter, 2>> from_children_; ///< per member, per child slot: chunks received (reduce)
  std::vector<Counter> from_parent_;                  ///< per member: chunks received (broadcast)

  // hierarchical
  std::vector<std::unique_ptr<Ring>> intra_; ///< per node group
  std::vector<std::unique_ptr<Ring>> inter_; ///< per local position
  std::vector<int> group_of_;                ///< per member: its node group
  std::vector<int> position_of_;             ///< per member: its position inside the node group
  int local_count_ = 0;
  int node_count_  = 0;
  Counter everyone_; ///< analytic and all-to-all: members arrived
  Counter sent_;     ///< all-to-all: members whose flows are done
};

} // namespace hetsim::sim
