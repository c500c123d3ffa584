#include "strategies/lowering/fp32_accumulation.hpp"

#include "costmodel/kernel_time.hpp"
#include "strategies/plan/framework.hpp"

namespace hetsim::strategies {

// DeepSpeed v0.17.4: the pipeline engine calls update_hp_grads after each BackwardPass (pipe/engine.py:865-868;
// the last stage inside BF16_Optimizer.backward, bf16_optimizer.py:319-332), which loops over every parameter
// (l.352-355) running hp_grad.add_(lp.grad.to(fp32)) (l.343).
double fp32_accumulation_seconds(const costmodel::ComputeModel& model, const GpuSpec& gpu,
                                 const models::Workload& workload, int first, int end, int tp, int ep)
{
  models::Kernel accumulate;
  accumulate.name     = "bf16_optimizer.update_hp_grads";
  accumulate.kind     = models::Kernel::Kind::stream;
  accumulate.launches = 0;
  for (int l = first; l < end; ++l) {
    const models::Layer& layer = workload.layers[l];
    const double params = (layer.params - layer.expert_params + layer.expert_params / ep) / tp;
    accumulate.bytes += kBf16AccumulationBytesPerParam * params; // 16-bit units are bf16's own
    accumulate.launches += kBf16AccumulationLaunchesPerTensor * layer.parameter_tensors;
  }
  if (accumulate.bytes <= 0)
    return 0;
  return costmodel::kernels_seconds(gpu, model.constants(gpu), {accumulate}, Dtype::bf16);
}

} // namespace hetsim::strategies
