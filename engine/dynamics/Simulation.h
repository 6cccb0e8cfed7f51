// Flowscope engine: a particle simulation of one Scene (tokens, field, integrator, observables, events).
#pragma once

#include "engine/attention/VelocityField.h"
#include "engine/dynamics/DeviceStepper.h"
#include "engine/dynamics/Integrator.h"
#include "engine/dynamics/Observables.h"
#include "engine/scene/Scene.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flowscope {

// Why a run stopped before its horizon. A stopped run keeps the trajectory recorded so far.
struct RunEvent {
    enum class Kind { Diverged, NonFinite, StepCollapse } kind;
    double t = 0.0;
    std::string message;
};
// "diverged", "non_finite", "step_collapse": the names simulate's record and the Python module give.
const char* toString(RunEvent::Kind kind);

// Where a run's time went (seconds since construction or reset()): flowscope-cli bench run reports it.
struct RunTimings {
    double step = 0;     // integrating: the steps' field passes, on the host or the device
    double download = 0; // device runs: tokens copied back for records
    double pass = 0;     // a record's velocity pass, with the entropies and the energy
    double moments = 0;  // mean, covariance, rank, kinetic energy, max norm
    double clusters = 0; // the cluster count
    long steps = 0, records = 0;
    // The integrator's work over the nominal steps taken: field evaluations, and sub-steps taken and
    // rejected (fixed methods: one sub-step per step, none rejected; Dormand-Prince: its adaptive ones).
    long evaluations = 0, subSteps = 0, rejected = 0;
};

struct Frame {
    double t = 0.0;
    long step = 0; // the nominal step index
    Tokens tokens;
    Observables obs;
};

class Simulation {
  public:
    // Velocities come from makeField (default: the CPU field in the scene's precision). Throws SceneError.
    explicit Simulation(const Scene& scene, FieldFactory makeField = {});
    ~Simulation();

    const Scene& scene() const { return scene_; }
    double time() const { return t_; }
    long stepIndex() const { return step_; }
    // On a device (see setStepper) these are the tokens of the last download: recorded frames and
    // syncTokens() download, steps do not.
    const Tokens& tokens() const { return X_; }
    bool finished() const { return event_.has_value() || step_ >= scene_.integrator.steps; }
    const std::optional<RunEvent>& event() const { return event_; }
    const std::vector<Frame>& history() const { return history_; }
    // Moves the recorded frames out (a long interactive run keeps them elsewhere; see RunHistory).
    std::vector<Frame> takeHistory() { return std::exchange(history_, {}); }
    // The observables of the latest recorded frame (kept when the history is taken).
    const Observables& lastObservables() const { return lastObs_; }
    const RunTimings& timings() const { return timings_; }
    VelocityField& field() { return *field_; }

    // Advances one nominal step h = T/M (Dormand-Prince takes as many adaptive sub-steps as it needs to land
    // on the next nominal time). Records a frame when the step index is a multiple of output.every, at the
    // end, and when an event stops the run. Returns false when nothing was done (finished or stopped).
    bool step();
    // Runs to the horizon or to an event. progress(fraction) may return false to cancel.
    void run(const std::function<bool(double)>& progress = {});

    // Live edits: continue from the current state with new parameters.
    void setAttention(const AttentionSpec& spec);
    // Keeps the time; steps continue at the new h from step index round(t / h), the next one landing on that
    // grid when t is off it (from t to (round(t / h) + 1) h; on a device, that step runs on the fields).
    void setIntegrator(const IntegratorSpec& spec);
    // Computes velocities with fields from makeField from now on (another backend); state and history stay.
    // Throws (SceneError, or the backend's error) and keeps the old field when the new one cannot be made.
    void setFieldFactory(FieldFactory makeField);
    // Integrates whole steps on a device from now on, whenever it can run the scene (null: with the fields
    // only). The fields stay in use for the observables of recorded frames. When the device cannot run the
    // scene, or a later edit, the run goes on with the fields and stepperNote() says why; later edits try the
    // device again. Device runs check divergence (finite, max norm) on the frames they download only.
    void setStepper(StepperFactory makeStepper);
    bool onDevice() const { return stepper_ != nullptr; }
    const std::string& stepperNote() const { return stepperNote_; }
    // Device runs: asked whenever a frame is due by output.every but not forced (the last step and events
    // always record); false skips it, so an interactive front end can bound the download rate. Null: record.
    void setRecordGate(std::function<bool()> gate) { recordGate_ = std::move(gate); }
    // Device runs: downloads the current tokens into tokens() now.
    void syncTokens();
    // Device runs: a drawable device copy of the current tokens (DeviceStepper::share), else null.
    std::shared_ptr<const DeviceTokens> shareTokens();
    // Back to the initial tokens of the scene (history cleared).
    void reset();
    // Replace the state (e.g. tokens drawn by the user); history restarts from here. X must be N x d.
    void setState(const Tokens& X, double t = 0.0);

  private:
    void record();
    void checkDivergence();
    bool stepOnDevice();
    // The event message of a step that could not be completed (Dormand-Prince: exhausted or collapsed).
    std::string stepFailure(const StepResult& r) const;
    // Adds a step's evaluations and sub-steps to timings_.
    void countWork(const StepResult& r);
    void attachStepper(); // makes a stepper for the current scene from makeStepper_, or notes why not
    void dropStepper(const std::string& why); // the fields integrate from X_ on; stepperNote() says why
    void editStepper(const std::function<void(DeviceStepper&)>& edit); // a live edit the device accepted

    Scene scene_;
    FieldFactory makeField_;
    std::unique_ptr<VelocityField> field_;
    std::unique_ptr<Integrator> integrator_;
    Tokens X_;
    double t_ = 0.0;
    long step_ = 0;
    std::optional<RunEvent> event_;
    std::vector<Frame> history_;
    Observables lastObs_;

    StepperFactory makeStepper_;
    std::unique_ptr<DeviceStepper> stepper_;
    std::string stepperNote_;
    std::function<bool()> recordGate_;
    RunTimings timings_;
    bool stepImpl();
    bool synced_ = true; // X_ holds the device's current tokens
    double syncedT_ = 0.0;
    long syncedStep_ = 0;
};

} // namespace flowscope
