#include "engine/gpu/common/PlannedStepper.h"

#include "engine/attention/SphereProjection.h"

#include <cmath>
#include <stdexcept>

namespace flowscope {

// The passes of residentField(): KernelPassRunner's (the inputs in the kernel's layout, the sums back in
// double), with the dispatch on the stepper's token buffer. The field asks for passes over the tokens it was
// given, which are the device's own (Simulation records right after a download); a pass of another shape,
// or with key biases the kernel cannot form from the tokens (they would have to be uploaded), is a caller's
// error.
class PlannedStepper::ResidentRunner final : public KernelPassRunner {
  public:
    ResidentRunner(const StreamKernelDevice& device, PlannedStepper& stepper)
        : KernelPassRunner(device.sharedBytes, device.maxInvocations, device.cpuDevice), stepper_(&stepper) {
        // As the stepper's own passes: q = B x and l2's biases -x^T M x (QUAD_BIAS) from the token buffer.
        setQueriesOnGpu(true);
        setQuadraticBiasOnGpu(true);
    }

  private:
    void dispatch(const StreamKernelInputs& in, Eigen::MatrixXf& out) override {
        if (in.variant.explicitQueries || in.variant.hasBias || in.n != stepper_->plan().n() || in.nq != in.n)
            throw std::logic_error(
                "a resident pass runs over the device's own tokens, with no key biases but those it forms");
        stepper_->residentPass(in, out);
    }

    PlannedStepper* stepper_;
};

VelocityField* PlannedStepper::residentField() {
    // Pre- and peri-LN evaluate at the directions, which the token buffer does not hold: the caller's field.
    if (!hasResidentPass() || plan_.n() == 0 || plan_.readsDirections()) return nullptr;
    if (!resident_)
        resident_ = withSphereProjection(
            plan_.spec(),
            makeField(plan_.spec(), plan_.d(), std::make_shared<ResidentRunner>(plan_.device(), *this)));
    return resident_.get();
}

void PlannedStepper::upload(const Tokens& X, double t) {
    writeTokens(plan_.deviceTokens(X));
    plan_.restart(int(X.rows()), t);
    planChanged();
}

void PlannedStepper::advance(int steps) {
    outcome_ = {};
    if (plan_.n() == 0)
        plan_.skip(steps);
    else if (!plan_.adaptive()) {
        takeSteps(steps);
        // One sub-step per step, each of its stages one evaluation.
        const int stages = int(plan_.stages().size());
        outcome_ = {true, false, stages * steps, plan_.h(), plan_.time(), steps, 0};
    } else {
        // The counts of every step taken; a step that fails ends the advance with its why and where.
        outcome_ = {true, false, 0, 0.0, plan_.time(), 0, 0};
        for (int step = 0; step < steps && outcome_.ok; ++step) {
            const StepResult r = takeAdaptiveStep();
            outcome_.evaluations += r.evaluations;
            outcome_.accepted += r.accepted;
            outcome_.rejected += r.rejected;
            outcome_.lastH = r.lastH;
            outcome_.ok = r.ok;
            outcome_.exhausted = r.exhausted;
            if (r.ok) plan_.skip(1);
            outcome_.reached = r.ok ? plan_.time() : r.reached;
        }
        flush();
    }
}

StepResult PlannedStepper::takeAdaptiveStep() {
    using T = DormandPrinceTableau;
    DormandPrinceControl& control = plan_.control();
    const double t0 = plan_.time();
    auto slots = [this](const CombineCall& call) {
        std::array<int, kCombineSlots> k{};
        for (int s = 0; s < kCombineSlots; ++s)
            k[std::size_t(s)] = velocities_[std::size_t(call.k[std::size_t(s)])];
        return k;
    };
    if (!control.begin(t0, plan_.h())) return control.result();
    keepTokens(false);
    evaluate(plan_.stageTime(t0, t0), false, velocities_[0]);
    const double coordinates = double(plan_.n()) * plan_.d();
    std::vector<float> partials(std::size_t(stepperGroups(plan_.n())));
    while (const std::optional<double> step = control.next()) {
        const double h = *step, t = control.time();
        for (int s = 1; s < kStageVelocities; ++s) {
            const CombineCall input = plan_.dormandPrinceCombine(s, h);
            combine(input, slots(input));
            evaluate(plan_.stageTime(t0, T::stageTime(s, t, h)), true, velocities_[std::size_t(s)]);
        }
        const CombineCall error = plan_.dormandPrinceError(h);
        const bool landing = control.landing();
        errorPartials(error, slots(error), partials);
        double sum = 0.0; // the partials added in double
        for (const float p : partials) sum += double(p);
        if (control.judge(std::sqrt(sum / coordinates))) {
            const CombineCall update = plan_.dormandPrinceCombine(kStageVelocities - 1, h, true, landing);
            combine(update, slots(update));
            std::swap(velocities_[0], velocities_[kStageVelocities - 1]); // first same as last
        }
    }
    if (!control.result().ok) keepTokens(true); // the step's start, as Simulation keeps it on the CPU
    return control.result();
}

void PlannedStepper::download(Tokens& X) {
    ++downloads_;
    Eigen::MatrixXf Xf(plan_.n(), plan_.d());
    if (Xf.size()) readTokens(Xf);
    X = Xf.cast<double>();
}

void PlannedStepper::setAttention(const AttentionSpec& spec) {
    const bool toSphere = plan_.setAttention(spec);
    resident_.reset(); // made again for the new spec
    planChanged();
    if (toSphere && plan_.n() > 0) projectTokens(); // as Simulation::setAttention does
}

void PlannedStepper::setIntegrator(const IntegratorSpec& integrator) {
    plan_.setIntegrator(integrator);
    planChanged();
}

} // namespace flowscope
