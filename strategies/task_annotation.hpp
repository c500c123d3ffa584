#pragma once
/// What a trace records of a task besides its timing: enough for `hetsim calibrate` to fit the cost model from
/// it. The executors and the simulator both take it from here, so a measured and a simulated trace of one
/// Schedule carry the same fields, task by task.

#include "core/cluster.hpp"
#include "strategies/schedule.hpp"

#include <string>

namespace hetsim::strategies {

struct TaskAnnotation {
  double tokens = 0;   ///< compute tasks: samples × sequence length (efficiency depends on them)
  double bytes  = 0;   ///< communication: bytes moved at the run's scale (strategies/scale.hpp)
  std::string link;    ///< communication: the slowest link class crossed (costmodel/link_class.hpp)
  int members    = 0;  ///< collectives: group size
  int collective = -1; ///< collectives: index in Schedule::collectives, shared by the members' tasks
};

TaskAnnotation annotate_task(const Schedule& schedule, const Cluster& cluster, const Task& task, int seq_len,
                             double scale);

} // namespace hetsim::strategies
