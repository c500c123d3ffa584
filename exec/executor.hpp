#pragma once
/// The interface every executor plugin implements: the operations of one rank's part of a Schedule on real
/// hardware. exec::run_rank (rank.hpp) drives it: it connects, prepares, then calls the operations from one
/// thread per stream in the Schedule's order, honouring dependencies, and times them.
///
/// Executors are shared libraries `libhetsim_exec_<name>.so` exporting `hetsim_create_executor` (plugin.hpp);
/// only exec/cpu includes Gloo and only exec/cuda includes CUDA/NCCL.

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetsim::exec {

/// Who this process is and how it finds the others.
struct RankSetup {
  int rank       = 0; ///< equals the cluster device id this process runs
  int world_size = 1;
  std::string store_dir;    ///< shared directory for rendezvous (a Gloo FileStore, the NCCL unique id)
  std::string bind_address; ///< the address this rank listens on
  double timeout_s = 20;    ///< an operation waiting longer on a peer fails
};

/// What the tasks compute, beyond the Schedule itself.
struct Workload {
  const strategies::Schedule* schedule = nullptr;
  const models::Workload* model        = nullptr;
  Dtype dtype                          = Dtype::fp16;
  /// Hidden sizes are multiplied by this (so FLOPs by its square); 1 runs the model as planned.
  double scale = 1;
  /// Profiling (executor_profiler.hpp) sets these: hold what training keeps on the device besides the
  /// operations' own buffers (training_memory.hpp), and throw OutOfMemory from the allocation that would pass
  /// the cap. A run leaves them, so that its task times stay those of the computation alone.
  bool hold_training_memory = false;
  double memory_cap_bytes   = std::numeric_limits<double>::infinity();
  /// `--trace-kernels`: compute operations time each kernel they launch (TaskResult::kernels).
  bool time_kernels = false;
  /// `--host-dispatch`: before each kernel the calling thread stays busy this long per launch it stands for
  /// (models::Kernel::launches), as an eager framework's host issues each of its kernels (Python, the
  /// dispatcher, autograd); 0: kernels are issued back to back. The cost model's term for it is
  /// costmodel::KernelConstants::host_dispatch_s.
  double host_dispatch_s = 0;
};

/// Keeps the calling thread busy for `seconds`: a host issuing kernels is busy, not asleep, and sleeping is far
/// coarser than a dispatch's microseconds. The cpu executor's device is its host, so its dispatch adds to its work.
inline void host_busy_for(double seconds)
{
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

/// Paces a GPU executor's kernel launches as an eager framework's host issues them (Workload::host_dispatch_s):
/// each kernel is issued no sooner than its launches' dispatch time after the previous one was, the first its own
/// after the task begins. The dispatch figure is the host's whole cost of a launch, the launch call included (the
/// H100 trace it was measured on counts cudaLaunchKernel in it), so the executor's own launch calls count towards
/// it instead of adding to it: the host's pace is the larger of the two, as the cost model's
/// max(device, launches x dispatch).
class HostPacer {
public:
  explicit HostPacer(double dispatch_s) : dispatch_s_(dispatch_s) {}

  /// A compute task begins: its first kernel's dispatch starts now.
  void begin_task() { issued_ = std::chrono::steady_clock::now(); }
  /// Waits until a kernel standing for `launches` launches may be issued.
  void before_kernel(double launches)
  {
    if (dispatch_s_ <= 0)
      return;
    issued_ = next_issue(issued_, std::chrono::steady_clock::now(), launches * dispatch_s_);
    while (std::chrono::steady_clock::now() < issued_) {
    }
  }

  using Time = std::chrono::steady_clock::time_point;
  /// When a kernel whose dispatch takes `seconds` may be issued, the previous one issued at `issued`: that long
  /// after it, or `now` when the host is already later (its own launch call took longer).
  static Time next_issue(Time issued, Time now, double seconds)
  {
    return std::max(now, issued + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(seconds)));
  }

private:
  double dispatch_s_;
  Time issued_{};
};

/// An allocation that does not fit: past Workload::memory_cap_bytes, or refused by the device (a failed
/// cudaMalloc). Thrown by prepare and by the operations.
class OutOfMemory : public Error {
public:
  using Error::Error;
};

/// What an executor's allocations hold on its device, as it counts them.
struct MemoryUse {
  double current_bytes = 0;
  double peak_bytes    = 0;
};

/// One kernel a compute operation launched, in seconds from the operation's call.
struct KernelTiming {
  std::string name; ///< models::Kernel::name
  double start_s = 0;
  double end_s   = 0;
};

/// What a task's operation reports once the task is complete.
struct TaskResult {
  double flops = 0; ///< compute tasks: the FLOPs actually executed (after scaling)
  /// The task's duration as the device itself measured it (e.g. CUDA events around its kernels). Empty: the
  /// runner times the blocking call with the host clock instead.
  std::optional<double> device_seconds;
  /// With Workload::time_kernels: each kernel of a compute task, in launch order; empty otherwise.
  std::vector<KernelTiming> kernels;
};

class Executor {
public:
  virtual ~Executor() = default;
  /// Why this machine cannot run the executor at all (e.g. no GPU), or empty. Asked once before any rank
  /// starts, so that such a run fails with one line instead of one failure per rank.
  virtual std::string unusable_reason() { return {}; }
  /// Rendezvous with every other rank; collective over all ranks.
  virtual void connect(const RankSetup& setup) = 0;
  /// Allocates buffers and communicators for this rank's tasks. Called once, after connect.
  virtual void prepare(const Workload& workload) = 0;
  // The task operations return when the task is complete.
  /// Forward, backward or optimizer.
  virtual TaskResult compute(const strategies::Task& task) = 0;
  /// This rank's part of task.collective. Streams call it concurrently, each on its own group.
  virtual TaskResult collective(const strategies::Task& task) = 0;
  /// Point-to-point; sends to one peer are called in issue order, from one thread per peer and direction.
  virtual TaskResult send(const strategies::Task& task) = 0;
  virtual TaskResult recv(const strategies::Task& task) = 0;
  /// Waits for every rank (between iterations and at the end).
  virtual void barrier() = 0;
  /// Every buffer it allocated and still holds: operations' buffers, and with hold_training_memory the model
  /// states and saved activations.
  virtual MemoryUse memory_use() const = 0;
};

} // namespace hetsim::exec

extern "C" {
/// The one symbol an executor plugin exports: a new executor, owned by the caller.
hetsim::exec::Executor* hetsim_create_executor();
}
