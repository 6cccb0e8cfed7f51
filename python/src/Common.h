// The flowscope Python module: what every binding file shares. NumPy arrays in and out, bad input as
// ValueError naming the field, and a long computation that releases the GIL and stops on Ctrl+C.
#pragma once

#include "engine/core/Types.h"
#include "engine/dynamics/Simulation.h"
#include "engine/flows/ModelFile.h"
#include "engine/scene/Scene.h"

#include <nlohmann/json.hpp>
#include <pybind11/eigen.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope::py {

namespace pb = pybind11;

// Bad input: raised as ValueError with `field: detail` (a scene's fields are JSON pointers, as the CLI's).
struct InputError : std::invalid_argument {
    InputError(const std::string& field, const std::string& detail)
        : std::invalid_argument(field + ": " + detail) {}
};

// More memory than the module allows itself (half this machine's): raised as MemoryError with `field:
// detail`, before the allocation.
struct MemoryRefusal : std::runtime_error {
    MemoryRefusal(const std::string& field, const std::string& detail)
        : std::runtime_error(field + ": " + detail) {}
};

// Refuses (MemoryRefusal) work whose arrays would need more than half this machine's memory: `bytes` for
// `what`, in words ("X, its float64 copy and the velocities").
void checkMemory(const std::string& field, double bytes, const std::string& what);

// The shape of an array-like (a NumPy array, a PyTorch tensor: its `shape`), read before any conversion,
// which would copy a broadcast, strided or integer array; empty when it has none (a list holds its numbers
// already).
std::vector<long long> shapeOf(const pb::handle& obj);

// A path-like argument (a str, a pathlib.Path: os.fspath) as text.
std::string pathText(const pb::handle& path);

// The trained model at the path-like `path`, read by `load` (flows::loadFlow, ot::loadTransformer), with the
// record beside it: the binding's `Model` {model, record}. A file that does not load is a ValueError naming
// "path".
template <class Model, class Loaded>
Model loadModel(const pb::handle& path, Loaded (*load)(const std::string&)) {
    const std::string file = pathText(path);
    try {
        return {std::make_shared<const Loaded>(load(file)), readModelRecord(file)};
    } catch (const std::runtime_error& e) {
        throw InputError("path", e.what());
    }
}

// A scene from what the API accepts: a Scene, a dict (the scene schema), a JSON file, a share string or a
// preset name (scene.cpp).
Scene toScene(const pb::handle& scene);

// The points of an (n, d) array of floats, NumPy's or PyTorch's or a list (any layout; one copy into the
// engine's column-major layout), finite. `field` names the argument in errors; d > 0 requires that many
// columns; maxRows > 0 at most that many points. The shape is checked before copying, and the memory of the
// copies plus `workBytesPerValue` a value of the caller's own arrays (`work`, in words). `float32` (when not
// null) says whether the caller should answer in float32: float32 arrays, and float16 and bfloat16 ones
// (converted, with a UserWarning). Integer, bool and complex arrays, and tensors that require grad, are a
// TypeError naming the argument.
Mat toPoints(const pb::handle& array, const std::string& field, int d = 0, long maxRows = 0,
             double workBytesPerValue = 0, const std::string& work = {}, bool* float32 = nullptr);
// An (n, d) array in C order (what np.save writes as C order and every reader takes), float32 when
// `asFloat32`, else float64: a copy, O(n d) beside the O(n^2 d) work that made the points.
pb::array fromPoints(Mat&& points, bool asFloat32);

// Runs `work` without the GIL. `poll()` may be called by `work` between its steps (from the calling
// thread): it takes the GIL, checks for signals (Ctrl+C raises KeyboardInterrupt) and calls `onPoll`
// (a progress callback that may raise); it returns false when a Python exception is pending, which the
// work should answer by stopping. The pending exception is raised once the work returns.
//
// With cancelWithinPasses() (for work whose state is thrown away when it stops: simulate, velocity), Ctrl+C
// also stops a streaming pass in flight: while the work runs on the main thread, SIGINT's handler is one that
// sets cancelRequested() (engine/core/Cancel.h), so a pass over N = 20000 tokens stops within a chunk of
// queries instead of at the next step; KeyboardInterrupt is raised once the work returns.
class Interruptible {
  public:
    explicit Interruptible(std::function<void()> onPoll = {}) : onPoll_(std::move(onPoll)) {}
    Interruptible& cancelWithinPasses() {
        cancellable_ = true;
        return *this;
    }
    bool poll();
    void run(const std::function<void()>& work);

  private:
    std::function<void()> onPoll_;
    std::exception_ptr error_;
    bool cancellable_ = false;
};

// The scene JSON of a Python dict (numbers, strings, bools, None, lists, dicts); non-finite numbers and other
// types are refused naming their JSON pointer.
std::string dictToJson(const pb::handle& dict);
// A run's event as the module gives it: None, or {'kind', 't', 'message'} (Simulate.cpp).
pb::object eventObject(const std::optional<RunEvent>& event);

// A Python value as JSON (numbers, strings, bools, None, lists, tuples, dicts, arrays via tolist());
// `pointer` names it in errors (InputError).
nlohmann::ordered_json pythonToJson(const pb::handle& value, const std::string& pointer);
// JSON text as Python objects (json.loads).
pb::object jsonToPython(const std::string& text);

// The file-backed members of the binding `Model` {model, record} of a trained model: the static load(path)
// (loadModel with `load`: MODEL.safetensors and the MODEL.json record beside it), save(path) (both files,
// atomically, by `save`; `saveDoc` names the CLI command that writes the same), and the properties config
// (the file's metadata) and record (described by `recordDoc`) as dicts.
template <class Model, class Loaded>
void defModelFiles(pb::class_<Model>& c, Loaded (*load)(const std::string&),
                   void (*save)(const std::string&, const Loaded&, nlohmann::json), const char* saveDoc,
                   const char* recordDoc) {
    c.def_static(
        "load", [load](const pb::handle& path) { return loadModel<Model>(path, load); }, pb::arg("path"),
        "Reads MODEL.safetensors (and its MODEL.json record, when there is one).");
    c.def(
        "save", [save](const Model& m, const pb::handle& path) { save(pathText(path), *m.model, m.record); },
        pb::arg("path"), saveDoc);
    c.def_property_readonly(
        "config", [](const Model& m) { return jsonToPython(toJson(m.model->config()).dump()); },
        "The architecture (the file's metadata) as a dict.");
    c.def_property_readonly(
        "record", [](const Model& m) { return jsonToPython(m.record.dump()); }, recordDoc);
}

void bindScene(pb::module_& m);
void bindSimulate(pb::module_& m);
void bindFields(pb::module_& m);
void bindMoments(pb::module_& m);
void bindFlows(pb::module_& m);
void bindTransformers(pb::module_& m);
void bindRender(pb::module_& m);
void bindRun(pb::module_& m);
void bindModels(pb::module_& m); // Models.cpp: load_model
void bindVjp(pb::module_& m);    // Vjp.cpp: the private halves of velocity_vjp and flowscope.torch

} // namespace flowscope::py
