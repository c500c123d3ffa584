#include "sweep/sweep_spec.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_input.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/planner.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::sweep {
namespace {

std::vector<std::string> strings(const JsonInput& root, std::string_view key)
{
  const JsonInput list = root.at(key);
  std::vector<std::string> values;
  for (const JsonInput& e : list.elements())
    values.push_back(e.string());
  if (values.empty())
    list.fail("a non-empty list of strings");
  return values;
}

SweepProduct load_product(const JsonInput& root, const std::string& file)
{
  SweepProduct spec;
  spec.clusters = strings(root, "clusters");
  spec.models   = strings(root, "models");
  spec.planners = strings(root, "planners");
  for (const auto& c : spec.clusters)
    spec.cluster_paths.push_back(input_beside(c, file));
  for (const auto& m : spec.models)
    spec.model_paths.push_back(input_beside(m, file));
  for (std::size_t k = 0; k < spec.planners.size(); ++k)
    try {
      strategies::find_planner(spec.planners[k]);
    } catch (const InputError& e) {
      throw InputError(root.at("planners").at(k).where() + ": " + e.what());
    }
  for (const JsonInput& e : root.at("global_batch").elements()) {
    spec.global_batches.push_back(e.positive_int());
    if (spec.global_batches.back() > strategies::kMaxGlobalBatch)
      e.fail("a positive integer of at most " + std::to_string(strategies::kMaxGlobalBatch) + " sequences");
  }
  if (spec.global_batches.empty())
    root.at("global_batch").fail("a non-empty list of positive integers");
  if (auto z = root.find("zero_stage"))
    for (const JsonInput& e : z->elements()) {
      const int stage = e.non_negative_int();
      if (stage > 3)
        e.fail("a ZeRO stage 0, 1, 2 or 3");
      spec.zero_stages.push_back(stage);
    }
  if (auto p = root.find("pp"))
    for (const JsonInput& e : p->elements())
      spec.pipeline_depths.push_back(e.positive_int());
  if (auto s = root.find("seeds")) {
    spec.seeds.clear();
    for (const JsonInput& e : s->elements())
      spec.seeds.push_back(static_cast<std::uint64_t>(e.positive_int()));
    if (spec.seeds.empty())
      s->fail("a non-empty list of positive integers");
  }
  if (root.has("beside")) {
    spec.beside       = strings(root, "beside");
    spec.beside_paths.clear();
    for (const auto& b : spec.beside)
      spec.beside_paths.push_back(b == "none" ? "" : input_beside(b, file));
  }
  return spec;
}

} // namespace

SweepSpec load_sweep_spec(const std::string& file)
{
  const nlohmann::json json = JsonInput::parse_file(file);
  const JsonInput root(json, file);
  SweepSpec spec;
  if (auto products = root.find("products")) {
    root.allow_only({"description", "products", "top", "dtype"});
    for (const JsonInput& p : products->elements()) {
      p.allow_only({"description", "clusters", "models", "planners", "global_batch", "zero_stage", "pp", "seeds",
                    "beside"});
      spec.products.push_back(load_product(p, file));
    }
    if (spec.products.empty())
      products->fail("a non-empty list of products");
  } else {
    root.allow_only({"description", "clusters", "models", "planners", "global_batch", "zero_stage", "pp", "seeds",
                     "beside", "top", "dtype"});
    spec.products.push_back(load_product(root, file));
  }
  // Each cell is a whole search: a spec of more than kMaxSweepCells is a typo or a job for several sweeps.
  double cells = 0; // a product of list lengths: double, which no list can overflow
  for (const SweepProduct& p : spec.products)
    cells += double(p.clusters.size()) * double(p.models.size()) * double(p.planners.size()) *
             double(p.global_batches.size()) * double(std::max<std::size_t>(1, p.zero_stages.size())) *
             double(std::max<std::size_t>(1, p.pipeline_depths.size())) * double(p.seeds.size()) *
             double(p.beside.size());
  if (cells > kMaxSweepCells)
    throw InputError(file + ": expected at most " + std::to_string(kMaxSweepCells) +
                     " cells (the product of every list's length), got " + std::to_string(std::llround(std::min(cells, 1e18))));
  if (auto t = root.find("top"))
    spec.top = t->positive_int();
  spec.dtype = root.string_or("dtype", "");
  Dtype dtype;
  if (root.find("dtype") && !parse_dtype(spec.dtype, dtype))
    root.at("dtype").fail("\"fp16\", \"bf16\" or \"fp32\"");
  return spec;
}

std::vector<Cell> sweep_cells(const SweepSpec& spec)
{
  std::vector<Cell> cells;
  auto optional_list = [](const std::vector<int>& values) {
    std::vector<std::optional<int>> out;
    if (values.empty())
      out.push_back(std::nullopt);
    for (int v : values)
      out.push_back(v);
    return out;
  };
  for (const SweepProduct& p : spec.products)
    for (std::size_t c = 0; c < p.clusters.size(); ++c)
      for (std::size_t m = 0; m < p.models.size(); ++m)
        for (const std::string& planner : p.planners)
          for (int batch : p.global_batches)
            for (const auto& z : optional_list(p.zero_stages))
              for (const auto& depth : optional_list(p.pipeline_depths))
                for (std::uint64_t seed : p.seeds)
                  for (std::size_t b = 0; b < p.beside.size(); ++b)
                    cells.push_back(Cell{static_cast<int>(cells.size()), p.clusters[c], p.cluster_paths[c],
                                         p.models[m], p.model_paths[m], planner, batch, z, depth, seed,
                                         p.beside[b], p.beside_paths[b]});
  return cells;
}

} // namespace hetsim::sweep
