#pragma once
/// NCCL's own model of a collective call: the algorithm and protocol it chooses, the channels it runs and the
/// time it expects, as its tuner computes them (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime,
/// at tag v2.30.7-1, commit 73cf112). Each constant carries its line there.
///
/// What the tuner reads from NCCL's topology search (src/graph/search.cc) is summarised in NcclTopology: the
/// channels and per-channel speed of the ring, tree and NVLS graphs. nccl_topology() derives them the way the
/// search's first pass does (the fastest speed of the GPU generation's list that the links carry, as many
/// channels of it as they hold, then ncclTopoDupChannels); the search's later passes, which may trade a channel
/// for speed, are not replayed. CollNet (SHARP in the switch) is left out: it needs a plugin and switches the
/// cluster file cannot describe.

#include <array>
#include <string>
#include <string_view>

namespace hetsim::costmodel {

/// NCCL's orders (src/init.cc:52-55, src/include/nccl_common.h:74-78). CollNet's two are named so that NCCL_ALGO
/// may name them, and never available here.
enum class NcclAlgorithm { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
enum class NcclProtocol { ll, ll128, simple };
enum class NcclFunction { broadcast, reduce, all_gather, reduce_scatter, all_reduce };
/// How a rank reaches its node's other ranks (graph typeIntra): NVLink, else PCIe.
enum class NcclIntraLink { nvlink, pci };

inline constexpr int kNcclFunctions  = 5;
inline constexpr int kNcclAlgorithms = 7;
inline constexpr int kNcclProtocols  = 3;
/// Per function, per algorithm (or protocol): 0 off, 1 on, 2 NCCL's own rule decides (LL128's default).
using NcclEnabled = std::array<std::array<int, kNcclAlgorithms>, kNcclFunctions>;

std::string_view nccl_algorithm_name(NcclAlgorithm algorithm); ///< NCCL_ALGO's spelling: "Tree", "Ring", "NVLS", ...
std::string_view nccl_protocol_name(NcclProtocol protocol);    ///< NCCL_PROTO's: "LL", "LL128", "Simple"

/// What NCCL's topology search hands its tuner for one communicator.
struct NcclTopology {
  int compute_capability     = 80; ///< the lowest of the ranks' GPUs (sm80 = 80)
  int max_compute_capability = 80; ///< the highest: LL128 needs one generation, or Hopper and later
  int ranks              = 1;
  int nodes              = 1;
  NcclIntraLink intra    = NcclIntraLink::nvlink;
  /// A rank's bandwidth to its node's other ranks (GB/s, NCCL's units: NVLinks x SMxx_NVLINK_BW, or PCIe
  /// width x speed / 80), and each of its node's NICs' (speed in Mb/s / 8000, src/graph/topo.cc:418).
  double intra_bw_GBps   = 0;
  double nic_bw_GBps     = 0;
  int nics               = 0;
  bool nvswitch          = false; ///< the node's GPUs meet in an NVSwitch (NVLS needs it and sm90 or later)
  double net_latency_us  = 0;     ///< graph latencyInter: what the NIC reports, 0 for the usual plugins
  /// Channels and per-channel GB/s of the ring graph (the tree graph takes the same, as NCCL makes it), and of
  /// the NVLS graph (0 channels: none).
  int ring_channels      = 0;
  double ring_bw_GBps    = 0;
  int nvls_channels      = 0;
  double nvls_bw_GBps    = 0; ///< the NVLS graph's bwIntra
  double nvls_inter_GBps = 0; ///< its bwInter, which the search raises past bwIntra
};

/// `given` with the search's channels filled in: a ring's channels each cross the node's links and, past one
/// node, one NIC each way; the speed of the GPU generation's list that carries the most is taken, the fastest
/// on a tie (search.cc:1154-1290, without its timeouts and retries).
NcclTopology nccl_topology(NcclTopology given);

/// What NCCL's environment changes in the choice: NCCL_ALGO and NCCL_PROTO (their list syntax, e.g. "Ring",
/// "^LL128", "Tree,Ring;allgather:Ring"), NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS and NCCL_BUFFSIZE (0: not set).
/// The tuner does not read NCCL_BUFFSIZE; the pipeline it sizes does (nccl_pipeline.hpp).
struct NcclEnvironment {
  std::string algorithms;
  std::string protocols;
  int min_channels = 0;
  int max_channels = 0;
  long long buffer_bytes = 0;

  bool operator==(const NcclEnvironment&) const = default;
};
/// The most channels a communicator runs (MAXCHANNELS, src/include/device.h:91).
inline constexpr int kNcclMaxChannels = 64;

/// Applies one of NCCL_ALGO's (`protocols` false) or NCCL_PROTO's lists to `enabled` as tuning.cc's parseList
/// does (l.54-137): "A,B" enables those for every function, "^A" all but those, "func:A" one function.
/// Throws InputError naming `field` on an element or prefix NCCL rejects.
void parse_nccl_list(const std::string& text, const std::string& field, bool protocols, NcclEnabled& enabled);

/// One (algorithm, protocol) as the tuner prices it: a latency in microseconds and a bandwidth in GB/s (NCCL's
/// "algorithm bandwidth": bytes of the call's buffer over time); 0 bandwidth: not available.
struct NcclCost {
  double latency_us = 0;
  double bandwidth_GBps = 0;
};

/// The tuner's table for one function (ncclTopoTuneModel, l.251-560), after NCCL_ALGO/NCCL_PROTO.
struct NcclTable {
  std::array<std::array<NcclCost, kNcclProtocols>, kNcclAlgorithms> cost{};
};
NcclTable nccl_table(const NcclTopology& topology, NcclFunction function, const NcclEnvironment& environment);

/// The channels a communicator runs: the search's ring channels doubled (ncclTopoDupChannels), then
/// NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS.
int nccl_channels(const NcclTopology& topology, const NcclEnvironment& environment);

/// NCCL's choice for one call of `bytes` (its buffer: the all-reduce's, the all-gather's output).
struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol   = NcclProtocol::simple;
  double seconds          = 0; ///< the tuner's estimate (what reaches the wire: nccl_collective_seconds)
  int channels            = 0; ///< the communicator's, after duplication and NCCL_MIN/MAX_NCHANNELS
};
/// Throws InputError when the environment leaves no algorithm and protocol for `function`.
NcclChoice nccl_choose(const NcclTopology& topology, NcclFunction function, double bytes,
                       const NcclEnvironment& environment);

/// nccl-tests' bus bandwidth of a call (GB/s): bytes / seconds scaled by 2(n-1)/n for an all-reduce, (n-1)/n for
/// an all-gather or reduce-scatter (nccl-tests doc/PERFORMANCE.md).
double nccl_bus_bandwidth_GBps(NcclFunction function, int ranks, double bytes, double seconds);

} // namespace hetsim::costmodel
