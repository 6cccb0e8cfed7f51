// Flowscope engine: the Scene, one value that describes a whole experiment.
//
// Presets, save/load, the CLI, the GUI and the tests all speak Scene. Its JSON schema is documented in
// docs/scene.md; SceneRead.cpp parses and validates it (every error names the offending field by JSON
// pointer, in the style of engine/io/JsonReader.h) and SceneWrite.cpp writes it back. Loading a scene and
// running it reproduces the run bit-for-bit on one build.
#pragma once

#include "engine/core/Types.h"
#include "engine/io/JsonReader.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowscope {

// Parameters of one attention head. Q, K are k x d (k <= d), V is d x d. Scores are (Q x).(K y) = y^T A x
// with A = K^T Q. Heads are summed (multi-head, docs/math/attention.md#multi-head).
struct HeadParams {
    Mat Q, K, V;
};

// Time-dependent parameters: the heads at time t (piecewise constant: the last keyframe with time <= t;
// linear: interpolation between the two keyframes around t, clamped at the ends).
struct Keyframe {
    double t = 0.0;
    std::vector<HeadParams> heads;
};

enum class AttentionType { Softmax, Linear, L2, Sinkhorn, Exp, Relu, Sigmoid, Rwpo, Drifting, Hardmax };
enum class Interpolation { Piecewise, Linear };
// RWPO interaction kernel (docs/math/attention.md#rwpo): the corrected vector kernel (default), the kernel
// exactly as printed in the paper, and the per-coordinate (separable) form of the authors' MATLAB code.
enum class RwpoKernel { Corrected, AsPrinted, PerCoordinate };
// Layer normalisation of the tokens (docs/math/theory.md#normalization), with theta_j = x_j / |x_j| and
// A_i(Theta) the attention field at the directions: none (the plain field), post (tokens on the unit sphere,
// the velocity projected to its tangent space: `sphere`), pre (x_i' = A_i(Theta)), peri (x_i' = A_i(Theta) /
// |A_i(Theta)|).
enum class Normalization { None, Post, Pre, Peri };

struct AttentionSpec {
    AttentionType type = AttentionType::Softmax;
    std::vector<HeadParams> heads;   // constant parameters; heads.size() = H
    std::vector<Keyframe> keyframes; // non-empty: time-dependent parameters (then `heads` is ignored)
    Interpolation interpolation = Interpolation::Piecewise;
    double beta = 1.0;         // inverse temperature multiplying every score
    bool scaleByRootK = false; // additionally divide scores by sqrt(k) (k = rows of Q), as the authors' code
    bool masked = false;       // causal: token i attends to tokens j <= i
    bool sphere = false;       // project tokens to the unit sphere, velocity to its tangent space ("post")
    // Pre or Peri (None otherwise): the field reads the tokens' directions. Post-LN is `sphere`, so that the
    // two never disagree; normalizationOf() gives the one scheme of a spec.
    Normalization normalization = Normalization::None;
    // ALiBi-style positional decay lambda >= 0 (0: off): the weight of key j for query i is multiplied by
    // exp(-(lambda / N) |i - j|) (docs/math/theory.md#positional-decay).
    double positionalDecay = 0.0;
    std::optional<double> linearEps; // linear only: the "lin,eps" variant when set
    double sinkhornEps = 1.0;        // Sinkhorn temperature epsilon > 0
    int sinkhornIterations = 100;    // maximum number of row/column passes
    double sinkhornTol = 1e-9;       // stop when max_j |column marginal_j - 1| <= tol
    double lambda = 2.0;             // RWPO: L1 prior weight
    double h = 1.0 / 48.0;           // RWPO: layer step (threshold lambda*h, bandwidth sqrt(2h/beta))
    RwpoKernel rwpoKernel = RwpoKernel::Corrected;
    Vec targetMean; // drifting: the target Gaussian nu = N(targetMean, targetCov) (size d; empty = 0)
    Mat targetCov;  // (d x d; empty = I)

    int headCount() const { return int(keyframes.empty() ? heads.size() : keyframes.front().heads.size()); }
    // The heads in force at time t (constant heads, or keyframes interpolated).
    std::vector<HeadParams> headsAt(double t) const;
};

enum class InitKind { Gaussian, Uniform, Rings, File, Points };

struct InitialSpec {
    InitKind kind = InitKind::Gaussian;
    std::uint64_t seed = 1;
    Vec mean;                       // Gaussian (size d)
    Mat cov;                        // Gaussian (d x d, symmetric positive semi-definite)
    Vec low, high;                  // Uniform box (size d each, low < high)
    std::vector<double> radii{1.0}; // Rings: concentric circles in the first two coordinates
    double noise = 0.0;             // Rings, Points: Gaussian jitter (std) added to every coordinate
    std::string path;               // File: .npy (N x d) or .csv (N rows of d numbers); relative to the scene
    // Points: m x d points given inline (e.g. drawn with the mouse); token i = points row (i mod m) + noise,
    // so the tokens are exactly the points when N = m.
    Tokens points;
};

enum class Method { Euler, Heun, Rk4, DormandPrince };

struct IntegratorSpec {
    Method method = Method::Rk4;
    double T = 1.0;                  // horizon
    int steps = 100;                 // M: nominal step h = T / M (fixed-step methods take exactly M steps)
    double rtol = 1e-6, atol = 1e-9; // Dormand-Prince error control
    double divergenceNorm = 1e8;     // stop when max_i |x_i| exceeds this
    double minStep = 1e-12;          // Dormand-Prince: stop when the step falls below this
};

struct OutputSpec {
    int every = 1;            // record every K-th nominal step (plus t = 0 and the final state)
    bool entropy = true;      // attention entropy and interaction energy (extra O(N^2) passes) at records
    double clusterTol = 1e-3; // tokens closer than this belong to one cluster
    double rankTol = 1e-6;    // numerical rank: eigenvalues > rankTol * largest
};

// Gaussian (moment) mode: how the mean/covariance ODEs are integrated and when they stop
// (engine/gaussian/, docs/math/gaussian.md#solver).
enum class MomentMethod { Adaptive, PaperEuler };

// The trace-1 grid of initial 2x2 covariances (docs/math/gaussian.md#grid): cone points (x, y, 1) with
// x in linspace(x0, x1, nu), y in linspace(y0, y1, nc), kept when x^2 + y^2 < 1. nu = nc = 0: no grid.
struct ConeGridSpec {
    int nu = 0, nc = 0;
    double x0 = -1.0, x1 = 1.0, y0 = -1.0, y1 = 1.0;
    bool enabled() const { return nu > 0 && nc > 0; }
};

// Whether the trace-1 grid keeps the point (x, y): 1 - x^2 > y^2, strictly inside the unit disc.
inline bool insideTraceOneDisc(double x, double y) {
    return 1.0 - x * x > y * y;
}

struct MomentsSpec {
    MomentMethod method = MomentMethod::Adaptive;
    double step = 0.01;   // PaperEuler: the Euler step tau
    double tolLow = 0.0;  // stop "converged" when ||dSigma/dt||_F < tolLow (0: never)
    double tolHigh = 1e3; // stop "blow-up" when tr Sigma > tolHigh
    long maxIter = 50000; // PaperEuler: at most this many steps
    ConeGridSpec grid;    // d = 2: a grid of initial covariances (replaces initial.cov)
};

struct Scene {
    int version = 1;
    std::string name;
    std::string description; // what the user should see
    std::string figure;      // the paper figure it reproduces, if any
    int d = 2;
    int n = 256;
    Precision precision = Precision::Float64;
    InitialSpec initial;
    AttentionSpec attention;
    IntegratorSpec integrator;
    OutputSpec output;
    MomentsSpec moments;
    std::string viewJson = "{}"; // view settings, opaque to the engine (GUI-owned), kept as JSON text
};

// A validation or parse error of a scene, naming the field by JSON pointer (e.g. "/attention/heads/1/V");
// its own type so that a front end can tell a bad scene (exit code 2) from other JSON.
struct SceneError : JsonError {
    using JsonError::JsonError;
};

// sceneFromJson's limits. A scene nests about 9 levels (root, attention, keyframes, heads, a matrix's rows);
// each level costs the parser a few hundred bytes, so "[[[[..." would turn a small file into gigabytes: the
// JSON may nest kSceneMaxJsonDepth deep. Inline points: at most kSceneMaxInlinePoints (larger token sets
// belong in a .npy file, kind "file").
inline constexpr int kSceneMaxJsonDepth = 64;
// A scene's tokens have at most kSceneMaxDimension coordinates (/d) and a scene has at most kSceneMaxTokens
// tokens (/n); the Python fields take as many.
inline constexpr int kSceneMaxDimension = 1024;
inline constexpr long kSceneMaxTokens = 16777216; // 2^24
inline constexpr long kSceneMaxInlinePoints = 65536;
// Parse and validate a scene from JSON text. `baseDir` resolves relative file paths. Throws SceneError.
Scene sceneFromJson(const std::string& text, const std::string& baseDir = ".");
// Read a scene file (throws SceneError with pointer "" for I/O or syntax errors, with the line/column).
Scene loadScene(const std::string& path);
// Serialize (pretty-printed JSON); sceneFromJson(sceneToJson(s)) == s.
std::string sceneToJson(const Scene& s);
// Write atomically (temporary file, then rename). Throws std::runtime_error on failure.
void saveScene(const Scene& s, const std::string& path);

// The scheme of a spec: Post when `sphere` is set, else `normalization`.
inline Normalization normalizationOf(const AttentionSpec& a) {
    return a.sphere ? Normalization::Post : a.normalization;
}

// What a type takes, as the reader checks it (and the Scene panel drops on a type switch): positional decay
// multiplies exponential weights the streaming kernel computes (docs/math/theory.md#positional-decay); pre-
// and peri-LN feed the directions to an attention layer over tokens, which RWPO's proximal step and
// drifting's pull toward a target Gaussian are not (docs/math/theory.md#normalization).
inline bool supportsPositionalDecay(AttentionType t) {
    return t == AttentionType::Softmax || t == AttentionType::L2 || t == AttentionType::Exp;
}
inline bool supportsPreNormalization(AttentionType t) {
    return t != AttentionType::Rwpo && t != AttentionType::Drifting;
}

const char* toString(AttentionType t);
const char* toString(Normalization n);
const char* toString(Method m);
const char* toString(MomentMethod m);

// The initial tokens of a scene (N x d), deterministic in the seed. Throws SceneError for unreadable files.
Tokens initialTokens(const Scene& s);

// Throws SceneError at /initial/path unless `path` is a regular file: "file not found", "is a directory",
// "is not a regular file" (a FIFO, socket or device). Only stat(): a FIFO is never opened, so never waited
// on.
void checkTokenFile(const std::string& path);

} // namespace flowscope
