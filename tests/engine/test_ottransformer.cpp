// Continuous-time Transformers (engine/ottransformer). Oracles: central finite differences of the whole
// objective (8) for every architecture, integrator, head and convention; exact identities between the
// architectures (one Euler step of the increment velocity is the discrete block); RK4's fourth order; the
// closed-form optimum of task A (its optimality conditions); the path statistics of known paths; the
// task generators' laws; and the trainer reaching task A's closed form.
#include "engine/flows/StepGuard.h"
#include "engine/io/Safetensors.h"
#include "engine/ottransformer/TransformerIo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

using namespace flowscope;
using namespace flowscope::ot;

// --- Helpers ---

namespace {

TransformerConfig smallConfig() {
    TransformerConfig c;
    c.inputDim = 2;
    c.embed = true;
    c.width = 3;
    c.heads = 2;
    c.headDim = 2;
    c.mlpHidden = 5;
    c.blocks = 2;
    c.steps = 3;
    c.horizon = 0.7;
    c.head = Head::PooledLinear;
    c.classes = 3;
    c.lambdaOt = 0.3;
    c.seed = 5;
    return c;
}

Batch smallBatch(const TransformerConfig& c, std::uint64_t seed, int sets = 3, int n = 4) {
    flows::Rng rng(seed);
    Batch b;
    b.setSize = n;
    b.tokens.resize(c.inputDim, sets * n);
    for (Eigen::Index i = 0; i < b.tokens.size(); ++i) b.tokens(i) = rng.normal();
    if (c.head == Head::Mean) {
        b.targets.resize(c.outputDim(), sets);
        for (Eigen::Index i = 0; i < b.targets.size(); ++i) b.targets(i) = rng.normal();
    } else {
        for (int s = 0; s < sets; ++s) b.labels.push_back(int(rng.below(std::uint64_t(c.classes))));
    }
    return b;
}

double lossOf(const TransformerModel& m, const Batch& b) {
    Tape t;
    TransformerParams g;
    LossTerms terms;
    m.recordLoss(t, b, g, &terms);
    return terms.loss;
}

// The tape's gradient of the whole objective against Richardson-extrapolated central differences, entry by
// entry over every parameter block; returns the largest relative error.
double gradientError(const TransformerConfig& c, std::uint64_t seed) {
    TransformerModel m(c);
    // Move LayerNorm gains and biases off their initial 1 and 0 so their gradients are generic.
    flows::Rng rng(seed + 100);
    m.params().forEach(m.params(), [&](Matrix& v, Matrix&, const std::string&) {
        for (Eigen::Index i = 0; i < v.size(); ++i) v(i) += 0.1 * rng.normal();
    });
    const Batch b = smallBatch(c, seed);
    Tape t;
    TransformerParams g = m.params().zerosLike();
    t.backward(m.recordLoss(t, b, g, nullptr));
    double worst = 0;
    m.params().forEach(g, [&](Matrix& v, Matrix& grad, const std::string& name) {
        for (Eigen::Index i = 0; i < v.size(); ++i) {
            const double x = v(i), h = 1e-4 * std::max(1.0, std::abs(x));
            auto central = [&](double s) {
                v(i) = x + s;
                const double up = lossOf(m, b);
                v(i) = x - s;
                const double down = lossOf(m, b);
                v(i) = x;
                return (up - down) / (2 * s);
            };
            const double fd = (4 * central(h / 2) - central(h)) / 3;
            const double err = std::abs(fd - grad(i)) / std::max(std::abs(fd) + std::abs(grad(i)), 1e-6);
            if (err > worst) {
                worst = err;
                if (err > 1e-6)
                    ADD_FAILURE() << name << "[" << i << "]: analytic " << grad(i) << ", finite difference "
                                  << fd;
            }
        }
    });
    return worst;
}

} // namespace

// --- Gradients, conventions and integrators ---

TEST(OtTransformer, GradientOfTheObjectiveMatchesFiniteDifferences) {
    struct Case {
        const char* name;
        Architecture arch;
        Integrator integrator;
        bool layerNorm, increment;
        Head head;
        KineticConvention convention;
    };
    const Case cases[] = {
        {"ot euler", Architecture::OtTransformer, Integrator::Euler, false, false, Head::PooledLinear,
         KineticConvention::ElementMean},
        {"ot rk4 layernorm", Architecture::OtTransformer, Integrator::Rk4, true, false, Head::PooledLinear,
         KineticConvention::Paper},
        {"ot increment mean-head", Architecture::OtTransformer, Integrator::Euler, false, true, Head::Mean,
         KineticConvention::ElementMean},
        {"node euler", Architecture::NodeTransformer, Integrator::Euler, true, false, Head::PooledLinear,
         KineticConvention::ElementMean},
        {"discrete", Architecture::Discrete, Integrator::Euler, true, false, Head::PooledLinear,
         KineticConvention::ElementMean},
        {"ot pad mean-head", Architecture::OtTransformer, Integrator::Euler, false, false, Head::Mean,
         KineticConvention::Paper},
        {"ot pad-copy routing", Architecture::OtTransformer, Integrator::Euler, false, true, Head::Mean,
         KineticConvention::ElementMean},
    };
    for (const Case& k : cases) {
        TransformerConfig c = smallConfig();
        c.architecture = k.arch;
        c.integrator = k.integrator;
        c.layerNorm = k.layerNorm;
        c.incrementVelocity = k.increment;
        c.head = k.head;
        c.convention = k.convention;
        if (k.head == Head::Mean) c.embed = false, c.inputDim = c.width;
        if (std::string(k.name).starts_with("ot pad")) {
            // The fixed padding embedding [x; 0] (width 3) or [x; x; 0] with the routing initialization (6).
            c.inputDim = 2;
            c.padEmbed = true;
            c.padCopy = c.routingInit = std::string(k.name).ends_with("routing");
            c.width = c.padCopy ? 6 : 3;
        }
        const double err = gradientError(c, 7);
        std::printf("[ gradcheck ] %-24s max rel error %.1e\n", k.name, err);
        EXPECT_LT(err, 1e-6) << k.name;
    }
}

TEST(OtTransformer, OneEulerStepOfTheIncrementIsTheDiscreteBlock) {
    TransformerConfig c = smallConfig();
    c.blocks = 1;
    c.layerNorm = true;
    c.architecture = Architecture::Discrete;
    const TransformerModel discrete(c);
    c.architecture = Architecture::OtTransformer;
    c.incrementVelocity = true;
    c.steps = 1;
    c.horizon = 1.0;
    const TransformerModel ode(c, discrete.params());
    const Batch b = smallBatch(c, 3);
    EXPECT_LT((ode.output(b.tokens, b.setSize) - discrete.output(b.tokens, b.setSize)).cwiseAbs().maxCoeff(),
              1e-14);
    // With the paper's velocity (the stack with its skips) one step gives X + block(X) instead.
    c.incrementVelocity = false;
    const TransformerModel stack(c, discrete.params());
    std::vector<Matrix> s1, s2;
    stack.output(b.tokens, b.setSize, &s1);
    discrete.output(b.tokens, b.setSize, &s2);
    EXPECT_LT((s1.back() - (s2.front() + s2.back())).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(OtTransformer, ConventionsAgreeAtTheMappedLambda) {
    TransformerConfig c = smallConfig();
    const Batch b = smallBatch(c, 4);
    const TransformerModel code(c);
    c.convention = KineticConvention::Paper;
    c.lambdaOt = 2.0 * 0.3 / (b.setSize * c.width);
    const TransformerModel paper(c, code.params());
    EXPECT_NEAR(lossOf(code, b), lossOf(paper, b), 1e-13);
    EXPECT_NEAR(code.paperLambda(b.setSize), c.lambdaOt, 1e-15);
    EXPECT_NEAR(code.stabilityThreshold(b.setSize),
                paper.stabilityThreshold(b.setSize) * b.setSize * c.width / 2.0, 1e-13);
}

TEST(OtTransformer, Rk4IsFourthOrder) {
    TransformerConfig c = smallConfig();
    c.layerNorm = false;
    c.integrator = Integrator::Rk4;
    TransformerModel m(c);
    // Halved weights keep the attention logits moderate, so M = 8 is already in the asymptotic regime (at
    // the initial scale the ratios wander between 7 and 100 up to M = 64: large higher derivatives).
    m.params().forEach(m.params(), [](Matrix& v, Matrix&, const std::string&) { v *= 0.5; });
    const Batch b = smallBatch(c, 9);
    auto outputAt = [&](int steps) {
        TransformerConfig k = c;
        k.steps = steps;
        return TransformerModel(k, m.params()).output(b.tokens, b.setSize);
    };
    const Matrix ref = outputAt(1000);
    const double e8 = (outputAt(8) - ref).norm(), e16 = (outputAt(16) - ref).norm();
    std::printf("[ rk4       ] error at M = 8: %.2e, M = 16: %.2e, ratio %.1f (fourth order: 16)\n", e8, e16,
                e8 / e16);
    EXPECT_GT(e8 / e16, 12.0);
    EXPECT_LT(e8 / e16, 20.0);
}

TEST(OtTransformer, PathStatsOfKnownPaths) {
    // One set of two tokens in R². A straight path at constant speed: straightness 1, CV 0.
    Matrix x0(2, 2);
    x0 << 0, 1, 0, 1;
    Matrix d(2, 2);
    d << 1, 1, 0, 0;
    std::vector<Matrix> straight = {x0, x0 + d, x0 + 2 * d, x0 + 3 * d};
    PathStats s = pathStats(straight, 2);
    EXPECT_NEAR(s.straightness, 1.0, 1e-15);
    EXPECT_NEAR(s.speedCv, 0.0, 1e-15);
    // Two equal steps at a right angle: straightness √2 / 2. Steps of length 1 and 3 on a line: CV 1/2.
    Matrix e(2, 2);
    e << 0, 0, 1, 1;
    s = pathStats({x0, x0 + d, x0 + d + e}, 2);
    EXPECT_NEAR(s.straightness, std::sqrt(0.5), 1e-15);
    s = pathStats({x0, x0 + d, x0 + 4 * d}, 2);
    EXPECT_NEAR(s.straightness, 1.0, 1e-15);
    EXPECT_NEAR(s.speedCv, 0.5, 1e-15);
}

// --- Closed forms and tasks ---

TEST(OtTransformer, TaskAClosedFormIsOptimal) {
    // X* minimizes J(X) = G(X) + λ/(2T) ‖X - X0‖²_F, the value of a straight constant-speed path to X under
    // objective (8): its gradient (1/n)(ψX - y)1ᵀ + (λ/T)(X - X0) vanishes, and random perturbations cost.
    flows::Rng rng(1);
    const Batch b = sampleTaskA(5, rng);
    const double lambda = 0.4, T = 1.3;
    const Matrix X = taskAClosedFormState(b, lambda, T);
    const Matrix y = taskAClosedFormOutput(b, lambda, T);
    const int n = b.setSize;
    auto J = [&](const Matrix& Z) {
        double j = 0;
        for (int s = 0; s < b.sets(); ++s) {
            const Eigen::Vector2d mean = Z.middleCols(s * n, n).rowwise().mean();
            j += 0.5 * (mean - b.targets.col(s)).squaredNorm() +
                 lambda / (2 * T) * (Z - b.tokens).middleCols(s * n, n).squaredNorm();
        }
        return j;
    };
    for (int s = 0; s < b.sets(); ++s) {
        const Eigen::Vector2d mean = X.middleCols(s * n, n).rowwise().mean();
        EXPECT_LT((mean - y.col(s)).norm(), 1e-14);
        for (int j = 0; j < n; ++j) {
            const Eigen::Vector2d grad =
                (mean - b.targets.col(s)) / n + lambda / T * (X.col(s * n + j) - b.tokens.col(s * n + j));
            EXPECT_LT(grad.norm(), 1e-14);
        }
    }
    for (int k = 0; k < 20; ++k) {
        Matrix P = X;
        for (Eigen::Index i = 0; i < P.size(); ++i) P(i) += 1e-3 * rng.normal();
        EXPECT_GT(J(P), J(X));
    }
    // λ = 0: the output is the target itself.
    EXPECT_EQ(taskAClosedFormOutput(b, 0.0, T), b.targets);
}

TEST(OtTransformer, TheoremTwoConstantsOfTheMeanHead) {
    TransformerConfig c = taskModel(Task::A);
    c.lambdaOt = 2.0;
    const TransformerModel m(c);
    EXPECT_NEAR(m.outputLipschitz(6), 1 / std::sqrt(6.0), 1e-15);
    EXPECT_NEAR(m.outputLipschitz(6, true), std::sqrt(2.0 / 6.0), 1e-15);
    EXPECT_NEAR(m.stabilityThreshold(6), 1.0, 1e-14); // T L² n d / 2 = 1 in the per-element convention
    EXPECT_NEAR(m.paperLambda(6), 2.0 / 6.0, 1e-15);
    EXPECT_NEAR(m.lipschitzBound(6), (1 / std::sqrt(6.0)) / (1 - (1.0 / 6) / (1.0 / 3)), 1e-14);
    c.lambdaOt = 1.0; // exactly at the threshold: no bound
    EXPECT_TRUE(std::isinf(TransformerModel(c).lipschitzBound(6)));
}

TEST(OtTransformer, PaddingEmbeddingAndMeanRouting) {
    // x -> [x; x; 0] in R^6; the mean head reads the first two coordinates. The routing initialization gives
    // uniform attention that carries the copy's mean into the free coordinates, so the first velocity of the
    // first two coordinates is the same for every token of a set, and the copy does not move.
    TransformerConfig c = taskModel(Task::A);
    c.width = c.headDim = 6;
    c.padEmbed = c.padCopy = c.routingInit = true;
    c.incrementVelocity = true;
    c.steps = 1;
    c.lambdaOt = 0.5;
    c.convention = KineticConvention::Paper;
    const TransformerModel m(c);
    ASSERT_EQ(c.outputDim(), 2);
    const Batch b = smallBatch(c, 12, 3, 6);
    std::vector<Matrix> states;
    const Matrix out = m.output(b.tokens, b.setSize, &states);
    ASSERT_EQ(states.front().rows(), 6);
    EXPECT_EQ(states.front().topRows(2), b.tokens);
    EXPECT_EQ(states.front().middleRows(2, 2), b.tokens);
    EXPECT_TRUE(states.front().bottomRows(2).isZero(0));
    const Matrix moved = states.back() - states.front();
    EXPECT_TRUE(moved.middleRows(2, 2).isZero(0));
    for (int s = 0; s < b.sets(); ++s) {
        for (int j = 1; j < b.setSize; ++j)
            EXPECT_LT((moved.col(s * b.setSize + j).head(2) - moved.col(s * b.setSize).head(2)).norm(),
                      1e-14);
        EXPECT_LT(
            (out.col(s) - states.back().middleCols(s * b.setSize, b.setSize).topRows(2).rowwise().mean())
                .norm(),
            1e-14);
    }
    // The head's constants are those of task A's d = 2 model: L = 1/√n, Frobenius √(2/n).
    EXPECT_NEAR(m.outputLipschitz(6), 1 / std::sqrt(6.0), 1e-15);
    EXPECT_NEAR(m.outputLipschitz(6, true), std::sqrt(2.0 / 6.0), 1e-15);
    OtTrainerConfig t = defaultTrainerConfig(Task::A);
    t.model = c;
    EXPECT_NO_THROW(OtTrainer{t});
    // Bad combinations name the field.
    TransformerConfig bad = c;
    bad.width = 5; // the routing needs 3 inputDim
    EXPECT_THROW(TransformerModel{bad}, std::invalid_argument);
    bad = c;
    bad.embed = true;
    EXPECT_THROW(TransformerModel{bad}, std::invalid_argument);
    bad = c;
    bad.padEmbed = false;
    EXPECT_THROW(TransformerModel{bad}, std::invalid_argument);
}

TEST(OtTransformer, TaskGenerators) {
    flows::Rng rng(2);
    const Batch a = sampleTaskA(4, rng);
    ASSERT_EQ(a.tokens.cols(), 24);
    for (int s = 0; s < 4; ++s)
        EXPECT_EQ(a.targets.col(s), taskATarget(a.tokens.middleCols(s * 6, 6).rowwise().mean()));

    flows::Rng r1(3), r2(3);
    const Batch full = sampleTaskB(200, r1), dropped = sampleTaskB(200, r2, 0.5);
    ASSERT_EQ(full.setSize, 64);
    ASSERT_EQ(dropped.setSize, 32);
    EXPECT_EQ(full.labels, dropped.labels);
    int counts[4] = {0, 0, 0, 0};
    for (int s = 0; s < 200; ++s) {
        ++counts[full.labels[std::size_t(s)]];
        // Every kept point is one of the full set's points (the same shapes at every drop rate).
        for (int j = 0; j < 32; ++j) {
            const Eigen::Vector2d p = dropped.tokens.col(s * 32 + j);
            double nearest = 1e9;
            for (int i = 0; i < 64; ++i)
                nearest = std::min(nearest, (full.tokens.col(s * 64 + i) - p).norm());
            EXPECT_EQ(nearest, 0.0);
        }
        // Circles: every point at the set's scale from the origin, within the jitter.
        if (full.labels[std::size_t(s)] == 0) {
            const Eigen::ArrayXd r = full.tokens.middleCols(s * 64, 64).colwise().norm().transpose().array();
            EXPECT_LT(r.maxCoeff() - r.minCoeff(), 0.3);
            EXPECT_GT(r.mean(), 0.65);
            EXPECT_LT(r.mean(), 1.35);
        }
    }
    for (int k = 0; k < 4; ++k) EXPECT_GT(counts[k], 30) << taskBClassName(k);
    EXPECT_THROW(sampleTaskB(1, r1, 1.0), std::invalid_argument);
}

// --- Training ---

TEST(OtTransformer, StepGuardRejectsRestoresAndStops) {
    flows::Adam<double> adam({.lr = 0.1});
    flows::StepGuard guard;
    int restores = 0;
    for (int k = 1; k <= flows::StepGuard::kStopAfter; ++k) {
        const auto r = guard.reject("nan", adam);
        restores += r.restore;
        EXPECT_EQ(r.stop, k == flows::StepGuard::kStopAfter);
    }
    EXPECT_EQ(restores, 6);
    EXPECT_NEAR(adam.learningRateScale(), std::pow(0.5, 20), 1e-20);
    guard.accept(adam);
    EXPECT_EQ(guard.rejectedInARow(), 0);
    EXPECT_NEAR(adam.learningRateScale(), std::pow(0.5, 20) * std::exp2(1.0 / 50), 1e-20);
}

TEST(OtTransformer, BadConfigurationsNameTheField) {
    TransformerConfig c = taskModel(Task::A);
    c.steps = 0;
    try {
        TransformerModel m(c);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("steps"), std::string::npos) << e.what();
    }
    c = taskModel(Task::A);
    c.width = 3; // no embedding: the tokens' dimension must be the width
    EXPECT_THROW(TransformerModel{c}, std::invalid_argument);
    OtTrainerConfig t = defaultTrainerConfig(Task::A);
    t.model = taskModel(Task::B);
    EXPECT_THROW(OtTrainer{t}, std::invalid_argument);
    EXPECT_THROW(architectureFromString("rnn"), std::invalid_argument);
}

TEST(OtTransformer, TheTrainersHalvesAddUpToTheWholeBatch) {
    // The trainer splits each batch over two tapes (in parallel); the loss it records is the whole batch's.
    OtTrainerConfig c = defaultTrainerConfig(Task::B);
    c.model.lambdaOt = 0.3;
    c.batch = 7; // unequal halves
    c.evalSets = 10;
    OtTrainer trainer(c);
    ASSERT_TRUE(trainer.step());
    const TransformerModel fresh(c.model); // the same seed: the parameters before the step
    Tape t;
    TransformerParams g;
    LossTerms whole;
    fresh.recordLoss(t, trainer.batch(), g, &whole);
    const LossTerms& split = trainer.history()[0].terms;
    EXPECT_NEAR(split.loss, whole.loss, 1e-12 * whole.loss);
    EXPECT_NEAR(split.transport, whole.transport, 1e-12 * whole.transport);
    EXPECT_NEAR(split.accuracy, whole.accuracy, 1e-15);
}

TEST(OtTransformer, TaskATrainingApproachesTheClosedForm) {
    // Above the stability threshold (λ = 4 in the per-element convention, threshold 1) the learned map's
    // output approaches the closed-form optimum and the paths straighten.
    OtTrainerConfig c = defaultTrainerConfig(Task::A);
    c.model.lambdaOt = 4.0;
    c.model.incrementVelocity = true;
    c.evalSets = 200;
    OtTrainer trainer(c);
    const OtEvaluation before = trainer.evaluate();
    for (int k = 0; k < 400; ++k) ASSERT_TRUE(trainer.step());
    const OtEvaluation after = trainer.evaluate();
    std::printf(
        "[ task A    ] closed-form error %.3f -> %.3f, straightness %.4f -> %.4f, loss %.4f -> %.4f\n",
        before.closedFormError, after.closedFormError, before.straightness, after.straightness,
        before.terms.loss, after.terms.loss);
    EXPECT_LT(after.terms.loss, before.terms.loss);
    EXPECT_LT(after.closedFormError, 0.5 * before.closedFormError);
    EXPECT_GT(after.straightness, 0.95);
    EXPECT_EQ(after.nonFiniteSteps, 0);
    EXPECT_LE(after.lipschitzRatio, after.lipschitzBound * 1.5);
    // No discrete path beats the closed form: Σ Δt ‖ΔX/Δt‖² >= ‖X_M - X_0‖² / T (Cauchy–Schwarz), and the
    // straight path to X* minimizes G + λ/(2T)‖X - X_0‖² (previous test).
    EXPECT_GE(after.terms.loss, after.optimalLoss);
    EXPECT_GE(before.terms.loss, before.optimalLoss);
    EXPECT_GT(after.optimalLoss, 0.0);
}

TEST(OtTransformer, TaskAWithTheMeanMemoryGetsCloseToTheClosedForm) {
    // The train-transformer --width 6 --pad-copy --routing-init --increment setting (paper λ = 2): the
    // velocity can depend on the initial mean token, which the optimum needs; a short run is already close.
    OtTrainerConfig c = defaultTrainerConfig(Task::A);
    c.model.width = c.model.headDim = 6;
    c.model.padEmbed = c.model.padCopy = c.model.routingInit = true;
    c.model.incrementVelocity = true;
    c.model.convention = KineticConvention::Paper;
    c.model.lambdaOt = 2.0;
    c.evalSets = 200;
    OtTrainer trainer(c);
    for (int k = 0; k < 600; ++k) ASSERT_TRUE(trainer.step());
    const OtEvaluation e = trainer.evaluate();
    std::printf("[ task A    ] mean memory: closed-form error %.4f, straightness %.5f, loss - optimum %.2e\n",
                e.closedFormError, e.straightness, e.terms.loss - e.optimalLoss);
    EXPECT_LT(e.closedFormError, 0.04); // 0.025 here (averaged); task A's d = 2 model: 0.25 after 400 steps
    EXPECT_GT(e.straightness, 0.999);
    EXPECT_GE(e.terms.loss, e.optimalLoss);
}

// --- Files ---

TEST(OtTransformer, ModelsRoundTripBitForBitAndBadFilesAreNamed) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("flowscope-ot-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "model.safetensors").string();
    TransformerConfig c = smallConfig();
    c.layerNorm = true;
    c.integrator = Integrator::Rk4;
    TransformerModel m(c);
    m.params().forEach(m.params(), [](Matrix& v, Matrix&, const std::string&) { v.array() += 1.0 / 3.0; });
    saveTransformer(path, m, {{"note", "test"}});
    EXPECT_TRUE(fs::exists(dir / "model.json"));
    const TransformerModel back = loadTransformer(path);
    const Batch b = smallBatch(c, 11);
    EXPECT_EQ(back.output(b.tokens, b.setSize), m.output(b.tokens, b.setSize)); // bit for bit
    EXPECT_EQ(back.config().integrator, Integrator::Rk4);

    auto expectError = [&](const SafeTensors& f, const std::string& needle) {
        const std::string bad = (dir / "bad.safetensors").string();
        writeSafetensors(bad, f);
        try {
            loadTransformer(bad);
            ADD_FAILURE() << "no error for " << needle;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    const SafeTensors good = readSafetensors(path);
    SafeTensors f = good;
    f.tensors.erase(f.tensors.begin() + 1);
    expectError(f, good.tensors[1].name);
    f = good;
    f.tensors[0].data[0] = std::nan("");
    expectError(f, "NaN");
    f = good;
    auto arch = nlohmann::json::parse(f.metadata["flowscope_transformer"]);
    arch["steps"] = 0;
    f.metadata["flowscope_transformer"] = arch.dump();
    expectError(f, "architecture/steps");
    arch["steps"] = 3;
    arch["integrator"] = "leapfrog";
    f.metadata["flowscope_transformer"] = arch.dump();
    expectError(f, "architecture/integrator");
    f = good;
    f.tensors.push_back(matrixTensor("block9.Q", Matrix::Zero(2, 2), false));
    expectError(f, "block9.Q");
    // Files written before the padding embedding have no pad_* fields: they load with it off.
    f = good;
    arch = nlohmann::json::parse(f.metadata["flowscope_transformer"]);
    for (const char* k : {"pad_embed", "pad_copy", "routing_init"}) {
        ASSERT_TRUE(arch.contains(k));
        arch.erase(k);
    }
    f.metadata["flowscope_transformer"] = arch.dump();
    const std::string old = (dir / "old.safetensors").string();
    writeSafetensors(old, f);
    EXPECT_FALSE(loadTransformer(old).config().padEmbed);
    EXPECT_EQ(loadTransformer(old).output(b.tokens, b.setSize), m.output(b.tokens, b.setSize));
    // A padded model round-trips with its embedding.
    TransformerConfig pc = taskModel(Task::A);
    pc.width = pc.headDim = 6;
    pc.padEmbed = pc.padCopy = pc.routingInit = true;
    const TransformerModel pm(pc);
    saveTransformer(path, pm, {});
    const TransformerModel pback = loadTransformer(path);
    EXPECT_TRUE(pback.config().padEmbed && pback.config().padCopy && pback.config().routingInit);
    const Batch pb = smallBatch(pc, 13, 2, 6);
    EXPECT_EQ(pback.output(pb.tokens, pb.setSize), pm.output(pb.tokens, pb.setSize));
    fs::remove_all(dir);
}

// --- Iterate averaging ---

namespace {

// Task A at λ_paper = 1 on small batches: a few cheap steps that move every parameter.
OtTrainerConfig averagingConfig(long averageIterations) {
    OtTrainerConfig c = defaultTrainerConfig(Task::A);
    c.model.incrementVelocity = true;
    c.model.convention = KineticConvention::Paper;
    c.model.lambdaOt = 1.0;
    c.batch = 8;
    c.evalSets = 20;
    c.averageIterations = averageIterations;
    return c;
}

// max |a - b| over all blocks.
double maxDifference(TransformerParams a, TransformerParams b) {
    double d = 0;
    a.forEach(
        b, [&](Matrix& x, Matrix& y, const std::string&) { d = std::max(d, (x - y).cwiseAbs().maxCoeff()); });
    return d;
}

} // namespace

TEST(OtTransformer, TheIterateAverageFollowsItsRecursion) {
    // Time constant K = 2: τ_k = min(2, (k + 9) / 10) = 1, 1.1, 1.2, ..., 2 from step 11 on, and
    // a_k = a_{k-1} + (θ_k - a_{k-1}) / τ_k; in particular a_1 = θ_1 and a_2 = (θ_1 + 10 θ_2) / 11.
    OtTrainer trainer(averagingConfig(2));
    EXPECT_EQ(&trainer.evaluatedModel(), &trainer.model()); // no step yet: the parameters as they are
    TransformerParams expected, first;
    for (int k = 1; k <= 14; ++k) {
        ASSERT_TRUE(trainer.step());
        TransformerParams theta = trainer.model().params();
        const double tau = k <= 11 ? 1.0 + (k - 1) / 10.0 : 2.0;
        if (k == 1) {
            expected = first = theta;
        } else {
            expected.forEach(theta, [tau](Matrix& a, Matrix& b, const std::string&) { a += (b - a) / tau; });
        }
        if (k == 2) {
            TransformerParams mean = first;
            mean.forEach(theta, [](Matrix& a, Matrix& b, const std::string&) { a = (a + 10.0 * b) / 11.0; });
            EXPECT_LT(maxDifference(trainer.evaluatedModel().params(), mean), 1e-14);
        }
        EXPECT_LT(maxDifference(trainer.evaluatedModel().params(), expected), 1e-14) << "step " << k;
        if (k > 1) {
            EXPECT_GT(maxDifference(trainer.evaluatedModel().params(), theta), 1e-6) << "step " << k;
        }
    }
    // evaluate() measures the average: a trainer holding it as its parameters gives the same numbers.
    const OtEvaluation e = trainer.evaluate();
    OtTrainer plain(averagingConfig(0));
    plain.model().params() = trainer.evaluatedModel().params();
    const OtEvaluation p = plain.evaluate();
    EXPECT_EQ(e.closedFormError, p.closedFormError);
    EXPECT_EQ(e.terms.loss, p.terms.loss);
    EXPECT_EQ(e.straightness, p.straightness);
}

TEST(OtTransformer, AveragingNeverChangesTheTrajectory) {
    // The average is only read: the iterates, losses and rates are those of a run without it, bit for bit,
    // and without it evaluate() measures the last iterate.
    OtTrainer off(averagingConfig(0)), on(averagingConfig(4));
    for (int k = 0; k < 12; ++k) {
        ASSERT_TRUE(off.step());
        ASSERT_TRUE(on.step());
        EXPECT_EQ(off.history().back().terms.loss, on.history().back().terms.loss);
        EXPECT_EQ(off.learningRate(), on.learningRate());
    }
    EXPECT_EQ(maxDifference(off.model().params(), on.model().params()), 0.0);
    EXPECT_EQ(&off.evaluatedModel(), &off.model());
    OtTrainer fresh(averagingConfig(0));
    fresh.model().params() = off.model().params();
    EXPECT_EQ(off.evaluate().closedFormError, fresh.evaluate().closedFormError);
}

TEST(OtTransformer, SavedModelsHoldTheAveragedParameters) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("flowscope-ot-avg-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "model.safetensors").string();
    OtTrainer trainer(averagingConfig(5));
    for (int k = 0; k < 9; ++k) ASSERT_TRUE(trainer.step());
    trainer.evaluate();
    saveTransformer(path, trainer, 0.0);
    const TransformerModel back = loadTransformer(path);
    EXPECT_EQ(maxDifference(back.params(), trainer.evaluatedModel().params()), 0.0);
    EXPECT_GT(maxDifference(back.params(), trainer.model().params()), 1e-6);
    std::ifstream in(dir / "model.json");
    const nlohmann::json record = nlohmann::json::parse(in);
    EXPECT_EQ(record["training"]["average_iterations"], 5);
    fs::remove_all(dir);
}
