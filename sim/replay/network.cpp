#include "sim/replay/network.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace hetsim::sim {
namespace {

namespace sg4 = simgrid::s4u;

/// SimGrid counts whole bytes.
std::uint64_t whole_bytes(double bytes)
{
  return bytes > 0 ? static_cast<std::uint64_t>(std::llround(bytes)) : 0;
}

/// Flows carry no data; SimGrid wants a payload pointer all the same.
int g_payload = 0;

} // namespace

Network::Network(const Platform& platform, int device_count) : platform_(platform)
{
  // Every inbox has a permanent receiver, so a message starts flowing as soon as it is sent (no rendezvous); a
  // daemon drains the arrived messages and is killed when the replay's own actors are done. Created up front, from
  // maestro: creating them lazily from actors would let two actors race to create the same one.
  inboxes_.reserve(device_count);
  for (int device = 0; device < device_count; ++device) {
    if (platform_.host(device) == nullptr) { // on a node the platform did not build: nothing flows to it
      inboxes_.push_back(nullptr);
      continue;
    }
    sg4::Mailbox* box    = sg4::Mailbox::by_name("d" + std::to_string(device) + ".in");
    sg4::ActorPtr sink = sg4::Actor::create("d" + std::to_string(device) + ".sink", platform_.host(device), [box] {
      while (true)
        box->get<int>();
    });
    sink->daemonize();
    box->set_receiver(sink);
    inboxes_.push_back(box);
  }
}

void Network::transfer(int src, int dst, double bytes) const
{
  if (src == dst)
    return;
  sg4::this_actor::sleep_for(platform_.latency(src, dst));
  const std::uint64_t size = whole_bytes(bytes);
  if (size == 0)
    return;
  if (!usage_) {
    inboxes_[dst]->put(&g_payload, size);
    return;
  }
  const auto flow = usage_->flow_started(src, dst, static_cast<double>(size), sg4::Engine::get_clock());
  inboxes_[dst]->put(&g_payload, size);
  usage_->flow_ended(flow, src, dst, sg4::Engine::get_clock());
}

void Network::occupy_until(int src, int dst, double bytes, double end_s) const
{
  const std::uint64_t size = whole_bytes(bytes);
  if (!usage_ || size == 0 || src == dst) {
    sg4::this_actor::sleep_until(end_s);
    return;
  }
  const auto flow = usage_->flow_started(src, dst, static_cast<double>(size), sg4::Engine::get_clock());
  sg4::this_actor::sleep_until(end_s);
  usage_->flow_ended(flow, src, dst, sg4::Engine::get_clock());
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
  std::vector<std::pair<LinkUsageRecorder::FlowHandle, std::size_t>> recorded; // per comm: its flow
  for (const auto& [latency_s, i] : order) {
    if (start_s + latency_s > sg4::Engine::get_clock())
      sg4::this_actor::sleep_until(start_s + latency_s);
    const std::uint64_t size = whole_bytes(flows[i].bytes);
    if (size == 0)
      continue;
    if (usage_)
      recorded.emplace_back(usage_->flow_started(flows[i].src, flows[i].dst, static_cast<double>(size),
                                                 sg4::Engine::get_clock()),
                            i);
    comms.push_back(inboxes_[flows[i].dst]->put_async(&g_payload, size));
  }
  if (comms.empty())
    return;
  sg4::Comm::wait_all(comms);
  // SimGrid tells each flow's own end time, though the wait ends with the last.
  for (std::size_t c = 0; c < recorded.size(); ++c)
    usage_->flow_ended(recorded[c].first, flows[recorded[c].second].src, flows[recorded[c].second].dst,
                       comms[c]->get_finish_time());
}

} // namespace hetsim::sim
