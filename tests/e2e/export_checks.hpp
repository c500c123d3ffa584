#pragma once
/// What the owners' tools say of the files `hetsim export` wrote: bash and shellcheck of every script, and the
/// pinned framework's own checks (tests/launch/framework_checks.hpp) of its arguments and configuration.

#include "cli_runner.hpp"
#include "framework_checks.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hetsim::e2e {

/// Whether shellcheck is installed (scripts/setup.sh installs it); without it scripts are only parsed.
inline bool has_shellcheck()
{
  static const bool installed = run_command("command -v shellcheck > /dev/null").exit_code == 0;
  return installed;
}

/// Every objection to the export of `plan` in `format` written to `out`, one per line said; none when it holds.
inline std::vector<std::string> export_objections(const std::string& format, const fs::path& out,
                                                  const nlohmann::json& plan)
{
  std::vector<std::string> said;
  for (const auto& file : fs::directory_iterator(out))
    if (file.path().extension() == ".sh" || file.path().extension() == ".sbatch") {
      const std::string script = file.path().string();
      if (const RunResult r = run_command("bash -n " + script); r.exit_code != 0)
        said.push_back(script + " does not parse: " + r.output);
      if (has_shellcheck()) // its warnings are a script's bugs
        if (const RunResult r = run_command("shellcheck -s bash " + script); r.exit_code != 0)
          said.push_back(script + ": " + r.output);
    }
  namespace checks = hetsim::launch::testing;
  const int world  = static_cast<int>(plan["placement"].size());
  if (format == "megatron")
    for (const std::string& objection :
         checks::megatron_objections(checks::read_megatron_args_sh(read_file(out / "megatron_args.sh"), world)))
      said.push_back("megatron objects: " + objection);
  if (format == "megatron-deepspeed")
    for (const std::string& objection : checks::megatron_deepspeed_objections(
             checks::read_megatron_args_sh(read_file(out / "megatron_deepspeed_args.sh"), world)))
      said.push_back("megatron-deepspeed objects: " + objection);
  if (format == "deepspeed" || format == "megatron-deepspeed") // DeepSpeed's config, under either
    for (const std::string& objection :
         checks::deepspeed_objections(nlohmann::json::parse(read_file(out / "ds_config.json")), world,
                                      plan["pp"].get<int>(), plan["tp"].get<int>()))
      said.push_back("deepspeed objects: " + objection);
  return said;
}

} // namespace hetsim::e2e
