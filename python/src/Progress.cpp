#include "Progress.h"

namespace flowscope::py {

Progress::Progress(const pb::object& progress, const std::string& what) {
    if (progress.is_none() || (pb::isinstance<pb::bool_>(progress) && !progress.cast<bool>())) return;
    if (!pb::isinstance<pb::bool_>(progress)) {
        if (!PyCallable_Check(progress.ptr()))
            throw InputError("progress", "expected None, True or a callable taking the fraction done");
        callback_ = progress;
        return;
    }
    try {
        bar_ = pb::module_::import("tqdm.auto")
                   .attr("tqdm")(pb::arg("total") = 1000, pb::arg("desc") = what, pb::arg("unit") = "‰");
    } catch (const pb::error_already_set&) { // no tqdm: no bar
    }
}

Progress::~Progress() {
    if (bar_) bar_.attr("close")();
}

void Progress::operator()(double fraction) {
    if (callback_) callback_(fraction);
    if (bar_) {
        const int now = int(fraction * 1000);
        if (now > shown_) bar_.attr("update")(now - shown_);
        shown_ = std::max(shown_, now);
    }
}

} // namespace flowscope::py
