// flowscope.Run: a particle run stepped from Python and edited live by JSON pointer, as the app's Scene panel
// edits it (engine/dynamics/LiveEdit.h): run.step(k), run.set("/attention/type", "l2"), run.step(m).
#include "Common.h"

#include "engine/backend/PrepareRun.h"
#include "engine/backend/Registry.h"
#include "engine/dynamics/LiveEdit.h"
#include "engine/dynamics/Simulation.h"

#include <memory>

namespace flowscope::py {

namespace {

class Run {
  public:
    Run(const pb::handle& sceneArg, const std::string& backendId) {
        const Scene scene = toScene(sceneArg);
        try {
            backend_ = openBackend(backendId);
        } catch (const BackendError& e) {
            throw InputError("backend", e.what());
        }
        sim_ = prepareRun(backend_, scene).start(scene); // a refusal: ValueError naming the field
    }

    // Up to k nominal steps (fewer when the run reaches its horizon or stops on an event); the number taken.
    long step(long k) {
        if (k < 0) throw InputError("k", "expected a number of steps >= 0, got " + std::to_string(k));
        long taken = 0;
        Interruptible guard;
        guard.run([&] {
            while (taken < k && guard.poll() && sim_->step()) ++taken;
        });
        return taken;
    }

    void set(const std::string& pointer, const pb::handle& value) {
        applyLiveSetting(*sim_, SceneSetting{pointer, pythonToJson(value, pointer)});
    }

    // (N, d), C order, in the scene's precision: a copy of the current tokens.
    pb::array tokens() {
        sim_->syncTokens();
        return fromPoints(Tokens(sim_->tokens()), sim_->scene().precision == Precision::Float32);
    }

    double time() const { return sim_->time(); }
    long stepIndex() const { return sim_->stepIndex(); }
    bool finished() const { return sim_->finished(); }
    const Scene& scene() const { return sim_->scene(); }
    const std::string& backend() const { return backend_.id; }
    pb::object event() const { return eventObject(sim_->event()); }

  private:
    ComputeBackend backend_;
    std::unique_ptr<Simulation> sim_;
};

} // namespace

void bindRun(pb::module_& m) {
    pb::class_<Run>(m, "Run", R"(Run(scene, backend="cpu")

A particle run you step and edit while it goes on, as the app's Scene panel does:

    run = flowscope.Run("default")
    run.step(20)
    run.set("/attention/type", "l2")       # any field under /attention or /integrator
    run.set("/attention/heads/0/V", 0.5 * np.eye(2))
    run.step(20)
    run.tokens                               # (N, d) array, the scene's precision

An edit takes at once: the run goes on from its current tokens and time exactly as a fresh run of the
edited scene started there would (bit for bit on the CPU in float64). Other fields (d, n, the initial
tokens, the precision) are refused with a ValueError naming the field: they need a new Run.)")
        .def(pb::init<const pb::handle&, const std::string&>(), pb::arg("scene"), pb::arg("backend") = "cpu")
        .def("step", &Run::step, pb::arg("k") = 1,
             "Takes up to k nominal steps (fewer at the horizon or an event); returns how many. Ctrl+C stops "
             "between two steps.")
        .def("set", &Run::set, pb::arg("pointer"), pb::arg("value"),
             "Sets the field at a JSON pointer (\"/attention/beta\") of the running scene, as a scene file "
             "would hold it: numbers, strings, bools, lists or arrays. ValueError names a field that is not "
             "live or a value the scene refuses; the run is then unchanged.")
        .def_property_readonly(
            "tokens", &Run::tokens,
            "(N, d): a copy of the current tokens, float32 for a float32 scene, else float64.")
        .def_property_readonly("t", &Run::time, "The current time.")
        .def_property_readonly("step_index", &Run::stepIndex, "The nominal steps taken (t / h).")
        .def_property_readonly("finished", &Run::finished, "Whether the run reached its horizon or an event.")
        .def_property_readonly("event", &Run::event,
                               "None, or {'kind', 't', 'message'} of the event that stopped the run.")
        .def_property_readonly("scene", &Run::scene, "The scene as it runs now, with its live edits.")
        .def_property_readonly("backend", &Run::backend, "The backend's id: cpu, gl or vulkan.")
        .def("__repr__", [](const Run& r) {
            return "<flowscope.Run " + std::to_string(r.scene().n) + " x " + std::to_string(r.scene().d) +
                   " " + toString(r.scene().attention.type) + " at t = " + std::to_string(r.time()) + ">";
        });
}

} // namespace flowscope::py
