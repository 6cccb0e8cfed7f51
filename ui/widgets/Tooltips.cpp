#include "ui/widgets/Tooltips.h"

#include "engine/scene/SceneSchema.h"

#include <array>

namespace flowscope {

namespace {

struct Entry {
    std::string_view key;
    const char* html; // UTF-8; wrapped in <p> so that Qt shows it as (word-wrapped) rich text
};

// Notation of docs/scene.md: s(x, y) = c (Qx)·(Ky) = c yᵀAx, A = KᵀQ, c = β (÷ √k with scale_by_sqrt_k).
constexpr std::array kTable{
    // ---- attention (the scalar parameters' tooltips are the schema's: engine/scene/SceneSchema.cpp) ------
    Entry{
        "attention.heads",
        "<b>Heads H</b> — the velocity is the sum of the heads' velocities, Γ = Σ<sub>h</sub> Γ<sub>h</sub>, "
        "each head with its own Q<sub>h</sub>, K<sub>h</sub>, V<sub>h</sub>. A new head starts with "
        "Q = K = I, V = 0, so adding it does not change the dynamics; removing heads drops the last ones."},
    Entry{
        "attention.keyframes",
        "<b>Keyframes</b> — time-dependent parameters: a list of times t<sub>k</sub> (strictly increasing), "
        "each with its own heads (same count and shapes); which apply at time t is set by the "
        "interpolation. The analysis is for the parameters at the keyframe's time."},
    Entry{"attention.Q",
          "<b>Query matrix Q</b> (k × d, 1 ≤ k ≤ d) — the score of query x against key y is s(x, y) = "
          "c (Qx)·(Ky) = c yᵀAx with A = KᵀQ."},
    Entry{
        "attention.K",
        "<b>Key matrix K</b> (k × d, the same k as Q) — s(x, y) = c (Qx)·(Ky); A = KᵀQ. l2 and Sinkhorn use "
        "|Qx − Ky|², which also depends on KᵀK."},
    Entry{"attention.V",
          "<b>Value matrix V</b> (d × d) — maps the attention average to the velocity, e.g. softmax "
          "Γ(x<sub>i</sub>) = V Σ<sub>j</sub> P<sub>ij</sub> x<sub>j</sub>. Gaussian covariance: Σ′ = VΣAΣ + "
          "ΣAᵀΣVᵀ."},
    // ---- scene (restart) -----------------------------------------------------------------------------
    Entry{"initial.mean",
          "<b>Mean α</b> — x<sub>i</sub> = α + L z<sub>i</sub>, z<sub>i</sub> ~ N(0, I<sub>d</sub>), "
          "L Lᵀ = Σ<sub>0</sub>."},
    Entry{"initial.cov",
          "<b>Covariance Σ<sub>0</sub></b> — symmetric positive semi-definite; x<sub>i</sub> = α + L "
          "z<sub>i</sub> with L = U diag(√λ) from Σ<sub>0</sub> = U diag(λ) Uᵀ, so a singular Σ<sub>0</sub> "
          "puts "
          "the tokens on an affine subspace. Editing entry (i, j) also sets (j, i)."},
    Entry{"initial.low",
          "<b>Low corner</b> — uniform box: x<sub>ic</sub> = low<sub>c</sub> + (high<sub>c</sub> − "
          "low<sub>c</sub>) u, u ~ U[0, 1); low &lt; high in every coordinate."},
    Entry{"initial.high",
          "<b>High corner</b> — uniform box: x<sub>ic</sub> = low<sub>c</sub> + (high<sub>c</sub> − "
          "low<sub>c</sub>) u, u ~ U[0, 1); high &gt; low in every coordinate."},
    Entry{
        "initial.radii",
        "<b>Ring radii</b> (comma separated, each ≥ 0) — token i lies on ring r = radii[⌊iR/N⌋] at a uniform "
        "angle θ: x<sub>i</sub> = (r cos θ, r sin θ, 0, …, 0). Needs d ≥ 2."},
    Entry{"initial.points",
          "<b>Drawn points</b> — press <b>Draw</b>, then drag in the particle view: a point every 4 pixels "
          "along each stroke, in the plane of the 2-D projection (other coordinates 0). Token i = point "
          "(i mod m) + noise, so N = m (set when you draw) gives exactly the drawn points. Apply restarts."},
    Entry{"initial.path", "<b>Token file</b> — a NumPy .npy (N × d; float32/float64/int32/int64, C order) or "
                          "a .csv with N rows "
                          "of d numbers; row i is token x<sub>i</sub>."},
    // ---- training (the Flows tab) ---------------------------------------------------------------------
    Entry{"training.dataset",
          "<b>Dataset</b> — the 2-D toy law the flow learns (FFJORD / OT-Flow toy_data.py): swissroll, "
          "circles, rings, moons, 8gaussians, pinwheel, 2spirals, checkerboard. A batch is redrawn every 25 "
          "iterations from the seeded stream."},
    Entry{
        "training.rwpo",
        "<b>RWPO layer</b> — each of the M layers is a drift step along the OT-Flow potential φ followed by "
        "the RWPO sub-step x ← x + ½[S<sub>λh</sub>(x) − Σ<sub>j</sub> w<sub>j</sub>(x) x<sub>j</sub>] "
        "(attention over the batch; β learned, λ fixed). Off: the plain OT-Flow baseline (drift steps only). "
        "In docs/rwpo-study.md the layer never gave better samples (MMD²). It improved only checkerboard's "
        "likelihood (KL −0.04 nats at 3000 iterations), and made 8gaussians' and the posteriors' worse. The "
        "sub-step is a kernel estimate over the batch, and training keeps its width √(2h/β) near 0.6 "
        "whatever h and β₀: each layer blurs features finer than that (the 8 clusters, sd 0.35), and the "
        "drift has to undo it."},
    Entry{"training.side_by_side",
          "<b>Side by side</b> — trains two flows on the same batches from the same seed, one with the RWPO "
          "layer and one without, one iteration of each in turn, and shows both."},
    Entry{"training.layers",
          "<b>Layers M</b> — the flow's time steps on [0, T], T = 1: step h = T/M. Each layer costs one "
          "evaluation of φ (and one RWPO sub-step)."},
    Entry{"training.width",
          "<b>Width m</b> — the ResNet width of the OT-Flow potential φ(s) = wᵀu + ½ sᵀAᵀAs + cᵀs + b, "
          "s = (x, t), u a two-layer ResNet of width m with activation log(2 cosh ·)."},
    Entry{"training.batch",
          "<b>Batch</b> — data points per iteration, drawn afresh every iteration with the RWPO layer (every "
          "25 without). With the layer every point attends to every other: the cost grows as batch²."},
    Entry{
        "training.lr",
        "<b>Learning rate</b> of Adam, decaying exponentially to lr/10 over 3000 iterations; the pictures "
        "and "
        "metrics show the parameters averaged over the last ~200 steps. The gradient's norm is capped at 5× "
        "its median over the last 64 steps (a batch on which the map folds gives a spike). A non-finite "
        "loss or gradient rejects the step and halves the rate; accepted steps bring it back over 50 "
        "iterations."},
    Entry{"training.lambda0",
          "<b>λ₀</b> — weight of the L1 prior ψ(x) = λ‖x‖<sub>1</sub>; the RWPO layer soft-thresholds at "
          "λh. Kept fixed (the CLI's --train-lambda learns it, with the active set's boundary term). A "
          "larger λ₀ made every flow of docs/rwpo-study.md worse (8gaussians, 8 layers: +0.05 nats of KL "
          "at 0.01, +0.15 at 0.2, +0.8 at 0.5): the threshold makes the density jump across |x<sub>i</sub>| "
          "= λh. λ₀ &gt; 0."},
    Entry{"training.beta0",
          "<b>β₀</b> — initial inverse temperature (then learned, β = softplus(θ)); the RWPO kernel has "
          "variance 2h/β. It hardly matters: from β₀ = 0.25, 1 or 4 training ends at the same β "
          "(docs/rwpo-study.md). β₀ &gt; 0."},
    Entry{"training.transportWeight",
          "<b>Transport weight</b> w — of the transport cost Σ<sub>k</sub> (h/2) mean |∇φ̃|² in the loss "
          "(16), against the NLL. Default 1/30 (OT-Flow's toy setting): any w &gt; 0 trades fit for short "
          "paths, and at w = 1 the samples stay visibly biased. w ≥ 0."},
    Entry{
        "training.seed",
        "<b>Seed</b> — of the initial parameters and of the data stream: the same seed and settings give the "
        "same run, bit for bit."},
    Entry{"training.evaluate",
          "<b>Evaluate</b> — held-out metrics now (also every 200 iterations): NLL on 1000 held-out points, "
          "MMD² between 1000 generated samples and them, KL = NLL − H(p) where the entropy is known. Takes "
          "seconds with the RWPO layer; the training waits meanwhile."},
    Entry{"training.status",
          "<b>Status</b> — the iteration, iterations per second, the current λ, β and learning rate, and the "
          "last held-out NLL and MMD² (with the iteration they were computed at)."},
    Entry{"training.loss",
          "<b>Loss (16)</b> on the batch: NLL + w Σ<sub>k</sub> (h/2) mean |∇φ̃|² (transport, w the "
          "transport weight) + c Σ<sub>k</sub> h mean R<sub>k</sub>² (HJB; c = 0.1 without the RWPO layer, 0 "
          "with "
          "it: there Δψ = #{|x<sub>i</sub>| ≤ λh}/h makes the few tokens inside the threshold dominate R), "
          "with ∇φ̃ = ∇φ − ∇ψ and "
          "the HJB residual R = ∂<sub>t</sub>φ + "
          "½|∇φ̃|² + (Δφ − Δψ)/β at x<sup>k−½</sup> (without RWPO: ∇φ̃ = ∇φ, R = ∂<sub>t</sub>φ + ½|∇φ|²). "
          "The first 5 % of a long run may be clipped at the top."},
    Entry{"training.nll",
          "<b>NLL</b> = −mean log ρ<sub>T</sub>(x), by (24): log ρ<sub>T</sub>(x<sup>M</sup>) = log "
          "N(x<sup>0</sup>; "
          "0, I) + Σ<sub>k</sub> [½∇·G<sub>k</sub> + log det(I − h∇²φ)] (the drift's exact log-det; without "
          "the RWPO layer the density integrates to 1). Line: the training batch; dots: the held-out set."},
    Entry{
        "training.lambda",
        "<b>λ</b> — the L1 prior weight of ψ(x) = λ‖x‖<sub>1</sub>, learned; the RWPO layer's soft threshold "
        "is λh, S<sub>λh</sub>(x)<sub>i</sub> = sign(x<sub>i</sub>) max(|x<sub>i</sub>| − λh, 0)."},
    Entry{
        "training.beta",
        "<b>β</b> — the inverse temperature, learned; the RWPO kernel's variance is 2h/β: w<sub>j</sub>(x) ∝ "
        "exp(−(β/4h)|x − x<sub>j</sub>|² + …)."},
    Entry{
        "training.mmd2",
        "<b>Held-out MMD²</b> — unbiased squared maximum mean discrepancy between 1000 generated samples and "
        "1000 held-out points, kernel exp(−|x − y|²): 0 when the laws agree. Every 200 iterations, or "
        "Evaluate."},
    Entry{
        "training.picture_density",
        "<b>Data</b> (grey) and <b>generated samples</b> (orange, the same base draws z every time), a few "
        "trajectories x<sup>0</sup> → x<sup>M</sup> through the layers (thin lines), over the model density "
        "exp(log ρ<sub>T</sub>) by (24) on a 64 × 64 grid (square-root colour scale). With the RWPO layer "
        "the "
        "density is the mean of the densities beside 8 reference draws of the data (each the frozen-key "
        "map's; "
        "one draw's is rough where few keys lie within the kernel's width), and sample j inverts draw j mod "
        "8's "
        "map. Refreshed every ~0.7 s while training, less often when a picture takes longer (at most a fifth "
        "of the time)."},
    Entry{"training.picture_histogram",
          "<b>Data</b> (grey) and <b>generated samples</b> (orange, the same base draws z every time), a few "
          "trajectories x<sup>0</sup> → x<sup>M</sup> through the layers (thin lines). The heat map is a 2-D "
          "histogram of the 1000 generated samples (32 × 32 cells): with the RWPO layer the queries are also "
          "the keys, so the density of an isolated grid point is not the model's. Refreshed every ~0.7 s "
          "while training, less often when generating takes longer (at most a fifth of the time)."},
    // ---- continuous-time Transformers (the Transformers tab) ---------------------------------------------
    Entry{"transformer.task",
          "<b>Task</b> — <b>A</b>: 6 tokens x<sub>i</sub> ~ N(0, I<sub>2</sub>), output the "
          "mean of the final tokens, target y = (‖x̄‖² − 1, sin 3x̄<sub>1</sub>); its optimum has a closed "
          "form: every token moves on the same straight line at constant speed. <b>B</b>: classify 64-point "
          "clouds (circle, square, moons, cross; random rotation, scale 0.7–1.3, jitter 0.03)."},
    Entry{"transformer.architecture",
          "<b>Architecture</b> — <b>OT-Transformer</b>: one ODE dX/dt = f(X), f the stack of D blocks with "
          "their skips, M Euler steps on [0, T]. <b>N-ODE</b>: one ODE per block, velocity block(X) − X. "
          "<b>Discrete</b>: the D blocks applied once each (no transport cost)."},
    Entry{"transformer.lambda_ot",
          "<b>λ<sub>OT</sub></b> — weight of the transport cost in objective (8): loss + λ<sub>OT</sub> "
          "Σ<sub>k</sub> "
          "Δt ‖f(X<sub>k</sub>)‖². Theorem 2: above the threshold T·L² (L = ‖ψ<sub>o</sub>‖ the head's "
          "Lipschitz constant) the trained map is Lipschitz with constant at most L / (1 − T "
          "L²/λ<sub>OT</sub>). "
          "λ<sub>OT</sub> = 0: the paths zig-zag; large enough: they go straight."},
    Entry{"transformer.convention",
          "<b>Transport convention</b> — <b>element mean</b> (the authors' code): Σ Δt ‖f‖² / (B n d); "
          "<b>paper</b>: ½ Σ Δt ‖f‖²<sub>F</sub> / B. They agree at λ<sub>paper</sub> = 2 λ<sub>code</sub> / "
          "(n d)."},
    Entry{"transformer.steps", "<b>Steps M</b> — forward-Euler (or RK4) steps over [0, T], Δt = T / M; the "
                               "picture shows X<sub>0</sub> "
                               ".. X<sub>M</sub>."},
    Entry{"transformer.horizon", "<b>Horizon T</b> — the depth of the ODE: the tokens move for t ∈ [0, T]."},
    Entry{
        "transformer.width",
        "<b>Width d</b> — the token dimension inside the Transformer (task B: a linear embedding R² → "
        "R<sup>d</sup>; "
        "the picture projects the paths on their two principal axes). Task A: the tokens live in R²; d &gt; "
        "2 "
        "pads them with fixed coordinates, [x; 0], from d = 4 [x; x; 0] (a copy of the initial set: the "
        "optimal velocity is a function of the initial mean token), from d = 6 with attention initialized to "
        "route the copy's mean to the MLP. The plain model (d = 2) stays 7–46 % from the closed form; d = 6 "
        "gets within about 1 %."},
    Entry{"transformer.increment",
          "<b>Increment velocity</b> — f(X) = stack(X) − X, the blocks' increments (one Euler step of size 1 "
          "is "
          "then the discrete stack), instead of the stack with its skips (the paper's and the code's)."},
    Entry{"transformer.mlp",
          "<b>MLP hidden units</b> of each block's MLP g(u) = W<sub>2</sub> tanh(W<sub>1</sub>u + "
          "b<sub>1</sub>) + b<sub>2</sub>; 0: attention only."},
    Entry{"transformer.blocks",
          "<b>Blocks D</b> — Transformer blocks in the velocity (or in the discrete stack)."},
    Entry{"transformer.integrator", "<b>Integrator</b> — forward Euler (the paper's) or classical RK4, whose "
                                    "four stages' ‖k‖² are weighted "
                                    "like the stages in the transport cost."},
    Entry{
        "transformer.compare",
        "<b>Compare with λ<sub>OT</sub> = 0</b> — trains a second model without the transport cost from the "
        "same seed and the same batches, and draws both."},
    Entry{"transformer.batch", "<b>Batch</b> — input sets per iteration, drawn fresh every iteration."},
    Entry{"transformer.lr", "<b>Learning rate</b> of Adam. A non-finite step is rejected and halves it."},
    Entry{"transformer.seed", "<b>Seed</b> — of the initial parameters and of the data stream: the same "
                              "settings give the same run."},
    Entry{"transformer.evaluate",
          "<b>Evaluate</b> — held-out diagnostics now (also every 250 iterations) on 200 fresh sets: loss, "
          "transport, straightness ‖X<sub>M</sub> − X<sub>0</sub>‖ / Σ‖ΔX‖, the distance to the closed form "
          "(task A) or the accuracy (task B), and the empirical Lipschitz ratio."},
    Entry{
        "transformer.status",
        "<b>Status</b> — the iteration and iterations per second, the threshold T·L² next to λ<sub>OT</sub>, "
        "and per model the batch loss and the last held-out diagnostics."},
    Entry{"transformer.objective",
          "<b>Objective (8)</b> on the batch: task loss + λ<sub>OT</sub> · transport (MSE for task A, "
          "cross-entropy for B)."},
    Entry{"transformer.transport",
          "<b>Transport cost</b> Σ<sub>k</sub> Δt ‖f(X<sub>k</sub>)‖² in the chosen convention: the kinetic "
          "energy of the tokens' paths. Small when they move straight at constant speed."},
    Entry{"transformer.straightness", "<b>Straightness</b> ‖X<sub>M</sub> − X<sub>0</sub>‖ / Σ<sub>k</sub> "
                                      "‖X<sub>k+1</sub> − X<sub>k</sub>‖, "
                                      "averaged over the held-out sets: 1 for straight paths."},
    Entry{"transformer.target",
          "<b>Task A</b>: ‖ỹ − ỹ*‖ / ‖ỹ*‖, the distance of the output to the closed-form optimum's "
          "(ỹ* = y for λ<sub>OT</sub> = 0). <b>Task B</b>: the fraction of sets classified right (line: the "
          "batch; dots: held-out)."},
    Entry{"transformer.lipschitz",
          "<b>Empirical Lipschitz ratio</b> max ‖ỹ<sub>1</sub> − ỹ<sub>2</sub>‖ / ‖X<sub>1</sub>(0) − "
          "X<sub>2</sub>(0)‖<sub>F</sub> over held-out pairs X<sub>2</sub>(0) = X<sub>1</sub>(0) + 0.1 N(0, "
          "I), "
          "and (dashed) Theorem 2's bound L / (1 − T L²/λ<sub>OT</sub>) where λ<sub>OT</sub> is above the "
          "threshold."},
    Entry{"transformer.picture",
          "<b>Tokens moving through depth</b> — one fixed held-out input set: each token's path "
          "X<sub>0</sub> → "
          "X<sub>M</sub> (hollow: start, filled: end, a dot per step: equal spacing means constant speed). "
          "Task "
          "A with λ<sub>OT</sub> &gt; 0: the closed-form end points X*(T) (crosses) and the optimal straight "
          "paths (dashed). Task B: the 64 points in R<sup>d</sup>, projected on the two principal axes of "
          "their "
          "motion."},
    // ---- inverse problems (the Inverse tab) ------------------------------------------------------------
    Entry{
        "inverse.problem",
        "<b>Problem</b> — a shipped inverse problem (assets/problems): y = F(x) + ε, ε ~ N(0, σ² I), with a "
        "prior p(x). <b>linear-gaussian</b> (d = 2, a closed-form Gaussian posterior), <b>lorenz63</b> (σ, "
        "r, β from window means), <b>elliptic</b> (128 source amplitudes), <b>eit</b> (32 conductivity "
        "weights). Choosing one starts a new run, paused at iteration 0."},
    Entry{
        "inverse.rwpo",
        "<b>RWPO layer</b> — the flow's sparse sub-step after each OT-Flow layer (RWPO paper §4.2); off: the "
        "plain OT-Flow potential. The problem file's choice by default. In docs/rwpo-study.md it made every "
        "posterior worse: the linear-Gaussian one's KL to the exact answer 2–6× larger (some runs far "
        "off), EIT's error 2–5× larger with dozens of rejected steps. Its keys are base draws, too sparse "
        "for its kernel beyond d = 2."},
    Entry{"inverse.side_by_side",
          "<b>With and without the RWPO layer</b> — two flows trained at once from the same seed and frame, "
          "their samples side by side and their curves in the same plots (orange: with, blue: without)."},
    Entry{"inverse.iterations",
          "<b>Iterations</b> — the training stops after this many Adam steps (the learning rate decays over "
          "them). The problem file's by default."},
    Entry{"inverse.seed",
          "<b>Seed</b> — of the flow's initial parameters and of its base draws: the same seed and settings "
          "give the same run."},
    Entry{"inverse.evaluate",
          "<b>Evaluate</b> — the relative L1 error ‖mean − truth‖₁ / ‖truth‖₁ of the posterior mean of 600 "
          "fresh samples now (also every 25 iterations)."},
    Entry{"inverse.status",
          "<b>Status</b> — the iteration and iterations per second, and per flow the batch loss, the data "
          "misfit and the last relative L1 error of the posterior mean."},
    Entry{
        "inverse.loss",
        "<b>Loss</b> on the batch: the reverse KL (1/N) Σ [log ρ<sub>T</sub>(x) + ½‖y − F(x)‖²/σ² − log "
        "p(x)] (minus the log evidence) + the transport term. It falls to −log Z, which is unknown: compare "
        "flows, not values."},
    Entry{
        "inverse.misfit",
        "<b>Data misfit</b> ½‖y − F(x)‖²/σ², the batch mean: about m/2 (m observations) for samples that fit "
        "the data to the noise."},
    Entry{"inverse.error",
          "<b>Relative L1 error</b> ‖mean − truth‖₁ / ‖truth‖₁ of the posterior mean of 600 fresh samples "
          "(every 25 iterations and on Evaluate). The truth is not the posterior mean: the error levels off "
          "where the data leave the unknowns uncertain."},
    Entry{"inverse.distance",
          "<b>Distance to the reference</b> — the 2-Wasserstein distance between two Gaussians: one with the "
          "mean and covariance of 600 fresh samples of the flow (every 25 iterations and on Evaluate), one "
          "with "
          "those of the Metropolis reference chain (d ≤ 3). The loss hardly moves when the Laplace frame is "
          "already close; this shows how far the flow still is from the chain. The grey dashed line is the "
          "floor: "
          "600 of the chain's own samples against the whole chain, what a perfect flow would show."},
    Entry{"inverse.fit",
          "<b>The data and its fit</b> — the observations y (grey points) and F(posterior mean) (a line per "
          "flow), by observation index."},
    Entry{
        "inverse.samples",
        "<b>Posterior samples</b> — 600 samples of the flow (fixed base draws: the same points move as it "
        "learns): each unknown's histogram on the diagonal, each pair's scatter below; the truth in green. "
        "In grey, the posterior the flow should reach: a random-walk Metropolis chain of 2·10⁵ steps on the "
        "same posterior (4000 of its samples; its histograms as outlines, on the flow's scale). Top right: "
        "mean ± sd of each unknown."},
    Entry{"inverse.unknowns",
          "<b>The unknowns</b> — the posterior mean of each unknown (line) with ± one standard deviation "
          "(band), over 600 samples, and the truth (green dots), by index."},
    Entry{"inverse.field",
          "<b>EIT</b> — top: the 32 weights' posterior mean ± sd and the truth, by index. Below: the "
          "conductivity κ = κ0 + Σ c<sub>k</sub> exp(−|s − s<sub>k</sub>|²/(2ℓ²)) on the unit square, of the "
          "truth and of the posterior mean (one colour scale), and κ's posterior standard deviation."},
    // ---- sweeps (the Sweeps tab) ----------------------------------------------------------------------
    Entry{"sweeps.sweep",
          "<b>Sweep</b> — a study: a base scene, axes that vary its fields, the measures of each run and the "
          "replicates (docs/sweeps.md). The shipped ones (assets/sweeps), or a SWEEP.json opened with "
          "Open…: the same file flowscope-cli sweep runs."},
    Entry{"sweeps.threads",
          "<b>Threads</b> — runs at a time on this machine's cores (each run on one thread), as "
          "flowscope-cli sweep --jobs."},
    Entry{
        "sweeps.backend",
        "<b>Backend</b> — where each run's particles are computed, as flowscope-cli sweep --backend: the "
        "CPU, or a GPU compute backend (float32), which each thread opens for itself and on which the tokens "
        "stay between steps. Gaussian-mode sweeps solve their moment equations on the CPU either way."},
    Entry{"sweeps.run",
          "<b>Run</b> — every run of the sweep, in the background; the picture fills in as runs finish. The "
          "table equals the one flowscope-cli sweep writes."},
    Entry{"sweeps.cancel",
          "<b>Cancel</b> — hands out no more runs: the runs in flight finish, the finished ones stay in the "
          "picture."},
    Entry{"sweeps.x",
          "<b>X axis</b> — the sweep axis along the picture's horizontal axis (histograms: one panel "
          "per value)."},
    Entry{
        "sweeps.y",
        "<b>Y axis</b> — the sweep axis along the vertical axis of the heatmap; <i>none</i> draws histograms "
        "of the measure instead (Figs 4 and 11)."},
    Entry{"sweeps.measure", "<b>Measure</b> — the column shown: its mean over a cell's runs (replicates and "
                            "any other axes) in the "
                            "heatmap, its values' counts in the histograms."},
    Entry{"sweeps.readout",
          "<b>Under the mouse</b> — the hovered cell's axis values, the mean of every measure over its runs, "
          "and how many of its runs are done. A click opens the cell's scene in the Particles tab."},
    Entry{
        "sweeps.save",
        "<b>Save table</b> — the sweep's folder as flowscope-cli sweep writes it: the spec, a journal of the "
        "finished runs, and results.csv, results.json and a .npy per column. A cancelled sweep saves its "
        "runs "
        "without the table: flowscope-cli sweep DIR/sweep.json --out DIR runs the rest and writes it."},
    // ---- pretrained models (the Models tab) ----------------------------------------------------------
    Entry{"model.open",
          "<b>Open folder</b> — a Hugging Face checkpoint folder: config.json and model.safetensors (GPT-2, "
          "ALBERT or BERT), with its tokenizer's files for text input (docs/models.md)."},
    Entry{"model.text",
          "<b>Text</b> — the input, tokenized by the folder's tokenizer (GPT-2: vocab.json + merges.txt; "
          "ALBERT: spiece.model)."},
    Entry{"model.ids",
          "<b>Ids</b> — token ids, comma- or space-separated: used instead of the text when given."},
    Entry{"model.layers",
          "<b>Layers</b> — layers to run: GPT-2 and BERT their first L; ALBERT its shared layer L times (any "
          "number: the paper's figure runs 48)."},
    Entry{"model.histograms",
          "<b>Histograms</b> — the layers whose histograms are drawn, e.g. 0,5,30,48 (empty: 0, L/3, 2L/3 "
          "and L)."},
    Entry{"model.log_density",
          "<b>Log density</b> — the histograms' density axis in log10, whole decades from the one below the "
          "least filled bin: the thin tails beside the peak show. An empty bin has no bar."},
    Entry{"model.three_d",
          "<b>3-D</b> — the tokens on their three principal axes (drag to orbit), else on two."},
    Entry{"model.run",
          "<b>Run</b> — the forward pass on the input, in the background: the hidden states of every layer, "
          "their cosines and their cloud."},
    Entry{"model.ode_layer", "<b>Layer</b> — the layer whose head drives the ODE (0-based)."},
    Entry{
        "model.ode_head",
        "<b>Head</b> — Q, K from its columns of W<sub>q</sub>, W<sub>k</sub>; V = W<sub>O</sub><sup>h</sup> "
        "W<sub>V</sub><sup>h</sup> (docs/math/models.md)."},
    Entry{"model.ode_steps",
          "<b>Steps per layer</b> — RK4 steps per unit of time (one unit per layer): each costs four passes "
          "of n² D; fewer for long inputs of wide models."},
    Entry{
        "model.build_ode",
        "<b>Build ODE</b> — runs the head's ODE from the embeddings, one unit of time per layer, beside the "
        "real layers (Own dynamics tab)."},
    Entry{"model.open_in_particles",
          "<b>Open in Particles</b> — the ODE's scene as an ordinary scene in the Particles workspace."},
    Entry{"model.progress", "<b>Progress</b> — the forward pass's layers (or the ODE's steps) done."},
    Entry{"model.cancel",
          "<b>Cancel</b> — stops the forward pass or the ODE in flight (after its current layer or step)."},
    // ---- read-outs -----------------------------------------------------------------------------------
    Entry{"analysis.sym_a",
          "<b>Eigenvalues of A + Aᵀ</b>, A = Σ<sub>h</sub> c K<sub>h</sub>ᵀQ<sub>h</sub> (score scaling "
          "included) — the symmetric part of the score matrix."},
    Entry{
        "analysis.B",
        "<b>Eigenvalues of B</b> = Σ<sub>h</sub> V<sub>h</sub>A<sub>h</sub> + A<sub>h</sub>ᵀV<sub>h</sub>ᵀ. "
        "Prop 2 (one head, V commuting with Σ<sub>0</sub> and B): Σ(t) = (Σ<sub>0</sub><sup>−1</sup> − "
        "tB)<sup>−1</sup>; a positive eigenvalue means blow-up at t<sub>max</sub> = 1 / "
        "λ<sub>max</sub>(Σ<sub>0</sub><sup>½</sup> B Σ<sub>0</sub><sup>½</sup>), B ⪯ 0 convergence to a "
        "covariance of rank = multiplicity of the eigenvalue 0."},
    Entry{"analysis.regime",
          "<b>Predicted regime</b> — what the theory (Castin et al., Prop 2) says for these matrices and the "
          "initial covariance Σ<sub>0</sub> (identity when the initial tokens are not Gaussian)."},
};

} // namespace

QString parameterTooltip(std::string_view key) {
    for (const SceneParam& p : sceneParams())
        if (p.key() == key)
            return QStringLiteral("<p>%1</p>")
                .arg(QString::fromUtf8(p.tooltip.data(), qsizetype(p.tooltip.size())));
    for (const Entry& e : kTable)
        if (e.key == key) return QStringLiteral("<p>%1</p>").arg(QString::fromUtf8(e.html));
    return {};
}

std::vector<std::string> parameterTooltipKeys() {
    std::vector<std::string> keys;
    for (const SceneParam& p : sceneParams()) keys.push_back(p.key());
    for (const Entry& e : kTable) keys.emplace_back(e.key);
    return keys;
}

} // namespace flowscope
