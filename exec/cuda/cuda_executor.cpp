/// The cuda executor: cuBLAS GEMMs in the plan's 16-bit dtype, NCCL collectives and send/recv, one process per
/// GPU. Rank 0 creates the NCCL unique id and hands it to the others through the rendezvous directory the
/// launcher gives every rank. Every operation is enqueued on its stream's CUDA stream and waited for while
/// watching NCCL's asynchronous errors, so a dead peer aborts the communicator instead of hanging.
///
/// Communicators (split from the world communicator, every rank taking part in every split in schedule order):
/// one per collective group and stream, and one per directed pipeline pair, so that no two host threads ever
/// use the same communicator.
///
/// Every cudaMalloc is counted (memory_budget.hpp); one the GPU refuses, or one past the memory cap, throws
/// OutOfMemory.

#include "exec/executor.hpp"
#include "exec/gemm_shape.hpp"
#include "exec/memory_budget.hpp"
#include "exec/training_memory.hpp"

#include "core/error.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
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

struct GemmBuffers {
  DeviceBuffer a, b, c;
};

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
  }

  void connect(const RankSetup& setup) override
  {
    setup_ = setup;
    int gpus = 0;
    check_cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
    if (gpus == 0)
      throw std::runtime_error("cuda executor: no GPU visible to rank " + std::to_string(setup.rank));
    // One process per GPU: ranks on one machine take consecutive GPUs.
    const char* local = std::getenv("LOCAL_RANK");
    device_           = (local ? std::atoi(local) : setup.rank) % gpus;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cublas(cublasCreate(&cublas_), "cublasCreate");
    ncclUniqueId id = unique_id();
    check_nccl(ncclCommInitRank(&world_, setup.world_size, id, setup.rank), "ncclCommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&barrier_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  void prepare(const Workload& workload) override
  {
    workload_                     = workload;
    const strategies::Schedule& s = *workload.schedule;
    budget_.set_cap(workload.memory_cap_bytes);
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
      ncclComm_t comm   = nullptr;
      check_nccl(ncclCommSplit(world_, in ? 0 : NCCL_SPLIT_NOCOLOR,
                               in ? static_cast<int>(member - collective.devices.begin()) : 0, &comm, nullptr),
                 "ncclCommSplit");
      it->second = comm;
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
      ncclComm_t comm = nullptr;
      check_nccl(ncclCommSplit(world_, in ? 0 : NCCL_SPLIT_NOCOLOR, pair.first == setup_.rank ? 0 : 1, &comm, nullptr),
                 "ncclCommSplit");
      if (in)
        comms_[{1, pair.first * setup_.world_size + pair.second}] = comm;
    }

    for (int stream = 0; stream < strategies::kStreamCount; ++stream)
      for (int id : s.queues[setup_.rank][stream]) {
        const Task& task = s.tasks[id];
        if (task.kind == TaskKind::optimizer) {
          // The step reads two fp32 vectors; holding training memory, it keeps all four states the cpu
          // executor's Adam does (master weights, gradient shard, two moments).
          const std::size_t states = workload.hold_training_memory ? 4 : 2;
          optimizer_.reserve(budget_, static_cast<std::size_t>(optimizer_elements(task, workload.scale)) * states *
                                          sizeof(float));
        } else if (strategies::is_compute(task.kind)) {
          for (const Gemm& g : task_gemms(task, *workload.model, s.tp, workload.scale)) {
            auto& buffers = gemms_[{g.m, g.k, g.n}];
            buffers.a.reserve(budget_, static_cast<std::size_t>(g.m * g.k) * element_bytes_);
            buffers.b.reserve(budget_, static_cast<std::size_t>(g.k * g.n) * element_bytes_);
            buffers.c.reserve(budget_, static_cast<std::size_t>(g.m * g.n) * element_bytes_);
          }
        } else {
          buffers_[buffer_key(task)].reserve(budget_, elements(task) * element_bytes_ * 2);
        }
        cuda_stream(task);
      }
    if (workload.hold_training_memory) {
      const ModelStateBytes states = model_state_bytes(s, *workload.model, setup_.rank, workload.dtype, workload.scale);
      parameters_                  = DeviceBuffer(budget_, states.parameters);
      gradients_                   = DeviceBuffer(budget_, states.gradients);
    }
  }

  double compute(const Task& task) override
  {
    cudaStream_t stream = cuda_stream(task);
    check_cublas(cublasSetStream(cublas_, stream), "cublasSetStream");
    if (task.kind == TaskKind::optimizer) {
      // Memory-bound stand-in for Adam: read and update fp32 state like the real step does.
      const int n     = static_cast<int>(optimizer_elements(task, workload_.scale));
      const float lr  = 1e-4f;
      auto* weights   = static_cast<float*>(optimizer_.data);
      check_cublas(cublasSaxpy(cublas_, n, &lr, weights + n, 1, weights, 1), "cublasSaxpy");
      wait(stream, nullptr, task);
      return 0;
    }
    const int tp = workload_.schedule->tp;
    if (workload_.hold_training_memory)
      activations_.begin(task, *workload_.model, tp, workload_.dtype, workload_.scale,
                         [&](std::size_t bytes) { return DeviceBuffer(budget_, bytes); });
    double flops = 0;
    const float one = 1, zero = 0;
    for (const Gemm& g : task_gemms(task, *workload_.model, tp, workload_.scale)) {
      auto& b = gemms_.at({g.m, g.k, g.n});
      // Column-major C (n x m) = B^T-shaped (n x k) * A (k x m): the row-major (m x k) * (k x n) product.
      check_cublas(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m),
                                static_cast<int>(g.k), &one, b.b.data, data_type_, static_cast<int>(g.n), b.a.data,
                                data_type_, static_cast<int>(g.k), &zero, b.c.data, data_type_, static_cast<int>(g.n),
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
      flops += g.flops();
    }
    wait(stream, nullptr, task);
    if (workload_.hold_training_memory)
      activations_.end(task);
    return flops;
  }

  void collective(const Task& task) override
  {
    auto it = collective_comm_.find(task.collective);
    if (it == collective_comm_.end())
      return;
    ncclComm_t comm     = it->second;
    cudaStream_t stream = cuda_stream(task);
    void* buffer        = buffers_.at(buffer_key(task)).data;
    int members         = 0;
    check_nccl(ncclCommCount(comm, &members), "ncclCommCount");
    const std::size_t count = elements(task);
    const std::size_t share = std::max<std::size_t>(1, count / members);
    auto* bytes             = static_cast<char*>(buffer);
    switch (task.kind) {
    case TaskKind::all_reduce:
      check_nccl(ncclAllReduce(buffer, buffer, count, nccl_type_, ncclSum, comm, stream), "ncclAllReduce");
      break;
    case TaskKind::reduce_scatter: // input: the whole buffer; output: this member's share after it
      check_nccl(ncclReduceScatter(buffer, bytes + share * members * element_bytes_, share, nccl_type_, ncclSum,
                                   comm, stream),
                 "ncclReduceScatter");
      break;
    case TaskKind::all_gather: // input: this member's share; output: the gathered buffer after it
      check_nccl(ncclAllGather(buffer, bytes + share * element_bytes_, share, nccl_type_, comm, stream),
                 "ncclAllGather");
      break;
    default:
      throw InternalError("cuda executor: task " + std::to_string(task.id) + " is not a collective");
    }
    wait(stream, comm, task);
  }

  void send(const Task& task) override
  {
    ncclComm_t comm     = comms_.at({1, setup_.rank * setup_.world_size + task.peer});
    cudaStream_t stream = cuda_stream(task);
    check_nccl(ncclSend(buffers_.at(buffer_key(task)).data, elements(task), nccl_type_, 1, comm, stream), "ncclSend");
    wait(stream, comm, task);
  }

  void recv(const Task& task) override
  {
    ncclComm_t comm     = comms_.at({1, task.peer * setup_.world_size + setup_.rank});
    cudaStream_t stream = cuda_stream(task);
    check_nccl(ncclRecv(buffers_.at(buffer_key(task)).data, elements(task), nccl_type_, 0, comm, stream), "ncclRecv");
    wait(stream, comm, task);
  }

  MemoryUse memory_use() const override { return budget_.use(); }

  void barrier() override
  {
    barrier_buffer_.reserve(budget_, sizeof(float));
    check_nccl(ncclAllReduce(barrier_buffer_.data, barrier_buffer_.data, 1, ncclFloat32, ncclSum, world_,
                             barrier_stream_),
               "ncclAllReduce");
    wait(barrier_stream_, world_, Task{});
  }

private:
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

  std::size_t elements(const Task& task) const
  {
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(scaled_bytes(task, workload_.scale) / element_bytes_)));
  }

  static std::pair<int, int> buffer_key(const Task& task)
  {
    if (task.stream != Stream::pipeline)
      return {static_cast<int>(task.stream), -1};
    return {task.kind == TaskKind::send ? 100 : 200, task.peer};
  }

  /// The CUDA stream of a task's Schedule stream (pipeline: of its channel), created in prepare.
  cudaStream_t cuda_stream(const Task& task)
  {
    const auto key = buffer_key(task);
    auto it        = streams_.find(key);
    if (it != streams_.end())
      return it->second;
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return streams_[key] = stream;
  }

  /// Waits for the work enqueued on `stream`, aborting `comm` when a peer fails or the timeout passes.
  void wait(cudaStream_t stream, ncclComm_t comm, const Task& task) const
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(setup_.timeout_s);
    while (true) {
      const cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess)
        return;
      if (state != cudaErrorNotReady)
        check_cuda(state, "cudaStreamQuery");
      if (comm) {
        ncclResult_t async = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
        if (async != ncclSuccess && async != ncclInProgress) {
          ncclCommAbort(comm);
          check_nccl(async, "NCCL");
        }
        if (std::chrono::steady_clock::now() > deadline) {
          ncclCommAbort(comm);
          throw std::runtime_error(std::string(strategies::task_kind_name(task.kind)) + " timed out after " +
                                   std::to_string(setup_.timeout_s) + " s");
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  RankSetup setup_;
  Workload workload_;
  MemoryBudget budget_; // before every buffer, which gives back to it when destroyed
  int device_ = 0;
  cublasHandle_t cublas_ = nullptr;
  ncclComm_t world_      = nullptr;
  cudaStream_t barrier_stream_ = nullptr;
  std::size_t element_bytes_   = 2;
  cudaDataType_t data_type_    = CUDA_R_16F;
  ncclDataType_t nccl_type_    = ncclFloat16;
  std::map<std::pair<int, int>, ncclComm_t> comms_; ///< (0, n): groups; (1, src * world + dst): pipeline pairs
  std::map<int, ncclComm_t> collective_comm_;       ///< collective index -> its group's communicator
  std::map<std::pair<int, int>, cudaStream_t> streams_;
  std::map<std::tuple<long, long, long>, GemmBuffers> gemms_;
  std::map<std::pair<int, int>, DeviceBuffer> buffers_;
  DeviceBuffer optimizer_;
  DeviceBuffer barrier_buffer_;
  DeviceBuffer parameters_, gradients_; ///< with hold_training_memory
  SavedActivations<DeviceBuffer> activations_;
};

} // namespace
} // namespace hetsim::exec

extern "C" hetsim::exec::Executor* hetsim_create_executor()
{
  return new hetsim::exec::CudaExecutor();
}
