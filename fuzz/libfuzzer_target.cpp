/// A libFuzzer entry point for one input kind (HETSIM_FUZZ_KIND, e.g. "plan"): libFuzzer's inputs are written
/// to a file and used as the commands use them; an input that breaks the contract aborts, so libFuzzer keeps it.
/// Built only by a clang build with -DHETSIM_LIBFUZZER=ON (scripts/fuzz.sh).

#include "fuzz/memory_cap.hpp"
#include "fuzz/mutation_run.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  using namespace hetsim::fuzz;
  static const InputKind kind   = parse_input_kind(HETSIM_FUZZ_KIND);
  static const InputContext context{HETSIM_SOURCE_DIR};
  static const std::string file = "/tmp/hetsim-libfuzzer-" + std::to_string(getpid()) + ".json";
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
  bool refused = false;
  if (auto why = contract_violation(context, kind, file, refused)) {
    std::fprintf(stderr, "%s: %s\n", HETSIM_FUZZ_KIND, why->c_str());
    std::abort();
  }
  return 0;
}
