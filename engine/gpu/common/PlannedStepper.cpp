#include "engine/gpu/common/PlannedStepper.h"

namespace flowscope {

void PlannedStepper::upload(const Tokens& X, double t) {
    writeTokens(plan_.deviceTokens(X));
    plan_.restart(int(X.rows()), t);
    planChanged();
}

void PlannedStepper::advance(int steps) {
    if (plan_.n() == 0)
        plan_.skip(steps);
    else
        takeSteps(steps);
}

void PlannedStepper::download(Tokens& X) {
    ++downloads_;
    Eigen::MatrixXf Xf(plan_.n(), plan_.d());
    if (Xf.size()) readTokens(Xf);
    X = Xf.cast<double>();
}

void PlannedStepper::setAttention(const AttentionSpec& spec) {
    const bool toSphere = plan_.setAttention(spec);
    planChanged();
    if (toSphere && plan_.n() > 0) projectTokens(); // as Simulation::setAttention does
}

void PlannedStepper::setIntegrator(const IntegratorSpec& integrator) {
    plan_.setIntegrator(integrator);
    planChanged();
}

} // namespace flowscope
