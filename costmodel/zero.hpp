#pragma once
/// Data-parallel synchronisation volume by ZeRO stage (Rajbhandari et al., 2020), with ring collectives:
/// an all-reduce sends 2(n-1)/n of its buffer per member, a reduce-scatter or an all-gather (n-1)/n.
///  - stage 0: all-reduce of the gradients once per iteration;
///  - stage 1: reduce-scatter of the gradients once, all-gather of the updated weights once;
///  - stage 2: reduce-scatter of the gradients every micro-batch, all-gather of the weights once;
///  - stage 3: every micro-batch, all-gather of the weights before forward and again before backward, and
///    reduce-scatter of the gradients.

namespace hetsim::costmodel {

/// Bytes one member of an `n`-way data-parallel group sends per iteration.
double zero_bytes_sent_per_device(int zero_stage, double gradient_bytes, double parameter_bytes, int n,
                                  int micro_batches);

} // namespace hetsim::costmodel
