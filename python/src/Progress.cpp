#include "Progress.h"

#include <algorithm>
#include <cmath>

namespace flowscope::py {

double& Progress::delay() {
    static double seconds = 2.0;
    return seconds;
}

Progress::Progress(const pb::object& progress, const std::string& what, long total, const char* unit)
    : what_(what), unit_(unit), total_(std::max(total, 1L)) {
    if (progress.is_none()) {
        delayed_ = true;
        return;
    }
    if (pb::isinstance<pb::bool_>(progress) && !progress.cast<bool>()) return;
    const bool isAuto = pb::isinstance<pb::str>(progress) && progress.cast<std::string>() == "auto";
    if (!isAuto && !pb::isinstance<pb::bool_>(progress)) {
        if (pb::isinstance<pb::str>(progress) || !PyCallable_Check(progress.ptr()))
            throw InputError(
                "progress",
                "expected None, False, True, \"auto\" or a callable taking the fraction done, got " +
                    pb::repr(progress).cast<std::string>());
        callback_ = progress;
        return;
    }
    openBar();
    lines_ = !bar_ && !isAuto; // no tqdm: "auto" shows nothing, True the stderr lines
}

void Progress::openBar() {
    try {
        bar_ = pb::module_::import("tqdm.auto")
                   .attr("tqdm")(pb::arg("total") = total_, pb::arg("desc") = what_, pb::arg("unit") = unit_);
    } catch (const pb::error_already_set&) { // no tqdm
        bar_ = pb::object();
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
    const long now = std::clamp(std::lround(fraction * double(total_)), 0L, total_);
    if (delayed_) {
        const double ran = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        if (ran < delay() || now >= total_) { // a call done before the delay shows nothing
            shown_ = std::max(shown_, now);
            return;
        }
        delayed_ = false;
        openBar();
        if (bar_ && shown_ > 0) bar_.attr("update")(shown_); // what was done before the bar opened
    }
    if (now <= shown_) return;
    if (bar_) bar_.attr("update")(now - shown_);
    if (lines_ && now * 10 / total_ > shown_ * 10 / total_) {
        const pb::object err = pb::module_::import("sys").attr("stderr");
        err.attr("write")(what_ + ": " + std::to_string(now * 100 / total_) + "%\n");
        err.attr("flush")();
    }
    shown_ = now;
}

} // namespace flowscope::py
