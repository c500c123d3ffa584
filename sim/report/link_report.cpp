#include "sim/report/link_report.hpp"

#include "sim/report/report_format.hpp"

#include "core/units.hpp"

#include <algorithm>
#include <map>
#include <ostream>

namespace hetsim::sim {
namespace {

LinkReport link_report(const LinkUsage& usage, double iteration_time_s)
{
  LinkReport link;
  link.label                 = usage.label;
  link.kind                  = std::string(link_kind_name(usage.kind));
  link.bytes                 = usage.bytes;
  link.busy_s                = usage.busy_s;
  const bool limited         = usage.bandwidth_bytes_per_s < kUnlimitedBandwidth;
  link.bandwidth_bytes_per_s = limited ? usage.bandwidth_bytes_per_s : 0;
  if (iteration_time_s > 0) {
    link.busy_fraction = usage.busy_s / iteration_time_s;
    link.utilisation   = limited ? usage.bytes / (usage.bandwidth_bytes_per_s * iteration_time_s) : 0;
  }
  return link;
}

/// The `top` links with the most of `key`, then the highest utilisation (a NIC before the port that feeds it),
/// then platform order; links that carried nothing are left out.
template <class Key> std::vector<LinkReport> top_links(const std::vector<LinkReport>& links, int top, Key key)
{
  std::vector<LinkReport> used;
  for (const auto& link : links)
    if (link.bytes > 0)
      used.push_back(link);
  std::stable_sort(used.begin(), used.end(), [&](const auto& a, const auto& b) {
    return key(a) != key(b) ? key(a) > key(b) : a.utilisation > b.utilisation;
  });
  if (static_cast<int>(used.size()) > top)
    used.resize(top);
  return used;
}

nlohmann::json link_to_json(const LinkReport& link)
{
  return {{"link", link.label},
          {"kind", link.kind},
          {"bandwidth_bytes_per_s", link.bandwidth_bytes_per_s},
          {"bytes", units::whole_bytes(link.bytes)},
          {"busy_s", link.busy_s},
          {"busy_fraction", link.busy_fraction},
          {"utilisation", link.utilisation}};
}

std::string gigabytes(double bytes)
{
  return format("%.3f", bytes / 1e9);
}

std::string gigabits_per_s(double bytes_per_s)
{
  return bytes_per_s > 0 ? format("%.4g", bytes_per_s * 8 / 1e9) : "unlimited";
}

} // namespace

LinkSummary summarize_links(const std::vector<LinkUsage>& usage, double iteration_time_s, int top)
{
  std::vector<LinkReport> links;
  links.reserve(usage.size());
  std::map<LinkKind, LinkKindReport> kinds;
  std::map<LinkKind, double> busiest_s;
  for (const auto& u : usage) {
    links.push_back(link_report(u, iteration_time_s));
    const LinkReport& link = links.back();
    LinkKindReport& kind   = kinds[u.kind];
    kind.kind              = link.kind;
    ++kind.links;
    if (link.bytes <= 0)
      continue;
    ++kind.used_links;
    kind.bytes += link.bytes;
    kind.mean_utilisation += link.utilisation;
    kind.max_utilisation = std::max(kind.max_utilisation, link.utilisation);
    if (auto [it, fresh] = busiest_s.emplace(u.kind, link.busy_s); fresh || link.busy_s > it->second) {
      it->second   = link.busy_s;
      kind.busiest = link.label;
    }
  }
  LinkSummary summary;
  for (auto& [kind, report] : kinds) {
    if (report.used_links > 0)
      report.mean_utilisation /= report.used_links;
    summary.kinds.push_back(report);
  }
  summary.top_by_bytes     = top_links(links, top, [](const LinkReport& l) { return l.bytes; });
  summary.top_by_busy_time = top_links(links, top, [](const LinkReport& l) { return l.busy_s; });
  return summary;
}

nlohmann::json link_summary_to_json(const LinkSummary& summary)
{
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& k : summary.kinds)
    kinds.push_back({{"kind", k.kind},
                     {"links", k.links},
                     {"used_links", k.used_links},
                     {"bytes", units::whole_bytes(k.bytes)},
                     {"mean_utilisation", k.mean_utilisation},
                     {"max_utilisation", k.max_utilisation},
                     {"busiest", k.busiest}});
  nlohmann::json by_bytes = nlohmann::json::array();
  for (const auto& link : summary.top_by_bytes)
    by_bytes.push_back(link_to_json(link));
  nlohmann::json by_busy = nlohmann::json::array();
  for (const auto& link : summary.top_by_busy_time)
    by_busy.push_back(link_to_json(link));
  return {{"kinds", kinds}, {"top_by_bytes", by_bytes}, {"top_by_busy_time", by_busy}};
}

void print_link_summary(const LinkSummary& summary, std::ostream& out)
{
  if (summary.top_by_bytes.empty())
    return;
  out << "\nlinks by kind (utilisation: bytes / (bandwidth x iteration time), over the links that carried bytes):\n";
  std::vector<std::vector<std::string>> kinds{
      {"kind", "used", "of", "GB moved", "mean util", "max util", "busiest link"}};
  for (const auto& k : summary.kinds)
    if (k.used_links > 0)
      kinds.push_back({k.kind, std::to_string(k.used_links), std::to_string(k.links), gigabytes(k.bytes),
                       percent(k.mean_utilisation), percent(k.max_utilisation), k.busiest});
  print_table(kinds, out);
  auto print_top = [&](const std::vector<LinkReport>& links, const std::string& title) {
    out << '\n' << title << ":\n";
    std::vector<std::vector<std::string>> rows{{"link", "kind", "Gb/s", "GB moved", "busy s", "busy", "util"}};
    for (const auto& link : links)
      rows.push_back({link.label, link.kind, gigabits_per_s(link.bandwidth_bytes_per_s), gigabytes(link.bytes),
                      seconds(link.busy_s), percent(link.busy_fraction), percent(link.utilisation)});
    print_table(rows, out);
  };
  print_top(summary.top_by_busy_time, "busiest links (time with a flow on them)");
  print_top(summary.top_by_bytes, "links that moved the most bytes");
}

} // namespace hetsim::sim
