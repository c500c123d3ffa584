#pragma once
/// Stragglers and slow links, the what-if file of `simulate --slowdowns FILE`: a device computing at a fraction
/// of its speed for a while (thermal throttling, a noisy neighbour), a node's NIC or the link between two regions
/// at a fraction of its rate. The replay gives them to SimGrid as speed and bandwidth profiles (factors of the
/// peak over simulated time), so every computation or flow on them slows while the window lasts.
///
///   {"devices": [{"device": 5, "speed": 0.5, "from_s": 0, "until_s": 10}],
///    "nics": [{"node": "Oregon.3", "rate": 0.25}],
///    "region_links": [{"between": ["Oregon", "Virginia"], "rate": 0.1, "from_s": 2, "until_s": 5}]}
///
/// Times are simulated seconds from the iteration's start; a window without until_s lasts the whole iteration.
/// A region link slows both directions.

#include "core/cluster.hpp"

#include <string>
#include <vector>

namespace simgrid::kernel::profile {
class Profile;
} // namespace simgrid::kernel::profile

namespace hetsim::sim {

struct Slowdown {
  enum class Part { device, nic, region_link };
  Part part  = Part::device;
  int first  = 0;  ///< the device, the node or the first region
  int second = -1; ///< the second region of a region link
  double factor  = 1; ///< of the peak speed or rate, from 1e-6 to 1
  double from_s  = 0;
  double until_s = 0; ///< infinity: to the end
  std::string label; ///< "dev5 at 0.5x from 0 s", for reports
};

/// Reads `file` for `cluster`: one line naming the file and field for a device, node or region the cluster does
/// not have, a factor outside (0, 1] or a window that ends before it starts.
std::vector<Slowdown> load_slowdowns(const std::string& file, const Cluster& cluster);

/// The slowdown of a device, a node's NIC or the link between two regions (either order), or nullptr.
const Slowdown* find_slowdown(const std::vector<Slowdown>& slowdowns, Slowdown::Part part, int first,
                              int second = -1);

/// SimGrid's profile of a slowdown: `peak` before its window, peak x factor inside, `peak` after. SimGrid reads
/// a host's profile as a factor of its speed (CpuCas01::apply_event sets speed_.scale: give peak 1) and a link's
/// as its bandwidth in bytes/s (NetworkCm02Link::apply_event calls set_bandwidth: give the link's). `name` must
/// be unique in the engine. The platform sets it on a host or link before sealing it, as SimGrid requires.
simgrid::kernel::profile::Profile* slowdown_profile(const Slowdown& slowdown, const std::string& name, double peak);

} // namespace hetsim::sim
