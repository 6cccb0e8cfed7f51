#include "engine/ottransformer/Tasks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

namespace flowscope::ot {

namespace {

constexpr double kPi = std::numbers::pi;

// A point of each unit-size shape, from two uniforms.
Eigen::Vector2d shapePoint(int label, double u, double v) {
    switch (label) {
    case 0: // circle of radius 1
        return {std::cos(2 * kPi * u), std::sin(2 * kPi * u)};
    case 1: { // square outline, half-side 1: a side, then a position along it
        const double s = 2 * v - 1;
        const int side = std::min(3, int(4 * u));
        return side == 0   ? Eigen::Vector2d(1, s)
               : side == 1 ? Eigen::Vector2d(-1, s)
               : side == 2 ? Eigen::Vector2d(s, 1)
                           : Eigen::Vector2d(s, -1);
    }
    case 2: { // sklearn's noiseless moons, centred and scaled into [-1, 1] x [-0.5, 0.5]
        const double a = kPi * v;
        const Eigen::Vector2d p = u < 0.5 ? Eigen::Vector2d(std::cos(a), std::sin(a))
                                          : Eigen::Vector2d(1 - std::cos(a), 0.5 - std::sin(a));
        return (p - Eigen::Vector2d(0.5, 0.25)) / 1.5;
    }
    default: { // plus-shaped cross, arms of length 1
        const double s = 2 * v - 1;
        return u < 0.5 ? Eigen::Vector2d(s, 0) : Eigen::Vector2d(0, s);
    }
    }
}

} // namespace

const char* toString(Task t) {
    return t == Task::A ? "A" : "B";
}

Task taskFromString(const std::string& s) {
    if (s == "A" || s == "a") return Task::A;
    if (s == "B" || s == "b") return Task::B;
    throw std::invalid_argument("task: unknown task \"" + s + "\" (valid: A, B)");
}

const char* taskBClassName(int label) {
    static const char* const names[] = {"circle", "square", "moons", "cross"};
    return label >= 0 && label < kTaskBClasses ? names[label] : "?";
}

TransformerConfig taskModel(Task t) {
    TransformerConfig c;
    if (t == Task::A) {
        c.inputDim = c.width = 2;
        c.embed = false;
        c.headDim = 2;
        c.mlpHidden = 16;
        c.head = Head::Mean;
    } else {
        c.inputDim = 2;
        c.embed = true;
        c.width = 16;
        c.headDim = 16;
        c.mlpHidden = 32;
        c.head = Head::PooledLinear;
        c.classes = kTaskBClasses;
    }
    c.heads = 1;
    c.blocks = 1;
    c.activation = Activation::Tanh;
    return c;
}

TransformerConfig taskBBaseline() {
    TransformerConfig c = taskModel(Task::B);
    c.architecture = Architecture::Discrete;
    c.blocks = 2;
    c.lambdaOt = 0;
    return c;
}

Eigen::Vector2d taskATarget(const Eigen::Vector2d& u) {
    return {u.squaredNorm() - 1.0, std::sin(3.0 * u.x())};
}

Batch sampleTaskA(int sets, flows::Rng& rng) {
    if (sets < 1) throw std::invalid_argument("task A: sets must be >= 1");
    Batch b;
    b.setSize = kTaskASetSize;
    b.tokens.resize(2, Eigen::Index(sets) * kTaskASetSize);
    for (Eigen::Index i = 0; i < b.tokens.size(); ++i) b.tokens(i) = rng.normal();
    b.targets.resize(2, sets);
    for (int s = 0; s < sets; ++s)
        b.targets.col(s) =
            taskATarget(b.tokens.middleCols(Eigen::Index(s) * kTaskASetSize, kTaskASetSize).rowwise().mean());
    return b;
}

Matrix taskAClosedFormOutput(const Batch& batch, double lambdaPaper, double horizon) {
    if (!(lambdaPaper >= 0)) throw std::invalid_argument("task A: the closed form needs lambda >= 0");
    if (lambdaPaper == 0) return batch.targets;
    const int n = batch.setSize, B = batch.sets();
    Matrix out(2, B);
    for (int s = 0; s < B; ++s) {
        const Eigen::Vector2d mean = batch.tokens.middleCols(Eigen::Index(s) * n, n).rowwise().mean();
        const Eigen::Vector2d e = (mean - batch.targets.col(s)) / (1.0 + horizon / (n * lambdaPaper));
        out.col(s) = batch.targets.col(s) + e;
    }
    return out;
}

Matrix taskAClosedFormState(const Batch& batch, double lambdaPaper, double horizon) {
    if (!(lambdaPaper > 0)) throw std::invalid_argument("task A: the closed-form paths need lambda > 0");
    const Matrix out = taskAClosedFormOutput(batch, lambdaPaper, horizon);
    const int n = batch.setSize;
    Matrix X = batch.tokens;
    for (int s = 0; s < batch.sets(); ++s) {
        // e* = ỹ* - y; every token moves by -(T / (n λ)) e*.
        const Eigen::Vector2d move = -(horizon / (n * lambdaPaper)) * (out.col(s) - batch.targets.col(s));
        X.middleCols(Eigen::Index(s) * n, n).colwise() += move;
    }
    return X;
}

Batch sampleTaskB(int sets, flows::Rng& rng, double dropRate, int setSize) {
    if (sets < 1) throw std::invalid_argument("task B: sets must be >= 1");
    if (setSize < 1) throw std::invalid_argument("task B: setSize must be >= 1");
    if (!(dropRate >= 0 && dropRate < 1))
        throw std::invalid_argument("task B: drop rate must be in [0, 1), got " + std::to_string(dropRate));
    flows::Rng drops(rng.nextUint64());
    const int kept = std::max(1, setSize - int(std::lround(dropRate * setSize)));
    Batch b;
    b.setSize = kept;
    b.tokens.resize(2, Eigen::Index(sets) * kept);
    b.labels.resize(std::size_t(sets));
    Matrix points(2, setSize);
    std::vector<int> order(static_cast<std::size_t>(setSize));
    for (int s = 0; s < sets; ++s) {
        const int label = int(rng.below(kTaskBClasses));
        const double angle = 2 * kPi * rng.uniform(), scale = 0.7 + 0.6 * rng.uniform();
        Eigen::Matrix2d R;
        R << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
        for (int j = 0; j < setSize; ++j) {
            const double u = rng.uniform(), v = rng.uniform();
            // Through a fixed-size vector: g++ 12 misreads the 2x2 product assigned to a dynamic column
            // (-Wstringop-overread). The same operations in the same order as before.
            const Eigen::Vector2d p = scale * (R * shapePoint(label, u, v));
            points(0, j) = p(0) + 0.03 * rng.normal();
            points(1, j) = p(1) + 0.03 * rng.normal();
        }
        // Keep a uniformly random subset of `kept` points (a partial Fisher–Yates shuffle).
        std::iota(order.begin(), order.end(), 0);
        for (int j = 0; j < kept; ++j)
            std::swap(order[std::size_t(j)],
                      order[std::size_t(j + int(drops.below(std::uint64_t(setSize - j))))]);
        for (int j = 0; j < kept; ++j)
            b.tokens.col(Eigen::Index(s) * kept + j) = points.col(order[std::size_t(j)]);
        b.labels[std::size_t(s)] = label;
    }
    return b;
}

} // namespace flowscope::ot
