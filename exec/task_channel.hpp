#pragma once
/// What a task's data travels through on a rank: its Schedule stream, or, for a pipeline transfer, its direction
/// and peer. Every executor keeps one buffer (and, where it has them, one ordered device stream) per channel, so
/// that a send and a receive in flight at once never share memory.

#include "strategies/lowering/schedule.hpp"

#include <utility>

namespace hetsim::exec {

using TaskChannel = std::pair<int, int>;

inline TaskChannel task_channel(const strategies::Task& task)
{
  if (task.stream != strategies::Stream::pipeline)
    return {static_cast<int>(task.stream), -1};
  return {task.kind == strategies::TaskKind::send ? 100 : 200, task.peer};
}

} // namespace hetsim::exec
