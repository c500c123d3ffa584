#pragma once
/// How much of its burst compute rate a GPU holds over a training step's seconds of back-to-back kernels, where
/// its power limit pulls the clock down: a factor on the compute-bound kernels' ceilings (products, attention),
/// which matmul sweeps and kernel benchmarks of a few milliseconds a shape mostly miss.

#include "core/gpu_spec.hpp"

namespace hetsim::costmodel {

/// 1 where nothing says the clock drops under sustained load, or where the figures come from whole training
/// steps already (the H100's and H200's traces).
double sustained_clock_fraction(const GpuSpec& gpu);

} // namespace hetsim::costmodel
