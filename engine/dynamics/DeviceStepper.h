// Flowscope engine: whole integration steps on a device (a GPU), the tokens staying there.
//
// A VelocityField returns velocities to the CPU, so a run on a GPU field pays a round trip per stage. A
// DeviceStepper instead keeps the tokens in device memory: advance() only records work, and the tokens come
// back when someone asks (download). Simulation uses one when its backend offers it (ComputeBackend::
// makeStepper) and downloads only the frames it records. share() publishes a drawable copy of the tokens in
// device memory, so a view in the same OpenGL share group draws them without a trip through the CPU (on a
// GPU backend the particles stay on the GPU; docs/ARCHITECTURE.md, threads).
#pragma once

#include "engine/core/Types.h"
#include "engine/dynamics/Integrator.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

namespace flowscope {

class VelocityField;

// A device-side copy of the tokens at one instant, immutable while anyone holds it: float32, n x d,
// structure of arrays (coordinate c of token i at float index c n + i), in an OpenGL buffer object of the
// producer's share group. The producer reuses the buffer only once every holder has let go.
struct DeviceTokens {
    unsigned buffer = 0;   // OpenGL buffer name
    void* fence = nullptr; // GLsync signalled when the copy is complete: glWaitSync on it before reading
    int n = 0, d = 0;
    double t = 0.0;
    long step = 0;
    // Which share group the buffer name belongs to, as the front end that made the context tags it (the GUI:
    // its QOpenGLContextGroup); null for headless contexts, whose buffers no view can draw.
    const void* shareGroup = nullptr;
    // The producer clears `valid` (under `mutex`) before it deletes the buffer, e.g. when the backend closes.
    // Readers lock the mutex, check valid, and attach the buffer (a vertex array holds it alive from then).
    // After drawing, a reader leaves a fence of its own in readFence (under the mutex, replacing and deleting
    // the one there): the producer waits on it on the GPU before it overwrites the buffer with a later copy.
    std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
    std::shared_ptr<bool> valid = std::make_shared<bool>(true);
    mutable void* readFence = nullptr; // GLsync
};

class DeviceStepper {
  public:
    virtual ~DeviceStepper() = default;
    // Replaces the tokens and the time (scaled to the unit sphere first for sphere dynamics).
    virtual void upload(const Tokens& X, double t) = 0;
    // Records `steps` steps of h = T / M; fixed steps read nothing back (adaptive ones read one error norm
    // per sub-step, to decide the next).
    virtual void advance(int steps) = 0;
    // How the last advance() ended: ok, unless an adaptive step could not be completed (StepResult of that
    // step; the tokens and the time are then those at its start, as Simulation keeps them on the CPU), with
    // the field evaluations and sub-steps of the steps taken (a device that does not count them: zeros).
    virtual StepResult outcome() const { return {}; }
    // The current tokens (waits for the device).
    virtual void download(Tokens& X) = 0;
    // Live edits, continuing from the current tokens and time; throw SceneError and change nothing when the
    // device cannot run the new parameters.
    virtual void setAttention(const AttentionSpec& spec) = 0;
    virtual void setIntegrator(const IntegratorSpec& spec) = 0;
    // A drawable device copy of the current tokens; null when the device has no such path.
    virtual std::shared_ptr<const DeviceTokens> share(long step) {
        (void)step;
        return nullptr;
    }
    virtual std::string name() const = 0; // e.g. "OpenGL stepper"
    // A field whose O(N^2) passes run on the device at the tokens it holds: nothing is uploaded, and only the
    // kernel's per-token sums come back. Valid for the tokens last downloaded (Simulation records with it
    // right after a download) and until the next setAttention or upload; owned by the stepper. Null where the
    // device has none for the current attention (the caller uses its own field).
    virtual VelocityField* residentField() { return nullptr; }
};

// What no device stepper implements (docs/math/theory.md#normalization): a normalization scheme other than
// none, post (`sphere`), pre and peri. One line naming the field, or nullopt.
inline std::optional<std::string> deviceStepsRefusal(const AttentionSpec& a) {
    switch (a.normalization) {
    case Normalization::None:
    case Normalization::Pre:
    case Normalization::Peri:
        return std::nullopt;
    default:
        return std::string("/attention/normalization: the device steppers implement none, pre, peri and post "
                           "(as `sphere`), not \"") +
               toString(a.normalization) + "\"; the fields run it";
    }
}

// Makes steppers for a device. `supports` says, before anything is made, why the device cannot take whole
// steps of a scene's attention, integrator and dimension (one line naming the scene field, e.g.
// "/integrator/method: ..."), or nullopt when it can; Simulation asks it before it makes a stepper and before
// every live edit, and integrates with fields instead when refused. A null `supports` accepts everything.
// `make` builds the stepper (it may still throw for a device failure: no memory, a shader that fails).
struct StepperFactory {
    using Check =
        std::function<std::optional<std::string>(const AttentionSpec&, const IntegratorSpec&, int d)>;
    using Make =
        std::function<std::unique_ptr<DeviceStepper>(const AttentionSpec&, const IntegratorSpec&, int d)>;

    StepperFactory() = default;
    // From any callable that makes steppers (a lambda), with or without a check.
    template <class F>
    requires std::is_invocable_r_v < std::unique_ptr<DeviceStepper>, F,
    const AttentionSpec&, const IntegratorSpec&,
        int > StepperFactory(F make, Check supports = {})
        : supports(std::move(supports)),
    make(std::move(make)) {}

    explicit operator bool() const { return bool(make); }
    // deviceStepsRefusal first (what no stepper implements), then the device's own check.
    std::optional<std::string> refusal(const AttentionSpec& a, const IntegratorSpec& i, int d) const {
        if (std::optional<std::string> why = deviceStepsRefusal(a)) return why;
        return supports ? supports(a, i, d) : std::nullopt;
    }

    Check supports;
    Make make;
};

} // namespace flowscope
