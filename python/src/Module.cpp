// The flowscope Python module (_flowscope, re-exported by flowscope/__init__.py): the engine's scenes,
// particle runs, attention fields, moment equations and flows for NumPy users (docs/python.md).
#include "Common.h"
#include "Progress.h"

#include "engine/backend/ComputeBackend.h"
#include "engine/core/Parallel.h"
#include "engine/io/OutputSet.h"
#include "engine/io/ShareString.h"
#include "engine/models/Model.h"

PYBIND11_MODULE(_flowscope, m) {
    using namespace flowscope;
    using namespace flowscope::py;
    m.doc() = "Flowscope's engine from Python: scenes, particle runs, attention fields, moments and flows.";
    // Bad input is a ValueError whose message names the field, as the CLI prints it.
    pybind11::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const JsonError& e) { // scenes (SceneError) and the other JSON readers
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const ShareStringError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const models::ModelError& e) { // a bad checkpoint folder: the key or field named
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const OutputError& e) { // an output path that cannot be written: a directory, read-only
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const MemoryRefusal& e) { // arrays too large for this machine, refused before allocating
            PyErr_SetString(PyExc_MemoryError, e.what());
        }
    });
    bindScene(m);
    bindSimulate(m);
    bindRun(m);
    bindFields(m);
    bindMoments(m);
    bindFlows(m);
    bindTransformers(m);
    bindRender(m);
    bindModels(m);
    bindVjp(m);
    m.def(
        "set_num_threads",
        [](long n) {
            if (n < 1 || n > 4096)
                throw InputError("n", "expected a thread count in [1, 4096], got " + std::to_string(n));
            setThreadCount(int(n));
        },
        pybind11::arg("n"), R"(set_num_threads(n) -> None

The number of threads the engine's kernels use from now on (the default: this machine's cores), as
torch.set_num_threads. A call that runs while another thread changes it finishes on the threads it started
with.)");
    m.def(
        "_set_progress_delay", [](double seconds) { Progress::delay() = seconds; }, pybind11::arg("seconds"),
        "How long a call runs before progress=None shows a bar (2 s; for the tests).");
    m.def("get_num_threads", &threadCount,
          "get_num_threads() -> int\n\nThe number of threads the engine's kernels use.");
}
