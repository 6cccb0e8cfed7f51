// flowscope-cli bench: throughput of the velocity kernels against a dense baseline in the same run.
//
// pairs_per_s = N^2 / (seconds per velocity evaluation): every variant is charged N^2 pair interactions per
// evaluation, whatever it does internally (Sinkhorn runs 2 * iterations + 1 passes; linear needs only the
// O(N d^2) moments; masked touches N(N+1)/2 pairs). The baseline is the plain dense implementation a user
// would write with Eigen (single thread, float32): the N x N score matrix, its weights, one matrix product.
//
// Fraction of peak: a pair interaction of a dot-product head costs 4d + 2 flops (score q.x_j: 2d; weight: 1,
// an exp counted as one; weighted sum of x_j: 2d; denominator: 1), times the number of heads; the same
// nominal count is charged to every variant. The peak is the measured CPU FP32 peak (the right one for the
// CPU and for Mesa's llvmpipe/lavapipe, which run on it) unless --peak-flops gives a GPU's.
#include "Commands.h"

#include "engine/attention/KernelAttention.h"
#include "engine/attention/RwpoAttention.h"
#include "engine/attention/StreamKernel.h"
#include "engine/backend/PrepareRun.h"
#include "engine/core/Parallel.h"
#include "engine/core/Text.h"
#include "engine/dynamics/Simulation.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

namespace flowscope::cli {

// --- Options and the benchmark scenes ---

std::vector<long> parseTokenCounts(const std::string& text) {
    std::vector<long> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        try {
            out.push_back(std::stol(item));
        } catch (...) {
            throw UsageError("--n: expected comma-separated integers, got " + quoteForMessage(text));
        }
        if (out.back() < 1 || out.back() > (1L << 24)) throw UsageError("--n: values must be in [1, 2^24]");
    }
    return out;
}

// The integrator --method names (the scene's names: euler, heun, rk4, dopri5).
Method parseRunMethod(const std::string& text) {
    for (Method m : {Method::Euler, Method::Heun, Method::Rk4, Method::DormandPrince})
        if (text == toString(m)) return m;
    throw UsageError("--method: expected euler, heun, rk4 or dopri5, got " + quoteForMessage(text));
}

Scene benchScene(int d, int n, Method method, int steps) {
    Scene s;
    s.name = "bench-run";
    s.d = d;
    s.n = n;
    s.precision = Precision::Float32;
    s.initial.mean = Vec::Zero(d);
    s.initial.cov = Mat::Identity(d, d);
    s.attention.heads = {{Mat::Identity(d, d), Mat::Identity(d, d), -0.5 * Mat::Identity(d, d)}};
    s.integrator.method = method;
    s.integrator.T = 0.01 * steps;
    s.integrator.steps = steps;
    return s;
}

// --- Dense references for the attention variants ---

namespace {

using MatF = Eigen::MatrixXf;
using VecF = Eigen::VectorXf;
using Clock = std::chrono::steady_clock;

constexpr int kSinkhornIterations = 10;
constexpr long kDenseMaxN = 16384; // the N x N float matrix is 1 GiB there; 16 GiB at 65536

const std::vector<std::string> kVariants = {"softmax", "l2",     "sinkhorn",     "linear",    "exp", "relu",
                                            "sigmoid", "masked", "masked-alibi", "multihead", "rwpo"};
// masked-alibi: masked softmax with the positional decay lambda below (docs/math/theory.md#positional-decay).
constexpr double kBenchPositionalDecay = 8.0;

AttentionSpec specFor(const std::string& v, int d) {
    // The variants that are an attention type as it is, with the one head below.
    static const std::map<std::string, AttentionType> kPlain = {
        {"softmax", AttentionType::Softmax}, {"l2", AttentionType::L2},
        {"linear", AttentionType::Linear},   {"exp", AttentionType::Exp},
        {"relu", AttentionType::Relu},       {"sigmoid", AttentionType::Sigmoid}};
    AttentionSpec s;
    const Mat I = Mat::Identity(d, d);
    s.heads = {HeadParams{I, I, -0.5 * I}};
    if (const auto plain = kPlain.find(v); plain != kPlain.end()) {
        s.type = plain->second;
    } else if (v == "sinkhorn") {
        s.type = AttentionType::Sinkhorn;
        s.sinkhornIterations = kSinkhornIterations;
        s.sinkhornTol = 0.0; // always run the full iteration count: comparable timings
    } else if (v == "masked" || v == "masked-alibi") {
        s.type = AttentionType::Softmax;
        s.masked = true;
        if (v == "masked-alibi") s.positionalDecay = kBenchPositionalDecay;
    } else if (v == "multihead") {
        s.type = AttentionType::Softmax;
        s.heads = {HeadParams{I, I, -0.5 * I}, HeadParams{I, -I, 0.25 * I}};
    } else if (v == "rwpo") {
        s.type = AttentionType::Rwpo;
        s.beta = 1.0;
    } else {
        throw UsageError("unknown variant " + quoteForMessage(v));
    }
    return s;
}

// Dense weighted average of one head: the N x N scores, their weights, one product with the tokens.
MatF denseAverage(const MatF& X, const HeadSetup& h, bool causal, double positionalDecay = 0.0) {
    const long n = X.rows();
    const MatF Q = h.queries.size() ? MatF(h.queries.cast<float>()) : MatF(X * h.B.cast<float>().transpose());
    MatF S = Q * X.transpose();
    if (h.bias.size()) S.rowwise() += h.bias.cast<float>().transpose();
    if (positionalDecay != 0.0) // the dense N x N form: -(lambda / N) |i - j| added to every score
        for (long i = 0; i < n; ++i)
            for (long j = 0; j < n; ++j)
                S(i, j) -= float(positionalDecay / double(n) * double(std::abs(i - j)));
    if (causal)
        for (long i = 0; i < n; ++i) S.row(i).tail(n - i - 1).setConstant(-INFINITY);
    VecF scale = VecF::Ones(n);
    switch (h.weighting) {
    case Weighting::Softmax:
    case Weighting::Exp: {
        const VecF m = S.rowwise().maxCoeff();
        S = (S.colwise() - m).array().exp();
        if (h.weighting == Weighting::Softmax)
            scale = S.rowwise().sum().cwiseInverse();
        else
            scale = m.array().exp() / float(n);
        break;
    }
    case Weighting::Relu:
        S = S.cwiseMax(0.0f);
        scale.setConstant(1.0f / n);
        break;
    case Weighting::Sigmoid:
        S = (1.0f + (-S.array()).exp()).inverse();
        scale.setConstant(1.0f / n);
        break;
    }
    return (S * X).array().colwise() * scale.array();
}

// Dense log-domain Sinkhorn with a fixed iteration count.
MatF denseSinkhorn(const MatF& X, const Mat& B, int iterations) {
    const long n = X.rows();
    const float logN = std::log(float(n));
    const MatF S = X * B.cast<float>().transpose() * X.transpose(); // S(i, j) = (B x_i) . x_j
    VecF f = VecF::Zero(n), g = VecF::Zero(n);
    auto lse = [](const MatF& M, bool rows) {
        if (rows) {
            const VecF m = M.rowwise().maxCoeff();
            return VecF(m.array() + (M.colwise() - m).array().exp().rowwise().sum().log());
        }
        const VecF m = M.colwise().maxCoeff().transpose();
        return VecF(m.array() +
                    (M.rowwise() - m.transpose()).array().exp().colwise().sum().log().transpose());
    };
    for (int k = 0; k < iterations; ++k) {
        f = logN - lse(S.rowwise() + g.transpose(), true).array();
        g = logN - lse(S.colwise() + f, false).array();
    }
    f = logN - lse(S.rowwise() + g.transpose(), true).array();
    const MatF P = ((S.rowwise() + g.transpose()).colwise() + f).array().exp() / float(n);
    return P * X;
}

MatF denseVelocity(const std::string& v, const AttentionSpec& spec, const MatF& X, VelocityField& field) {
    const Tokens Xd = X.cast<double>();
    const int d = int(X.cols());
    MatF out = MatF::Zero(X.rows(), d);
    if (v == "rwpo") {
        auto& rw = dynamic_cast<RwpoAttention&>(field);
        const MatF m = denseAverage(X, rw.vectorKernel(Xd), spec.masked);
        return (RwpoAttention::softThreshold(Xd, spec.lambda * spec.h).cast<float>() - m) / float(2 * spec.h);
    }
    for (const HeadParams& head : spec.headsAt(0.0)) {
        if (v == "sinkhorn") {
            const Mat B = scoreScale(spec, head) / spec.sinkhornEps * head.K.transpose() * head.Q;
            out += denseSinkhorn(X, B, spec.sinkhornIterations) * head.V.cast<float>().transpose() /
                   float(spec.sinkhornEps);
        } else if (v == "linear") {
            // The naive dense form: weights s_ij = x_j^T A x_i, average (1/N) sum_j s_ij x_j.
            HeadSetup h = dotProductHead(spec, head, Weighting::Relu);
            const MatF S = (X * h.B.cast<float>().transpose()) * X.transpose();
            out += (S * X / float(X.rows())) * head.V.cast<float>().transpose();
        } else {
            const HeadSetup h = dynamic_cast<KernelAttention&>(field).setupHead(head, Xd);
            out += denseAverage(X, h, spec.masked, spec.positionalDecay) * h.V.cast<float>().transpose();
        }
    }
    return out;
}

// The relative error of `V` (the evaluated velocity, n x d) against float64 on 256 evenly spaced rows, as the
// PyTorch peers measure theirs: |V_S - R_S|_F / |R_S|_F, R the float64 streaming pass of those rows' queries
// against all keys (the CPU reference kernel: 256 N pairs in double). NaN for variants that are not a plain
// kernel average (Sinkhorn, linear, RWPO) and for masked attention or positional decay.
double sampledRelativeError(const AttentionSpec& spec, const Tokens& X, const Tokens& V) {
    if (spec.masked || spec.positionalDecay != 0.0 || spec.type == AttentionType::Sinkhorn ||
        spec.type == AttentionType::Linear || spec.type == AttentionType::Rwpo)
        return NAN;
    const auto field = makeCpuField(spec, int(X.cols()), Precision::Float64);
    auto* kernel = dynamic_cast<KernelAttention*>(field.get());
    if (!kernel) return NAN;
    const Eigen::Index n = X.rows(), count = std::min<Eigen::Index>(n, 256);
    std::vector<Eigen::Index> rows;
    for (Eigen::Index k = 0; k < count; ++k) rows.push_back(k * (n / count));
    const Tokens from = X(rows, Eigen::all);
    Tokens reference = Tokens::Zero(count, X.cols());
    CpuStreamRunner runner(Precision::Float64);
    for (const HeadParams& head : spec.headsAt(0.0)) {
        const HeadSetup h = kernel->setupHead(head, X);
        const Tokens queries =
            h.queries.size() ? Tokens(h.queries(rows, Eigen::all)) : Tokens(from * h.B.transpose());
        const Mat none;
        StreamSums sums;
        runner.run(StreamPass{queries, none, X, h.bias, false, h.weighting}, sums);
        reference +=
            h.outScale * normalizeHeadAverage(sums.num, sums.den, sums.max, h.weighting, n) * h.V.transpose();
    }
    return (V(rows, Eigen::all) - reference).norm() / reference.norm();
}

// Seconds per call: a warm-up call (small N only), then repeats until ~0.4 s have passed (at least one).
constexpr int kDeviceBatch = 8; // --device-steps: Euler steps recorded per read-back

// --- Timing ---

template <class F> double timeIt(F&& f, long n, bool warmed = false) {
    if (!warmed && n <= 16384) f();
    int reps = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    do {
        f();
        ++reps;
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < 0.4 && reps < 1000);
    return elapsed / reps;
}

// --- bench run ---

// bench run: whole runs of a softmax scene (Q = K = I, V = -I/2, beta 1, N(0, I) tokens, Euler unless
// --method, float32), recording every K steps with every observable, against the same run recording only at
// t = 0 and the end (stepping alone), in one process. Per record: the milliseconds of the download (device
// runs), the one velocity/entropy/energy pass, the moments and the cluster count. --fields-only runs a GPU
// backend's fields without its stepper (a read-back per stage: what a scene the stepper refuses does).
int benchRun(const Args& args) {
    ArgParser p(args);
    const bool json = p.flag("--json");
    const std::string backendName = p.option("--backend", defaultBackendId());
    const int d = int(parseLong(p.option("--d", "3"), "--d", 1, 64));
    const auto ns = parseTokenCounts(p.option("--n", "16384"));
    const int every = int(parseLong(p.option("--every", "4"), "--every", 1, 1 << 20));
    const int steps = int(parseLong(p.option("--steps", "20"), "--steps", 1, 1 << 20));
    const Method method = parseRunMethod(p.option("--method", "euler"));
    const bool fieldsOnly = p.flag("--fields-only");
    p.rejectUnknown();
    if (!p.positional.empty()) throw UsageError("unexpected argument " + quoteForMessage(p.positional[0]));
    const ComputeBackend backend = openCliBackend(backendName);
    if (!json)
        std::cout << "whole runs: softmax d = " << d << ", " << toString(method) << ", float32, " << steps
                  << " steps recording every " << every << " (backend " << backend.id
                  << (backend.device.empty() ? "" : ": " + backend.device) << ")\n";
    for (const long n : ns) {
        const Scene s = benchScene(d, int(n), method, steps);
        bool onDevice = false;
        auto run = [&](int recordEvery) {
            Scene r = s;
            r.output.every = recordEvery;
            PreparedRun prepared = prepareRun(backend, r);
            if (fieldsOnly) prepared.makeStepper = {};
            const std::unique_ptr<Simulation> runOf = prepared.start(r);
            Simulation& sim = *runOf;
            onDevice = sim.onDevice();
            const auto start = std::chrono::steady_clock::now();
            sim.run();
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            return std::pair{wall, sim.timings()};
        };
        const auto [aloneWall, alone] = run(steps); // records at t = 0 (in the constructor) and the end
        const auto [wall, t] = run(every);
        const double records = double(t.records - 1); // the run's own records (t = 0 is the constructor's)
        const double perRecord =
            (t.download + t.pass + t.moments + t.clusters) / std::max(1.0, double(t.records));
        // A step's wall time in the run that records only at its ends (minus those two records): device
        // steps are queued, so Simulation's own step time is only their submission; the wall time counts
        // the device's work too.
        const double aloneRecords = alone.download + alone.pass + alone.moments + alone.clusters;
        const double stepMs = 1e3 * std::max(0.0, aloneWall - aloneRecords) / std::max(1L, alone.steps);
        const nlohmann::json row = {{"backend", backend.id},
                                    {"device", backend.device},
                                    {"n", n},
                                    {"d", d},
                                    {"steps", steps},
                                    {"every", every},
                                    {"method", toString(method)},
                                    {"evaluations_per_step", double(t.evaluations) / std::max(1L, t.steps)},
                                    {"steps_per_second", double(t.steps) / wall},
                                    {"records_per_second", records / wall},
                                    {"ratio_to_stepping_alone", wall / aloneWall},
                                    {"step_ms", stepMs},
                                    {"record_ms", 1e3 * perRecord},
                                    {"record_in_steps", 1e3 * perRecord / stepMs},
                                    {"record_ms_download", 1e3 * t.download / double(t.records)},
                                    {"record_ms_pass", 1e3 * t.pass / double(t.records)},
                                    {"record_ms_moments", 1e3 * t.moments / double(t.records)},
                                    {"record_ms_clusters", 1e3 * t.clusters / double(t.records)},
                                    {"device_steps", onDevice}};
        if (json) {
            std::cout << row.dump() << std::endl;
            continue;
        }
        std::cout << std::fixed << std::setprecision(2) << "N = " << n << ": "
                  << row["steps_per_second"].get<double>() << " steps/s, "
                  << row["records_per_second"].get<double>() << " records/s; "
                  << row["ratio_to_stepping_alone"].get<double>() << "x the time of stepping alone; a step "
                  << stepMs << " ms, a record " << 1e3 * perRecord
                  << " ms = " << row["record_in_steps"].get<double>() << " steps (download "
                  << row["record_ms_download"].get<double>() << ", pass "
                  << row["record_ms_pass"].get<double>() << ", moments "
                  << row["record_ms_moments"].get<double>() << ", clusters "
                  << row["record_ms_clusters"].get<double>() << " ms)\n";
    }
    return 0;
}

} // namespace

// --- bench ---

int bench(const Args& raw) {
    if (!raw.empty() && raw[0] == "train") return benchTrain(Args(raw.begin() + 1, raw.end()));
    if (!raw.empty() && raw[0] == "run") return benchRun(Args(raw.begin() + 1, raw.end()));
    if (!raw.empty() && raw[0] == "sweep") return benchSweep(Args(raw.begin() + 1, raw.end()));
    if (!raw.empty() && raw[0] == "view") return benchView(Args(raw.begin() + 1, raw.end()));
    if (!raw.empty() && raw[0] == "model") return benchModel(Args(raw.begin() + 1, raw.end()));
    ArgParser p(raw);
    const bool json = p.flag("--json");
    const int d = std::stoi(p.option("--d", "2"));
    const auto ns = parseTokenCounts(p.option("--n", "1024,4096,16384,65536"));
    const std::string precisionText = p.option("--precision", "float32");
    const std::string variantsText = p.option("--variants", "");
    const bool noBaseline = p.flag("--no-baseline");
    const std::string backendName = p.option("--backend", defaultBackendId());
    const std::string peakText = p.option("--peak-flops", "");
    const bool deviceSteps = p.flag("--device-steps");
    const bool measureError = p.flag("--error");
    const std::string threadsText = p.option("--threads");
    p.rejectUnknown();
    if (p.positional.size() == 1 && p.positional[0] == "moments") {
        std::vector<long> threads;
        if (!threadsText.empty())
            for (const std::string& t : splitCommas(threadsText))
                threads.push_back(parseLong(t, "--threads", 1, 1024));
        return benchMoments(json, threads);
    }
    if (!threadsText.empty()) throw UsageError("--threads goes with bench moments");
    if (p.positional.size() != 1 || p.positional[0] != "particles")
        throw UsageError("expected bench particles, moments, run, view, train, sweep or model");
    if (d < 1 || d > 1024) throw UsageError("--d must be in [1, 1024]");
    // One precision, or both (float32,float64): each float64 row then follows the float32 row of its N.
    std::vector<std::pair<std::string, Precision>> precisions;
    {
        const UsageError usage("--precision must be float32, float64 or float32,float64");
        std::stringstream ss(precisionText);
        std::string item;
        while (std::getline(ss, item, ',')) {
            if (item != "float32" && item != "float64") throw usage;
            precisions.emplace_back(item, item == "float32" ? Precision::Float32 : Precision::Float64);
        }
        if (precisions.empty()) throw usage;
    }
    std::vector<std::string> variants = kVariants;
    if (!variantsText.empty()) {
        variants.clear();
        std::stringstream ss(variantsText);
        std::string v;
        while (std::getline(ss, v, ',')) {
            specFor(v, d); // validates the name
            variants.push_back(v);
        }
    }

    const ComputeBackend backend = openCliBackend(backendName);
    if (deviceSteps && !backend.makeStepper)
        throw UsageError("--device-steps: backend " + backend.id + " has no device stepper (try --backend " +
                         deviceStepBackends() + ")");
    if (precisions.size() > 1 && (deviceSteps || backend.id != "cpu"))
        throw UsageError("--precision " + precisionText +
                         ": both precisions only on the cpu backend's fields");
    double peak = 0.0;
    if (!peakText.empty()) {
        try {
            peak = std::stod(peakText);
        } catch (...) {
        }
        if (!(peak > 0.0))
            throw UsageError("--peak-flops: expected a number > 0 (flop/s), got " +
                             quoteForMessage(peakText));
    } else {
        peak = measuredFp32Peak();
    }
    if (!json) {
        std::cout << (peakText.empty() ? "measured FP32 peak (independent FMAs, all threads): "
                                       : "FP32 peak (--peak-flops): ")
                  << peak / 1e9 << " Gflop/s\n";
        std::cout
            << "bench particles: "
            << (deviceSteps ? "Euler steps on the device (" + std::to_string(kDeviceBatch) +
                                  " per read-back), one evaluation each"
                            : std::string("one velocity evaluation"))
            << ", d = " << d << ", " << precisionText << ", backend " << backend.id << " (" << backend.device
            << ")\n"
            << "baseline: dense N x N scores with Eigen (1 thread, float32); pairs = N^2 per evaluation; "
               "peak% counts (4d + 2) flops per pair and head\n\n"
            << std::left << std::setw(11) << "variant" << std::right << std::setw(8) << "N" << std::setw(9)
            << "prec." << std::setw(14) << "pairs/s" << std::setw(9) << "peak%" << std::setw(14) << "baseline"
            << std::setw(9) << "ratio"
            << "\n";
    }
    // The rows of a variant: each N in each precision.
    std::vector<std::pair<long, std::size_t>> rows;
    for (long n : ns)
        for (std::size_t k = 0; k < precisions.size(); ++k) rows.emplace_back(n, k);
    // Full softmax's pairs/s by (N, precision): a masked row then says what fraction of a full step it costs.
    std::map<std::pair<long, std::size_t>, double> softmaxPairs;
    for (const std::string& v : variants) {
        double base = NAN, float32Pairs = NAN; // of the row's N: the dense baseline is measured once for both
        for (const auto& row : rows) {
            const long n = row.first;
            const std::string& precName = precisions[row.second].first;
            const Precision prec = precisions[row.second].second;
            if (row.second == 0) base = float32Pairs = NAN;
            const AttentionSpec spec = specFor(v, d);
            std::mt19937_64 rng(42);
            std::normal_distribution<double> normal;
            Tokens X(n, d);
            for (long i = 0; i < X.size(); ++i) X.data()[i] = normal(rng);
            std::unique_ptr<VelocityField> field;
            std::unique_ptr<DeviceStepper> stepper;
            // A variant the device cannot step is known before anything is made (StepperFactory::supports).
            const IntegratorSpec euler{Method::Euler, 1.0, 1 << 30};
            std::optional<std::string> skipped =
                deviceSteps ? backend.makeStepper.refusal(spec, euler, d) : std::nullopt;
            if (!skipped) {
                try {
                    if (deviceSteps)
                        stepper = backend.makeStepper.make(spec, euler, d);
                    else
                        field = backend.makeField(spec, d, prec);
                } catch (const SceneError& e) { // settings the fields refuse on every backend
                    skipped = e.what();
                }
            }
            if (skipped) {
                if (!json)
                    std::cout << std::left << std::setw(11) << v << std::right << std::setw(8) << n
                              << "  skipped: " << *skipped << std::endl;
                break;
            }
            Tokens dX;
            double t = 0.0;
            const bool sinkhorn = spec.type == AttentionType::Sinkhorn;
            long calls = 0, iterations = 0; // timed calls, and their Sinkhorn iterations
            if (stepper) { // the tokens stay on the device; one read-back per batch waits for the GPU
                stepper->upload(X, 0.0);
                // One step first, whatever N: it builds the stepper's shaders, which at N >= 65536 would
                // otherwise fall inside the timed batch (up to 5x the kernel time of a cold driver cache).
                stepper->advance(1);
                stepper->download(dX);
                t = timeIt([&] { stepper->advance(kDeviceBatch), stepper->download(dX); }, n) / kDeviceBatch;
            } else {
                // One untimed call at every N on a GPU backend: a new N may need a new kernel variant (QPT
                // changes at 2^18 and 2^20), whose build fell inside the one or two timed calls of a large N
                // (Vulkan softmax at 2^18: 1.4e11 pairs/s against 9.6e11 at 2^17 on an H200; the Sinkhorn
                // "fall with N" of earlier notes). Sinkhorn also warm-starts each call from the last one's
                // potentials, as a run does. Its calls' iterations are counted: a call is 2 iterations + 1
                // passes.
                const bool warm = sinkhorn || backend.id != "cpu";
                if (warm) field->velocity(0.0, X, dX);
                t = timeIt(
                    [&] {
                        field->velocity(0.0, X, dX);
                        ++calls;
                        iterations += field->diagnostics().sinkhornIterations;
                    },
                    n, warm);
            }
            const double pairs = double(n) * double(n) / t;
            const double meanIterations = calls ? double(iterations) / double(calls) : 0.0;
            const double passPairs = pairs * (2.0 * meanIterations + 1.0); // Sinkhorn: pairs/s of one pass
            const double flopsPerPair = double(4 * d + 2) * double(std::max(spec.headCount(), 1));
            const double fraction = pairs * flopsPerPair / peak;
            if (!noBaseline && n <= kDenseMaxN && std::isnan(base)) {
                const MatF Xf = X.cast<float>();
                const auto cpu = makeCpuField(spec, d, Precision::Float32); // the baseline's head setup
                MatF out;
                const double tb = timeIt([&] { out = denseVelocity(v, spec, Xf, *cpu); }, n);
                base = double(n) * double(n) / tb;
            }
            const double ratio = pairs / base;
            // --error: the timed evaluation's own output; device steps return tokens, so there one evaluation
            // of the backend's field (the same kernel, queries formed on the host) is measured instead.
            double error = NAN;
            if (measureError) {
                if (stepper) backend.makeField(spec, d, prec)->velocity(0.0, X, dX);
                error = sampledRelativeError(spec, X, dX);
            }
            if (v == "softmax") softmaxPairs[row] = pairs;
            const auto full = softmaxPairs.find(row);
            const double ofSoftmax = // the step's time over a full softmax step's
                v != "softmax" && full != softmaxPairs.end() ? full->second / pairs : NAN;
            if (json) {
                nlohmann::json r = {{"variant", v},
                                    {"device_steps", deviceSteps},
                                    {"backend", backend.id},
                                    {"device", backend.device},
                                    {"flops_per_pair", flopsPerPair},
                                    {"fraction_of_peak", fraction},
                                    {"N", n},
                                    {"d", d},
                                    {"precision", precName},
                                    {"pairs_per_s", pairs},
                                    {"threads", threadCount()},
                                    {"isa", streamKernelIsa()},
                                    {"fp32_peak_flops", peak}};
                r["baseline_pairs_per_s"] = numberJson(base);
                r["ratio"] = numberJson(ratio);
                if (measureError) r["rel_err"] = numberJson(error);
                if (prec == Precision::Float64 && std::isfinite(float32Pairs))
                    r["ratio_to_float32"] = pairs / float32Pairs;
                if (sinkhorn) {
                    r["sinkhorn_iterations"] = meanIterations;
                    r["pass_pairs_per_s"] = passPairs;
                }
                if (std::isfinite(ofSoftmax)) r["time_vs_softmax"] = ofSoftmax;
                std::cout << r.dump() << std::endl;
            } else {
                std::cout << std::left << std::setw(11) << v << std::right << std::setw(8) << n
                          << std::setw(9) << precName << std::setw(14) << std::setprecision(3)
                          << std::scientific << pairs << std::setw(8) << std::fixed << std::setprecision(1)
                          << 100.0 * fraction << "%" << std::setw(14) << std::scientific
                          << std::setprecision(3);
                if (std::isfinite(base))
                    std::cout << base << std::setw(8) << std::fixed << std::setprecision(1) << ratio << "x";
                else
                    std::cout << "-" << std::setw(9)
                              << (n > kDenseMaxN && !noBaseline ? "(N^2 too big)" : "-");
                if (measureError)
                    std::cout << "  rel. error " << std::scientific << std::setprecision(2) << error;
                if (sinkhorn)
                    std::cout << "  (" << std::fixed << std::setprecision(1) << meanIterations
                              << " Sinkhorn iterations a call: " << std::scientific << std::setprecision(3)
                              << passPairs << " pairs/s a pass)";
                if (prec == Precision::Float64 && std::isfinite(float32Pairs))
                    std::cout << "  " << std::fixed << std::setprecision(2) << pairs / float32Pairs
                              << "x float32";
                if (std::isfinite(ofSoftmax) && (v == "masked" || v == "masked-alibi"))
                    std::cout << "  " << std::fixed << std::setprecision(2) << ofSoftmax
                              << " of a softmax step's time";
                std::cout << std::defaultfloat << std::endl;
            }
            if (prec == Precision::Float32) float32Pairs = pairs;
        }
    }
    return 0;
}

} // namespace flowscope::cli
