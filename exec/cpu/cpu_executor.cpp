/// The cpu executor: Eigen GEMMs for compute, Gloo over TCP for collectives and send/recv.
///
/// Every group that runs collectives gets its own Gloo context (its own TCP connections), ranked in the
/// group's ring order, so the tensor-parallel and data-parallel streams never share one. Pipeline send/recv use
/// two contexts of all ranks, one per direction (data from a lower rank to a higher one, and back), with the
/// send's task id as the message slot; barriers use another.
///
/// Every buffer it allocates is counted (memory_budget.hpp): with a memory cap, the allocation that would pass
/// it throws OutOfMemory, as a GPU's would.

#include "exec/buffer_plan.hpp"
#include "exec/executor.hpp"
#include "exec/kernel_products.hpp"
#include "exec/memory_budget.hpp"
#include "exec/task_channel.hpp"
#include "exec/training_memory.hpp"

#include "core/error.hpp"
#include "strategies/lowering/scale.hpp"
#include "strategies/lowering/task_kernels.hpp"

#include <Eigen/Dense>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

namespace hetsim::exec {
namespace {

using strategies::Stream;
using strategies::Task;
using strategies::TaskKind;

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;

/// Floats that hold `bytes` (at least one).
std::size_t floats_for(double bytes)
{
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(bytes / sizeof(float))));
}

class CpuExecutor final : public Executor {
public:
  static constexpr int kKeptBytes = 256 << 20;

  void connect(const RankSetup& setup) override
  {
    // One rank is one device: its GEMMs run on its own thread only, whatever Eigen was built with.
    Eigen::setNbThreads(1);
    // Memory freed is kept for the next allocation, as a framework's caching allocator keeps it: otherwise the
    // C library hands the GEMMs' packing buffers back to the system and the next task faults them in again.
    mallopt(M_TRIM_THRESHOLD, kKeptBytes);
    mallopt(M_MMAP_THRESHOLD, kKeptBytes);
    setup_ = setup;
    gloo::transport::tcp::attr attr;
    attr.hostname = setup.bind_address;
    device_       = gloo::transport::tcp::CreateDevice(attr);
    store_        = std::make_unique<gloo::rendezvous::FileStore>(setup.store_dir);
    world_        = make_context("world", setup.rank, setup.world_size);
    p2p_upward_   = make_context("p2p_upward", setup.rank, setup.world_size);
    p2p_downward_ = make_context("p2p_downward", setup.rank, setup.world_size);
  }

  void prepare(const Workload& workload) override
  {
    workload_                      = workload;
    budget_.set_cap(workload.memory_cap_bytes);
    const strategies::Schedule& s  = *workload.schedule;
    const auto& queues             = s.queues[setup_.rank];
    // Contexts of this rank's groups, in the order the schedule lists collectives so that every member creates
    // them in the same order (each creation is a rendezvous among the members).
    std::map<std::pair<int, std::vector<int>>, std::shared_ptr<gloo::Context>> by_group;
    for (std::size_t c = 0; c < s.collectives.size(); ++c) {
      const auto& collective = s.collectives[c];
      const auto member      = std::find(collective.devices.begin(), collective.devices.end(), setup_.rank);
      if (member == collective.devices.end() || collective.devices.size() < 2)
        continue;
      const int stream = static_cast<int>(s.tasks[collective.tasks.front()].stream);
      auto& context    = by_group[{stream, collective.devices}];
      if (!context) {
        std::string name = "group-" + std::to_string(stream);
        for (int d : collective.devices)
          name += "-" + std::to_string(d);
        context = make_context(name, static_cast<int>(member - collective.devices.begin()),
                               static_cast<int>(collective.devices.size()));
      }
      group_of_[static_cast<int>(c)] = context;
    }
    // Scratch: one per ordered stream, made here so that streams running at once never insert into the map.
    for (int stream = 0; stream < strategies::kStreamCount; ++stream)
      scratch_.try_emplace(stream, CountingAllocator<float>(budget_));
    // Buffers: one per ordered stream (its tasks run one at a time), one per pipeline channel.
    for (int stream = 0; stream < strategies::kStreamCount; ++stream)
      for (int id : queues[stream]) {
        const Task& task = s.tasks[id];
        if (strategies::is_compute(task.kind)) {
          continue; // sized by the buffer plan
        }
        auto& buffer = buffer_for(task);
        buffer.resize(std::max(buffer.size(), floats_for(strategies::scaled_bytes(task, workload.scale))), 1.0f);
      }
    const BufferPlan plan = buffer_plan(workload, setup_.rank);
    workspace_.assign(plan.workspace_elements, 0.5f);
    for (auto* v : {&weights_, &grads_, &moment1_, &moment2_})
      v->assign(plan.optimizer_elements, 0.5f);
    if (workload.hold_training_memory) {
      parameters_ = HeldBlock(budget_, plan.states.parameters);
      gradients_  = HeldBlock(budget_, plan.states.gradients);
      // Optimizer states beyond the four vectors its Adam steps through.
      optimizer_rest_ = HeldBlock(budget_, plan.optimizer_bytes(4) - plan.optimizer_elements * 4 * sizeof(float));
    }
  }

  // Every operation runs to completion on the calling thread: the runner's host timing is the task's duration.
  TaskResult compute(const Task& task) override
  {
    yield_to_communication();
    if (task.kind == TaskKind::optimizer) {
      adam_step(optimizer_elements(task, workload_.scale));
      return {};
    }
    const int tp = workload_.schedule->tp;
    if (workload_.hold_training_memory)
      activations_.begin(task, *workload_.model, *workload_.schedule, workload_.dtype, workload_.scale,
                         [&](std::size_t bytes) { return HeldBlock(budget_, bytes); });
    TaskResult result;
    const auto called = std::chrono::steady_clock::now();
    auto since_call   = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - called).count(); };
    for (const models::Kernel& kernel : strategies::task_kernels(task, *workload_.model, tp, workload_.scale, workload_.schedule->ep,
                                                              workload_.schedule->sequence_parallel,
                                                              workload_.schedule->cp)) {
      host_busy_for(kernel.launches * workload_.host_dispatch_s);
      const double started = workload_.time_kernels ? since_call() : 0;
      if (kernel.kind == models::Kernel::Kind::stream)
        stream(stream_passes(kernel));
      for (const Product& p : kernel_products(kernel)) {
        multiply(p);
        result.flops += p.flops();
      }
      if (workload_.time_kernels)
        result.kernels.push_back(KernelTiming{kernel.name, started, since_call()});
    }
    if (workload_.hold_training_memory)
      activations_.end(task);
    return result;
  }

  TaskResult collective(const Task& task) override
  {
    auto it = group_of_.find(task.collective);
    if (it == group_of_.end())
      return {}; // a group of one has nothing to exchange
    const std::shared_ptr<gloo::Context>& context = it->second;
    CountedVector<float>& buffer                  = buffers_.at(task_channel(task));
    const std::size_t elements                    = floats_for(strategies::scaled_bytes(task, workload_.scale));
    const auto members                            = static_cast<std::size_t>(context->size);
    meet_neighbours(*context, task.collective);
    switch (task.kind) {
    case TaskKind::all_reduce: {
      gloo::AllreduceOptions options(context);
      options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      options.setOutput(buffer.data(), elements);
      options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(options);
      break;
    }
    case TaskKind::all_gather: {
      // The task's bytes are the gathered output; each member contributes its share.
      const std::size_t share = std::max<std::size_t>(1, elements / members);
      ring_all_gather(*context, buffer.data(), scratch_for(task), share, task.collective);
      break;
    }
    case TaskKind::reduce_scatter:
      ring_reduce_scatter(*context, buffer, elements, task.collective);
      break;
    case TaskKind::all_to_all: {
      // The buffer holds one share per member, in member order; share i goes to member i and the shares
      // received land in the scratch buffer in the same order (Gloo's pairwise exchange).
      const std::size_t share = std::max<std::size_t>(1, elements / members);
      CountedVector<float>& received = scratch_for(task);
      buffer.resize(std::max(buffer.size(), share * members), 1.0f);
      received.resize(std::max(received.size(), share * members));
      gloo::AlltoallOptions options(context);
      options.setInput(buffer.data(), share * members);
      options.setOutput(received.data(), share * members);
      options.setTimeout(timeout());
      gloo::alltoall(options);
      break;
    }
    default:
      throw InternalError("cpu executor: task " + std::to_string(task.id) + " is not a collective");
    }
    return {};
  }

  TaskResult send(const Task& task) override
  {
    auto& buffer = buffers_.at(task_channel(task));
    auto& p2p    = p2p_context(setup_.rank, task.peer);
    auto unbound = p2p.createUnboundBuffer(
        buffer.data(), floats_for(strategies::scaled_bytes(task, workload_.scale)) * sizeof(float));
    char arrived = 0;
    auto token   = p2p.createUnboundBuffer(&arrived, 1);
    token->recv(task.peer, kArrivalSlot | static_cast<uint64_t>(task.id));
    wait(token->waitRecv(timeout()), task);
    unbound->send(task.peer, static_cast<uint64_t>(task.id));
    wait(unbound->waitSend(timeout()), task);
    return {};
  }

  TaskResult recv(const Task& task) override
  {
    auto& buffer = buffers_.at(task_channel(task));
    auto& p2p    = p2p_context(task.peer, setup_.rank);
    auto unbound = p2p.createUnboundBuffer(
        buffer.data(), floats_for(strategies::scaled_bytes(task, workload_.scale)) * sizeof(float));
    unbound->recv(task.peer, static_cast<uint64_t>(task.match));
    char arrived = 1;
    auto token   = p2p.createUnboundBuffer(&arrived, 1);
    token->send(task.peer, kArrivalSlot | static_cast<uint64_t>(task.match));
    wait(unbound->waitRecv(timeout()), task);
    wait(token->waitSend(timeout()), task);
    return {};
  }

  void barrier() override
  {
    gloo::BarrierOptions options(world_);
    gloo::barrier(options);
  }

  MemoryUse memory_use() const override { return budget_.use(); }

private:
  /// Transfers are rendezvous, as the simulator's and NCCL's are: data leaves only once the receiving side has
  /// arrived (posted its receive, or joined the collective), announced by a one-byte message on a slot of its
  /// own. Gloo's TCP sends would otherwise run ahead into the kernel's socket buffers, and a late receiver would
  /// find its data already there: the trace would show transfers shorter than the link allows, and calibration
  /// would fit a link faster than it is.
  static constexpr uint64_t kArrivalSlot = 1ull << 62;

  /// The context that carries data from rank `source` to rank `destination`. Each direction of a pair has its
  /// own TCP connection, as each NCCL peer has a send and a receive connection: on a shared one, the
  /// acknowledgements of what a rank receives ride on what it sends and wait behind it in every queue on the
  /// way, and a pipeline's activations and gradients crossing a slow link at once hold each other back.
  gloo::Context& p2p_context(int source, int destination) const
  {
    return source < destination ? *p2p_upward_ : *p2p_downward_;
  }

  /// Announces this member's arrival at `collective` to both ring neighbours and waits for theirs.
  void meet_neighbours(gloo::Context& context, int collective) const
  {
    const int n = context.size, rank = context.rank;
    const int peers[2] = {(rank + 1) % n, (rank + n - 1) % n};
    const uint64_t slot = kArrivalSlot | static_cast<uint64_t>(collective);
    char out = 1, in[2] = {0, 0};
    auto announce = context.createUnboundBuffer(&out, 1);
    std::unique_ptr<gloo::transport::UnboundBuffer> hear[2];
    for (int i = 0; i < (n == 2 ? 1 : 2); ++i) {
      hear[i] = context.createUnboundBuffer(&in[i], 1);
      hear[i]->recv(peers[i], slot);
      announce->send(peers[i], slot);
    }
    for (int i = 0; i < (n == 2 ? 1 : 2); ++i)
      if (!hear[i]->waitRecv(timeout()) || !announce->waitSend(timeout()))
        throw std::runtime_error("collective " + std::to_string(collective) + ": a neighbour never arrived");
  }

  /// Compute runs at the lowest priority of its process (once per thread): a GPU's kernels never hold back its
  /// NIC, so on a shared CPU the communication threads must not wait for a GEMM to finish its time slice.
  static void yield_to_communication()
  {
    thread_local bool lowered = false;
    if (!lowered)
      setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
    lowered = true;
  }
  std::chrono::milliseconds timeout() const
  {
    return std::chrono::milliseconds(static_cast<long>(setup_.timeout_s * 1000));
  }

  static void wait(bool completed, const Task& task)
  {
    if (!completed)
      throw std::runtime_error(std::string(strategies::task_kind_name(task.kind)) + " with rank " +
                               std::to_string(task.peer) + " aborted");
  }

  std::shared_ptr<gloo::Context> make_context(const std::string& name, int rank, int size)
  {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    gloo::rendezvous::PrefixStore store(name, *store_);
    context->setTimeout(timeout());
    context->connectFullMesh(store, device_);
    return context;
  }

  CountedVector<float>& buffer_for(const Task& task)
  {
    return buffers_.try_emplace(task_channel(task), CountingAllocator<float>(budget_)).first->second;
  }
  CountedVector<float>& scratch_for(const Task& task) { return scratch_.at(static_cast<int>(task.stream)); }

  /// Segments of one ring step's chunk: the pipelined rings below keep every segment of every step posted, so a
  /// member forwards a segment as soon as it has it instead of waiting for the whole step, as Gloo's ring
  /// all-reduce does; the links stay busy across step boundaries.
  static std::size_t ring_segments(std::size_t chunk_elements)
  {
    constexpr std::size_t segment_bytes = 256 * 1024;
    const std::size_t bytes = chunk_elements * sizeof(float);
    return std::clamp<std::size_t>((bytes + segment_bytes - 1) / segment_bytes, 2, 64);
  }

  /// Pipelined ring over `n - 1` steps of `chunk` elements (the simulator's decomposition): at step s member r
  /// sends chunk (r - s) to the next member and receives chunk (r - s - 1) from the previous one, segment by
  /// segment. Every receive is posted up front into its own buffer; segment k of step s + 1 leaves as soon as
  /// segment k of step s has arrived (and, for a reduce-scatter, been added in). Without `reduce` (all-gather)
  /// segments are received straight into `data`; with it, into a buffer of their own, then added into `data`.
  void pipelined_ring(gloo::Context& context, float* data, std::size_t chunk, bool reduce, int collective)
  {
    const int n          = context.size;
    const int rank       = context.rank;
    const std::size_t S  = std::min(ring_segments(chunk), std::max<std::size_t>(1, chunk));
    const std::size_t seg = (chunk + S - 1) / S;
    const int right      = (rank + 1) % n;
    const int left       = (rank + n - 1) % n;
    const std::size_t units = static_cast<std::size_t>(n - 1) * S;
    auto segment_begin = [&](std::size_t k) { return std::min(chunk, k * seg); };
    auto segment_size  = [&](std::size_t k) { return segment_begin(k + 1) - segment_begin(k); };
    auto send_chunk    = [&](std::size_t step) { return static_cast<std::size_t>((rank - static_cast<int>(step) + 2 * n) % n); };
    auto recv_chunk    = [&](std::size_t step) { return static_cast<std::size_t>((rank - static_cast<int>(step) - 1 + 2 * n) % n); };
    auto slot          = [&](std::size_t u) { return (static_cast<uint64_t>(collective) << 16) | static_cast<uint64_t>(u); };

    // Uninitialised, and per call: streams run collectives concurrently. Not counted: it lives only while the
    // collective runs, and profiling, which caps memory, runs none.
    std::unique_ptr<float[]> incoming(reduce ? new float[units * seg] : nullptr);
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> in(units);
    for (std::size_t u = 0; u < units; ++u) {
      const std::size_t step = u / S, k = u % S;
      const std::size_t size = segment_size(k);
      if (size == 0)
        continue;
      float* target = reduce ? incoming.get() + u * seg : data + recv_chunk(step) * chunk + segment_begin(k);
      in[u]         = context.createUnboundBuffer(target, size * sizeof(float));
      in[u]->recv(left, slot(u));
    }
    auto out = context.createUnboundBuffer(data, static_cast<std::size_t>(n) * chunk * sizeof(float));
    std::size_t sends = 0;
    auto send_unit = [&](std::size_t u) {
      const std::size_t step = u / S, k = u % S;
      const std::size_t size = segment_size(k);
      if (size == 0)
        return;
      out->send(right, slot(u), (send_chunk(step) * chunk + segment_begin(k)) * sizeof(float), size * sizeof(float));
      ++sends;
    };
    for (std::size_t u = 0; u < std::min(S, units); ++u)
      send_unit(u);
    for (std::size_t u = 0; u < units; ++u) {
      if (!in[u])
        continue;
      if (!in[u]->waitRecv(timeout()))
        throw std::runtime_error(std::string(reduce ? "reduce-scatter" : "all-gather") + " aborted");
      if (reduce) {
        const std::size_t step = u / S, k = u % S;
        float* target       = data + recv_chunk(step) * chunk + segment_begin(k);
        const float* source = incoming.get() + u * seg;
        for (std::size_t i = 0, size = segment_size(k); i < size; ++i)
          target[i] += source[i];
      }
      if (u + S < units)
        send_unit(u + S); // the same segment of the chunk just received, one step on
    }
    for (std::size_t i = 0; i < sends; ++i)
      if (!out->waitSend(timeout()))
        throw std::runtime_error(std::string(reduce ? "reduce-scatter" : "all-gather") + " aborted");
  }

  /// Ring reduce-scatter (the simulator's decomposition), pipelined. Gloo has no ring reduce-scatter of its own,
  /// so it is built on the group's unbound buffers.
  void ring_reduce_scatter(gloo::Context& context, CountedVector<float>& buffer, std::size_t elements, int collective)
  {
    const auto n            = static_cast<std::size_t>(context.size);
    const std::size_t chunk = (elements + n - 1) / n;
    if (buffer.size() < chunk * n)
      buffer.resize(chunk * n, 1.0f);
    pipelined_ring(context, buffer.data(), chunk, true, collective);
  }

  /// Ring all-gather of `share` elements per member into `output` (n shares), pipelined like the reduce-scatter.
  void ring_all_gather(gloo::Context& context, const float* input, CountedVector<float>& output, std::size_t share,
                       int collective)
  {
    const auto n = static_cast<std::size_t>(context.size);
    output.resize(share * n);
    std::copy(input, input + share, output.data() + static_cast<std::size_t>(context.rank) * share);
    pipelined_ring(context, output.data(), share, false, collective);
  }

  /// The product's `count` matrices, each from its own operands.
  /// A, B and C from the workspace, one after another (the buffer plan sized it for the largest kernel).
  void multiply(const Product& p)
  {
    const float* a = workspace_.data();
    const float* b = a + p.m * p.k * p.count;
    float* c       = workspace_.data() + (p.m * p.k + p.k * p.n) * p.count;
    for (long i = 0; i < p.count; ++i) {
      Eigen::Map<Matrix> product(c + i * p.m * p.n, p.m, p.n);
      product.noalias() = Eigen::Map<const Matrix>(a + i * p.m * p.k, p.m, p.k) *
                          Eigen::Map<const Matrix>(b + i * p.k * p.n, p.k, p.n);
    }
  }

  /// An elementwise pass over one tensor after another, as a norm, an activation or a loss reads and writes
  /// them: input and output side by side in the workspace.
  void stream(const StreamPasses& passes)
  {
    const float* in = workspace_.data();
    float* out      = workspace_.data() + passes.tensor;
    for (std::size_t done = 0; done < passes.elements; done += passes.tensor) {
      const std::size_t n = std::min(passes.tensor, passes.elements - done);
      for (std::size_t i = 0; i < n; ++i)
        out[i] = in[i] * 0.5f + 1.0f;
    }
  }

  /// Adam over `elements` parameters: memory bound, like the real step.
  void adam_step(long elements)
  {
    constexpr float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    const auto n = static_cast<std::size_t>(std::min<long>(elements, static_cast<long>(weights_.size())));
    for (std::size_t i = 0; i < n; ++i) {
      moment1_[i] = beta1 * moment1_[i] + (1 - beta1) * grads_[i];
      moment2_[i] = beta2 * moment2_[i] + (1 - beta2) * grads_[i] * grads_[i];
      weights_[i] -= lr * moment1_[i] / (std::sqrt(moment2_[i]) + eps);
    }
  }

  RankSetup setup_;
  Workload workload_;
  MemoryBudget budget_; // before every buffer, which gives back to it when destroyed
  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::Context> world_;
  std::shared_ptr<gloo::Context> p2p_upward_;
  std::shared_ptr<gloo::Context> p2p_downward_;
  std::map<int, std::shared_ptr<gloo::Context>> group_of_; ///< collective index -> its group's context
  CountedVector<float> workspace_{CountingAllocator<float>(budget_)}; ///< every kernel's operands (BufferPlan)
  std::map<TaskChannel, CountedVector<float>> buffers_; ///< by task_channel
  std::map<int, CountedVector<float>> scratch_;
  /// The optimizer's states: fp32 master weights, fp32 gradient shard, two Adam moments.
  CountedVector<float> weights_{CountingAllocator<float>(budget_)}, grads_{CountingAllocator<float>(budget_)},
      moment1_{CountingAllocator<float>(budget_)}, moment2_{CountingAllocator<float>(budget_)};
  HeldBlock parameters_, gradients_, optimizer_rest_; ///< with hold_training_memory
  SavedActivations<HeldBlock> activations_;
};

} // namespace
} // namespace hetsim::exec

extern "C" hetsim::exec::Executor* hetsim_create_executor()
{
  return new hetsim::exec::CpuExecutor();
}
