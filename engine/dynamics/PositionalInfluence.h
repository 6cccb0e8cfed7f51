// Flowscope engine: the "lost in the middle" influence profile of attention with positional decay (Duerinckx,
// Geshkovski, Rossi 2026, arXiv 2605.09213; docs/math/theory.md#influence).
//
// Tokens start independent and uniform on the circle. To first order in the perturbation of that law, Fourier
// mode n of the law of each token grows under the positional weights W as g' = a_n W g, a_n = n^2 I_n(beta) /
// (beta I_0(beta)) (the softmax's time scale). The influence of source position k on the last token at time t
// is the entry (last, k) of exp(a_n t W) - I, summed over the modes with the soft retrieval test's weights
// omega_n = exp(-pi^2 n^2 / (2 M^2)): a U in k (primacy and recency) while t is small enough.
#pragma once

#include "engine/scene/Scene.h"

#include <vector>

namespace flowscope {

// Whether the profile describes a run of `attention` in dimension d: softmax with one head Q = K = V = I
// (no 1/sqrt(k), no keyframes), post-LN on the circle (d = 2); masked or not, any positional decay >= 0.
bool hasInfluenceProfile(const AttentionSpec& attention, int d);

// What the profile depends on.
struct InfluenceSetting {
    int n = 2;           // tokens (the scene's N)
    double beta = 1.0;   // inverse temperature
    double lambda = 0.0; // positional decay (the scene's positional_decay)
    bool masked = true;  // causal
    double width = 8.0;  // M of the soft retrieval test (the paper's 8): omega_n = exp(-pi^2 n^2 / (2 M^2))
    double tolerance = 1e-13; // every series is summed until its tail is below this, relative to the sum
};
// The setting of a scene (its n, beta, decay and mask; the default width and tolerance).
InfluenceSetting influenceSetting(const Scene& scene);

// a_n = n^2 I_n(beta) / (beta I_0(beta)), the growth rate of Fourier mode n of a perturbation of the uniform
// law under the mean-field softmax field (per unit of the scene's time). Throws std::invalid_argument unless
// 0 < beta <= 700 and n >= 1.
double influenceModeRate(int n, double beta);
// omega_n = exp(-pi^2 n^2 / (2 M^2)).
double retrievalWeight(int n, double width);

// The linearised weights: W_ik = w_ik / (kappa + sum_{l != i} w_il) for the keys k != i that query i sees,
// w_ik = exp(-(lambda / N) |i - k|), kappa = e^beta / I_0(beta) (the query's own weight; its own term of the
// field is zero). Row `last` of exp(c W) - I, times N, at the sources k = 0 .. N - 2: the entries in O(N) per
// power of W, summed until the tail bound c^(m+1) / (m+1)! (W's rows sum to less than 1) is below tolerance.
std::vector<double> modeInfluence(const InfluenceSetting& setting, double c);
// The scene's profile at time t >= 0: sum_n omega_n modeInfluence(a_n t), entry k = source k = 0 .. N - 2.
// Throws std::invalid_argument for a setting out of range (n < 2 or > 16384, beta, lambda < 0, width outside
// (0, 1000]) or a time so large that exp(a_1 t) overflows.
std::vector<double> influenceProfile(const InfluenceSetting& setting, double t);

// The mean-field limit N -> infinity (masked; positions s in (0, 1], the last token at 1). The kernel of
// exp(c W) - I from source s to target 1, W the Volterra operator (W g)(sigma) = int_0^sigma w(sigma, s) g(s)
// ds with w = lambda e^{lambda s} / (e^{lambda sigma} - 1) (1 / sigma for lambda = 0):
//     G_c(s) = (lambda e^{lambda s} / (e^lambda - 1)) psi_c(Y),  Y = log((e^lambda - 1) / (e^{lambda s} -
//     1)),
// psi_c(y) = sum_{k >= 0} c^{k+1} y^k / (k! (k+1)!) (= sqrt(c / y) I_1(2 sqrt(c y))).
double psiSeries(double c, double y, double tolerance = 1e-15);
double meanFieldModeInfluence(double c, double lambda, double s, double tolerance = 1e-15);
// sum_n omega_n G_{a_n t}(s): the paper's profile, in the scene's time.
double meanFieldInfluence(const InfluenceSetting& setting, double t, double s);
// The time at which the mean-field profile's slope at s = 1 changes sign, 2 (1 - e^-lambda) S1 / S2 with
// S_p = sum_n omega_n a_n^p: before it the last positions gain influence toward the end (recency: with the
// primacy of s -> 0, a U), after it they lose it. 0 for lambda = 0.
double uShapeEndTime(const InfluenceSetting& setting);

// Where a profile is least, and whether both ends lie above that minimum (strictly inside).
struct ProfileShape {
    int argmin = -1;
    bool uShaped = false;
};
ProfileShape profileShape(const std::vector<double>& profile);

} // namespace flowscope
