#include "costmodel/nccl_tuning.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>
#include <strings.h>

// Line numbers are src/graph/tuning.cc's at NCCL v2.30.7-1 unless another file is named.
namespace hetsim::costmodel {
namespace {

constexpr int kTree = 0, kRing = 1, kCollnetDirect = 2, kCollnetChain = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;

constexpr const char* kFunctionNames[kNcclFunctions]   = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                          "AllReduce"}; // src/init.cc:52
constexpr const char* kAlgorithmNames[kNcclAlgorithms] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                                          "NVLSTree", "PAT"}; // src/init.cc:53-54
constexpr const char* kProtocolNames[kNcclProtocols]   = {"LL", "LL128", "Simple"}; // src/init.cc:55

// baseLatencies, l.150-154 (us), by algorithm and protocol.
constexpr double kBaseLatency[kNcclAlgorithms][kNcclProtocols] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
// hwLatencies, l.157-175 (us): NVLink, PCI, network.
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
constexpr double kHwLatency[3][kNcclAlgorithms][kNcclProtocols] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// By compute-capability index (Volta, Ampere, Hopper, Blackwell) and node-count index (1, 2, more), GB/s.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0},
                                   {2 * 141.0, 2 * 45.0, 2 * 35.0}}; // l.178-182 (rows 0-1 past one node: CPU)
constexpr double kPerChMaxRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}; // l.185-189
constexpr double kPerChMaxTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}; // l.192-196
constexpr double kPerChMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}; // l.199-203
constexpr double kPerChMaxNvlsTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}; // l.206-210
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};                    // l.139-144
// Trees' correction by log2(bytes / 64), 64 B to 256 MB (l.623-627).
constexpr double kTreeCorrection[kNcclProtocols][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// getNetOverhead, l.229-232: 1 us per network step on Intel x86 (2 on AMD); HetSim assumes Intel.
constexpr double kNetOverhead = 1.0;

// The topology search's per-channel speeds (src/graph/search.cc:1051-1064), GB/s, fastest first.
constexpr double kSpeedsIntra[]      = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr double kSpeedsInter[]      = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                        7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm90SpeedsIntra[]  = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm90SpeedsInter[]  = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                        15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm100SpeedsIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kSm100SpeedsInter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                        20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kMaxChannels       = kNcclMaxChannels;
constexpr int kRingMaxChannels   = kMaxChannels / 2; // src/init.cc:1177
constexpr int kMaxNvlsArity      = 32;               // NCCL_MAX_NVLS_ARITY, src/include/device.h

int compute_capability_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; } // l.262-265

int log2i(double n) { return n < 1 ? -1 : static_cast<int>(std::floor(std::log2(n))); }

/// The search's speeds for GPUs of compute capability `cc`, inside one node or across nodes (search.cc:1154-1160).
std::span<const double> speed_list(int cc, bool one_node)
{
  if (cc >= 100)
    return one_node ? std::span<const double>(kSm100SpeedsIntra) : std::span<const double>(kSm100SpeedsInter);
  if (cc >= 90)
    return one_node ? std::span<const double>(kSm90SpeedsIntra) : std::span<const double>(kSm90SpeedsInter);
  return one_node ? std::span<const double>(kSpeedsIntra) : std::span<const double>(kSpeedsInter);
}

/// The search over `speeds` (fastest first): from the fastest that carries a channel, each slower speed while it
/// is more than 0.49 of the best found (search.cc:1245), keeping the one whose channels carry the most, the
/// fastest on a tie; `channels_at(speed)` counts the channels the links hold at that speed.
template <typename ChannelsAt>
std::pair<int, double> most_carried(std::span<const double> speeds, int max_channels, ChannelsAt channels_at)
{
  std::pair<int, double> best{0, speeds.back()};
  for (std::size_t i = 0; i < speeds.size(); ++i) {
    if (best.first > 0 && speeds[i] <= 0.49 * best.second)
      break;
    const int channels = std::min(channels_at(speeds[i]), max_channels);
    if (channels * speeds[i] > best.first * best.second + 1e-9)
      best = {channels, speeds[i]};
  }
  if (best.first == 0)
    best.first = 1;
  return best;
}

/// Channels of `speed` that `bw` holds; a link without a limit holds as many as a communicator runs.
int fits(double bw, double speed)
{
  return static_cast<int>(std::min<double>(kMaxChannels, std::floor(bw / speed + 1e-9)));
}

} // namespace

std::string_view nccl_algorithm_name(NcclAlgorithm algorithm) { return kAlgorithmNames[static_cast<int>(algorithm)]; }
std::string_view nccl_protocol_name(NcclProtocol protocol) { return kProtocolNames[static_cast<int>(protocol)]; }

NcclTopology nccl_topology(NcclTopology t)
{
  const int cc        = t.compute_capability;
  const bool one_node = t.nodes == 1;
  const bool alone    = t.ranks == t.nodes; // one rank per node: its ring leaves by a NIC at once
  auto [channels, speed] = most_carried(speed_list(cc, one_node), kRingMaxChannels, [&](double s) {
    const int inside  = alone ? kRingMaxChannels : fits(t.intra_bw_GBps, s);
    const int outside = one_node ? kRingMaxChannels : t.nics * fits(t.nic_bw_GBps, s);
    return std::min(inside, outside);
  });
  // ncclTopoDupChannels (search.cc:1036-1049): fast channels are split in two of half the speed.
  if (speed >= 25.0 && !(cc > 80 && speed < 50.0 && channels > 4)) {
    const int doubled = std::min(channels * 2, kRingMaxChannels);
    speed /= static_cast<double>((doubled + channels - 1) / channels);
    channels = doubled;
  }
  t.ring_channels = channels;
  t.ring_bw_GBps  = speed;
  // NVLS: NVSwitch with multicast, sm90 or later. Every GPU of the node is a head pulling from the switch
  // (search.cc:1126-1127, 1135-1137, 451): as many channels as local GPUs, at the fastest speed whose channels
  // the node's links carry, credited local/(local-1) times (search.cc:1167). The search then raises the graph's
  // bwInter while below twice bwIntra (search.cc:1274-1277): HetSim takes it one speed up the list.
  const int local = std::max(1, t.ranks / t.nodes);
  if (t.nvswitch && cc >= 90 && t.intra == NcclIntraLink::nvlink && local > 1) {
    const double credited                     = t.intra_bw_GBps * local / (local - 1);
    const std::span<const double> nvls_speeds = speed_list(cc, true);
    const int heads                           = std::min(kMaxNvlsArity, local);
    std::size_t i                             = 0;
    while (i + 1 < nvls_speeds.size() && heads * nvls_speeds[i] > credited + 1e-9)
      ++i;
    t.nvls_channels   = heads;
    t.nvls_bw_GBps    = nvls_speeds[i];
    t.nvls_inter_GBps = nvls_speeds[i > 0 ? i - 1 : 0];
  }
  return t;
}

void parse_nccl_list(const std::string& text, const std::string& field, bool protocols, NcclEnabled& enabled)
{
  const int count          = protocols ? kNcclProtocols : kNcclAlgorithms;
  const char* const* names = protocols ? kProtocolNames : kAlgorithmNames;
  std::stringstream entries(text);
  std::string entry;
  bool first = true;
  while (std::getline(entries, entry, ';')) {
    std::string prefix, list = entry;
    if (const auto colon = entry.find(':'); colon != std::string::npos) {
      prefix = entry.substr(0, colon);
      list   = entry.substr(colon + 1);
    } else if (!first) {
      throw InputError(field + ": every entry but the first needs a function prefix (\"allreduce:Ring\"), got '" +
                       text + "'");
    }
    first = false;
    bool set = true;
    if (!list.empty() && list[0] == '^') {
      set = false;
      list.erase(0, 1);
    }
    bool found_prefix = false;
    for (int f = 0; f < kNcclFunctions; ++f) {
      if (!prefix.empty() && strcasecmp(prefix.c_str(), kFunctionNames[f]) != 0)
        continue;
      found_prefix = true;
      for (int e = 0; e < count; ++e)
        enabled[f][e] = set ? 0 : 1;
      std::stringstream elements(list);
      std::string element;
      while (std::getline(elements, element, ',')) {
        int e = 0;
        while (e < count && strcasecmp(element.c_str(), names[e]) != 0)
          ++e;
        if (e == count)
          throw InputError(field + ": '" + element + "' is not one of NCCL's " +
                           (protocols ? "protocols (LL, LL128, Simple)"
                                      : "algorithms (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT)"));
        enabled[f][e] = set ? 1 : 0;
      }
    }
    if (!found_prefix)
      throw InputError(field + ": '" + prefix +
                       "' is not one of NCCL's functions (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)");
  }
}

NcclTable nccl_table(const NcclTopology& t, NcclFunction function, const NcclEnvironment& environment)
{
  NcclTable table;
  const int coll = static_cast<int>(function);
  const int n = t.ranks, nodes = t.nodes;
  if (n <= 1)
    return table;
  const int cc     = compute_capability_index(t.compute_capability);
  const int index2 = nodes <= 2 ? nodes - 1 : 2;                      // l.266
  const int index1 = nodes == 1 ? cc : 0;                             // l.268-271, Intel CPUs past one node
  const double ppn = static_cast<double>(n) / nodes;
  const int intra_hw = t.intra == NcclIntraLink::nvlink ? kHwNvlink : kHwPci; // l.283-284
  const int hw       = nodes == 1 ? intra_hw : kHwNet;                          // l.285
  const int nsteps   = coll == kAllReduce ? 2 * (n - 1) : coll == kReduceScatter || coll == kAllGather ? n - 1 : n;
  const bool pat_enabled = t.compute_capability >= 60 && nodes == n;           // ncclPatEnable, l.216-223

  NcclEnabled algorithms{}, protocols{};
  for (auto& row : algorithms)
    row.fill(1);
  for (auto& row : protocols)
    row = {1, 2, 1}; // LL128 by NCCL's rule unless NCCL_PROTO names it (l.446-451)
  if (!environment.algorithms.empty())
    parse_nccl_list(environment.algorithms, "NCCL_ALGO", false, algorithms);
  if (!environment.protocols.empty())
    parse_nccl_list(environment.protocols, "NCCL_PROTO", true, protocols);

  for (int a = 0; a < kNcclAlgorithms; ++a) {
    if ((coll == kBroadcast || coll == kReduce) && a != kRing) // l.293-297
      continue;
    if ((coll == kReduceScatter || coll == kAllGather) && a != kPat && a != kRing && a != kNvls && a != kCollnetDirect)
      continue;
    if (coll == kAllReduce && a == kPat)
      continue;
    if (a == kCollnetDirect || a == kCollnetChain) // collnetEnable is 0 without a CollNet plugin (l.501-503)
      continue;
    if ((a == kNvls && nodes > 1) || (a == kNvlsTree && nodes == 1)) // l.500-503
      continue;
    const bool nvls = a == kNvls || a == kNvlsTree;
    const int channels = nvls ? t.nvls_channels : t.ring_channels;
    const double graph_bw = nvls ? t.nvls_bw_GBps : t.ring_bw_GBps;
    for (int p = 0; p < kNcclProtocols; ++p) {
      if (nvls && p != kSimple)
        continue;
      if (a == kPat && (p != kSimple || !pat_enabled))
        continue;
      double bw = graph_bw; // l.306: bwIntra up to two nodes, bwInter past; the search gives both one speed
      if (nvls) {
        if (channels < 2) // l.309
          continue;
        double intra_bw = graph_bw * kNvlsEfficiency[cc] * (channels - 1) / channels; // l.311-312
        intra_bw *= coll == kAllReduce ? 2.0 : (ppn - 1) / ppn;                      // l.314-318
        const double inter_bw = t.nvls_inter_GBps * ((nodes <= 2 && a == kNvlsTree) ? 2 : 1); // l.320
        bw = std::min({intra_bw, inter_bw,
                       a == kNvlsTree ? kPerChMaxNvlsTreeBw[cc][index2] : std::numeric_limits<double>::max()});
      }
      double bus = channels * bw; // l.324
      if (a == kRing && p == kLL)
        bus = std::min(kLlMaxBw[index1][index2], bus * .5); // l.327
      if (a == kRing && p == kLL128)
        bus = std::min(bus * 0.92, channels * kPerChMaxRingLL128Bw[cc][index2]); // l.328-329
      if (a == kTree && coll == kAllReduce)
        bus = std::min(bus * .92, channels * kPerChMaxTreeBw[cc][index2]); // l.330-331
      if (a == kTree && p == kLL)
        bus = std::min(bus * 1.0 / 3.8, kLlMaxBw[index1][index2]); // l.332
      if (a == kTree && p == kLL128)
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kPerChMaxTreeLL128Bw[cc][index2]);
      if (a == kPat)
        bus *= .75; // l.337
      if (a != kRing && (coll == kAllGather || coll == kReduceScatter)) {
        // bus bandwidth is the algorithm's as it is (l.377)
      } else {
        bus *= (a == kRing || nvls) ? static_cast<double>(n) / nsteps : .5; // l.378-381
      }

      double latency = kBaseLatency[a][p]; // l.384
      double intra_lat = kHwLatency[intra_hw][a][p];
      double inter_lat = (ppn == 1 ? kHwLatency[kHwNet][kTree][p] : kHwLatency[kHwNet][a][p]) + t.net_latency_us;
      if (p == kSimple)
        inter_lat += t.net_latency_us; // l.391: the flush
      if (a == kRing) {
        if (coll == kReduce || coll == kBroadcast) {
          latency += kHwLatency[hw][a][p]; // l.396-398: the ring graph keeps its channels alike
        } else {
          double net_overhead = nodes > 1 ? kNetOverhead * (p == kSimple ? 3 : 1) : 0; // l.405-409
          intra_lat = std::max(intra_lat, net_overhead);
          const int inter_steps = nodes == 1 ? 0 : coll == kAllReduce ? 2 * (nodes - 1) : nodes - 1;
          latency += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat; // l.411-412
        }
      } else if (a == kTree) {
        if (coll == kAllReduce)
          latency += 2 * ((n / nodes - 1) * intra_lat + log2i(nodes) * inter_lat); // l.416
      } else if (a == kNvls) {
        latency = intra_lat + (nodes > 1 ? inter_lat : 0); // l.426-427
      } else if (a == kNvlsTree) {
        latency += intra_lat + 2 * log2i(nodes) * inter_lat; // l.429
      } else if (a == kPat) {
        if (coll == kAllGather || coll == kReduceScatter)
          latency += log2i(nodes) * (inter_lat / 3.5) + n * 2.8; // l.432-434
      }

      // Which protocols run (l.513-535): LL128 by default only over NVLink inside nodes, between GPUs of one
      // generation or Hopper and later; one the user names runs wherever NCCL_PROTO puts it.
      bool enabled = protocols[coll][p] != 0 && algorithms[coll][a] != 0;
      if (protocols[coll][p] == 2)
        enabled = enabled && t.intra == NcclIntraLink::nvlink &&
                  (t.compute_capability == t.max_compute_capability || t.compute_capability >= 90) &&
                  t.compute_capability >= 70;
      if (!enabled)
        continue;
      table.cost[a][p] = {latency, bus};
    }
  }
  return table;
}

int nccl_channels(const NcclTopology& t, const NcclEnvironment& environment)
{
  // The search's doubled (connect.cc:460), then NCCL_MAX/MIN_NCHANNELS (l.500-504).
  int channels = std::min(kMaxChannels, 2 * t.ring_channels);
  if (environment.max_channels > 0)
    channels = std::min(channels, environment.max_channels);
  if (environment.min_channels > 0)
    channels = std::max(channels, std::min(environment.min_channels, kMaxChannels));
  return channels;
}

NcclChoice nccl_choose(const NcclTopology& t, NcclFunction function, double bytes, const NcclEnvironment& environment)
{
  NcclChoice best;
  if (t.ranks <= 1)
    return best;
  const NcclTable table = nccl_table(t, function, environment);
  const int channels    = nccl_channels(t, environment);
  best.channels         = channels;
  best.seconds  = std::numeric_limits<double>::infinity();
  const int log_size = log2i(std::floor(bytes / 64));
  for (int a = 0; a < kNcclAlgorithms; ++a)
    for (int p = 0; p < kNcclProtocols; ++p) {
      double bw      = table.cost[a][p].bandwidth_GBps;
      double latency = table.cost[a][p].latency_us;
      if (bw <= 0)
        continue;
      // ncclTopoGetAlgoTime, l.631-654.
      if (a == kTree && function == NcclFunction::all_reduce && log_size >= 0 && log_size < 23)
        bw *= kTreeCorrection[p][log_size];
      if (a == kNvlsTree && function == NcclFunction::all_reduce && log_size >= 0 && log_size < 24 &&
          t.compute_capability >= 100)
        bw *= kTreeCorrection[p][log_size];
      if (a == kRing && p == kSimple && t.nodes > 1 && function == NcclFunction::all_reduce &&
          bytes / (channels * t.ranks) >= 64)
        latency *= t.compute_capability < 80 ? 1.9 : 1.4; // the ring's plateau
      // Fewer channels than the search found (NCCL_MAX_NCHANNELS) carry proportionally less: HetSim's reading.
      if (a == kRing || a == kTree || a == kPat)
        bw *= std::min(1.0, static_cast<double>(channels) / (2 * t.ring_channels));
      const double seconds = (latency + bytes / (1000 * bw)) * 1e-6;
      if (seconds < best.seconds) {
        best.seconds   = seconds;
        best.algorithm = static_cast<NcclAlgorithm>(a);
        best.protocol  = static_cast<NcclProtocol>(p);
      }
    }
  if (!std::isfinite(best.seconds))
    throw InputError(std::string("NCCL_ALGO/NCCL_PROTO: no algorithm and protocol left for ") +
                     kFunctionNames[static_cast<int>(function)] + " (NCCL refuses the call)");
  return best;
}

double nccl_bus_bandwidth_GBps(NcclFunction function, int ranks, double bytes, double seconds)
{
  const double algorithm_bw = bytes / seconds / 1e9;
  const double n            = ranks;
  if (function == NcclFunction::all_reduce)
    return algorithm_bw * 2 * (n - 1) / n;
  if (function == NcclFunction::all_gather || function == NcclFunction::reduce_scatter)
    return algorithm_bw * (n - 1) / n;
  return algorithm_bw;
}

} // namespace hetsim::costmodel
