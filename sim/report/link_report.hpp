#pragma once
/// The busiest links of a simulated iteration, from the replay's LinkUsage: per kind of link (ports, NICs, WAN,
/// node-pair links) how much they carried and how busy they were, and the top links by bytes and by busy time.
///
/// Per link: utilisation is bytes / (bandwidth × iteration time), the share of its capacity used; busy fraction is
/// the share of the iteration with at least one flow on it (at least the utilisation: a link shared by flows
/// that a slower link elsewhere holds back is busy without being full). Links without a bandwidth limit (region
/// switch latencies, unlimited overrides) carry bytes but no utilisation.

#include "sim/platform/link_usage.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace hetsim::sim {

struct LinkReport {
  std::string label;
  std::string kind;                 ///< link_kind_name
  double bandwidth_bytes_per_s = 0; ///< 0: unlimited
  double bytes                 = 0;
  double busy_s                = 0;
  double utilisation           = 0;
  double busy_fraction         = 0;
};

struct LinkKindReport {
  std::string kind;
  int links               = 0; ///< links of this kind on the platform
  int used_links          = 0; ///< those that carried bytes
  double bytes            = 0;
  double mean_utilisation = 0; ///< over the used links
  double max_utilisation  = 0;
  std::string busiest; ///< label of the link with the highest busy time
};

struct LinkSummary {
  std::vector<LinkKindReport> kinds; ///< kinds present on the platform, in LinkKind order
  std::vector<LinkReport> top_by_bytes;
  std::vector<LinkReport> top_by_busy_time;
};

inline constexpr int kReportTopLinks = 5;

/// Summarises a replay's usage over an iteration of `iteration_time_s`; ties keep platform order.
LinkSummary summarize_links(const std::vector<LinkUsage>& usage, double iteration_time_s, int top = kReportTopLinks);

nlohmann::json link_summary_to_json(const LinkSummary& summary);
/// Tables of the kinds and the top links by busy time; nothing when no link carried bytes.
void print_link_summary(const LinkSummary& summary, std::ostream& out);

} // namespace hetsim::sim
