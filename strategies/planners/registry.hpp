#pragma once
/// The built-in planners, one folder per family beside this file, chosen by name (`hetsim search --planner NAME`).
/// Each family defines its factory below; the registry (registry.cpp) lists them in a fixed order.

#include "strategies/search/planner.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetsim::strategies {

std::unique_ptr<Planner> make_amp_planner();           // amp/
std::unique_ptr<Planner> make_hethub_planner();        // hethub/
std::unique_ptr<Planner> make_megatron_planner();      // megatron/
std::unique_ptr<Planner> make_megatron_grid_planner(); // megatron/
std::unique_ptr<Planner> make_random_planner();        // random/
std::unique_ptr<Planner> make_poplar_planner();        // poplar/
std::unique_ptr<Planner> make_deepspeed_planner();     // batch_baselines/
std::unique_ptr<Planner> make_whale_planner();         // batch_baselines/
std::unique_ptr<Planner> make_osdp_planner();          // osdp/
std::unique_ptr<Planner> make_dtfm_planner();          // dtfm/
std::unique_ptr<Planner> make_dtfm_kl_planner();       // dtfm/
std::unique_ptr<Planner> make_dtfm_random_planner();   // dtfm/
std::unique_ptr<Planner> make_zero3_planner();         // zero3/

struct PlannerInfo {
  std::string_view name;
  std::string_view description; ///< one line
  std::unique_ptr<Planner> (*make)();
  std::vector<std::string_view> flags = {}; ///< the switches it takes (PlannerContext::flags): "anneal", "zero=N"
};

/// Every planner of this build, in a fixed order.
const std::vector<PlannerInfo>& planners();
/// Throws InputError "unknown planner 'x'; known: amp, hethub, …" for a name not in the registry.
const PlannerInfo& find_planner(std::string_view name);
/// Throws InputError naming the first flag the planner does not take ("--flag 'x': planner amp takes anneal"),
/// or a flag of the form NAME=N given without a whole number.
void check_planner_flags(const PlannerInfo& planner, const std::vector<std::string>& flags);

} // namespace hetsim::strategies
