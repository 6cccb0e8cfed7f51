// The `progress` argument of the long calls (simulate, train, train_transformer, FlowModel.sample):
//   None or False  nothing;
//   a callable     called with the fraction done (0..1]; an exception it raises stops the call;
//   "auto"         a tqdm bar where tqdm can be imported, nothing where it cannot;
//   True           a tqdm bar where tqdm can be imported, else a line on sys.stderr every tenth of the way.
#pragma once

#include "Common.h"

namespace flowscope::py {

class Progress {
  public:
    Progress(const pb::object& progress, const std::string& what);
    ~Progress();                      // closes the bar (the GIL held)
    void operator()(double fraction); // the GIL held
    explicit operator bool() const { return bool(callback_) || bool(bar_) || lines_; }

  private:
    pb::object callback_, bar_;
    bool lines_ = false; // the stderr fallback of progress=True
    std::string what_;
    int shown_ = 0; // per mille shown
};

} // namespace flowscope::py
