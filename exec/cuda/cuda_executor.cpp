/// The cuda executor: cuBLAS GEMMs in the plan's 16-bit dtype, NCCL collectives and send/recv, one process per
/// GPU. Rank 0 creates the NCCL unique id and hands it to the others through the rendezvous directory the
/// launcher gives every rank. Every operation is enqueued on its stream's CUDA stream between two CUDA events
/// and waited for by polling the end event while watching NCCL's asynchronous errors, so a dead peer aborts the
/// communicator instead of hanging. The task's duration is the events' elapsed time, which the stream runner
/// anchors at the host's call of the operation (stream_runner.hpp, TaskRecord).
///
/// Communicators (split from the world communicator, every rank taking part in every split in schedule order):
/// one per collective group and stream, and one per directed pipeline pair, so that no two host threads ever
/// use the same communicator.
///
/// Fused attention runs as PyTorch's SDPA runs it, on cuDNN's flash graphs (cudnn_attention.hpp), where the build
/// found cuDNN and cuDNN has an engine for the shape; otherwise as 128-query blocks of cuBLAS products.
///
/// Every cudaMalloc is counted (memory_budget.hpp); one the GPU refuses, or one past the memory cap, throws
/// OutOfMemory.

#include "exec/buffer_plan.hpp"
#include "exec/executor.hpp"
#include "exec/kernel_products.hpp"
#include "exec/memory_budget.hpp"
#include "exec/task_channel.hpp"
#include "exec/training_memory.hpp"
#ifdef HETSIM_CUDNN_ATTENTION
#include "exec/cuda/cudnn_attention.hpp"
#endif

#include "core/error.hpp"
#include "costmodel/compute.hpp"
#include "strategies/lowering/scale.hpp"
#include "strategies/lowering/task_kernels.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace hetsim::exec {
namespace {

using strategies::Stream;
using strategies::Task;
using strategies::TaskKind;

void check_cuda(cudaError_t status, const char* what)
{
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* what)
{
  if (status != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* what)
{
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

/// Device memory, counted in a budget, freed with the executor.
struct DeviceBuffer {
  void* data        = nullptr;
  std::size_t bytes = 0;

  DeviceBuffer() = default;
  /// `wanted` bytes right away, left unset: memory held rather than computed on.
  DeviceBuffer(MemoryBudget& budget, std::size_t wanted) { allocate(budget, wanted); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept
  {
    swap(other);
    return *this;
  }

  void reserve(MemoryBudget& budget, std::size_t wanted)
  {
    if (wanted <= bytes)
      return;
    allocate(budget, wanted);
    check_cuda(cudaMemset(data, 0, wanted), "cudaMemset");
  }
  ~DeviceBuffer() { release(); }

private:
  void allocate(MemoryBudget& budget, std::size_t wanted)
  {
    release();
    budget.take(wanted, "cudaMalloc");
    const cudaError_t status = cudaMalloc(&data, wanted);
    if (status != cudaSuccess) {
      budget.give(wanted);
      data = nullptr;
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); // not sticky: clear it so that later calls do not report it again
        throw OutOfMemory("cudaMalloc of " + std::to_string(wanted) + " bytes: out of GPU memory");
      }
      check_cuda(status, "cudaMalloc");
    }
    bytes   = wanted;
    budget_ = &budget;
  }
  void release()
  {
    if (!data)
      return;
    cudaFree(data);
    budget_->give(bytes);
    data  = nullptr;
    bytes = 0;
  }
  void swap(DeviceBuffer& other) noexcept
  {
    std::swap(data, other.data);
    std::swap(bytes, other.bytes);
    std::swap(budget_, other.budget_);
  }

  MemoryBudget* budget_ = nullptr;
};

/// A CUDA stream and the event pair that times each task on it. A stream's tasks run one at a time (one host
/// thread per Schedule stream or pipeline channel), so one pair per stream is enough.
struct TimedStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t start   = nullptr;
  cudaEvent_t end     = nullptr;
};

/// This process's index among the ranks on its machine, from whichever launcher started it; -1 when unknown.
int local_rank()
{
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"})
    if (const char* value = std::getenv(name))
      return std::atoi(value);
  return -1;
}

class CudaExecutor final : public Executor {
public:
  ~CudaExecutor() override
  {
    for (auto& [key, comm] : comms_)
      ncclCommDestroy(comm);
    if (world_)
      ncclCommDestroy(world_);
    if (cublas_)
      cublasDestroy(cublas_);
    for (auto& [key, stream] : streams_)
      destroy(stream);
    destroy(barrier_);
    for (cudaEvent_t mark : kernel_marks_)
      cudaEventDestroy(mark);
  }

  std::string unusable_reason() override
  {
    int gpus                 = 0;
    const cudaError_t status = cudaGetDeviceCount(&gpus);
    if (status != cudaSuccess)
      return std::string("no usable GPU (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
    return gpus == 0 ? "no GPU visible" : "";
  }

  void connect(const RankSetup& setup) override
  {
    setup_ = setup;
    int gpus = 0;
    check_cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
    if (gpus == 0)
      throw std::runtime_error("cuda executor: no GPU visible to rank " + std::to_string(setup.rank));
    // One process per GPU: ranks on one machine take consecutive GPUs.
    const int local = local_rank();
    device_         = (local >= 0 ? local : setup.rank) % gpus;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cublas(cublasCreate(&cublas_), "cublasCreate");
    ncclUniqueId id = unique_id();
    // Non-blocking communicators: creation and every call can be waited for with a deadline (ready()).
    ncclConfig_t config = nonblocking();
    nccl(world_, ncclCommInitRankConfig(&world_, setup.world_size, id, setup.rank, &config), "ncclCommInitRank");
    barrier_ = create_timed_stream();
  }

  void prepare(const Workload& workload) override
  {
    workload_                     = workload;
    const strategies::Schedule& s = *workload.schedule;
    budget_.set_cap(workload.memory_cap_bytes);
    host_ = HostPacer(workload.host_dispatch_s);
    element_bytes_                = workload.dtype == Dtype::fp32 ? 4 : 2;
    data_type_    = workload.dtype == Dtype::bf16 ? CUDA_R_16BF : workload.dtype == Dtype::fp32 ? CUDA_R_32F : CUDA_R_16F;
    nccl_type_    = workload.dtype == Dtype::bf16 ? ncclBfloat16 : workload.dtype == Dtype::fp32 ? ncclFloat32 : ncclFloat16;

    // Every rank walks the same list of groups and takes part in every split (NOCOLOR when not a member).
    std::map<std::pair<int, std::vector<int>>, ncclComm_t> groups;
    for (const auto& collective : s.collectives) {
      const int stream = static_cast<int>(s.tasks[collective.tasks.front()].stream);
      auto [it, fresh] = groups.try_emplace({stream, collective.devices}, nullptr);
      if (!fresh || collective.devices.size() < 2)
        continue;
      const auto member = std::find(collective.devices.begin(), collective.devices.end(), setup_.rank);
      const bool in     = member != collective.devices.end();
      it->second = split(in, in ? static_cast<int>(member - collective.devices.begin()) : 0);
    }
    for (std::size_t c = 0; c < s.collectives.size(); ++c) {
      const auto& collective = s.collectives[c];
      const int stream       = static_cast<int>(s.tasks[collective.tasks.front()].stream);
      ncclComm_t comm        = groups.at({stream, collective.devices});
      if (comm)
        collective_comm_[static_cast<int>(c)] = comm;
    }
    for (auto& [key, comm] : groups)
      if (comm)
        comms_[{0, static_cast<int>(comms_.size())}] = comm;
    // One communicator per directed pipeline pair, sender first.
    std::map<std::pair<int, int>, int> pairs;
    for (const auto& task : s.tasks)
      if (task.kind == TaskKind::send)
        pairs.emplace(std::make_pair(task.device, task.peer), 0);
    for (auto& [pair, unused] : pairs) {
      const bool in   = pair.first == setup_.rank || pair.second == setup_.rank;
      ncclComm_t comm = split(in, pair.first == setup_.rank ? 0 : 1);
      if (in)
        comms_[{1, pair.first * setup_.world_size + pair.second}] = comm;
    }

    for (int stream = 0; stream < strategies::kStreamCount; ++stream)
      for (int id : s.queues[setup_.rank][stream]) {
        const Task& task = s.tasks[id];
        if (!strategies::is_compute(task.kind)) {
          buffers_[task_channel(task)].reserve(budget_, elements(task) * element_bytes_ * 2);
        }
        if (!streams_.count(task_channel(task)))
          streams_[task_channel(task)] = create_timed_stream();
      }
    const BufferPlan plan = buffer_plan(workload, setup_.rank);
    workspace_.reserve(budget_, plan.workspace_elements * element_bytes_);
    prepare_attention();
    fill_normal(workspace_);
    // The step reads two fp32 vectors; holding training memory, the buffer holds the optimizer states.
    optimizer_.reserve(budget_, plan.optimizer_bytes(kStepVectors));
    if (workload.hold_training_memory) {
      parameters_ = DeviceBuffer(budget_, plan.states.parameters);
      gradients_  = DeviceBuffer(budget_, plan.states.gradients);
    }
  }

  TaskResult compute(const Task& task) override
  {
    const int tp              = workload_.schedule->tp;
    const bool holds_activity = workload_.hold_training_memory && task.kind != TaskKind::optimizer;
    if (holds_activity)
      activations_.begin(task, *workload_.model, *workload_.schedule, workload_.dtype, workload_.scale,
                         [&](std::size_t bytes) { return DeviceBuffer(budget_, bytes); });
    TaskResult result = timed(task, nullptr, [&](cudaStream_t stream) {
      check_cublas(cublasSetStream(cublas_, stream), "cublasSetStream");
      if (task.kind == TaskKind::optimizer) {
        optimizer_step(optimizer_elements(task, workload_.scale));
        return 0.0;
      }
      double flops     = 0;
      const float zero = 0;
      marked_kernels_.clear();
      host_.begin_task();
      for (const models::Kernel& kernel : strategies::task_kernels(task, *workload_.model, tp, workload_.scale, workload_.schedule->ep,
                                                              workload_.schedule->sequence_parallel,
                                                              workload_.schedule->cp)) {
        host_.before_kernel(kernel.launches); // the GPU idles if it ran out of work
        if (workload_.time_kernels)
          mark_kernel_end(kernel.name, stream);
        if (kernel.kind == models::Kernel::Kind::stream) // elementwise passes: read as many as they write
          copy_passes(stream_passes(kernel), stream);
        if (fused_attention(kernel, stream)) {
          flops += kernel.flops;
          continue;
        }
        for (const Product& p : kernel_products(kernel)) {
          // A, B and C one after another in the workspace. Column-major C (n x m) = B^T-shaped (n x k) * A
          // (k x m): the row-major (m x k) * (k x n) product.
          auto* a = static_cast<char*>(workspace_.data);
          auto* b = a + static_cast<std::size_t>(p.m * p.k * p.count) * element_bytes_;
          auto* c = b + static_cast<std::size_t>(p.k * p.n * p.count) * element_bytes_;
          // Scaled by 1 / sqrt(k), a product of unit-variance operands stays unit-variance, so that outputs read as
          // later operands never grow to infinities.
          const float scale = 1.0f / std::sqrt(static_cast<float>(p.k));
          check_cublas(cublasGemmStridedBatchedEx(
                           cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.n), static_cast<int>(p.m),
                           static_cast<int>(p.k), &scale, b, data_type_, static_cast<int>(p.n), p.k * p.n, a,
                           data_type_, static_cast<int>(p.k), p.m * p.k, &zero, c, data_type_,
                           static_cast<int>(p.n), p.m * p.n, static_cast<int>(p.count), CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
                       "cublasGemmStridedBatchedEx");
          flops += p.flops();
        }
      }
      if (workload_.time_kernels && !marked_kernels_.empty())
        mark_kernel_end("", stream);
      return flops;
    });
    if (holds_activity)
      activations_.end(task);
    result.kernels = kernel_timings(task);
    return result;
  }

  TaskResult collective(const Task& task) override
  {
    auto it = collective_comm_.find(task.collective);
    if (it == collective_comm_.end())
      return {}; // a group of one has nothing to exchange
    ncclComm_t comm = it->second;
    void* buffer    = buffers_.at(task_channel(task)).data;
    int members     = 0;
    check_nccl(ncclCommCount(comm, &members), "ncclCommCount");
    const std::size_t count = elements(task);
    const std::size_t share = std::max<std::size_t>(1, count / members);
    auto* bytes             = static_cast<char*>(buffer);
    return timed(task, comm, [&](cudaStream_t stream) {
      switch (task.kind) {
        case TaskKind::all_reduce:
          nccl(comm, ncclAllReduce(buffer, buffer, count, nccl_type_, ncclSum, comm, stream), "ncclAllReduce");
          break;
        case TaskKind::reduce_scatter: // input: the whole buffer; output: this member's share after it
          nccl(comm, ncclReduceScatter(buffer, bytes + share * members * element_bytes_, share, nccl_type_, ncclSum,
                                       comm, stream),
                     "ncclReduceScatter");
          break;
        case TaskKind::all_gather: // input: this member's share; output: the gathered buffer after it
          nccl(comm, ncclAllGather(buffer, bytes + share * element_bytes_, share, nccl_type_, comm, stream),
                     "ncclAllGather");
          break;
        case TaskKind::all_to_all: { // input: a share per member; output: the shares received, after it
          // NCCL has no all-to-all call: one group of a send and a receive per member (the NCCL documentation's
          // own all-to-all), which completes when all of them have.
          char* received = bytes + share * members * element_bytes_;
          check_nccl(ncclGroupStart(), "ncclGroupStart");
          for (int peer = 0; peer < members; ++peer) {
            const std::size_t offset = static_cast<std::size_t>(peer) * share * element_bytes_;
            check_nccl(ncclSend(bytes + offset, share, nccl_type_, peer, comm, stream), "ncclSend");
            check_nccl(ncclRecv(received + offset, share, nccl_type_, peer, comm, stream), "ncclRecv");
          }
          nccl(comm, ncclGroupEnd(), "ncclGroupEnd");
          break;
        }
        default:
          throw InternalError("cuda executor: task " + std::to_string(task.id) + " is not a collective");
      }
      return 0.0;
    });
  }

  TaskResult send(const Task& task) override
  {
    ncclComm_t comm = comms_.at({1, setup_.rank * setup_.world_size + task.peer});
    return timed(task, comm, [&](cudaStream_t stream) {
      nccl(comm, ncclSend(buffers_.at(task_channel(task)).data, elements(task), nccl_type_, 1, comm, stream), "ncclSend");
      return 0.0;
    });
  }

  TaskResult recv(const Task& task) override
  {
    ncclComm_t comm = comms_.at({1, task.peer * setup_.world_size + setup_.rank});
    return timed(task, comm, [&](cudaStream_t stream) {
      nccl(comm, ncclRecv(buffers_.at(task_channel(task)).data, elements(task), nccl_type_, 0, comm, stream), "ncclRecv");
      return 0.0;
    });
  }

  MemoryUse memory_use() const override { return budget_.use(); }

  void barrier() override
  {
    barrier_buffer_.reserve(budget_, sizeof(float));
    nccl(world_,
         ncclAllReduce(barrier_buffer_.data, barrier_buffer_.data, 1, ncclFloat32, ncclSum, world_, barrier_.stream),
         "ncclAllReduce");
    check_cuda(cudaEventRecord(barrier_.end, barrier_.stream), "cudaEventRecord");
    wait(barrier_.end, world_, "barrier");
  }

private:
  static ncclConfig_t nonblocking()
  {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking     = 0;
    return config;
  }

  /// The result of an NCCL call on `comm`: in progress (a non-blocking communicator) is waited for.
  void nccl(ncclComm_t comm, ncclResult_t status, const char* what) const
  {
    if (status == ncclInProgress)
      ready(comm, what);
    else
      check_nccl(status, what);
  }

  /// Waits until `comm` has finished what it was asked (creation, a split, an enqueue) or the timeout passes;
  /// then it is aborted and the wait fails like a Gloo wait on a dead peer, and run_rank names the rank.
  void ready(ncclComm_t comm, const char* what) const
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(setup_.timeout_s);
    while (true) {
      ncclResult_t state = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
      if (state == ncclSuccess)
        return;
      if (state != ncclInProgress) {
        ncclCommAbort(comm);
        check_nccl(state, what);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm);
        throw std::runtime_error(std::string(what) + " timed out after " + std::to_string(setup_.timeout_s) +
                                 " s waiting for its peers");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// This rank's communicator of a world split (NOCOLOR when not `in`: then none); every rank takes part.
  ncclComm_t split(bool in, int key)
  {
    ncclConfig_t config = nonblocking();
    ncclComm_t comm     = nullptr;
    nccl(world_, ncclCommSplit(world_, in ? 0 : NCCL_SPLIT_NOCOLOR, key, &comm, &config), "ncclCommSplit");
    ready(world_, "ncclCommSplit");
    if (comm)
      ready(comm, "ncclCommSplit");
    return comm;
  }

  /// Rank 0 writes the NCCL unique id to the rendezvous directory (atomically); the others wait for it.
  ncclUniqueId unique_id() const
  {
    namespace fs           = std::filesystem;
    const fs::path file    = fs::path(setup_.store_dir) / "nccl_unique_id";
    ncclUniqueId id{};
    if (setup_.rank == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      const fs::path temporary = file.string() + ".tmp";
      std::ofstream(temporary, std::ios::binary).write(id.internal, sizeof id.internal);
      fs::rename(temporary, file);
      return id;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(setup_.timeout_s);
    while (!fs::exists(file)) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("no NCCL unique id from rank 0 in " + file.string());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream(file, std::ios::binary).read(id.internal, sizeof id.internal);
    return id;
  }

  static constexpr std::size_t kStepVectors = 2; ///< fp32 vectors the optimizer's stand-in step reads

  /// Memory-bound stand-in for the optimizer's step over `params` fp32 parameters: passes of y += a x over two
  /// vectors (12 bytes a parameter each) until it moves the bytes the cost model prices an Adam step at
  /// (costmodel::ComputeModel::kOptimizerBytesPerParam), in pieces cuBLAS' int lengths can count.
  void optimizer_step(long params)
  {
    constexpr long kPiece  = 1L << 30;
    const int passes       = static_cast<int>(std::lround(costmodel::ComputeModel::kOptimizerBytesPerParam / 12));
    const float rate       = 1e-4f;
    auto* weights          = static_cast<float*>(optimizer_.data);
    for (int pass = 0; pass < passes; ++pass)
      for (long begin = 0; begin < params; begin += kPiece) {
        const int n = static_cast<int>(std::min(kPiece, params - begin));
        check_cublas(cublasSaxpy(cublas_, n, &rate, weights + params + begin, 1, weights + begin, 1), "cublasSaxpy");
      }
  }

  /// Fills `buffer` with standard normal values of the compute type, fixed seed: tensor cores multiply zeros
  /// faster than data (on an H200 the shared plans' products took 3-20% less time on zeros,
  /// tests/data/h200/executor/zeros-vs-normal.txt), and a kernel's operands are data in training.
  void fill_normal(DeviceBuffer& buffer) const
  {
    if (!buffer.data)
      return;
    constexpr std::size_t kChunk = 1 << 22; // values generated on the host, then doubled on the device
    std::mt19937 random(38);
    std::normal_distribution<float> normal;
    std::vector<char> values(kChunk * element_bytes_);
    for (std::size_t i = 0; i < kChunk; ++i) {
      const float value = normal(random);
      const std::uint16_t half = data_type_ == CUDA_R_16BF ? __bfloat16_as_ushort(__float2bfloat16(value))
                                                          : __half_as_ushort(__float2half(value));
      std::memcpy(values.data() + i * element_bytes_, element_bytes_ == 4 ? static_cast<const void*>(&value) : &half,
                  element_bytes_);
    }
    const void* source = values.data();
    auto* bytes        = static_cast<char*>(buffer.data);
    std::size_t filled = std::min(buffer.bytes, kChunk * element_bytes_);
    check_cuda(cudaMemcpy(bytes, source, filled, cudaMemcpyHostToDevice), "cudaMemcpy");
    for (; filled < buffer.bytes; filled *= 2)
      check_cuda(cudaMemcpy(bytes + filled, bytes, std::min(filled, buffer.bytes - filled), cudaMemcpyDeviceToDevice),
                 "cudaMemcpy");
  }

  /// Builds cuDNN's graph for every fused attention this rank runs, before anything is timed, and widens the
  /// workspace where cuDNN asks more than the buffer plan's allowance. A shape cuDNN refuses is said once and
  /// emulated.
  void prepare_attention()
  {
#ifdef HETSIM_CUDNN_ATTENTION
    if (workload_.dtype == Dtype::fp32)
      return; // cuDNN's flash graphs take 16-bit operands only
    attention_ = std::make_unique<CudnnAttention>(workload_.dtype == Dtype::bf16);
    const strategies::Schedule& s = *workload_.schedule;
    std::size_t needed            = 0;
    for (int id : s.queues[setup_.rank][static_cast<int>(Stream::compute)])
      for (const models::Kernel& kernel : strategies::task_kernels(s.tasks[id], *workload_.model, s.tp, workload_.scale,
                                                                   s.ep, s.sequence_parallel, s.cp)) {
        if (kernel.kind != models::Kernel::Kind::fused_attention)
          continue;
        const AttentionTensors tensors = attention_tensors(kernel);
        std::string why;
        if (!attention_->build(tensors, why)) {
          if (refused_attention_.insert(why).second)
            std::cerr << "cuda executor: cuDNN has no fused attention for " << tensors.heads << " heads of "
                      << tensors.sequence << " x " << tensors.head_size << " (" << why
                      << "); it runs as blocks of cuBLAS products\n";
          continue;
        }
        const std::size_t held = (tensors.backward ? 8 : 4) * tensors.tensor() + tensors.rows();
        needed = std::max(needed, held * 2 + attention_->workspace_bytes(tensors));
      }
    workspace_.reserve(budget_, needed);
#endif
  }

  /// Runs `kernel` on cuDNN when it is a fused attention cuDNN has a graph for; false otherwise.
  bool fused_attention([[maybe_unused]] const models::Kernel& kernel, [[maybe_unused]] cudaStream_t stream)
  {
#ifdef HETSIM_CUDNN_ATTENTION
    if (kernel.kind != models::Kernel::Kind::fused_attention || !attention_)
      return false;
    const AttentionTensors tensors = attention_tensors(kernel);
    std::string why;
    if (!attention_->build(tensors, why))
      return false;
    attention_->run(tensors, stream, workspace_.data);
    return true;
#else
    return false;
#endif
  }

  /// A stream kernel's passes: one tensor copied onto the next in the workspace, until all its bytes moved.
  void copy_passes(const StreamPasses& passes, cudaStream_t stream) const
  {
    auto* in  = static_cast<char*>(workspace_.data);
    auto* out = in + passes.tensor * element_bytes_;
    for (std::size_t done = 0; done < passes.elements; done += passes.tensor)
      check_cuda(cudaMemcpyAsync(out, in, std::min(passes.tensor, passes.elements - done) * element_bytes_,
                                 cudaMemcpyDeviceToDevice, stream),
                 "cudaMemcpyAsync");
  }

  std::size_t elements(const Task& task) const
  {
    return std::max<std::size_t>(
        1, static_cast<std::size_t>(std::ceil(strategies::scaled_bytes(task, workload_.scale) / element_bytes_)));
  }

  static TimedStream create_timed_stream()
  {
    TimedStream created;
    check_cuda(cudaStreamCreateWithFlags(&created.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&created.start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&created.end), "cudaEventCreate");
    return created;
  }

  static void destroy(const TimedStream& s)
  {
    if (s.start)
      cudaEventDestroy(s.start);
    if (s.end)
      cudaEventDestroy(s.end);
    if (s.stream)
      cudaStreamDestroy(s.stream);
  }

  /// Enqueues the task's work (`enqueue(stream)`, returning the FLOPs it runs) between its stream's two events,
  /// waits for the end event and returns the events' elapsed time. The stream holds nothing but this task (the
  /// previous one was waited for), so the start event fires as soon as it is recorded.
  template <class Enqueue> TaskResult timed(const Task& task, ncclComm_t comm, Enqueue&& enqueue)
  {
    const TimedStream& on = streams_.at(task_channel(task));
    check_cuda(cudaEventRecord(on.start, on.stream), "cudaEventRecord");
    TaskResult result;
    result.flops = enqueue(on.stream);
    check_cuda(cudaEventRecord(on.end, on.stream), "cudaEventRecord");
    wait(on.end, comm, strategies::task_kind_name(task.kind));
    float milliseconds = 0;
    check_cuda(cudaEventElapsedTime(&milliseconds, on.start, on.end), "cudaEventElapsedTime");
    result.device_seconds = milliseconds / 1e3;
    return result;
  }

  /// With Workload::time_kernels, an event after each kernel: records mark i where kernel i begins (the previous
  /// one ends) and names the kernel that begins there ("" after the last).
  void mark_kernel_end(const std::string& next, cudaStream_t stream)
  {
    const std::size_t i = marked_kernels_.size();
    if (i == kernel_marks_.size()) {
      kernel_marks_.emplace_back();
      check_cuda(cudaEventCreate(&kernel_marks_.back()), "cudaEventCreate");
    }
    check_cuda(cudaEventRecord(kernel_marks_[i], stream), "cudaEventRecord");
    marked_kernels_.push_back(next);
  }

  /// The kernels between the marks of the compute task just timed, from its start event (the task is complete).
  std::vector<KernelTiming> kernel_timings(const Task& task)
  {
    std::vector<KernelTiming> out;
    const TimedStream& on = streams_.at(task_channel(task));
    auto since_start      = [&](cudaEvent_t mark) {
      float milliseconds = 0;
      check_cuda(cudaEventElapsedTime(&milliseconds, on.start, mark), "cudaEventElapsedTime");
      return milliseconds / 1e3;
    };
    for (std::size_t i = 0; i + 1 < marked_kernels_.size(); ++i)
      out.push_back(KernelTiming{marked_kernels_[i], since_start(kernel_marks_[i]), since_start(kernel_marks_[i + 1])});
    marked_kernels_.clear();
    return out;
  }

  /// Polls `done` (never an unbounded cudaEventSynchronize), aborting `comm` when a peer fails or the timeout
  /// passes.
  void wait(cudaEvent_t done, ncclComm_t comm, std::string_view what) const
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(setup_.timeout_s);
    while (true) {
      const cudaError_t state = cudaEventQuery(done);
      if (state == cudaSuccess)
        return;
      if (state != cudaErrorNotReady)
        check_cuda(state, "cudaEventQuery");
      if (comm) {
        ncclResult_t async = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
        if (async != ncclSuccess && async != ncclInProgress) {
          ncclCommAbort(comm);
          check_nccl(async, "NCCL");
        }
        if (std::chrono::steady_clock::now() > deadline) {
          ncclCommAbort(comm);
          throw std::runtime_error(std::string(what) + " timed out after " + std::to_string(setup_.timeout_s) + " s");
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  RankSetup setup_;
  Workload workload_;
  HostPacer host_{0};
  MemoryBudget budget_; // before every buffer, which gives back to it when destroyed
  int device_ = 0;
  cublasHandle_t cublas_ = nullptr;
  ncclComm_t world_      = nullptr;
  TimedStream barrier_;
  std::size_t element_bytes_   = 2;
  cudaDataType_t data_type_    = CUDA_R_16F;
  ncclDataType_t nccl_type_    = ncclFloat16;
  std::map<std::pair<int, int>, ncclComm_t> comms_; ///< (0, n): groups; (1, src * world + dst): pipeline pairs
  std::map<int, ncclComm_t> collective_comm_;       ///< collective index -> its group's communicator
  std::map<TaskChannel, TimedStream> streams_; ///< by task_channel, created in prepare
  DeviceBuffer workspace_; ///< every kernel's operands (BufferPlan)
  std::vector<cudaEvent_t> kernel_marks_;   ///< reused by every compute task (one compute stream)
  std::vector<std::string> marked_kernels_; ///< the kernel beginning at each mark of the current task
  std::map<TaskChannel, DeviceBuffer> buffers_; ///< by task_channel
  DeviceBuffer optimizer_;
  DeviceBuffer barrier_buffer_;
  DeviceBuffer parameters_, gradients_; ///< with hold_training_memory
  SavedActivations<DeviceBuffer> activations_;
#ifdef HETSIM_CUDNN_ATTENTION
  std::unique_ptr<CudnnAttention> attention_; ///< built in prepare when the dtype is 16-bit
  std::set<std::string> refused_attention_;   ///< cuDNN's reasons, each said once
#endif
};

} // namespace
} // namespace hetsim::exec

extern "C" hetsim::exec::Executor* hetsim_create_executor()
{
  return new hetsim::exec::CudaExecutor();
}
