#include "sim/network.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hetsim::sim {
namespace {

namespace sg4 = simgrid::s4u;

/// SimGrid counts whole bytes.
std::uint64_t whole_bytes(double bytes)
{
  return bytes > 0 ? static_cast<std::uint64_t>(std::llround(bytes)) : 0;
}

} // namespace

void Network::transfer(int src, int dst, double bytes) const
{
  if (src == dst)
    return;
  sg4::this_actor::sleep_for(platform_.latency(src, dst));
  if (const std::uint64_t size = whole_bytes(bytes); size > 0)
    sg4::Comm::sendto(platform_.host(src), platform_.host(dst), size);
}

void Network::transfer_all(std::vector<Flow> flows) const
{
  std::erase_if(flows, [](const Flow& f) { return f.src == f.dst; });
  if (flows.size() == 1) {
    transfer(flows[0].src, flows[0].dst, flows[0].bytes);
    return;
  }
  std::vector<std::pair<double, std::size_t>> order; // (latency, index): flows start in latency order
  for (std::size_t i = 0; i < flows.size(); ++i)
    order.emplace_back(platform_.latency(flows[i].src, flows[i].dst), i);
  std::sort(order.begin(), order.end());
  const double start_s = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> comms;
  for (const auto& [latency_s, i] : order) {
    if (latency_s > 0)
      sg4::this_actor::sleep_until(start_s + latency_s);
    if (const std::uint64_t size = whole_bytes(flows[i].bytes); size > 0)
      comms.push_back(sg4::Comm::sendto_async(platform_.host(flows[i].src), platform_.host(flows[i].dst), size));
  }
  if (!comms.empty())
    sg4::Comm::wait_all(comms);
}

} // namespace hetsim::sim
