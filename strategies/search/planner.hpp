#pragma once
/// Planners propose Plans for a Problem. Each is chosen by name from the registry (strategies/planners/registry.hpp);
/// the search scores every proposal with the analytic estimate and the memory model, ranks them, and re-scores
/// the best in the simulator.

#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetsim::strategies {

struct DeviceProfiles;
class Profiler;

/// Reports how far a long step is: `done` of `total` units of `what`.
using ProgressFn = std::function<void(std::string_view what, long long done, long long total)>;

/// What every planner may use besides the Problem. Pointers are optional and must outlive the search.
struct PlannerContext {
  const costmodel::Calibration* calibration = nullptr;
  const costmodel::LayerProfile* profile    = nullptr;
  /// Measured device profiles (`hetsim profile`); without them the profiling planners ask the cost model.
  const DeviceProfiles* device_profiles     = nullptr;
  std::uint64_t seed                        = 1;
  /// Planner-specific switches, e.g. "anneal" for amp; unknown ones are ignored by planners that have none.
  std::vector<std::string> flags;
  ProgressFn progress; ///< may be empty
  /// Under a framework the user named: why that framework cannot launch a plan, empty when it can. Candidates
  /// it cannot launch leave the search (SearchResult::unlaunchable), so that the best always exports. Empty:
  /// every plan stays.
  std::function<std::string(const Plan&)> cannot_launch;

  bool has_flag(std::string_view flag) const;
  /// The cost model both the estimate and the planners' inner loops use: one for the whole search (copies share
  /// its priced passes, so that a layer priced for one candidate is not priced again for the next), made anew
  /// when calibration or profile changed. Not for concurrent first calls.
  costmodel::ComputeModel compute_model() const;
  /// What the planners that profile devices (Poplar's Algorithm 1) run their steps on: the measured device
  /// profiles when given, otherwise the cost model. Valid while `problem` and this context are.
  std::unique_ptr<Profiler> make_profiler(const Problem& problem) const;

  /// compute_model()'s, with the calibration and profile it was made with.
  mutable std::shared_ptr<const costmodel::ComputeModel> shared_model;
  mutable std::pair<const costmodel::Calibration*, const costmodel::LayerProfile*> shared_model_inputs{};
};

/// Where a candidate does not fit: the device with the largest overflow.
struct MemoryOverflow {
  int device = 0;
  std::string gpu;
  double needed_bytes   = 0;
  double capacity_bytes = 0;
  double over_bytes() const { return needed_bytes - capacity_bytes; }
};

/// A proposed plan with its analytic score.
struct Candidate {
  Plan plan;
  PlanEstimate estimate;
  std::optional<MemoryOverflow> memory_overflow; ///< set when some device runs out of memory
  double peak_memory_bytes = 0;                  ///< largest per-device need
  std::string note;                              ///< the planner's own words on it (e.g. "non-uniform stages")

  bool fits() const { return !memory_overflow; }
};

/// Scores one plan: estimate, peak memory and (if any) the worst overflow.
Candidate evaluate(Plan plan, const Problem& problem, const PlannerContext& context, std::string note = {});
/// Whether evaluate() would find that `plan` fits, without its estimate: a planner that drops plans that do not fit
/// asks this first (at thousands of devices the estimate costs more than the memory model).
bool fits_in_memory(Plan plan, const Problem& problem);

/// Feasible candidates first, then by estimated iteration time; ties by plan shape so the order is deterministic.
bool better_candidate(const Candidate& a, const Candidate& b);

class Planner {
public:
  virtual ~Planner() = default;
  /// Proposals, in any order and possibly with duplicates (the search sorts and removes them). Throws
  /// InfeasiblePlan with a clear reason when the problem admits no plan at all under this planner's rules.
  virtual std::vector<Candidate> propose(const Problem& problem, const PlannerContext& context) const = 0;
};


} // namespace hetsim::strategies
