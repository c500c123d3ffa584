#pragma once
/// PyTorch profiler traces: the Chrome-trace JSON that torch.profiler writes with export_chrome_trace (Kineto),
/// plain or gzipped, from any framework that runs on PyTorch. What HetSim reads of them: the profiled steps
/// (ProfilerStep#N spans), and each GPU kernel with its duration and the aten operator that launched it, with
/// the shapes and dtypes record_shapes=True keeps.

#include <string>
#include <vector>

namespace hetsim::traces {

/// What a kernel does, told by its name and the operator that launched it.
enum class ProfiledKind {
  matmul,        ///< cuBLAS / CUTLASS products (aten::mm, addmm, bmm, ...)
  attention,     ///< fused scaled-dot-product attention (flash, cuDNN, memory-efficient) and its helpers
  loss,          ///< log_softmax and nll_loss, forward and backward
  optimizer,     ///< multi_tensor_apply (fused Adam/AdamW), the optimizer step's kernels
  communication, ///< NCCL
  memory,        ///< everything else: elementwise, norms, dropout, copies, reductions, memsets
};
const char* profiled_kind_name(ProfiledKind kind);

/// One GPU kernel (or memset) of a profiled step.
struct ProfiledKernel {
  std::string name;     ///< the kernel's
  std::string op;       ///< the innermost aten operator that launched it ("aten::mm"), or empty
  ProfiledKind kind = ProfiledKind::memory;
  double start_s    = 0; ///< from the trace's first event
  double seconds    = 0;
  int step          = 0;    ///< index into PytorchTrace::steps
  long long op_id   = -1;   ///< the launching operator's External id: kernels of one call share it
  /// The operator's tensor inputs as recorded (record_shapes): dims and element sizes in bytes (0: not a tensor).
  std::vector<std::vector<double>> input_dims;
  std::vector<double> input_element_bytes;
};

struct ProfiledStep {
  std::string name;      ///< "ProfilerStep#5"
  double start_s = 0, seconds = 0; ///< the host's span of the step (the profiler's own overhead included)
  double busy_s  = 0;    ///< union of its kernels' intervals on the GPU
  int launches   = 0;    ///< kernels (and memsets) it ran
};

struct PytorchTrace {
  std::string file;
  std::string device_name;          ///< deviceProperties[0].name, "NVIDIA H100 80GB HBM3"; empty if absent
  std::vector<ProfiledStep> steps;  ///< in time order; one covering the whole trace when it marks none
  std::vector<ProfiledKernel> kernels; ///< in time order, of every step
};

/// Whether `file` (plain or gzipped) is a PyTorch profiler trace rather than a trace HetSim wrote.
bool is_pytorch_trace(const std::string& file);
/// Reads `file`; an InputError naming the file and what is missing when it is not a profiler trace with GPU
/// kernels, or when its operators carry no shapes (record_shapes=False).
PytorchTrace read_pytorch_trace(const std::string& file);

} // namespace hetsim::traces
