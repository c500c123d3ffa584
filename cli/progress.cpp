#include "cli/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace hetsim::cli {
namespace {

/// "45 s", "3 min 20 s", "2 h 05 min".
std::string duration_text(double seconds)
{
  const long long s = static_cast<long long>(seconds + 0.5);
  char text[48];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lld min %02lld s", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lld h %02lld min", s / 3600, s % 3600 / 60);
  return text;
}

/// Progress lines on `out`; nothing until `quiet_s` has passed since the first call.
strategies::ProgressFn progress_to(FILE* out, double quiet_s)
{
  using Clock = std::chrono::steady_clock;
  struct State {
    std::string what;
    long long tenth = -1;
    Clock::time_point start;
    bool started = false; ///< called at least once
    bool shown   = false; ///< printed at least once
  };
  auto state          = std::make_shared<State>();
  const bool terminal = isatty(fileno(out)) != 0;
  return [state, terminal, out, quiet_s](std::string_view what, long long done, long long total) {
    if (total <= 0)
      return;
    const auto now = Clock::now();
    if (!state->started) {
      state->started = true;
      state->start   = now;
    }
    if (quiet_s > 0 && !state->shown && std::chrono::duration<double>(now - state->start).count() < quiet_s)
      return;
    const long long tenth = done * 10 / total;
    if (what == state->what && tenth == state->tenth && !terminal)
      return;
    if (what != state->what) {
      state->tenth = -1;
      if (!state->what.empty())
        state->start = now;
    }
    state->shown = true;
    state->what  = std::string(what);
    state->tenth = tenth;
    // Elapsed time, and the rest at the pace so far: the work items of a search or sweep are alike enough.
    const double elapsed = std::chrono::duration<double>(Clock::now() - state->start).count();
    std::string timing   = ", " + duration_text(elapsed) + " elapsed";
    if (done > 0 && done < total)
      timing += ", about " + duration_text(elapsed * static_cast<double>(total - done) / done) + " left";
    if (terminal) // \033[K clears what a longer earlier line left
      std::fprintf(out, "\r%s: %lld/%lld%s\033[K%s", state->what.c_str(), done, total, timing.c_str(),
                   done == total ? "\n" : "");
    else
      std::fprintf(out, "%s: %lld/%lld%s\n", state->what.c_str(), done, total, timing.c_str());
    std::fflush(out);
  };
}

} // namespace

strategies::ProgressFn stderr_progress()
{
  return progress_to(stderr, 0.0);
}

std::function<void(long long, long long)> replay_progress(double quiet_s)
{
  // Kept open for the life of the process: every simulation child inherits it.
  static FILE* const out = [] {
    const int fd = ::dup(STDERR_FILENO);
    FILE* file   = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
    return file ? file : stderr;
  }();
  auto report = progress_to(out, quiet_s);
  return [report](long long done, long long total) { report("simulating the iteration (tasks)", done, total); };
}

} // namespace hetsim::cli
