#pragma once
/// What NCCL reaches against what its tuner expects: the pipeline that is not yet full.
///
/// NCCL's tuner prices a call as latency + bytes / bandwidth (nccl_tuning.hpp). nccl-tests sweeps show the mid
/// sizes slower than that: on a DGX H100 1.3-1.5x the tuner's time from 2 to 32 MB, on two AWS p5 nodes 2x up to
/// 32 MB, and the gap closes only past a few hundred MB. The size at which it closes is the size of NCCL's
/// pipeline: each of the call's channels moves one step of its buffer (NCCL_BUFFSIZE / NCCL_STEPS for Simple) to
/// each rank in turn, so channels x ranks x step bytes are in flight before it runs at its rate. Below that the
/// transport's fixed costs per step are not hidden. HetSim prices a Simple or LL128 call at
///
///     tuner's time x (1 + k / (1 + bytes / (channels x ranks x step)))
///
/// with k, what the transport adds while the pipeline fills, read from one public sweep per transport
/// (tests/data/nccl_tests/sweeps.json): NVLink within a node 0.40 (DGX H100), InfiniBand and RoCE 0.45 (GCP A3
/// Ultra, RoCE: NCCL's one IB-verbs transport serves both), AWS EFA 1.15 (2 x p5, whose aws-ofi-nccl tuner plugin
/// may choose other algorithms than NCCL's: the figure absorbs that). LL moves 8-byte lines with
/// their own flags, has no steps to fill, and is the tuner's.

#include "costmodel/nccl_tuning.hpp"

namespace hetsim::costmodel {

/// How a communicator's nodes reach each other, as far as the pipeline's fixed costs go.
enum class NcclTransport {
  nvlink,     ///< one node: NVLink or PCIe within it
  infiniband, ///< IB verbs: InfiniBand or RoCE (src/transport/net_ib.cc)
  efa,        ///< AWS EFA through the aws-ofi-nccl plugin
  socket      ///< TCP through NCCL's socket transport (src/transport/net_socket.cc)
};

/// NCCL's buffer of a protocol per connection (src/init.cc:810-813): Simple's is NCCL_BUFFSIZE (4 MiB unless
/// `simple_buffer_bytes` says otherwise), LL128's 120 elements x 640 threads x NCCL_STEPS x 8 bytes.
double nccl_buffer_bytes(NcclProtocol protocol, double simple_buffer_bytes = 0);

/// What the transport adds while the pipeline fills (k above).
double nccl_pipeline_fill_cost(NcclTransport transport);

/// The achieved time of `choice` for a call of `bytes` over `ranks` ranks (formula above).
double nccl_achieved_seconds(const NcclChoice& choice, double bytes, int ranks, NcclTransport transport,
                             double simple_buffer_bytes = 0);

} // namespace hetsim::costmodel
