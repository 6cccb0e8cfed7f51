// Flowscope engine: the generative flow of Algorithm 1 (docs/math/flows.md): M layers of "drift along
// the OT-Flow potential + RWPO sparse-transformer sub-step", trained by maximum likelihood with the transport
// and HJB regularizers of loss (16); λ and β learned through softplus.
//
// Conventions (the paper's open decisions, settled here; docs/math/flows.md#departures):
//   * time of the drift in layer k: generation (22) takes x^{k+1/2} = x^k + h ∇φ(x^k, t_k); training (23)
//     takes x^{k-1} = x^{k-1/2} - h ∇φ(x^{k-1/2}, t_{k-1}), so both use φ at t_{k-1} for the same sub-step;
//   * the RWPO sub-step keeps its sign in training (paper-literal, eq. (23)). With it, (22) is not the
//     inverse of the training map (docs/math/flows.md#rwpo-direction): the density the loss fits is that of
//     B^{-1}(z), B the training map, not of (22)'s samples. So the sampler inverts B exactly, sub-step by
//     sub-step (fixed-point iterations, each a contraction where B does not fold), and its samples follow the
//     fitted density; explicitSampler gives (22) as printed. The drift sub-step is likewise inverted exactly
//     (y = x + h∇φ(y, t_k)), so that encode(generate(z)) = z up to the solver tolerance;
//   * log-density (24): log ρ_T(x^M) = log N(x^0; 0, I) + Σ_k [½∇·G_k(x^k) - h Δφ(x^{k-1/2}, t_{k-1})], with
//     log|det J_F| in place of ½∇·G when RwpoOptions::exactLogDet is set, and log det(I - h ∇²φ) in place
//     of -h Δφ when exactDriftLogDet is (the sub-step's exact Jacobian; without the RWPO layer the density
//     then integrates to 1 at any h);
//   * ∇ψ and Δψ are the Moreau (Huber) smoothing at the step's threshold: ∇ψ = (x - S_{λh}(x)) / h,
//     Δψ = #{i : |x_i| <= λh} / h;
//   * without the RWPO layer (the plain OT-Flow baseline) there is no prior and no diffusion: the transport
//     term is |∇φ|² and the HJB residual ∂tφ + ½|∇φ|².
// Layout: samples are columns (d x N).
#pragma once

#include "engine/autodiff/Tape.h"
#include "engine/flows/BatchSplit.h"
#include "engine/flows/Potential.h"
#include "engine/flows/RwpoLayer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope::flows {

struct FlowConfig {
    int d = 2;
    int width = 32; // m, the ResNet width of φ
    int depth = 2;  // nTh, OT-Flow's ResNet layer count (>= 2)
    int layers = 8; // M, the flow's layers (time steps); h = T / M
    double T = 1.0;
    bool rwpo = true; // false: the plain OT-Flow baseline
    // The RWPO sub-step's log-det: exact (log det J_F, d = 2 for the vector kernels) by default. The paper's
    // first-order 1/2 div G credits an expanding sub-step 1/2 per active coordinate for log 1.5 = 0.405, and
    // training exploits it: on moons at the defaults the model density's mass on a grid reached 14.6 and the
    // held-out "NLL" 0.58, under the data's entropy, while the samples stayed far off (MMD² 0.15).
    //
    // Leave-one-out by default (not the paper's l = j included): a query that is its own key sees a map that
    // expands around every key (C_w -> 0, J_F -> I + D/2), so training credited its batch with density that
    // no other point gets. On moons (1000 iterations) the held-out NLL was 15.5 beside a training NLL near 4,
    // and β rose to 4 to sharpen the spikes; with leave-one-out a training query sees its keys as a held-out
    // point sees the reference batch, and the two NLLs agree (4.08 against 4.66 loss).
    RwpoOptions rwpoOptions = {.leaveOneOut = true, .exactLogDet = true};
    bool explicitSampler = false; // generate by eq. (22) as printed instead of inverting the training map
    // The drift sub-step x -> x - h ∇φ(x)'s log-det: exact, log det(I - h ∇²φ) (d <= 2), or to first order,
    // -h Δφ (the continuous-time formula, eq. (24)). Only the exact one makes the density integrate to 1.
    bool exactDriftLogDet = true;
    // Initial λ (L1 prior weight) and β (inverse temperature). λ is frozen at a small value by default: its
    // gradient misses the boundary term of the active set D = 1{|x_i| > λh} (piecewise constant in λ, so its
    // pathwise derivative is 0 while the expected log-det does change with λ), and λ then climbs whatever it
    // starts at (moons, 1000 iterations: 0.05 -> 0.87, 1/3 -> 1.07, 2 -> 1.1), and the samples with it
    // (MMD² 2.9e-2 to 4.6e-2, against 5e-5 or below with λ frozen at 0.05). The paper's λ = 2 at h = 1/48 is
    // a threshold λh = 0.04; at M = 8 (h = 1/8) it would be 0.25, the scale of the data itself.
    // A trained λ gets that boundary term (lambdaBoundaryTerm, RwpoOptions::activeSetGradient;
    // docs/math/flows.md#active-set-gradient); false restores the pathwise gradient, to compare.
    double lambda0 = 0.05, beta0 = 1.0;
    bool trainLambda = false, trainBeta = true;
    bool lambdaBoundaryTerm = true;
    // Weight of the transport cost (19) against the NLL: OT-Flow's α₀/α₁ = 1/30 (its toy settings), not S1's
    // 1:1. Any positive weight makes the minimizer of (16) a compromise between fitting the data and moving
    // little, so its samples are biased by construction; at 1 the bias dominates (8gaussians MMD² 9.5e-3, KL
    // 0.29 after 2000 iterations, against ≈0 and 0.02 at 1/30).
    double transportWeight = 1.0 / 30.0;
    // c in (16), the HJB residual's weight; < 0 (default): 0.1 without the RWPO layer, 0 with it (hjb()). The
    // paper says the term vanishes at the optimum and only speeds training up. With the layer it slowed it:
    // the viscous residual ∂tφ + ½|∇φ̃|² + (Δφ - Δψ)/β carries the Moreau smoothing's Δψ = #{|x_i| <= λh}/h, a
    // box of height 1/h = 8 and width 2λh ≈ 0.01 per coordinate (M = 8, λ = 0.05), so the few tokens inside
    // it dominate the term, and the residual's mean square stays twice the plain flow's (0.28 against 0.13
    // on checkerboard). Checkerboard, 3000 iterations, KL by the mixture of 8 draws of 4096 keys on 20000
    // held-out points: c = 0.1 gave 0.159, c = 0.01 0.151, c = 0 0.141 (seed 1: 0.130). Without the layer
    // the term helps: 0.131 at c = 0.1, 0.156 at c = 0.
    double hjbWeight = -1;
    double hjb() const { return hjbWeight >= 0 ? hjbWeight : rwpo ? 0.0 : 0.1; }
    std::uint64_t seed = 0;

    double h() const { return T / layers; }
};

double softplus(double u);
double softplusInverse(double y); // y > 0

template <class S> struct FlowParams {
    using Matrix = ad::Matrix<S>;
    PotentialParams<S> phi;
    Matrix lambdaRaw = Matrix::Zero(1, 1),
           betaRaw = Matrix::Zero(1, 1); // λ = softplus(lambdaRaw), β likewise

    static FlowParams init(const FlowConfig& c);
    FlowParams zerosLike() const;
    double lambda() const { return softplus(double(lambdaRaw(0, 0))); }
    double beta() const { return softplus(double(betaRaw(0, 0))); }
    // f(value, grad, name) for every trainable block (for Adam::add); frozen λ / β are left out.
    template <class F> void forEach(FlowParams& grads, const FlowConfig& c, F&& f) {
        phi.forEach(grads.phi, f);
        if (c.rwpo && c.trainLambda) f(lambdaRaw, grads.lambdaRaw, std::string("lambda"));
        if (c.rwpo && c.trainBeta) f(betaRaw, grads.betaRaw, std::string("beta"));
    }
};

// The named tensors of a model's parameters, in a fixed order (a saved model's: FlowIo, inverse/PosteriorIo):
// "phi.K0", ..., "phi.b", "lambda_raw", "beta_raw".
template <class S, class F> void forEachNamedTensor(FlowParams<S>& p, F&& f) {
    p.phi.forEach([&](ad::Matrix<S>& m, const std::string& name) { f(m, "phi." + name); });
    f(p.lambdaRaw, std::string("lambda_raw"));
    f(p.betaRaw, std::string("beta_raw"));
}

// ---- The pieces of a layer, shared with the posterior flow (inverse/PosteriorFlow) ----

// The parameters on one tape: φ, and λ, β as 1x1 Vars (parameters through softplus, or constants).
template <class S> struct Bound {
    BoundPotential<S> phi;
    ad::Var<S> lambda, beta;
};
// Binds p on `tape`: as parameters whose gradients backward() adds into *grads, or as constants (grads null).
template <class S>
Bound<S> bindFlow(ad::Tape<S>& tape, const FlowConfig& c, const FlowParams<S>& p,
                  FlowParams<ad::Scalar<S>>* grads);
// [x; t 1^T]: the potential's input.
template <class S> ad::Var<S> withTime(ad::Tape<S>& tape, ad::Var<S> X, double t);
// The RWPO sub-step's options at the flow's step. A query beside separate keys (a reference batch) has no
// own key to leave out: it sees every key.
RwpoOptions layerOptions(const FlowConfig& c, bool besideKeys = false);
// One layer's transport and HJB terms of loss (16) at points X (d x B) where φ gave ∇φ (gradX), ∂tφ and Δφ:
// ∇φ̃ = ∇φ - ∇ψ and the residual ∂tφ + ½|∇φ̃|² + (Δφ - Δψ)/β with the RWPO layer (∇ψ, Δψ the Moreau
// smoothing at the threshold λh = lambdaH; invBeta = 1/β), ∂tφ + ½|∇φ|² without. Adds (h/2n) Σ|∇φ̃|² to
// `transport` and (h/n) Σ residual² to `hjb`; n is the batch size of the means.
template <class S>
void addRegularizers(ad::Tape<S>& tape, const FlowConfig& c, ad::Var<S> lambdaH, ad::Var<S> invBeta,
                     ad::Var<S> X, ad::Var<S> gradX, ad::Var<S> dphidt, ad::Var<S> lap, double n,
                     ad::Var<S>& transport, ad::Var<S>& hjb);
// log det(I - h H) of the drift sub-step x -> x - h ∇φ from φ's Hessian H (recorded with hessian = true), for
// d <= 3, through foldGuardedLog where the sub-step folds. A forward-time sub-step x -> x + h ∇φ passes -h.
template <class S> ad::Var<S> driftLogDet(const PotentialOutputs<S>& phi, int d, double h);

// How the sampler went: the worst fixed-point change at exit and the most iterations any sub-step took
// (residual above kSamplerTolerance: the training map is not invertible there, typically where it folds), and
// the folding of each RWPO sub-step at the training map's input (docs/math/flows.md#folding; empty without
// the layer).
struct SamplerDiagnostics {
    double residual = 0;
    int iterations = 0;
    std::vector<RwpoFolding> folding;
};

constexpr int kSamplerMaxIterations = 100;
constexpr double kSamplerTolerance = 1e-5;

struct LossTerms {
    double loss = 0, nll = 0, transport = 0, hjb = 0;
};

template <class S> class FlowModel {
  public:
    using Matrix = ad::Matrix<S>;
    explicit FlowModel(const FlowConfig& config);

    const FlowConfig& config() const { return config_; }
    FlowParams<S>& params() { return params_; }
    const FlowParams<S>& params() const { return params_; }

    // With the RWPO layer: fixed reference batches of data (the trainer sets them from its data), `draws`
    // blocks of n >= 2 columns side by side (d x draws·n). generate() and encode() use them as their keys
    // when given none, so samples and densities come from one model: the mixture of the draws' frozen-key
    // maps,
    //     ρ(x) = (1/R) Σ_r ρ_r(x),   ρ_r the density of the frozen-key map whose layer-k keys are draw r's
    //     x^k,
    // which training fits one key draw at a time. Each ρ_r is a proper density, so their mean is too, and it
    // averages out the keys' randomness: log det J_F depends on the few keys within one kernel width, and one
    // draw's density is rough from point to point (checkerboard at the defaults, one model: KL 0.19 beside
    // one draw of 1024 keys, 0.14 beside the mixture of 8 such draws). Sampling the mixture is exact: sample
    // j inverts draw j mod R's map. Without a reference, generate() inverts the N-particle map of the samples
    // themselves, which training never sees: it is not one-to-one, and its inverse can land on a clustered
    // preimage of the base batch (moons: MMD² 0.15 against 0.025 for the same parameters). Empty: none;
    // ignored without the layer. Throws std::invalid_argument on a bad shape or a column count that is not
    // draws·n.
    void setReference(Matrix reference, int draws = 1);
    int referenceDraws() const { return referenceDraws_; }
    // Draw r's keys (d x n), 0 <= r < referenceDraws().
    Matrix referenceDraw(int r) const;
    const Matrix& reference() const { return reference_; }

    // Records loss (16) on `tape` for a data batch (d x N, placed at t = T) and returns its 1x1 Var; the
    // parameters are bound to `grads`, so tape.backward(loss) adds the gradient there. `terms` gets the
    // parts. With `split`, `data` is part `part` of a batch shared by split->parts() tapes (BatchSplit.h):
    // the loss is this part's share (sums over its samples divided by the whole batch's size), the RWPO
    // sub-steps attend to the whole batch, and split->backward(part, loss) differentiates it.
    ad::Var<S> recordLoss(ad::Tape<S>& tape, const Matrix& data, FlowParams<S>& grads, LossTerms* terms,
                          BatchSplit<S>* split = nullptr, int part = 0) const;
    // Sets grads to the gradient of the loss at `data` and returns its terms (non-finite values possible).
    LossTerms lossAndGradient(const Matrix& data, FlowParams<S>& grads) const;

    // Samples from base samples Z (d x N): the exact inverse of the training map (default; each sub-step
    // solved by fixed-point iteration), or eq. (22) as printed with explicitSampler. `trajectory`, when
    // given, gets x^0 .. x^M. With the RWPO layer the samples are one another's keys (the N-particle map),
    // unless `keys` (d x N_k, a reference batch of data; default: the model's reference) is given: then each
    // sample inverts, on its own, the frozen-key map whose layer-k keys are the reference's x^k: the map
    // encode() gives densities of. With the model's reference of R draws, sample j inverts draw j mod R's.
    Matrix generate(const Matrix& Z, std::vector<Matrix>* trajectory = nullptr,
                    SamplerDiagnostics* diagnostics = nullptr, const Matrix* keys = nullptr) const;
    // The training map (23) from data X to x^0, with log ρ_T(X) by (24) (1 x N); `trajectory` gets x^M ..
    // x^0. With the RWPO layer the queries are their own keys, unless `keys` (d x N_k, a reference batch of
    // data; default: the model's reference) is given: it is pushed backward beside them and its x^k are the
    // keys of layer k, so each query's density is independent of the other queries (a density grid,
    // docs/math/flows.md#density). With the model's reference of R draws, logDensity is the mixture's (R
    // passes) and column j's x^0 and trajectory are draw j mod R's, the map generate() inverts for sample j.
    Matrix encode(const Matrix& X, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity = nullptr,
                  std::vector<Matrix>* trajectory = nullptr, const Matrix* keys = nullptr) const;
    // Every RWPO sub-step's keys, per draw: `keys`, or the model's reference draws, pushed backward (entry k
    // of a draw is layer k's keys); none without the layer or a reference (the queries are their own keys).
    // Computed once, they serve many encode() and generate() calls with the same parameters (a density grid
    // in chunks, an evaluation).
    struct FrozenKeys {
        std::vector<std::vector<Matrix>> draws;
    };
    FrozenKeys frozenKeys(const Matrix* keys = nullptr) const;
    Matrix encode(const Matrix& X, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity,
                  std::vector<Matrix>* trajectory, const FrozenKeys& keys) const;
    Matrix generate(const Matrix& Z, std::vector<Matrix>* trajectory, SamplerDiagnostics* diagnostics,
                    const FrozenKeys& keys) const;
    // mean |encode(generate(Z)) - Z| over the columns (the round trip, docs/math/flows.md#sampling): the
    // solver tolerance by default; with explicitSampler O(h) without the RWPO layer and O(1) with it.
    double roundTripError(const Matrix& Z) const;

  private:
    // The reference batch pushed backward through the training map: entry k (1..M) is its x^k, the keys
    // of layer k's RWPO sub-step (entry 0 is unused).
    std::vector<Matrix> keysByLayer(const Matrix& reference) const;
    // encode() and generate() beside one draw's keys by layer (empty: the points are their own keys).
    Matrix encodeBeside(const Matrix& X, Eigen::Matrix<S, 1, Eigen::Dynamic>* logDensity,
                        std::vector<Matrix>* trajectory, const std::vector<Matrix>& frozen) const;
    Matrix generateBeside(const Matrix& Z, std::vector<Matrix>* trajectory, SamplerDiagnostics* diagnostics,
                          const std::vector<Matrix>& frozen) const;

    FlowConfig config_;
    FlowParams<S> params_;
    Matrix reference_;
    int referenceDraws_ = 1;
};

} // namespace flowscope::flows
