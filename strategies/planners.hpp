#pragma once
/// The factories of the built-in planners, collected by the registry (planner_registry.cpp).

#include "strategies/planner.hpp"

#include <memory>

namespace hetsim::strategies {

std::unique_ptr<Planner> make_amp_planner();
std::unique_ptr<Planner> make_hethub_planner();
std::unique_ptr<Planner> make_megatron_planner();
std::unique_ptr<Planner> make_random_planner();
std::unique_ptr<Planner> make_poplar_planner();
std::unique_ptr<Planner> make_deepspeed_planner();
std::unique_ptr<Planner> make_whale_planner();
std::unique_ptr<Planner> make_osdp_planner();
std::unique_ptr<Planner> make_dtfm_planner();
std::unique_ptr<Planner> make_dtfm_kl_planner();
std::unique_ptr<Planner> make_dtfm_random_planner();
std::unique_ptr<Planner> make_megatron_grid_planner();
std::unique_ptr<Planner> make_zero3_planner();

} // namespace hetsim::strategies
