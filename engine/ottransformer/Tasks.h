// Flowscope engine: the desktop-sized OT-Transformer experiments (docs/math/transformers.md#tasks), seeded.
//
// A — the straight-line toy with a closed-form optimum. A set is n = 6 tokens in R², i.i.d. N(0, 1); its
// target
//     is y = g(x̄₀), g(u) = (‖u‖² - 1, sin 3u₁), x̄₀ the mean token. The head is the fixed mean ỹ = ψ_o X =
//     (1/n) Σ_j x_j (L = 1/√n) and G = ½‖ψ_o X - y‖². For λ > 0 (paper convention) the optimal map moves
//     every token by the same vector on a straight line at constant speed (Prop. 1, eq. 65 with MSE):
//         e* = (ψ_o X₀ - y) / (1 + T / (n λ)),      X*(T) = X₀ - (T / (n λ)) e* 1ᵀ,      ỹ* = y + e*.
// B — 2-D point-cloud classification (a ModelNet40 analogue). A set is 64 points of one of four shapes —
//     circle, square outline, moons, plus-shaped cross, each of unit size — under a random rotation, a scale
//     in [0.7, 1.3] and N(0, 0.03²) jitter; the label is the shape.
#pragma once

#include "engine/flows/Datasets.h"
#include "engine/ottransformer/Transformer.h"

#include <string>

namespace flowscope::ot {

enum class Task { A, B };
const char* toString(Task t);
Task taskFromString(const std::string& s); // "A" or "B" (either case); throws std::invalid_argument

constexpr int kTaskASetSize = 6, kTaskBSetSize = 64, kTaskBClasses = 4;
const char* taskBClassName(int label); // circle, square, moons, cross

// The model of each task (docs/math/transformers.md#tasks; before λ, M and the architecture are chosen):
//  A: d = 2, no embedding, one block, single head k = 2, MLP 2 -> 16 -> 2 (tanh), the mean head.
//  B: embedding R² -> R¹⁶, one block, single head k = 16, MLP 16 -> 32 -> 16 (tanh), mean pooling and a
//     linear head to 4 logits. Its discrete baseline has D = 2 blocks (taskBBaseline).
TransformerConfig taskModel(Task t);
TransformerConfig taskBBaseline();

// g(u) = (‖u‖² - 1, sin 3u₁).
Eigen::Vector2d taskATarget(const Eigen::Vector2d& meanToken);
Batch sampleTaskA(int sets, flows::Rng& rng);
// ψ_o X*(T) for each set of the batch (2 x B); λ = 0 gives the targets (e* -> 0 as λ -> 0).
Matrix taskAClosedFormOutput(const Batch& batch, double lambdaPaper, double horizon);
// X*(T) (2 x B n); requires lambdaPaper > 0 (at λ = 0 the optimal paths are not unique, Theorem 1).
Matrix taskAClosedFormState(const Batch& batch, double lambdaPaper, double horizon);

// `sets` sets, each of a uniformly drawn class; each keeps setSize - round(dropRate · setSize) of its points
// (at least one), dropped at random (Table 3's point-dropout). The drops come from their own stream, so the
// same rng state gives the same shapes at every drop rate. Throws std::invalid_argument for a drop rate
// outside [0, 1) or a set size below 1.
Batch sampleTaskB(int sets, flows::Rng& rng, double dropRate = 0.0, int setSize = kTaskBSetSize);

} // namespace flowscope::ot
