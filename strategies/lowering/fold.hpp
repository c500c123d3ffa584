#pragma once
/// Folding: replay one block of identical devices instead of all of them.
///
/// Devices that do the same work on equivalent links behave identically in a replay, so a large symmetric job
/// needs only some of them simulated. Two symmetries are folded:
///  - data-parallel replicas. Replicas that share a node or a context-parallel group (whose ring of keys and
///    values then runs whole wherever it is replayed) form a node group; node groups whose replicas have the
///    same micro-batches and whose devices, position by position, have the same GPU, region and node links form
///    a class. A class of n groups is cut into k equal blocks of consecutive groups (k the smallest divisor of n
///    above 1, so that every kept group stands for as many as every other), and the first group of each block
///    is replayed for its block. Replicas fold only when every data-parallel ring repeats group by group (the
///    same edges, NVLink or NIC or WAN, at the same positions): a step-by-step ring's members drift apart by
///    as many fast edges as lie between two slow ones, so a ring that crosses a WAN link in only some places
///    is replayed whole (with the hierarchical algorithm, whose inter-node ring goes in node order, also when a
///    ring's replicas are not on nodes in increasing order);
///  - tensor-parallel ranks, when every tensor-parallel group fills one node of identical GPUs: tp ranks in k
///    blocks the same way (k the smallest divisor of tp above 1), the first rank of each block replayed;
///  - context-parallel ranks, when every context-parallel and data-parallel ring is made of edges of one type
///    between identical GPUs and every rank sits as the rank standing for it does (ring collectives, cp at least
///    4 and not prime): the ranks of each group in blocks the same way.
///
/// A folded collective keeps its kept members, in ring order, and the member count of the real one
/// (Collective::members): a ring of n members moves bytes/n per step in 2(n-1) steps whether n or 2 of them are
/// replayed, and by symmetry every member's step takes as long. The kept devices' flows stand for the flows of
/// the devices they represent, so a link shared by c copies of every replayed flow (a node's NIC carrying the
/// traffic of tp ranks of which tp/k are replayed; a WAN link carrying all replicas' pipeline traffic) is
/// replayed at 1/c of its bandwidth: under max-min sharing, c identical flows on a link of bandwidth B get what
/// one flow gets on B/c. A fold is kept only when every link a replayed flow crosses carries the same number of
/// real flows per replayed flow for every kind of traffic on it (pipeline, data-parallel, tensor-parallel,
/// context-parallel and tied-embedding rings), checked by counting both; otherwise a less folded choice is tried,
/// fewer replicas and context-parallel ranks first, then fewer tensor-parallel ranks. Clusters with node-pair overrides and plans with tree all-reduces or
/// expert parallelism are replayed in full.

#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <string>
#include <vector>

namespace hetsim::strategies {

struct Fold {
  std::vector<int> replicas; ///< replayed replicas, ascending
  std::vector<int> tp_ranks; ///< replayed tensor-parallel ranks, ascending
  /// Per device of the cluster: the replayed device whose tasks and timings stand for it (itself when replayed).
  std::vector<int> representative;
  /// Per device: its replica and tensor-parallel rank in the plan (-1 for a device the plan leaves out), to name
  /// what a device that was not replayed did.
  std::vector<int> replica_of;
  std::vector<int> tp_rank_of;
  /// Per node: real flows on its NIC per replayed flow (1: unchanged); the replay divides its bandwidth by this.
  std::vector<double> nic_divisor;
  /// [source region][destination region]: the same for WAN links. A WAN link shared per flow (wan_sharing
  /// per_flow) is not narrowed: its count only scales the bytes the links' usage reports.
  std::vector<std::vector<double>> wan_divisor;

  /// Whether fewer devices than the plan uses are replayed.
  bool folds() const;
  /// Devices replayed / devices of the plan, for messages: "replays 256 of 3,072 devices".
  std::string summary() const;
};

/// What data-parallel rank `r`'s devices are, stage by stage and tensor-parallel rank by rank: GPU, region, node
/// (numbered by first appearance among them), its links, fabric, NIC transport and size, and the edges of its
/// pipeline sends and of the tied embedding's all-reduce. Two ranks with the same surroundings, on a cluster
/// without node-pair overrides, replay alike and estimate alike.
std::vector<double> replica_surroundings(const Plan& plan, const Cluster& cluster, int r);

/// What replicas are alike for: their pipelines' timing, which a context-parallel group's ring ties to the other
/// replicas' devices, or their memory, which no ring changes.
enum class AlikeFor { timing, memory };

/// Per data-parallel rank, the first rank alike with it in all its own work depends on: its batches and its
/// devices' surroundings (replica_surroundings).
/// Alike ranks time their pipelines alike and need as much memory, so the estimate and the memory model work one
/// of each out. Every rank stands for itself where ranks depend on one another's devices (expert-parallel
/// all-to-alls and communicators; for timing, context-parallel rings) or the cluster has node-pair links, which
/// surroundings do not tell apart.
std::vector<int> alike_replicas(const Plan& plan, const Cluster& cluster, AlikeFor use = AlikeFor::timing);

/// The largest fold `plan` allows on `problem`'s cluster; replays every device when nothing folds.
Fold find_fold(const Plan& plan, const Problem& problem);

/// The cluster the folded replay runs on: `cluster` with its NIC and shared WAN links' bandwidths divided as
/// `fold` says.
Cluster folded_cluster(const Cluster& cluster, const Fold& fold);

} // namespace hetsim::strategies
