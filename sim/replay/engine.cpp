#include "sim/replay/engine.hpp"

#include "core/error.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

#include <string>
#include <vector>

namespace hetsim::sim {
namespace {

bool g_engine_created = false;

} // namespace

Engine::Engine(bool guard_pages)
{
  if (g_engine_created)
    throw InternalError("a SimGrid engine already ran in this process (SimGrid cannot be restarted); run each "
                        "simulation in its own process with sim::run_isolated");
  g_engine_created = true;

  xbt_log_control_set("root.thresh:critical");
  std::vector<std::string> args = {"hetsim",
                                   "--cfg=network/model:CM02",
                                   "--cfg=network/latency-factor:0",
                                   "--cfg=network/bandwidth-factor:1",
                                   "--cfg=network/weight-S:0",
                                   "--cfg=network/crosstraffic:0",
                                   "--cfg=network/TCP-gamma:0"};
  if (!guard_pages)
    args.push_back("--cfg=contexts/guard-size:0");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  engine_  = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
}

Engine::~Engine() = default;

void Engine::run()
{
  engine_->run();
}

double Engine::clock() const
{
  return simgrid::s4u::Engine::get_clock();
}

bool Engine::used_in_this_process()
{
  return g_engine_created;
}

} // namespace hetsim::sim
