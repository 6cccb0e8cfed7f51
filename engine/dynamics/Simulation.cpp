#include "engine/dynamics/Simulation.h"

#include "engine/attention/SphereProjection.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace flowscope {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

Simulation::Simulation(const Scene& scene, FieldFactory makeField)
    : scene_(scene), makeField_(makeField ? std::move(makeField) : FieldFactory(makeCpuField)) {
    field_ = makeField_(scene_.attention, scene_.d, scene_.precision);
    integrator_ = makeIntegrator(scene_.integrator);
    reset();
}

Simulation::~Simulation() = default;

void Simulation::reset() {
    setState(initialTokens(scene_), 0.0);
}

void Simulation::setState(const Tokens& X, double t) {
    X_ = X;
    scene_.n = int(X.rows());
    if (scene_.attention.sphere) SphereProjection::normalize(X_);
    t_ = t;
    const double h = scene_.integrator.T / scene_.integrator.steps;
    step_ = std::min<long>(scene_.integrator.steps, long(std::llround(t / h)));
    event_.reset();
    history_.clear();
    timings_ = {};
    integrator_->invalidate();
    if (stepper_) stepper_->upload(X_, t_);
    synced_ = true;
    syncedT_ = t_;
    syncedStep_ = step_;
    checkDivergence();
    record();
}

void Simulation::setAttention(const AttentionSpec& spec) {
    syncTokens(); // the state to continue from should the device refuse the new parameters
    // A spec the factory refuses throws here and leaves the old spec and field in force. Parameters alone are
    // set on the field in place, which a GPU field does without a rebuild.
    retargetField(field_, scene_.attention, spec, scene_.d, scene_.precision, makeField_);
    scene_.attention = spec;
    if (spec.sphere) SphereProjection::normalize(X_);
    integrator_->invalidate();
    if (!stepper_) {
        attachStepper();
        return;
    }
    // e.g. l2 attention: the device says no, and the fields take over from X_.
    if (std::optional<std::string> why = makeStepper_.refusal(spec, scene_.integrator, scene_.d))
        return dropStepper(*why);
    editStepper([&spec](DeviceStepper& s) { s.setAttention(spec); });
}

void Simulation::setStepper(StepperFactory makeStepper) {
    syncTokens();
    stepper_.reset();
    stepperNote_.clear();
    makeStepper_ = std::move(makeStepper);
    attachStepper();
}

void Simulation::attachStepper() {
    if (!makeStepper_) return;
    if (std::optional<std::string> why = makeStepper_.refusal(scene_.attention, scene_.integrator, scene_.d))
        return dropStepper(*why);
    // The device accepts the scene; what can still fail is the device itself (memory, a shader), and then the
    // fields run the scene as they would have anyway.
    try {
        std::unique_ptr<DeviceStepper> s = makeStepper_.make(scene_.attention, scene_.integrator, scene_.d);
        s->upload(X_, t_);
        stepper_ = std::move(s);
        stepperNote_.clear();
        synced_ = true;
        syncedT_ = t_;
        syncedStep_ = step_;
    } catch (const std::exception& e) {
        dropStepper(e.what());
    }
}

void Simulation::dropStepper(const std::string& why) {
    stepper_.reset();
    stepperNote_ = why;
}

void Simulation::editStepper(const std::function<void(DeviceStepper&)>& edit) {
    // Asked first (StepperFactory::supports), so a throw here is a device failure, not a refusal: the fields
    // continue from X_, which every caller synced before changing anything.
    try {
        edit(*stepper_);
    } catch (const std::exception& e) {
        dropStepper(e.what());
    }
}

void Simulation::syncTokens() {
    if (!stepper_ || synced_) return;
    stepper_->download(X_);
    synced_ = true;
    syncedT_ = t_;
    syncedStep_ = step_;
}

std::shared_ptr<const DeviceTokens> Simulation::shareTokens() {
    return stepper_ ? stepper_->share(step_) : nullptr;
}

bool Simulation::stepOnDevice() {
    stepper_->advance(1);
    const StepResult r = stepper_->outcome();
    countWork(r);
    if (!r.ok) {
        // The device kept the tokens at the step's start, as stepImpl does on the CPU.
        event_ = RunEvent{RunEvent::Kind::StepCollapse, t_, stepFailure(r)};
        synced_ = false;
        syncTokens();
        record();
        return true;
    }
    ++step_;
    t_ = double(step_) * (scene_.integrator.T / scene_.integrator.steps);
    synced_ = false;
    const bool last = step_ >= scene_.integrator.steps;
    const bool due = step_ % scene_.output.every == 0;
    if (!last && !(due && (!recordGate_ || recordGate_()))) return true;
    Tokens good = X_; // the last download, checked finite
    const double tGood = syncedT_;
    const long stepGood = syncedStep_;
    const auto clock = std::chrono::steady_clock::now();
    syncTokens();
    timings_.download += secondsSince(clock);
    checkDivergence();
    if (event_ && event_->kind == RunEvent::Kind::NonFinite) {
        // Keep the last good download; the device does not check every step, so the event is bracketed.
        X_ = std::move(good);
        std::ostringstream msg;
        msg << "non-finite coordinates between t = " << tGood << " and t = " << t_
            << " (the device checks the frames it records)";
        t_ = tGood;
        step_ = stepGood;
        event_->t = tGood;
        event_->message = msg.str();
        stepper_->upload(X_, t_);
        syncedT_ = t_;
        syncedStep_ = step_;
    }
    record();
    return true;
}

void Simulation::setFieldFactory(FieldFactory makeField) {
    if (!makeField) makeField = makeCpuField;
    field_ = makeField(scene_.attention, scene_.d, scene_.precision); // throws before anything changes
    makeField_ = std::move(makeField);
    integrator_->invalidate();
}

void Simulation::setIntegrator(const IntegratorSpec& spec) {
    syncTokens();
    scene_.integrator = spec;
    integrator_ = makeIntegrator(spec);
    // Continue at the new nominal step from the current time.
    const double h = spec.T / spec.steps;
    step_ = std::min<long>(spec.steps, long(std::llround(t_ / h)));
    if (!stepper_) {
        attachStepper();
        return;
    }
    // e.g. Dormand-Prince on a device that takes fixed steps only: the fields take over from X_.
    if (std::optional<std::string> why = makeStepper_.refusal(scene_.attention, spec, scene_.d))
        return dropStepper(*why);
    editStepper([this, &spec](DeviceStepper& s) {
        s.setIntegrator(spec);
        s.upload(X_, t_);
    });
    if (stepper_) syncedStep_ = step_;
}

void Simulation::checkDivergence() {
    if (!X_.allFinite()) {
        event_ = RunEvent{RunEvent::Kind::NonFinite, t_, "non-finite token coordinates"};
        return;
    }
    const double maxNorm = X_.rows() ? X_.rowwise().norm().maxCoeff() : 0.0;
    if (maxNorm > scene_.integrator.divergenceNorm) {
        std::ostringstream msg;
        msg << "diverged: max |x_i| = " << maxNorm << " > " << scene_.integrator.divergenceNorm;
        event_ = RunEvent{RunEvent::Kind::Diverged, t_, msg.str()};
    }
}

void Simulation::record() {
    auto clock = std::chrono::steady_clock::now();
    Frame f;
    f.t = t_;
    f.step = step_;
    f.tokens = X_;
    Tokens V;
    Vec entropies;
    double energy = std::numeric_limits<double>::quiet_NaN();
    const bool stats = scene_.output.entropy && X_.allFinite();
    // One pass where the field can: the velocity, the entropies and the energy together (VelocityField.h). On
    // a device that holds the tokens just downloaded, the pass runs there, at them: nothing is uploaded.
    VelocityField* resident = stepper_ && synced_ ? stepper_->residentField() : nullptr;
    VelocityField& pass = resident ? *resident : *field_;
    if (X_.allFinite())
        pass.velocityAndStats(t_, X_, V, stats ? &entropies : nullptr, stats ? &energy : nullptr);
    timings_.pass += secondsSince(clock);
    clock = std::chrono::steady_clock::now();
    f.obs = observeMoments(X_, V, scene_.output.rankTol);
    timings_.moments += secondsSince(clock);
    clock = std::chrono::steady_clock::now();
    f.obs.clusters = countClusters(X_, scene_.output.clusterTol);
    timings_.clusters += secondsSince(clock);
    ++timings_.records;
    if (stats) {
        f.obs.tokenEntropy = std::move(entropies);
        if (f.obs.tokenEntropy.size()) f.obs.entropy = f.obs.tokenEntropy.mean();
        f.obs.energy = energy;
        f.obs.energyBeta = energy / scene_.attention.beta;
    }
    lastObs_ = f.obs;
    history_.push_back(std::move(f));
}

bool Simulation::step() {
    const auto clock = std::chrono::steady_clock::now();
    const double recording = timings_.download + timings_.pass + timings_.moments + timings_.clusters;
    const bool stepped = stepImpl();
    timings_.step += secondsSince(clock) -
                     (timings_.download + timings_.pass + timings_.moments + timings_.clusters - recording);
    timings_.steps += stepped;
    return stepped;
}

bool Simulation::stepImpl() {
    if (finished()) return false;
    const double h = scene_.integrator.T / scene_.integrator.steps;
    const double t0 = t_;
    // After a new step h (setIntegrator) or setState at a time off the grid k h, the next step lands on the
    // grid, from t0 to (step + 1) h, so that the run's time is the time its attention was evaluated at (the
    // device steppers keep the time they were given). On a device that one step runs here, on the fields.
    const bool landing = t0 != double(step_) * h;
    if (stepper_ && !landing) return stepOnDevice();
    syncTokens();
    const double dt = landing ? double(step_ + 1) * h - t0 : h;
    const Tokens before = X_;
    // Piecewise-constant parameters are layers: every stage of a step uses the layer in force inside the
    // step, also at a stage that sits exactly on the next switch time (so RK4 keeps its order).
    const bool piecewise =
        !scene_.attention.keyframes.empty() && scene_.attention.interpolation == Interpolation::Piecewise;
    const double lo = t0 + 1e-9 * dt, hi = t0 + dt - 1e-9 * dt;
    const Field f = [&](double t, const Tokens& X, Tokens& dX) {
        field_->velocity(piecewise ? std::clamp(t, lo, hi) : t, X, dX);
    };
    const StepResult r = integrator_->advance(f, t0, dt, X_);
    countWork(r);
    if (!r.ok) {
        event_ = RunEvent{RunEvent::Kind::StepCollapse, t0, stepFailure(r)};
        X_ = before; // keep the last good state
        record();
        return true;
    }
    ++step_;
    t_ = double(step_) * h; // no drift from repeated addition
    if (scene_.attention.sphere) SphereProjection::normalize(X_);
    checkDivergence();
    if (event_ && event_->kind == RunEvent::Kind::NonFinite) {
        // Keep the last finite state; the event time is the start of the failed step.
        X_ = before;
        t_ = t0;
        --step_;
        event_->t = t0;
        event_->message = "non-finite velocity or coordinates during the step from t = " + std::to_string(t0);
    }
    if (stepper_) { // the device goes on from the landing, on the grid
        stepper_->upload(X_, t_);
        syncedT_ = t_;
        syncedStep_ = step_;
    }
    if (event_ || step_ % scene_.output.every == 0 || step_ == scene_.integrator.steps) record();
    return true;
}

void Simulation::countWork(const StepResult& r) {
    timings_.evaluations += r.evaluations;
    timings_.subSteps += r.accepted;
    timings_.rejected += r.rejected;
}

std::string Simulation::stepFailure(const StepResult& r) const {
    std::ostringstream msg;
    if (r.exhausted)
        msg << "Dormand-Prince took " << kMaxSubsteps
            << " sub-steps within one step of T/steps = " << scene_.integrator.T / scene_.integrator.steps
            << " (tolerances too tight, or the dynamics far faster than the step)";
    else
        msg << "step size collapsed below " << scene_.integrator.minStep << " (blow-up?)";
    return msg.str();
}

void Simulation::run(const std::function<bool(double)>& progress) {
    while (step()) {
        if (progress && !progress(double(step_) / scene_.integrator.steps)) break;
    }
}

const char* toString(RunEvent::Kind kind) {
    switch (kind) {
    case RunEvent::Kind::Diverged:
        return "diverged";
    case RunEvent::Kind::NonFinite:
        return "non_finite";
    case RunEvent::Kind::StepCollapse:
        return "step_collapse";
    }
    return "?";
}

} // namespace flowscope
