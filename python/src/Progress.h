// The `progress` argument of the long calls: None, a callable taking the fraction done (0..1], or True for a
// tqdm bar where tqdm is installed (none where it is not).
#pragma once

#include "Common.h"

namespace flowscope::py {

class Progress {
  public:
    Progress(const pb::object& progress, const std::string& what);
    ~Progress();                      // closes the bar (the GIL held)
    void operator()(double fraction); // the GIL held
    explicit operator bool() const { return bool(callback_) || bool(bar_); }

  private:
    pb::object callback_, bar_;
    int shown_ = 0; // per mille shown on the bar
};

} // namespace flowscope::py
