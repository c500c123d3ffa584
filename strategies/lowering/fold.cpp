#include "strategies/lowering/fold.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>

namespace hetsim::strategies {
namespace {

int smallest_divisor_above_one(int n)
{
  for (int k = 2; k * k <= n; ++k)
    if (n % k == 0)
      return k;
  return n;
}

/// Per index of [0, n): the first index of its block when n is cut into `blocks` equal blocks.
std::vector<int> block_heads(int n, int blocks)
{
  std::vector<int> heads(n);
  const int size = n / blocks;
  for (int i = 0; i < n; ++i)
    heads[i] = i / size * size;
  return heads;
}

/// What a ring edge is, for comparing rings: same node, same region, and the path's latency and bandwidth.
std::array<double, 4> edge_type(const Cluster& cluster, int a, int b)
{
  const Link path = cluster.path(a, b);
  return {cluster.device(a).node == cluster.device(b).node ? 1.0 : 0.0,
          cluster.region_of(a) == cluster.region_of(b) ? 1.0 : 0.0, path.latency_s, path.bandwidth_bytes_per_s};
}

/// Appends what device `id` is, for comparing placements: its GPU, region, node (numbered by `node_label` in order
/// of first appearance), the node's links and what sets NCCL's topology in it (fabric, NIC transport, size).
void append_device(std::vector<double>& signature, const Cluster& cluster, int id, std::map<int, int>& node_label)
{
  const Device& device = cluster.device(id);
  const Node& node     = cluster.nodes()[device.node];
  const int label      = node_label.emplace(device.node, static_cast<int>(node_label.size())).first->second;
  signature.insert(signature.end(), {static_cast<double>(device.gpu), static_cast<double>(node.region),
                                     static_cast<double>(label), node.intra.bandwidth_bytes_per_s,
                                     node.intra.latency_s, node.nic.bandwidth_bytes_per_s, node.nic.latency_s,
                                     static_cast<double>(node.fabric), static_cast<double>(node.transport),
                                     node.nic_nominal_bytes_per_s, node.socket_rate_measured ? 1.0 : 0.0,
                                     static_cast<double>(node.devices.size())});
}

/// Whether every data-parallel ring is the same sequence of edges repeated once per node group: groups of
/// consecutive replicas whose members, position by position, have edges of the same type to their successors
/// (the last one's to the next group's first). A step-by-step ring runs at the pace of its slowest edges, but
/// how far its members drift apart depends on how many fast edges lie between slow ones; in a ring that repeats
/// by group, a ring of any number of the groups keeps that.
bool rings_repeat_by_group(const Plan& plan, const Cluster& cluster, const std::vector<std::vector<int>>& groups)
{
  int next = 0;
  for (const auto& group : groups)
    for (int r : group)
      if (r != next++)
        return false; // not consecutive
  for (int s = 0; s < plan.pp; ++s)
    for (int t = 0; t < plan.tp; ++t) {
      // The hierarchical algorithm rings over nodes in node order; the flows counted here are in replica order.
      if (plan.collective_algorithm == CollectiveAlgorithm::hierarchical)
        for (int r = 1; r < plan.dp; ++r)
          if (cluster.device(plan.device(s, r, t)).node < cluster.device(plan.device(s, r - 1, t)).node)
            return false;
      std::vector<std::array<double, 4>> first;
      for (const auto& group : groups) {
        std::vector<std::array<double, 4>> edges;
        for (int r : group)
          edges.push_back(edge_type(cluster, plan.device(s, r, t), plan.device(s, (r + 1) % plan.dp, t)));
        if (first.empty())
          first = std::move(edges);
        else if (edges != first)
          return false;
      }
    }
  return true;
}

/// Per replica: the replica that stands for it (itself when nothing folds).
std::vector<int> fold_replicas(const Plan& plan, const Cluster& cluster)
{
  std::vector<int> standing(plan.dp);
  std::iota(standing.begin(), standing.end(), 0);
  if (plan.dp < 3)
    return standing;

  // Node groups: replicas joined by sharing a node.
  std::vector<int> parent(plan.dp);
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](int r) {
    while (parent[r] != r)
      r = parent[r] = parent[parent[r]];
    return r;
  };
  std::vector<int> replica_on_node(cluster.nodes().size(), -1);
  for (int s = 0; s < plan.pp; ++s)
    for (int r = 0; r < plan.dp; ++r)
      for (int t = 0; t < plan.tp; ++t) {
        int& seen = replica_on_node[cluster.device(plan.device(s, r, t)).node];
        if (seen < 0)
          seen = r;
        else
          parent[root(r)] = root(seen);
      }
  // A context-parallel group's ranks pass keys and values round their ring at every attention: they are
  // replayed together or not at all, so that the ring is whole wherever it runs.
  for (int r = 0; r < plan.dp; ++r)
    parent[root(r)] = root(plan.context_group_first(r));
  std::map<int, std::vector<int>> by_root; // replicas ascending inside each group
  for (int r = 0; r < plan.dp; ++r)
    by_root[root(r)].push_back(r);
  std::vector<std::vector<int>> groups;
  for (auto& [r, replicas] : by_root)
    groups.push_back(std::move(replicas));
  std::sort(groups.begin(), groups.end()); // by first replica
  if (!rings_repeat_by_group(plan, cluster, groups))
    return standing;

  // Classes of groups that are the same, position by position.
  std::map<std::vector<double>, std::vector<int>> classes;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> signature{static_cast<double>(groups[g].size())};
    std::map<int, int> node_label; // nodes numbered by first appearance
    for (int r : groups[g]) {
      signature.push_back(plan.grad_accum[r]);
      for (int m = 0; m < plan.grad_accum[r]; ++m)
        signature.push_back(plan.micro_batch_samples(r, m));
      for (int s = 0; s < plan.pp; ++s)
        for (int t = 0; t < plan.tp; ++t)
          append_device(signature, cluster, plan.device(s, r, t), node_label);
    }
    classes[std::move(signature)].push_back(static_cast<int>(g));
  }
  for (const auto& [signature, members] : classes) {
    const int n                 = static_cast<int>(members.size());
    const std::vector<int> head = block_heads(n, smallest_divisor_above_one(n));
    for (int j = 0; j < n; ++j) {
      const auto& group          = groups[members[j]];
      const auto& standing_group = groups[members[head[j]]];
      for (std::size_t i = 0; i < group.size(); ++i)
        standing[group[i]] = standing_group[i];
    }
  }
  return standing;
}

/// Per tensor-parallel rank: the rank that stands for it; every rank for itself unless every tensor-parallel
/// group fills one node of identical GPUs.
std::vector<int> fold_tp_ranks(const Plan& plan, const Cluster& cluster)
{
  std::vector<int> standing(plan.tp);
  std::iota(standing.begin(), standing.end(), 0);
  const int blocks = smallest_divisor_above_one(plan.tp);
  if (plan.tp < 4 || blocks == plan.tp)
    return standing;
  for (int s = 0; s < plan.pp; ++s)
    for (int r = 0; r < plan.dp; ++r) {
      const Device& first = cluster.device(plan.device(s, r, 0));
      if (static_cast<int>(cluster.nodes()[first.node].devices.size()) != plan.tp)
        return standing;
      for (int t = 1; t < plan.tp; ++t) {
        const Device& device = cluster.device(plan.device(s, r, t));
        if (device.node != first.node || device.gpu != first.gpu)
          return standing;
      }
    }
  return block_heads(plan.tp, blocks);
}

} // namespace

std::vector<double> replica_surroundings(const Plan& plan, const Cluster& cluster, int r)
{
  std::vector<double> signature;
  std::map<int, int> node_label;
  const auto add_edge = [&](int a, int b) {
    const auto edge = edge_type(cluster, a, b);
    signature.insert(signature.end(), edge.begin(), edge.end());
  };
  for (int t = 0; t < plan.tp; ++t) {
    for (int s = 0; s < plan.pp; ++s)
      append_device(signature, cluster, plan.device(s, r, t), node_label);
    for (int k = 0; k + 1 < plan.chunk_count(); ++k)
      add_edge(plan.device(plan.chunk_stage(k), r, t), plan.device(plan.chunk_stage(k + 1), r, t));
    if (plan.pp > 1)
      add_edge(plan.device(0, r, t), plan.device(plan.pp - 1, r, t));
  }
  return signature;
}

std::vector<int> alike_replicas(const Plan& plan, const Cluster& cluster, AlikeFor use)
{
  std::vector<int> first(plan.dp);
  std::iota(first.begin(), first.end(), 0);
  if (plan.ep > 1 || (plan.cp > 1 && use == AlikeFor::timing) || !cluster.overrides().empty())
    return first;
  std::map<std::vector<double>, int> seen;
  for (int r = 0; r < plan.dp; ++r) {
    std::vector<double> key = replica_surroundings(plan, cluster, r);
    key.insert(key.end(), {static_cast<double>(plan.micro_batch[r]), static_cast<double>(plan.grad_accum[r]),
                           plan.last_micro_batch.empty() ? 0.0 : static_cast<double>(plan.last_micro_batch[r])});
    first[r] = seen.emplace(std::move(key), r).first->second;
  }
  return first;
}

namespace {

/// Per data-parallel rank: the rank of its context-parallel group that stands for it when those ranks fold, the
/// way tensor-parallel ranks do (cp in blocks, the first rank of each replayed); empty when they do not. They fold
/// when that stays exact: cp at least 4 with a divisor above 1, ring collectives, every context-parallel and
/// data-parallel ring made of edges of one type between devices of one GPU (so that a ring of the kept ranks runs
/// as the whole one), and every rank with the surroundings of the rank that stands for it.
std::vector<int> context_rank_heads(const Plan& plan, const Cluster& cluster)
{
  const int blocks = smallest_divisor_above_one(plan.cp);
  if (plan.cp < 4 || blocks == plan.cp || plan.collective_algorithm != CollectiveAlgorithm::ring)
    return {};
  for (int s = 0; s < plan.pp; ++s)
    for (int t = 0; t < plan.tp; ++t) {
      const auto device = [&](int r) { return plan.device(s, r, t); };
      const auto edge   = edge_type(cluster, device(0), device(1));
      for (int r = 0; r < plan.dp; ++r) {
        const int first = plan.context_group_first(r);
        const int next  = first + (r - first + 1) % plan.cp; // round the context-parallel ring
        if (cluster.device(device(r)).gpu != cluster.device(device(0)).gpu ||
            edge_type(cluster, device(r), device(next)) != edge ||
            edge_type(cluster, device(r), device((r + 1) % plan.dp)) != edge) // round the data-parallel ring
          return {};
      }
    }
  const std::vector<int> positions = block_heads(plan.cp, blocks);
  std::vector<int> heads(plan.dp);
  std::vector<std::vector<double>> surroundings(plan.dp);
  for (int r = 0; r < plan.dp; ++r) {
    const int first = plan.context_group_first(r);
    heads[r]        = first + positions[r - first];
    surroundings[r] = replica_surroundings(plan, cluster, r);
  }
  for (int r = 0; r < plan.dp; ++r) // a rank stands for others only where it sits as they do
    if (surroundings[r] != surroundings[heads[r]])
      return {};
  return heads;
}

/// `standing` (per data-parallel rank, the rank standing for it) with context-parallel ranks folded as `heads`
/// says (context_rank_heads; none when empty).
std::vector<int> fold_context_ranks(std::vector<int> standing, const std::vector<int>& heads)
{
  if (!heads.empty())
    for (int& stand : standing)
      stand = heads[stand];
  return standing;
}

/// Counts real and replayed flows per link and kind of traffic, and sets the fold's divisors (all 1 before);
/// false when some link carries a different number of real flows per replayed flow for different kinds of
/// traffic.
class LinkRatios {
public:
  LinkRatios(const Plan& plan, const Cluster& cluster, const std::vector<int>& replica, const std::vector<int>& rank)
      : plan_(plan), cluster_(cluster), replica_(replica), rank_(rank),
        nodes_(static_cast<int>(cluster.nodes().size())), regions_(static_cast<int>(cluster.regions().size())),
        node_replayed_(nodes_, 0)
  {
    for (int s = 0; s < plan.pp; ++s)
      for (int r = 0; r < plan.dp; ++r)
        for (int t = 0; t < plan.tp; ++t)
          if (replayed(r, t))
            node_replayed_[cluster.device(plan.device(s, r, t)).node] = 1;
  }

  bool set_divisors(Fold& fold)
  {
    count_pipelines();
    count_rings();
    std::map<int, double> ratio_of_link;
    for (const auto& [key, count] : counts_) {
      if (count.replayed == 0)
        return false; // real traffic nothing replayed stands for
      const double ratio = static_cast<double>(count.real) / count.replayed;
      const auto [it, fresh] = ratio_of_link.emplace(key.first, ratio);
      if (!fresh && it->second != ratio)
        return false;
    }
    for (const auto& [link, ratio] : ratio_of_link) {
      if (link < 2 * nodes_) {
        const int node = link / 2;
        const auto other = ratio_of_link.find(link ^ 1); // the NIC's other direction
        if (other != ratio_of_link.end() && other->second != ratio)
          return false;
        fold.nic_divisor[node] = ratio;
      } else {
        const int pair = link - 2 * nodes_;
        fold.wan_divisor[pair / regions_][pair % regions_] = ratio;
      }
    }
    return true;
  }

private:
  using Family = std::array<int, 4>; ///< kind of traffic, its position, and the replica and rank standing for it

  struct Count {
    long long real     = 0;
    long long replayed = 0;
  };

  bool replayed(int r, int t) const { return replica_[r] == r && rank_[t] == t; }

  /// One flow from device u to device v: NIC up of u's node, NIC down of v's node, the WAN link between their
  /// regions. NICs of nodes nothing is replayed on carry no replayed flow and are mirrored by others.
  void count(int u, int v, const Family& family, bool replayed_flow)
  {
    const Device& a = cluster_.device(u);
    const Device& b = cluster_.device(v);
    if (a.node == b.node)
      return;
    const auto bump = [&](int link) {
      Count& c = counts_[{link, family}];
      ++(replayed_flow ? c.replayed : c.real);
    };
    if (node_replayed_[a.node])
      bump(2 * a.node);
    if (node_replayed_[b.node])
      bump(2 * b.node + 1);
    const int ra = cluster_.nodes()[a.node].region;
    const int rb = cluster_.nodes()[b.node].region;
    if (ra != rb) // counted even when shared per flow: the count scales the bytes reported
      bump(2 * nodes_ + ra * regions_ + rb);
  }

  void count_pipelines()
  {
    for (int k = 0; k + 1 < plan_.chunk_count(); ++k)
      for (int r = 0; r < plan_.dp; ++r)
        for (int t = 0; t < plan_.tp; ++t) {
          const int u = plan_.device(plan_.chunk_stage(k), r, t);
          const int v = plan_.device(plan_.chunk_stage(k + 1), r, t);
          for (bool flow_replayed : {false, true}) {
            if (flow_replayed && !replayed(r, t))
              continue;
            count(u, v, {0, 2 * k, replica_[r], rank_[t]}, flow_replayed);
            count(v, u, {0, 2 * k + 1, replica_[r], rank_[t]}, flow_replayed);
          }
        }
    if (plan_.pp > 1) // the tied embedding's all-reduce between the first and the last stage
      for (int r = 0; r < plan_.dp; ++r)
        for (int t = 0; t < plan_.tp; ++t) {
          const int u = plan_.device(0, r, t);
          const int v = plan_.device(plan_.pp - 1, r, t);
          for (bool flow_replayed : {false, true}) {
            if (flow_replayed && !replayed(r, t))
              continue;
            count(u, v, {3, 0, replica_[r], rank_[t]}, flow_replayed);
            count(v, u, {3, 1, replica_[r], rank_[t]}, flow_replayed);
          }
        }
  }

  /// A ring over `members` (device, and the replica or rank it is in), every edge one flow.
  void count_ring(const std::vector<std::pair<int, int>>& members, int kind, int position, int other,
                  bool replicas, bool flow_replayed)
  {
    const int n = static_cast<int>(members.size());
    if (n < 2)
      return;
    for (int i = 0; i < n; ++i) {
      const auto& [u, index] = members[i];
      const int standing     = replicas ? replica_[index] : rank_[index];
      count(u, members[(i + 1) % n].first, {kind, position, other, standing}, flow_replayed);
    }
  }

  void count_rings()
  {
    std::vector<std::pair<int, int>> real, kept;
    for (int s = 0; s < plan_.pp; ++s) {
      for (int t = 0; t < plan_.tp; ++t) { // data-parallel groups
        real.clear(), kept.clear();
        for (int r = 0; r < plan_.dp; ++r) {
          real.emplace_back(plan_.device(s, r, t), r);
          if (replayed(r, t))
            kept.emplace_back(plan_.device(s, r, t), r);
        }
        count_ring(real, 1, s, rank_[t], true, false);
        count_ring(kept, 1, s, rank_[t], true, true);
      }
      for (int t = 0; t < plan_.tp && plan_.cp > 1; ++t) // context-parallel groups, replayed whole or not at all
        for (int first = 0; first < plan_.dp; first += plan_.cp) {
          real.clear(), kept.clear();
          for (int r = first; r < first + plan_.cp; ++r) {
            real.emplace_back(plan_.device(s, r, t), r);
            if (replayed(r, t))
              kept.emplace_back(plan_.device(s, r, t), r);
          }
          count_ring(real, 4, s, rank_[t], true, false);
          count_ring(kept, 4, s, rank_[t], true, true);
        }
      for (int r = 0; r < plan_.dp; ++r) { // tensor-parallel groups
        real.clear(), kept.clear();
        for (int t = 0; t < plan_.tp; ++t) {
          real.emplace_back(plan_.device(s, r, t), t);
          if (replayed(r, t))
            kept.emplace_back(plan_.device(s, r, t), t);
        }
        count_ring(real, 2, s, replica_[r], false, false);
        count_ring(kept, 2, s, replica_[r], false, true);
      }
    }
  }

  const Plan& plan_;
  const Cluster& cluster_;
  const std::vector<int>& replica_;
  const std::vector<int>& rank_;
  const int nodes_;
  const int regions_;
  std::vector<char> node_replayed_;
  /// Link ids: 2 * node (NIC up), 2 * node + 1 (NIC down), 2 * nodes + src region * regions + dst region (WAN).
  std::map<std::pair<int, Family>, Count> counts_;
};

Fold make_fold(const Plan& plan, const Cluster& cluster, const std::vector<int>& replica,
               const std::vector<int>& rank)
{
  Fold fold;
  fold.representative.assign(cluster.device_count(), -1);
  for (int r = 0; r < plan.dp; ++r)
    if (replica[r] == r)
      fold.replicas.push_back(r);
  for (int t = 0; t < plan.tp; ++t)
    if (rank[t] == t)
      fold.tp_ranks.push_back(t);
  fold.nic_divisor.assign(cluster.nodes().size(), 1.0);
  fold.wan_divisor.assign(cluster.regions().size(), std::vector<double>(cluster.regions().size(), 1.0));
  fold.replica_of.assign(cluster.device_count(), -1);
  fold.tp_rank_of.assign(cluster.device_count(), -1);
  for (int s = 0; s < plan.pp; ++s)
    for (int r = 0; r < plan.dp; ++r)
      for (int t = 0; t < plan.tp; ++t) {
        const int device                = plan.device(s, r, t);
        fold.representative[device]     = plan.device(s, replica[r], rank[t]);
        fold.replica_of[device]         = r;
        fold.tp_rank_of[device]         = t;
      }
  return fold;
}

} // namespace

bool Fold::folds() const
{
  for (std::size_t d = 0; d < representative.size(); ++d)
    if (representative[d] >= 0 && representative[d] != static_cast<int>(d))
      return true;
  return false;
}

std::string Fold::summary() const
{
  int used = 0, replayed = 0;
  for (std::size_t d = 0; d < representative.size(); ++d) {
    used += representative[d] >= 0;
    replayed += representative[d] == static_cast<int>(d);
  }
  return "replays " + std::to_string(replayed) + " of " + std::to_string(used) + " devices";
}

Fold find_fold(const Plan& plan, const Problem& problem)
{
  HETSIM_ASSERT(problem.cluster != nullptr);
  const Cluster& cluster = *problem.cluster;
  std::vector<int> replicas(plan.dp), ranks(plan.tp); // every one for itself
  std::iota(replicas.begin(), replicas.end(), 0);
  std::iota(ranks.begin(), ranks.end(), 0);
  // Expert parallelism's all-to-alls cross data-parallel ranks and NICs in patterns the link counts do not cover.
  if (!cluster.overrides().empty() || plan.collective_algorithm == CollectiveAlgorithm::tree || plan.ep > 1)
    return make_fold(plan, cluster, replicas, ranks);

  const std::vector<int> folded_replicas = fold_replicas(plan, cluster);
  const std::vector<int> context_heads   = context_rank_heads(plan, cluster);
  const std::vector<int> folded_context  = fold_context_ranks(folded_replicas, context_heads);
  const std::vector<int> context_only    = fold_context_ranks(replicas, context_heads);
  const std::vector<int> folded_ranks    = fold_tp_ranks(plan, cluster);
  using Choice = std::pair<const std::vector<int>*, const std::vector<int>*>;
  // From the most folded to the least; a choice the link counts reject gives way to the next.
  const std::vector<int>* replica_choices[] = {&folded_context, &folded_replicas, &context_only, &replicas};
  const std::vector<int>* rank_choices[]    = {&folded_ranks, &ranks};
  std::vector<Choice> choices;
  for (const auto* t : rank_choices)
    for (const auto* r : replica_choices) {
      const auto same = [&](const Choice& c) { return *c.first == *r && *c.second == *t; };
      if (!(*r == replicas && *t == ranks) && std::none_of(choices.begin(), choices.end(), same))
        choices.emplace_back(r, t);
    }
  for (const auto& [r, t] : choices) {
    Fold fold = make_fold(plan, cluster, *r, *t);
    if (LinkRatios(plan, cluster, *r, *t).set_divisors(fold))
      return fold;
  }
  return make_fold(plan, cluster, replicas, ranks);
}

Cluster folded_cluster(const Cluster& cluster, const Fold& fold)
{
  Cluster folded = cluster;
  for (std::size_t node = 0; node < fold.nic_divisor.size(); ++node)
    if (fold.nic_divisor[node] != 1) {
      Link nic = cluster.nodes()[node].nic;
      nic.bandwidth_bytes_per_s /= fold.nic_divisor[node];
      folded.set_nic(static_cast<int>(node), nic);
    }
  if (cluster.wan_sharing() == WanSharing::per_flow)
    return folded; // every flow has the link to itself
  for (std::size_t a = 0; a < fold.wan_divisor.size(); ++a)
    for (std::size_t b = 0; b < fold.wan_divisor[a].size(); ++b)
      if (a != b && fold.wan_divisor[a][b] != 1) {
        Link wan = cluster.inter_region(static_cast<int>(a), static_cast<int>(b));
        wan.bandwidth_bytes_per_s /= fold.wan_divisor[a][b];
        folded.set_inter_region(static_cast<int>(a), static_cast<int>(b), wan);
      }
  return folded;
}

} // namespace hetsim::strategies
