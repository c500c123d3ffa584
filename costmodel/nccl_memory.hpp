#pragma once
/// What NCCL holds in each GPU's memory for one communicator, from its allocations at v2.30.7-1 (commit 73cf112).
///
///  - Rings: every channel connects each rank to the next, and the receiving side of a connection holds one
///    buffer per protocol (src/transport/p2p.cc:489, net.cc alike): LL 512 KiB, LL128 4.7 MiB and Simple
///    NCCL_BUFFSIZE, 4 MiB (init.cc:810-813): 9.2 MiB per channel, 220 MiB for the 24 channels of eight H100s.
///  - Trees, for communicators across nodes that all-reduce: two more connections per channel (from the parent
///    and from a child), each with the same three buffers.
///  - NVLS, for communicators that all-reduce on an NVSwitch node of Hopper or later: NVLS_NCHANNELS channels (16
///    on sm90, 24 on one sm100 node, 32 across nodes; transport/nvls.cc:155-157), each with two buffers of
///    NCCL_STEPS x NCCL_NVLS_CHUNKSIZE (128 KiB) for every head, one per GPU of the node (nvls.cc:427-430):
///    256 MiB on eight H100s.
///  - Point to point (a pipeline neighbour, an all-to-all peer): the same three buffers on each of the channels
///    NCCL gives a peer (graph/paths.cc:920-952): twice the NVLinks between the two GPUs rounded up to a power of
///    two and at most the communicator's channels, 2 over PCIe, one per NIC (at least 2) across nodes.
/// NCCL connects an algorithm the first time a call uses it (NCCL_RUNTIME_CONNECT, on by default since 2.22):
/// HetSim counts the algorithms a communicator's collectives may use, not only those its sizes pick. Host memory,
/// the proxy's and the network plugin's registrations are not GPU memory and are not counted.

#include "core/cluster.hpp"
#include "costmodel/nccl_tuning.hpp"

#include <vector>

namespace hetsim::costmodel {

/// How a communicator is used, as far as what NCCL connects goes.
enum class NcclUse {
  collectives,   ///< all-reduces and the rest: rings, and trees or NVLS where NCCL has them. Every framework
                 ///< all-reduces over its groups (the gradient norm, the loss, vocabulary-parallel softmax)
  point_to_point ///< sends and receives between the first two of `devices`
};

/// GPU bytes NCCL holds on a rank of a communicator over `devices` of `cluster`; 0 for one device.
double nccl_communicator_bytes(const Cluster& cluster, const std::vector<int>& devices, NcclUse use,
                               const NcclEnvironment& environment = {});

} // namespace hetsim::costmodel
