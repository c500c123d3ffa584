#pragma once
/// Fitting a Calibration to measured traces (traces written by `hetsim run`, which carry each device's GPU and
/// peak FLOP/s and each event's tokens, link class and group size).
///
///  - Compute: per GPU type and micro-batch size (tokens), efficiency = executed FLOPs / (duration * peak),
///    the median over the forward and backward events of that size; the cost model interpolates these points
///    with a monotone cubic spline.
///  - Network: per link class, α (s) and β (s/byte) by least squares over `duration = steps * (α + β * bytes per
///    step)`: a send is one step of its bytes; a ring all-reduce of B bytes over n members 2(n-1) steps of B/n,
///    reduce-scatter and all-gather n-1 steps. A collective counts once, with the shortest member span (the
///    last member to arrive waits for nobody). Send/recv spans follow the simulator (the transfer itself).

#include "costmodel/calibration.hpp"
#include "traces/trace.hpp"

#include <string>
#include <vector>

namespace hetsim::traces {

/// Throws InputError when the traces hold nothing to fit. A link class whose durations do not grow with size
/// (e.g. loopback, where the network is no bottleneck) is left out, with a line in `skipped` when given.
costmodel::Calibration calibrate(const std::vector<Trace>& traces, std::vector<std::string>* skipped = nullptr);

} // namespace hetsim::traces
