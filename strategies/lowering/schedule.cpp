#include "strategies/lowering/schedule.hpp"

#include "strategies/lowering/fold.hpp"

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace hetsim::strategies {
namespace {

constexpr EnumNames<TaskKind, 9> kTaskKindNames{{{{TaskKind::forward, "forward"},
                                                  {TaskKind::backward, "backward"},
                                                  {TaskKind::optimizer, "optimizer"},
                                                  {TaskKind::send, "send"},
                                                  {TaskKind::recv, "recv"},
                                                  {TaskKind::all_reduce, "all_reduce"},
                                                  {TaskKind::reduce_scatter, "reduce_scatter"},
                                                  {TaskKind::all_gather, "all_gather"},
                                                  {TaskKind::all_to_all, "all_to_all"}}}};
constexpr EnumNames<Stream, kStreamCount> kStreamNames{{{{Stream::compute, "compute"},
                                                         {Stream::tensor_parallel, "tensor_parallel"},
                                                         {Stream::data_parallel, "data_parallel"},
                                                         {Stream::expert_parallel, "expert_parallel"},
                                                         {Stream::context_parallel, "context_parallel"},
                                                         {Stream::pipeline, "pipeline"}}}};

} // namespace

std::string_view task_kind_name(TaskKind kind)
{
  return kTaskKindNames.name(kind);
}

std::string_view stream_name(Stream stream)
{
  return kStreamNames.name(stream);
}

bool is_collective(TaskKind kind)
{
  return kind == TaskKind::all_reduce || kind == TaskKind::reduce_scatter || kind == TaskKind::all_gather ||
         kind == TaskKind::all_to_all;
}

bool is_p2p(TaskKind kind)
{
  return kind == TaskKind::send || kind == TaskKind::recv;
}

bool is_compute(TaskKind kind)
{
  return kind == TaskKind::forward || kind == TaskKind::backward || kind == TaskKind::optimizer;
}

namespace {

std::string_view prefix(const Task& task)
{
  switch (task.kind) {
    case TaskKind::forward:
      return "fwd";
    case TaskKind::backward:
      return task.part == BackwardPart::weight_gradients ? "bwd-w" : "bwd";
    case TaskKind::optimizer:
      return "opt";
    case TaskKind::send:
      return task.backward ? "send-grad" : "send-act";
    case TaskKind::recv:
      return task.backward ? "recv-grad" : "recv-act";
    case TaskKind::all_reduce:
      if (task.stream == Stream::tensor_parallel)
        return task.backward ? "ar-tp-bwd" : "ar-tp-fwd";
      return task.experts ? "ar-grad-experts" : "ar-grad";
    case TaskKind::reduce_scatter:
      if (task.stream == Stream::tensor_parallel)
        return task.backward ? "rs-tp-bwd" : "rs-tp-fwd";
      if (task.stream == Stream::context_parallel)
        return "rs-kv-bwd";
      return task.experts ? "rs-grad-experts" : "rs-grad";
    case TaskKind::all_to_all:
      return task.backward ? "a2a-bwd" : "a2a-fwd";
    case TaskKind::all_gather:
      if (task.stream == Stream::tensor_parallel)
        return task.backward ? "ag-tp-bwd" : "ag-tp-fwd";
      if (task.stream == Stream::context_parallel)
        return task.backward ? "ag-kv-bwd" : "ag-kv-fwd";
      if (task.micro_batch < 0)
        return task.experts ? "ag-param-experts" : "ag-param";
      return task.backward ? "ag-bwd" : "ag-fwd";
  }
  return "task";
}

void append_layers(std::string& name, const Task& task)
{
  name += " l";
  name += std::to_string(task.first_layer);
  if (task.layer_count > 1) {
    name += '-';
    name += std::to_string(task.first_layer + task.layer_count - 1);
  }
}

} // namespace

int Schedule::representative(int device) const
{
  return fold ? fold->representative[device] : device;
}

std::string Schedule::task_name(int id) const
{
  HETSIM_ASSERT(id >= 0 && id < static_cast<int>(tasks.size()));
  const Task& task = tasks[id];
  std::string name(prefix(task));
  name += " s" + std::to_string(task.stage);
  if (virtual_stages > 1 && task.micro_batch >= 0) // the tasks of one chunk's pass
    name += "c" + std::to_string(task.chunk);
  name += " r" + std::to_string(task.replica) + " t" + std::to_string(task.tp_rank);
  if (task.micro_batch >= 0)
    name += " mb" + std::to_string(task.micro_batch);

  const bool compute_like = task.kind == TaskKind::forward || task.kind == TaskKind::backward ||
                            task.stream == Stream::tensor_parallel || task.stream == Stream::expert_parallel ||
                            task.stream == Stream::context_parallel;
  if (compute_like) {
    // Whole-chunk computations carry no suffix; pieces name their layers (and their part of a TP layer).
    const int k            = task.chunk * pp + task.stage; // the chunk in pipeline order
    const bool whole_stage = task.stage >= 0 && k < static_cast<int>(stage_starts.size()) &&
                             task.first_layer == stage_starts[k] &&
                             task.first_layer + task.layer_count ==
                                 (k + 1 < static_cast<int>(stage_starts.size()) ? stage_starts[k + 1] : layer_count);
    if (tp > 1 || task.pieces > 1 || !whole_stage) {
      append_layers(name, task);
      if (tp > 1 || task.pieces > 1)
        name += "." + std::to_string(task.piece);
    }
  } else if (task.stream == Stream::data_parallel) {
    if (task.first_layer >= 0)
      append_layers(name, task);
    else
      name += " b" + std::to_string(task.piece);
  }
  return name;
}

} // namespace hetsim::strategies
