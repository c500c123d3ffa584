#pragma once
/// A monotone counter that replay actors wait on: steps started, chunks received, tasks made ready.
///
/// SimGrid actors are cooperative: actor code runs between simcalls without preemption. Raising never needs the
/// lock; a waiter re-checks the value after taking the lock and then blocks on the condition variable in one
/// simcall, so a raise can never slip between the check and the wait. No busy waiting.

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include <mutex>
#include <utility>

namespace hetsim::sim {

class Counter {
public:
  long value() const { return value_; }

  /// Raises the value to `target` (no effect when already there) and wakes the actors waiting on it.
  void raise_to(long target)
  {
    if (target <= value_)
      return;
    value_ = target;
    if (cv_) {
      // The notification is a simcall served after this actor yields; by then a peer may have destroyed this
      // counter (the last member of a collective frees its state), so hold the condition variable until it is done.
      const simgrid::s4u::ConditionVariablePtr cv = cv_;
      cv->notify_all();
    }
  }
  void increment() { raise_to(value_ + 1); }

  /// Blocks the calling actor until the value reaches `target`.
  void wait_for(long target)
  {
    if (value_ >= target)
      return;
    if (!cv_) {
      // Creating may yield to other actors, which may create their own: keep the first pair that lands.
      auto cv    = simgrid::s4u::ConditionVariable::create();
      auto mutex = simgrid::s4u::Mutex::create();
      if (!cv_) {
        cv_    = std::move(cv);
        mutex_ = std::move(mutex);
      }
    }
    // Keep both alive while blocked here, like raise_to does.
    const simgrid::s4u::MutexPtr mutex = mutex_;
    const simgrid::s4u::ConditionVariablePtr cv = cv_;
    std::unique_lock<simgrid::s4u::Mutex> lock(*mutex);
    while (value_ < target)
      cv->wait(lock);
  }

private:
  long value_ = 0;
  simgrid::s4u::ConditionVariablePtr cv_; ///< created when an actor first waits
  /// Each counter has its own mutex: a mutex shared by thousands of actors woken at once makes SimGrid queue
  /// their re-acquisitions, and its queue handling is quadratic.
  simgrid::s4u::MutexPtr mutex_;
};

} // namespace hetsim::sim
