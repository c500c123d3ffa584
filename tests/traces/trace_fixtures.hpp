#pragma once
/// Trace events built in one line, for the traces tests.

#include "traces/trace.hpp"

#include <string>

namespace hetsim::traces::testing {

/// An event with the fields every trace has (the calibration annotations left at their defaults).
inline hetsim::traces::TraceEvent make_event(int id, std::string name, std::string kind, std::string stream, int device,
                                      double start_s, double end_s, double bytes, double flops)
{
  hetsim::traces::TraceEvent e;
  e.task_id = id;
  e.name    = std::move(name);
  e.kind    = std::move(kind);
  e.stream  = std::move(stream);
  e.device  = device;
  e.start_s = start_s;
  e.end_s   = end_s;
  e.bytes   = bytes;
  e.flops   = flops;
  return e;
}

} // namespace hetsim::traces::testing
