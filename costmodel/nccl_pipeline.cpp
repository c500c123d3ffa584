#include "costmodel/nccl_pipeline.hpp"

namespace hetsim::costmodel {
namespace {

constexpr double kSteps            = 8;          // NCCL_STEPS (src/include/device.h:26)
constexpr double kDefaultBuffer    = 1 << 22;    // DEFAULT_BUFFSIZE, 4 MiB (src/init.cc:813)
constexpr double kLl128Buffer      = 120.0 * 640 * kSteps * 8; // DEFAULT_LL128_BUFFSIZE (src/init.cc:812)
constexpr double kLl128DataShare   = 15.0 / 16; // NCCL_LL128_DATAELEMS of NCCL_LL128_LINEELEMS (device.h:111-112)

} // namespace

double nccl_buffer_bytes(NcclProtocol protocol, double simple_buffer_bytes)
{
  switch (protocol) {
    case NcclProtocol::simple: return simple_buffer_bytes > 0 ? simple_buffer_bytes : kDefaultBuffer;
    case NcclProtocol::ll128: return kLl128Buffer;
    case NcclProtocol::ll: break;
  }
  // DEFAULT_LL_BUFFSIZE (src/init.cc:810): 8 lines x 512 threads x NCCL_STEPS x 16 bytes.
  return 8.0 * 512 * kSteps * 16;
}

double nccl_pipeline_fill_cost(NcclTransport transport)
{
  // Each read from one whole sweep of tests/data/nccl_tests/published_curves.md with the pipeline's size fixed
  // by NCCL's constants (the formula in the header), the single free figure chosen for the smallest worst error
  // from 1 MB to 4 GB: DGX H100 (System 9) 8.3%, GCP A3 Ultra (System 6) 13.0%, 2 x AWS p5 (System 1) 11.3%.
  switch (transport) {
    case NcclTransport::nvlink: return 0.40;
    case NcclTransport::infiniband: return 0.45;
    case NcclTransport::efa: return 1.15;
    // No public socket sweep prints its NIC's speed and channels together (System 7's sockets, run A, do
    // neither): InfiniBand's figure is carried over, and what sockets move at large sizes is the NIC's achieved
    // rate (kSocketTransportGbps, core/cluster.hpp).
    case NcclTransport::socket: return 0.45;
  }
  return 0;
}

double nccl_achieved_seconds(const NcclChoice& choice, double bytes, int ranks, NcclTransport transport,
                             double simple_buffer_bytes)
{
  if (choice.protocol == NcclProtocol::ll || choice.channels <= 0 || ranks <= 1)
    return choice.seconds;
  double step = nccl_buffer_bytes(choice.protocol, simple_buffer_bytes) / kSteps;
  if (choice.protocol == NcclProtocol::ll128)
    step *= kLl128DataShare;
  const double pipeline = choice.channels * static_cast<double>(ranks) * step;
  return choice.seconds * (1 + nccl_pipeline_fill_cost(transport) / (1 + bytes / pipeline));
}

} // namespace hetsim::costmodel
