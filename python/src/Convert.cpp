// NumPy arrays and Python dicts to the engine's values and back; the GIL released around long work.
#include "Common.h"

#include "engine/core/Cancel.h"
#include "engine/core/Text.h"
#include "engine/scene/RunBudget.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>

#include <signal.h>

namespace flowscope::py {

namespace {

std::string shapeText(const std::vector<long long>& shape) {
    std::string s = "(";
    for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

std::string shapeText(const pb::array& a) {
    return shapeText(std::vector<long long>(a.shape(), a.shape() + a.ndim()));
}

template <class S> Mat copyPoints(const pb::array_t<S>& a) {
    using Strided = Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>, 0,
                               Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
    const auto item = pb::ssize_t(sizeof(S));
    return Strided(a.data(), a.shape(0), a.shape(1), {a.strides(1) / item, a.strides(0) / item})
        .template cast<double>();
}

// pythonToJson at nesting `depth`: deeper than a scene may nest (kSceneMaxJsonDepth) is refused before the
// C stack or the memory is spent (a list that contains itself is infinitely deep).
nlohmann::ordered_json toJsonAt(const pb::handle& o, const std::string& pointer, int depth) {
    if (depth > kSceneMaxJsonDepth)
        throw InputError(pointer.empty() ? "/" : pointer,
                         "nested deeper than " + std::to_string(kSceneMaxJsonDepth) +
                             " levels (a list or dict that contains itself?)");
    if (o.is_none()) return nullptr;
    if (pb::isinstance<pb::bool_>(o)) return o.cast<bool>();
    if (pb::isinstance<pb::int_>(o)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
        if (overflow != 0)
            throw InputError(pointer, "expected a number a double can hold, got an integer of " +
                                          std::to_string(pb::len(pb::str(o))) + " digits");
        return v;
    }
    if (pb::isinstance<pb::float_>(o)) {
        const double v = o.cast<double>();
        if (!std::isfinite(v))
            throw InputError(pointer, "expected a finite number, got " + pb::str(o).cast<std::string>());
        return v;
    }
    if (pb::isinstance<pb::str>(o)) return o.cast<std::string>();
    if (pb::isinstance<pb::dict>(o)) {
        nlohmann::ordered_json j = nlohmann::ordered_json::object();
        for (auto [key, value] : o.cast<pb::dict>()) {
            if (!pb::isinstance<pb::str>(key))
                throw InputError(pointer, "keys must be strings, got " + pb::repr(key).cast<std::string>());
            const std::string name = key.cast<std::string>();
            j[name] = toJsonAt(value, pointer + "/" + name, depth + 1);
        }
        return j;
    }
    if (pb::hasattr(o, "tolist") && !pb::isinstance<pb::list>(o))
        return toJsonAt(o.attr("tolist")(), pointer, depth);
    if (pb::isinstance<pb::list>(o) || pb::isinstance<pb::tuple>(o)) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        std::size_t k = 0;
        for (pb::handle item : o) j.push_back(toJsonAt(item, pointer + "/" + std::to_string(k++), depth + 1));
        return j;
    }
    throw InputError(pointer, "expected a number, string, bool, list or dict, got " +
                                  pb::str(o.get_type().attr("__name__")).cast<std::string>());
}

} // namespace

std::string pathText(const pb::handle& path) {
    return pb::str(pb::module_::import("os").attr("fspath")(path)).cast<std::string>();
}

void checkMemory(const std::string& field, double bytes, const std::string& what) {
    const double limit = double(defaultMemoryLimit());
    if (bytes > limit)
        throw MemoryRefusal(field, "this would need about " + formatBytes(bytes) + " for " + what +
                                       ", above the limit of " + formatBytes(limit) +
                                       " (half this machine's memory): pass fewer points");
}

std::vector<long long> shapeOf(const pb::handle& obj) {
    std::vector<long long> shape;
    if (!pb::hasattr(obj, "shape")) return shape;
    try {
        for (pb::handle k : obj.attr("shape")) shape.push_back(k.cast<long long>());
    } catch (const std::exception&) {
        PyErr_Clear();
        shape.clear();
    }
    return shape;
}

nlohmann::ordered_json pythonToJson(const pb::handle& value, const std::string& pointer) {
    return toJsonAt(value, pointer, 0);
}

Mat toPoints(const pb::handle& input, const std::string& field, int d, long maxRows, double workBytesPerValue,
             const std::string& work, bool* float32) {
    pb::object obj = pb::reinterpret_borrow<pb::object>(input);
    // The dtype's name, NumPy's or PyTorch's ("float32", "torch.float32"): a float array keeps its precision,
    // anything else a float array is meant for is refused (NumPy would cast complex values to their real
    // parts with a warning, bools and integers silently).
    std::string dtype;
    if (pb::hasattr(obj, "dtype")) {
        dtype = pb::str(obj.attr("dtype")).cast<std::string>();
        if (dtype.rfind("torch.", 0) == 0) dtype = dtype.substr(6);
    }
    const bool tensor = pb::hasattr(obj, "detach") && pb::hasattr(obj, "requires_grad");
    if (tensor && obj.attr("requires_grad").cast<bool>())
        throw pb::type_error(field + ": a tensor that requires grad; pass " + field +
                             ".detach() (flowscope.torch.velocity is the attention you can differentiate)");
    const bool half = dtype == "float16" || dtype == "bfloat16";
    const bool single = half || dtype == "float32";
    if (!dtype.empty() && !single && dtype != "float64") {
        const std::string hint = dtype.find("complex") != std::string::npos
                                     ? " (pass " + field + ".real if the imaginary parts are zero)"
                                     : " (pass " + field + ".astype(float) to convert)";
        throw pb::type_error(field + ": expected real floating-point numbers (float32 or float64), got " +
                             dtype + hint);
    }
    if (half) { // no 16-bit kernels: float32, and said so
        const std::string note =
            field + " is " + dtype + "; computed in float32 (the engine has no " + dtype + " kernel)";
        if (PyErr_WarnEx(PyExc_UserWarning, note.c_str(), 1) != 0) throw pb::error_already_set();
        if (tensor) obj = obj.attr("float")(); // NumPy has no bfloat16
    }
    if (tensor && pb::str(obj.attr("device")).cast<std::string>() != "cpu") obj = obj.attr("cpu")();
    if (float32) *float32 = single;
    const auto checkSize = [&](const std::vector<long long>& shape) {
        if (maxRows > 0 && shape[0] > maxRows)
            throw InputError(field, "expected at most " + std::to_string(maxRows) +
                                        " points (a scene's /n), got shape " + shapeText(shape));
        checkMemory(field, (16.0 + workBytesPerValue) * double(shape[0]) * double(shape[1]),
                    "an array of shape " + shapeText(shape) + " converted to float64 and copied" +
                        (work.empty() ? std::string() : ", and " + work));
    };
    // The size before the conversion, which copies a broadcast, strided or non-float array whole.
    const std::vector<long long> shape = shapeOf(obj);
    if (shape.size() == 2) checkSize(shape);
    pb::array a;
    try {
        a = single ? pb::array(pb::array_t<float, pb::array::forcecast>::ensure(obj))
                   : pb::array(pb::array_t<double, pb::array::forcecast>::ensure(obj));
    } catch (const pb::error_already_set&) {
    }
    if (!a) {
        PyErr_Clear();
        throw InputError(field, "expected an (n, d) array of numbers, got " +
                                    pb::str(obj.get_type().attr("__name__")).cast<std::string>());
    }
    if (a.ndim() != 2) throw InputError(field, "expected an (n, d) array, got shape " + shapeText(a));
    if (shape.size() != 2) checkSize({a.shape(0), a.shape(1)}); // a list: its size is known now
    if (a.shape(0) < 1 || a.shape(1) < 1)
        throw InputError(field, "expected at least one point, got shape " + shapeText(a));
    if (d > 0 && a.shape(1) != d)
        throw InputError(field,
                         "expected points of dimension " + std::to_string(d) + ", got shape " + shapeText(a));
    Mat X = single ? copyPoints(pb::array_t<float>(a)) : copyPoints(pb::array_t<double>(a));
    for (Eigen::Index c = 0; c < X.cols(); ++c)
        for (Eigen::Index i = 0; i < X.rows(); ++i)
            if (!std::isfinite(X(i, c)))
                throw InputError(field, "row " + std::to_string(i) + ", column " + std::to_string(c) +
                                            " is " + (std::isnan(X(i, c)) ? "nan" : "infinite") +
                                            ": the points must be finite");
    return X;
}

pb::array fromPoints(Mat&& points, bool asFloat32) {
    const pb::ssize_t n = points.rows(), d = points.cols();
    if (asFloat32) {
        pb::array_t<float> out({n, d});
        Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            out.mutable_data(), n, d) = points.cast<float>();
        return out;
    }
    pb::array_t<double> out({n, d});
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(out.mutable_data(), n,
                                                                                       d) = points;
    return out;
}

std::string dictToJson(const pb::handle& dict) {
    return pythonToJson(dict, "").dump();
}

pb::object jsonToPython(const std::string& text) {
    return pb::module_::import("json").attr("loads")(text);
}

namespace {

std::atomic<bool> gInterrupted{false}; // SIGINT arrived while cancelWithinPasses() work ran

extern "C" void onInterrupt(int) {
    gInterrupted.store(true);
    cancelRequested().store(true);
}

// Installs onInterrupt as SIGINT's handler for its lifetime (on the main thread only, where Python's own
// handler would run), restoring the previous one after.
class InterruptHandler {
  public:
    explicit InterruptHandler(bool wanted) {
        if (!wanted) return;
        const pb::module_ threading = pb::module_::import("threading");
        if (!threading.attr("current_thread")().is(threading.attr("main_thread")())) return;
        struct sigaction sa {};
        sa.sa_handler = onInterrupt;
        sigemptyset(&sa.sa_mask);
        installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
    }
    ~InterruptHandler() {
        if (installed_) sigaction(SIGINT, &previous_, nullptr);
    }

  private:
    struct sigaction previous_ {};
    bool installed_ = false;
};

} // namespace

bool Interruptible::poll() {
    if (error_ || gInterrupted.load()) return false;
    pb::gil_scoped_acquire gil;
    try {
        if (PyErr_CheckSignals() != 0) throw pb::error_already_set();
        if (onPoll_) onPoll_();
    } catch (...) {
        error_ = std::current_exception();
        return false;
    }
    return true;
}

void Interruptible::run(const std::function<void()>& work) {
    {
        const InterruptHandler handler(cancellable_);
        try {
            pb::gil_scoped_release release;
            work();
        } catch (const Cancelled&) { // a pass stopped by Ctrl+C: raised below
        } catch (...) {
            if (!error_ && !gInterrupted.load()) throw; // the work's own failure; after a stop, the stop's
        }
    }
    if (gInterrupted.exchange(false)) {
        cancelRequested().store(false);
        error_ = nullptr;
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw pb::error_already_set();
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

} // namespace flowscope::py
