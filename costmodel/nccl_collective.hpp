#pragma once
/// A collective over a cluster's devices as NCCL runs it: the cluster's nodes read as NCCL's topology search
/// reads a machine (nccl_tuning.hpp), and the call priced by NCCL's own tuner. This is the "nccl" collective
/// algorithm of a plan: NCCL chooses, and HetSim expects what NCCL expects.
///
/// What a cluster file gives is nominal (a GPU's NVLink or PCIe bandwidth per direction, a node's NIC speed);
/// NCCL credits less, and HetSim takes its figures:
///  - NVLink: SMxx_NVLINK_BW per link against the link's nominal 25 GB/s (50 on Blackwell): 20/25 on Volta and
///    Ampere, 20.6/25 on Hopper, 40.1/50 on Blackwell (src/graph/topo.h:20-24);
///  - PCIe: width x speed / 80 (src/graph/topo.cc:657), 24 GB/s for 4.0 x16 against its nominal 31.5: 0.762;
///  - NICs: speed / 8 (topo.cc:418), as nominal. A node's NIC bandwidth is read as NICs of at most 400 Gb/s
///    each (a DGX's eight; an AWS p4d's four EFA 100 Gb/s ports as one of 400, which NCCL's search treats alike).
/// A node's fabric is its `intra_node.fabric`; unstated, SXM GPUs sit on an NVSwitch board and others on PCIe.
/// A GPU without a CUDA compute capability (AMD, unknown) is priced with Volta's constants, NCCL's oldest.

#include "core/cluster.hpp"
#include "costmodel/collective.hpp"
#include "costmodel/nccl_pipeline.hpp"
#include "costmodel/nccl_tuning.hpp"

#include <vector>

namespace hetsim::costmodel {

/// What NCCL's topology search makes of `devices` of `cluster` as one communicator.
NcclTopology nccl_topology_of(const Cluster& cluster, const std::vector<int>& devices);

/// NCCL's choice and time for `op` of `bytes` (the all-reduce's buffer, the all-gather's output) over
/// `devices`. An all-to-all is not a collective NCCL tunes (it is grouped sends and receives): not here.
NcclChoice nccl_collective(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                           const NcclEnvironment& environment = {});

/// What that call takes on the cluster: NCCL's choice at the rate its pipeline reaches (nccl_pipeline.hpp), over
/// the slowest transport among the devices' nodes (NVLink within one node).
double nccl_collective_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op,
                               double bytes, const NcclEnvironment& environment = {});

/// Of nccl_collective_seconds, what the pipeline adds to the tuner's time: what the simulator's flows, which
/// move the bytes over the links, leave out.
double nccl_pipeline_seconds(const Cluster& cluster, const std::vector<int>& devices, CollectiveOp op, double bytes,
                             const NcclEnvironment& environment = {});

/// The transport NCCL's pipeline runs over for `devices`: NVLink within one node, else the nodes' NICs'.
NcclTransport nccl_transport_of(const Cluster& cluster, const std::vector<int>& devices);

} // namespace hetsim::costmodel
