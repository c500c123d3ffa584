#include "sim/replay/replay.hpp"
#include "sim/report/link_report.hpp"

#include "core/units.hpp"
#include "sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using namespace hetsim;
using namespace hetsim::sim;
using hetsim::sim::testing::ScheduleBuilder;
using hetsim::strategies::TaskKind;
using hetsim::units::kGbps;
using hetsim::units::kMicrosecond;

namespace {

std::map<std::string, LinkUsage> by_label(const std::vector<LinkUsage>& usage)
{
  std::map<std::string, LinkUsage> links;
  for (const auto& link : usage)
    links[link.label] = link;
  return links;
}

/// Two nodes of two devices; NICs four times slower than the ports.
Cluster two_nodes()
{
  return testing::uniform_cluster(2, 2, Link{400 * kGbps, 1 * kMicrosecond}, Link{100 * kGbps, 5 * kMicrosecond},
                                  2 * kMicrosecond);
}

double end_of(const std::vector<TaskTiming>& timings)
{
  double end = 0;
  for (const auto& t : timings)
    end = std::max(end, t.end_s);
  return end;
}

} // namespace

TEST_CASE("link usage: a lone transfer's bytes cross each link of its route, busy for the transfer's time")
{
  const Cluster cluster = two_nodes();
  ScheduleBuilder b(4);
  const double bytes      = 2e8;
  const auto [send, recv] = b.send_recv(0, 2, bytes);
  std::vector<LinkUsage> usage;
  ReplayOptions options = testing::seconds_from_flops();
  options.link_usage    = &usage;
  const auto timings    = replay_isolated(cluster, b.schedule(), options);
  const auto links      = by_label(usage);
  const double moving_s = bytes / (100 * kGbps); // the NIC is the bottleneck
  for (const char* label : {"dev0 port out", "node n0 NIC out", "node n1 NIC in", "dev2 port in"}) {
    CAPTURE(label);
    REQUIRE(links.count(label) == 1);
    CHECK(links.at(label).bytes == doctest::Approx(bytes));
    CHECK(links.at(label).busy_s == doctest::Approx(moving_s).epsilon(1e-6));
  }
  for (const char* label : {"dev1 port out", "node n0 NIC in", "dev2 port out", "node n1 NIC out"}) {
    CAPTURE(label);
    CHECK(links.at(label).bytes == 0);
    CHECK(links.at(label).busy_s == 0);
  }
  CHECK(timings[recv].end_s - timings[send].start_s >= moving_s);
}

TEST_CASE("link usage: flows that overlap on a link count its busy time once, however their ends are reported")
{
  // Ring all-reduces over all four devices move every step's flows at once and learn their ends together; the
  // NICs carry two ring hops each way. A link never moves more than bandwidth x busy time, and is never busy
  // longer than the iteration.
  const Cluster cluster = two_nodes();
  ScheduleBuilder b(4);
  const double bytes = 4e8;
  const auto first   = b.collective(TaskKind::all_reduce, {0, 1, 2, 3}, bytes);
  std::vector<std::vector<int>> after_first;
  for (int id : first)
    after_first.push_back({id});
  b.collective(TaskKind::all_reduce, {0, 2, 1, 3}, bytes / 2, strategies::CollectiveAlgorithm::ring,
               strategies::Stream::data_parallel, after_first);
  std::vector<LinkUsage> usage;
  ReplayOptions options = testing::seconds_from_flops();
  options.link_usage    = &usage;
  const auto timings    = replay_isolated(cluster, b.schedule(), options);
  const double end_s    = end_of(timings);
  // Ring all-reduce: each member sends 2 (n - 1) / n of the buffer.
  const double per_member = 2.0 * 3 / 4 * (bytes + bytes / 2);
  const auto links        = by_label(usage);
  for (int d = 0; d < 4; ++d)
    CHECK(links.at("dev" + std::to_string(d) + " port out").bytes == doctest::Approx(per_member).epsilon(1e-6));
  for (const auto& link : usage) {
    CAPTURE(link.label);
    CHECK(link.busy_s <= end_s * (1 + 1e-9));
    CHECK(link.bytes <= link.bandwidth_bytes_per_s * link.busy_s * (1 + 1e-6));
  }
  // The NICs are the bottleneck: busy most of the iteration, their flows overlapping.
  CHECK(links.at("node n0 NIC out").busy_s > 0.5 * end_s);
}

TEST_CASE("link summary: utilisation is bytes over capacity; the top lists rank by bytes and by busy time")
{
  std::vector<LinkUsage> usage = {
      {"a", LinkKind::port, 100, 500, 8},
      {"b", LinkKind::nic, 10, 80, 9},
      {"c", LinkKind::nic, 10, 20, 2},
      {"d", LinkKind::wan, 1, 0, 0},
      {"e", LinkKind::switch_latency, kUnlimitedBandwidth, 900, 1},
  };
  const LinkSummary summary = summarize_links(usage, 10.0, 2);
  REQUIRE(summary.top_by_bytes.size() == 2);
  CHECK(summary.top_by_bytes[0].label == "e");
  CHECK(summary.top_by_bytes[0].utilisation == 0); // unlimited: no utilisation
  CHECK(summary.top_by_bytes[0].bandwidth_bytes_per_s == 0);
  CHECK(summary.top_by_bytes[1].label == "a");
  CHECK(summary.top_by_bytes[1].utilisation == doctest::Approx(0.5));
  REQUIRE(summary.top_by_busy_time.size() == 2);
  CHECK(summary.top_by_busy_time[0].label == "b");
  CHECK(summary.top_by_busy_time[0].busy_fraction == doctest::Approx(0.9));
  CHECK(summary.top_by_busy_time[1].label == "a");
  REQUIRE(summary.kinds.size() == 4);
  const auto& nic = summary.kinds[1];
  CHECK(nic.kind == "nic");
  CHECK(nic.links == 2);
  CHECK(nic.used_links == 2);
  CHECK(nic.bytes == 100);
  CHECK(nic.mean_utilisation == doctest::Approx((0.8 + 0.2) / 2));
  CHECK(nic.max_utilisation == doctest::Approx(0.8));
  CHECK(nic.busiest == "b");
  CHECK(summary.kinds[2].used_links == 0); // the WAN link carried nothing
}
