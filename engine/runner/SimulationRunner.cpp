#include "engine/runner/SimulationRunner.h"

#include "engine/backend/PrepareRun.h"
#include "engine/scene/RunBudget.h"

#include <algorithm>
#include <chrono>
#include <exception>

namespace flowscope {

// ---------------------------------------------------------------------------------------------------------
// SimulationRunner::Job: the Simulation as a Steppable, and the snapshot it publishes.

class SimulationRunner::Job : public LiveJob<Snapshot> {
  public:
    // Worker thread. Replaces the run; a Simulation that cannot be built leaves an error snapshot.
    void install(const Scene& scene, std::uint64_t generation) {
        generation_ = generation;
        broken_ = false;
        error_.clear();
        history_ = std::make_shared<RunHistory>();
        try {
            sim_.reset(); // before a new field is made in the same GPU context
            sim_ = std::make_unique<Simulation>(scene, fieldFactory(scene));
            useDevice();
            drain();
        } catch (const std::exception& e) {
            sim_.reset();
            error_ = e.what();
        }
    }

    // Worker thread. Opens the backend here, where its context will be current, and moves the run onto it.
    void setBackend(const BackendOpener& open) {
        note_.clear();
        // The old backend's stepper and fields go first, while its context is still the current one; then
        // the context.
        if (sim_) {
            sim_->setStepper({});
            sim_->setFieldFactory(makeCpuField);
        }
        backend_ = ComputeBackend{}; // the CPU's fields
        onGpu_ = false;
        try {
            backend_ = open ? open() : ComputeBackend{};
        } catch (const std::exception& e) { // no device, or not in this build
            note_ = std::string(e.what()) + " — running on the CPU";
            backend_ = ComputeBackend{};
        }
        if (!sim_) return;
        try {
            sim_->setFieldFactory(fieldFactory(sim_->scene()));
            useDevice();
        } catch (const std::exception& e) { // the device failed making the fields: the CPU takes the run
            note_ = std::string(e.what()) + " — running on the CPU";
            sim_->setFieldFactory(makeCpuField);
            onGpu_ = false;
        }
    }

    // Worker thread. On a GPU backend that can take whole steps, the tokens stay on the device: frames are
    // downloaded at most ~15 times a second (the history, the plots and picking use them), and every
    // publication carries a device copy the particle view draws (OpenGL), or the tokens downloaded for it
    // (Vulkan, whose stepper has no copy in the views' OpenGL share group).
    void useDevice() {
        if (!sim_ || !onGpu_ || !backend_.makeStepper) return;
        sim_->setRecordGate([this] {
            if (!playing_) return true; // single steps record every frame, as on the CPU
            const auto now = std::chrono::steady_clock::now();
            if (now - lastRecord_ < std::chrono::milliseconds(66)) return false;
            lastRecord_ = now;
            return true;
        });
        sim_->setStepper(backend_.makeStepper);
    }

    // Worker thread, last call: GPU fields and their context are released on the thread they belong to.
    void finish() override {
        sim_.reset();
        backend_ = ComputeBackend{};
    }

    // The chosen backend's factory when it supports the scene, else the CPU's with the backend's reason as
    // the note (prepareRun, the contract every front end uses). Asked, not tried: nothing is made on the
    // device here.
    FieldFactory fieldFactory(const Scene& scene) {
        const PreparedRun run = prepareRun(backend_, scene, OnRefusal::UseTheCpu);
        onGpu_ = backend_.gpu && run.onBackend;
        if (!run.onBackend)
            note_ = run.note;
        else if (backend_.gpu)
            note_.clear(); // a CPU backend keeps the note of a backend that failed to open
        return run.makeField;
    }

    // Worker thread. Back to the initial state: the history starts over.
    void reset() {
        if (!sim_) return;
        history_->clear();
        edit([](Simulation& sim) { sim.reset(); }, true);
    }

    // Worker thread. Continue from the last recorded frame at or before t that kept its tokens.
    void seek(double t) {
        if (!sim_) return;
        const long k = history_->frameWithTokensAtOrBefore(t);
        if (k < 0) return;
        const RecordedFrame f = history_->at(std::size_t(k));
        history_->dropFrom(std::size_t(k)); // setState records frame k again
        edit([&f](Simulation& sim) { sim.setState(*f.tokens, f.t); }, true);
    }

    // Worker thread. Failures keep the current state and parameters and are shown in Snapshot::error.
    void edit(const std::function<void(Simulation&)>& change, bool repairs) {
        if (!sim_) return;
        try {
            change(*sim_);
            error_.clear();
            if (repairs) broken_ = false;
        } catch (const std::exception& e) {
            error_ = e.what();
        }
        drain();
    }

    bool advance() override {
        if (!sim_ || broken_) return false;
        try {
            sim_->step();
            drain();
            return !sim_->finished();
        } catch (const std::exception& e) {
            // A throwing step may leave the tokens half-updated: refuse further steps until reset.
            broken_ = true;
            error_ = e.what();
            return false;
        }
    }

    void publish(double stepsPerSecond, bool playing) override {
        playing_ = playing;
        auto s = std::make_shared<Snapshot>();
        if (sim_) {
            if (sim_->onDevice()) {
                // The view projects d <= 4 on the GPU; higher dimensions need the tokens on the CPU.
                if (sim_->scene().d > kDeviceDrawMaxDim) sim_->syncTokens();
                try {
                    s->device = sim_->shareTokens();
                    // A stepper with no drawable copy (Vulkan): the view draws the tokens, downloaded now.
                    if (!s->device) sim_->syncTokens();
                } catch (const std::exception& e) {
                    error_ = e.what();
                }
            }
            fill(*s, *sim_);
        } else if (auto last = snapshot()) {
            *s = *last; // no simulation (it failed to build): keep showing the initial tokens
        }
        s->generation = generation_;
        s->history = history_;
        s->backend = backendName();
        s->backendNote = backendNote();
        s->playing = playing;
        s->stepsPerSecond = stepsPerSecond;
        s->error = error_;
        store(std::move(s));
    }

  private:
    static void fill(Snapshot& s, const Simulation& sim) {
        s.t = sim.time();
        s.step = sim.stepIndex();
        s.totalSteps = sim.scene().integrator.steps;
        s.horizon = sim.scene().integrator.T;
        s.tokens = sim.tokens();
        s.finished = sim.finished();
        s.event = sim.event();
        s.observables = sim.lastObservables();
        if (sim.scene().integrator.method == Method::DormandPrince) {
            const RunTimings& work = sim.timings();
            s.subStepsPerStep = work.steps ? double(work.subSteps) / double(work.steps) : 0.0;
            s.rejectedSubSteps = work.rejected;
        }
    }

    // Moves the frames the simulation recorded into the shared history.
    void drain() {
        if (!sim_) return;
        for (Frame& f : sim_->takeHistory())
            history_->append(
                {f.t, f.step, std::move(f.obs), std::make_shared<const Tokens>(std::move(f.tokens))});
    }

    // Worker-thread state.
    // What the snapshot calls the backend in use.
    std::string backendName() const {
        if (!sim_) return "CPU";
        if (!onGpu_) return sim_->scene().precision == Precision::Float32 ? "CPU float32" : "CPU float64";
        return sim_->onDevice() ? backend_.runName + ", tokens on the GPU" : backend_.runName;
    }

    // Why a GPU run reads velocities back every stage instead of keeping the tokens on the device.
    std::string backendNote() const {
        if (!note_.empty() || !sim_ || !onGpu_ || sim_->onDevice() || sim_->stepperNote().empty())
            return note_;
        return "velocities read back every stage: " + sim_->stepperNote();
    }

    ComputeBackend backend_; // declared before sim_: its GPU context outlives the fields made in it
    std::string note_;       // why the requested backend is not running
    bool onGpu_ = false;     // the simulation's fields come from backend_ (a GPU)
    std::chrono::steady_clock::time_point lastRecord_; // device runs: when the last frame was downloaded
    bool playing_ = false;                             // as last published
    std::unique_ptr<Simulation> sim_;
    std::uint64_t generation_ = 0;
    std::string error_;
    std::shared_ptr<RunHistory> history_ = std::make_shared<RunHistory>();
    bool broken_ = false;
};

// ---------------------------------------------------------------------------------------------------------
// SimulationRunner

SimulationRunner::SimulationRunner() : LiveRun(std::make_unique<Job>()) {}

SimulationRunner::~SimulationRunner() = default;

void SimulationRunner::start(const Scene& scene) {
    // Fail here, on the caller's thread, for what a user can get wrong in a scene that parsed (attention
    // settings the field does not support, an unreadable initial-token file), so that a bad scene leaves the
    // current run untouched. Building the Simulation itself (its initial observables cost O(N^2) with
    // entropy) happens on the worker.
    makeCpuField(scene.attention, scene.d, scene.precision);
    checkRunBudget(liveRunBudget(scene, RunHistory::kDefaultTokenBudget), defaultMemoryLimit(),
                   "half this machine's memory; the app keeps at most 512 MiB of recorded frames");
    auto first = std::make_shared<Snapshot>();
    first->tokens = initialTokens(scene);
    first->generation = nextGeneration();
    first->totalSteps = scene.integrator.steps;
    first->horizon = scene.integrator.T;
    first->playing = playing();
    show(first);
    post<Job>([scene, generation = first->generation](Job& job) { job.install(scene, generation); });
}

void SimulationRunner::reset() {
    post<Job>([](Job& job) { job.reset(); });
}

void SimulationRunner::seek(double t) {
    pause();
    post<Job>([t](Job& job) { job.seek(t); });
}

void SimulationRunner::setBackend(BackendOpener open) {
    post<Job>([open = std::move(open)](Job& job) { job.setBackend(open); });
}

void SimulationRunner::setIntegrator(const IntegratorSpec& spec) {
    post<Job>([spec](Job& job) { job.edit([&spec](Simulation& sim) { sim.setIntegrator(spec); }, false); });
}

void SimulationRunner::setAttention(const AttentionSpec& spec) {
    post<Job>([spec](Job& job) { job.edit([&spec](Simulation& sim) { sim.setAttention(spec); }, false); });
}

} // namespace flowscope
