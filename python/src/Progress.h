// The `progress` argument of the long calls (simulate, train, train_transformer, FlowModel.sample, render):
//   None (the default)  a tqdm bar once the call has run for progressDelay() seconds (2 s), where tqdm can be
//                       imported; nothing for a quicker call, or without tqdm;
//   False               nothing;
//   a callable          called with the fraction done (0..1]; an exception it raises stops the call;
//   "auto"              a tqdm bar from the start where tqdm can be imported, nothing where it cannot;
//   True                a tqdm bar from the start where tqdm can be imported, else a line on sys.stderr every
//                       tenth of the way.
// A bar counts the call's own units (steps, iterations, samples, frames), not fractions.
#pragma once

#include "Common.h"

#include <chrono>

namespace flowscope::py {

class Progress {
  public:
    // `total` of `unit`s ("step", "it", ...) make the whole call.
    Progress(const pb::object& progress, const std::string& what, long total, const char* unit);
    ~Progress();                      // closes the bar (the GIL held)
    void operator()(double fraction); // the GIL held
    explicit operator bool() const { return bool(callback_) || bool(bar_) || lines_ || delayed_; }

    // How long a call runs before the default (None) shows its bar; flowscope._set_progress_delay sets it
    // (the tests: 0 shows it at once, a large value never).
    static double& delay();

  private:
    void openBar();

    pb::object callback_, bar_;
    bool lines_ = false;   // the stderr fallback of progress=True
    bool delayed_ = false; // progress=None: the bar opens once the call has run delay() seconds
    std::string what_, unit_;
    long total_ = 1, shown_ = 0; // units shown
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace flowscope::py
