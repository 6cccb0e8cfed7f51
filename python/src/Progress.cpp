#include "Progress.h"

namespace flowscope::py {

Progress::Progress(const pb::object& progress, const std::string& what) : what_(what) {
    if (progress.is_none() || (pb::isinstance<pb::bool_>(progress) && !progress.cast<bool>())) return;
    const bool isAuto = pb::isinstance<pb::str>(progress) && progress.cast<std::string>() == "auto";
    if (!isAuto && !pb::isinstance<pb::bool_>(progress)) {
        if (pb::isinstance<pb::str>(progress) || !PyCallable_Check(progress.ptr()))
            throw InputError("progress",
                             "expected None, True, \"auto\" or a callable taking the fraction done, got " +
                                 pb::repr(progress).cast<std::string>());
        callback_ = progress;
        return;
    }
    try {
        bar_ = pb::module_::import("tqdm.auto")
                   .attr("tqdm")(pb::arg("total") = 1000, pb::arg("desc") = what, pb::arg("unit") = "‰");
    } catch (const pb::error_already_set&) { // no tqdm: "auto" shows nothing, True the stderr lines
        lines_ = !isAuto;
    }
}

Progress::~Progress() {
    if (!bar_) return;
    try {
        bar_.attr("close")();
    } catch (const pb::error_already_set&) { // a destructor does not raise
    }
}

void Progress::operator()(double fraction) {
    if (callback_) callback_(fraction);
    const int now = std::clamp(int(fraction * 1000), 0, 1000);
    if (now <= shown_) return;
    if (bar_) bar_.attr("update")(now - shown_);
    if (lines_ && now / 100 > shown_ / 100) {
        const pb::object err = pb::module_::import("sys").attr("stderr");
        err.attr("write")(what_ + ": " + std::to_string(now / 10) + "%\n");
        err.attr("flush")();
    }
    shown_ = now;
}

} // namespace flowscope::py
