#include "engine/scene/DefaultScene.h"

namespace flowscope {

Scene builtinDefaultScene() {
    Scene s;
    s.name = "Built-in default";
    s.description = "Softmax attention with Q = K = I and V = -0.4 I: each of 2048 Gaussian tokens "
                    "moves against its attention-weighted mean and the cloud contracts toward the origin.";
    s.d = 2;
    s.n = 2048;
    s.precision = Precision::Float32;
    s.initial.kind = InitKind::Gaussian;
    s.initial.seed = 1;
    s.initial.mean = Vec::Zero(2);
    s.initial.cov = Mat::Identity(2, 2);
    s.attention.type = AttentionType::Softmax;
    s.attention.heads = {HeadParams{Mat::Identity(2, 2), Mat::Identity(2, 2), -0.4 * Mat::Identity(2, 2)}};
    s.integrator.method = Method::Rk4;
    s.integrator.T = 10.0;
    s.integrator.steps = 500;
    return s;
}

} // namespace flowscope
