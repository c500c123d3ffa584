#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

namespace hetsim::cli {

strategies::ProgressFn stderr_progress()
{
  struct State {
    std::string what;
    long long tenth = -1;
  };
  auto state          = std::make_shared<State>();
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [state, terminal](std::string_view what, long long done, long long total) {
    if (total <= 0)
      return;
    const long long tenth = done * 10 / total;
    if (what == state->what && tenth == state->tenth && !terminal)
      return;
    if (what != state->what)
      state->tenth = -1;
    state->what  = std::string(what);
    state->tenth = tenth;
    if (terminal)
      std::fprintf(stderr, "\r%s: %lld/%lld%s", state->what.c_str(), done, total, done == total ? "\n" : "");
    else
      std::fprintf(stderr, "%s: %lld/%lld\n", state->what.c_str(), done, total);
    std::fflush(stderr);
  };
}

} // namespace hetsim::cli
