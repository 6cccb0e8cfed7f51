#include "engine/dynamics/PositionalInfluence.h"

#include "engine/dynamics/Equiangular.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace flowscope {

namespace {

constexpr int kMaxModes = 10000;
constexpr double kMaxRate = 700.0; // exp(c) stays finite below this

void checkSetting(const InfluenceSetting& s) {
    if (s.n < 2) throw std::invalid_argument("influence profile: n must be at least 2 tokens");
    if (!(s.beta > 0.0 && s.beta <= 700.0))
        throw std::invalid_argument("influence profile: beta must be in (0, 700]");
    if (!(s.lambda >= 0.0) || !std::isfinite(s.lambda))
        throw std::invalid_argument("influence profile: positional_decay must be finite and >= 0");
    // Bounds that keep the work bounded: the sweeps cost O(n) a mode and a power of W, and the modes needed
    // grow as M (omega_n < 1e-13 past n ~ 2.5 M; kMaxModes covers M up to 4000).
    if (s.n > 16384)
        throw std::invalid_argument(
            "influence profile: n must be at most 16384 tokens (its cost grows with n), "
            "got " +
            std::to_string(s.n));
    if (!(s.width > 0.0 && s.width <= 1000.0))
        throw std::invalid_argument("influence profile: the width M must be in (0, 1000]");
    if (!(s.tolerance > 0.0)) throw std::invalid_argument("influence profile: the tolerance must be > 0");
}

void checkTime(double t) {
    if (!(t >= 0.0) || !std::isfinite(t))
        throw std::invalid_argument("influence profile: the time t must be finite and >= 0");
}

// c = a_n t (rate = a_n), refused where exp(c) would overflow.
double modeTime(int n, double rate, double t) {
    const double c = rate * t;
    if (c > kMaxRate) {
        std::ostringstream text;
        text << "influence profile: t = " << t << " is too long (exp(a_" << n << " t) overflows)";
        throw std::invalid_argument(text.str());
    }
    return c;
}

// An upper bound on sum_{m > n} omega_m: the ratio omega_{m+1} / omega_m = exp(-pi^2 (2m + 1) / (2 M^2))
// decreases in m, so the tail is at most omega_{n+1} / (1 - that ratio at m = n + 1).
double weightTail(int n, double width) {
    const double ratio = std::exp(-M_PI * M_PI * (2.0 * n + 3.0) / (2.0 * width * width));
    return retrievalWeight(n + 1, width) / (1.0 - ratio);
}

// Sums omega_n term(c_n) over the modes n = 1, 2, ... into `sum` (add(weight, c) adds one mode) until the
// rest is below tolerance relative to the largest |entry| so far. bound(c) bounds every entry of one mode's
// term and increases with c. Past the first n with a_{n+1} <= a_n every later a_m is smaller still (both
// ((m + 1) / m)^2 and I_{m+1}(beta) / I_m(beta) decrease in m), so the rest is at most
// bound(c_{n+1}) sum_{m > n} omega_m.
template <class Add, class Bound, class Largest>
void sumModes(const InfluenceSetting& s, double t, Add add, Bound bound, Largest largest) {
    double rate = influenceModeRate(1, s.beta);
    for (int n = 1; n <= kMaxModes; ++n) {
        add(retrievalWeight(n, s.width), modeTime(n, rate, t)); // rate = a_n, computed once a mode
        const double next = influenceModeRate(n + 1, s.beta);
        if (next <= rate && bound(next * t) * weightTail(n, s.width) <= s.tolerance * largest()) return;
        rate = next;
    }
}

} // namespace

bool hasInfluenceProfile(const AttentionSpec& a, int d) {
    if (d != 2 || a.type != AttentionType::Softmax || !a.keyframes.empty() || a.heads.size() != 1 ||
        a.scaleByRootK || normalizationOf(a) != Normalization::Post || !(a.positionalDecay >= 0.0))
        return false;
    const HeadParams& h = a.heads.front();
    return isIdentity(h.Q, d) && isIdentity(h.K, d) && isIdentity(h.V, d);
}

InfluenceSetting influenceSetting(const Scene& scene) {
    InfluenceSetting s;
    s.n = scene.n;
    s.beta = scene.attention.beta;
    s.lambda = scene.attention.positionalDecay;
    s.masked = scene.attention.masked;
    return s;
}

double influenceModeRate(int n, double beta) {
    if (n < 1) throw std::invalid_argument("influence profile: Fourier modes start at n = 1");
    if (!(beta > 0.0 && beta <= 700.0))
        throw std::invalid_argument("influence profile: beta must be in (0, 700]");
    const double nn = double(n);
    return nn * nn * std::cyl_bessel_i(nn, beta) / (beta * std::cyl_bessel_i(0.0, beta));
}

double retrievalWeight(int n, double width) {
    const double x = M_PI * double(n) / width;
    return std::exp(-0.5 * x * x);
}

std::vector<double> modeInfluence(const InfluenceSetting& s, double c) {
    checkSetting(s);
    if (!(c >= 0.0) || c > kMaxRate) throw std::invalid_argument("influence profile: c must be in [0, 700]");
    const std::size_t N = std::size_t(s.n);
    const double q = std::exp(-s.lambda / s.n);
    const double kappa = std::exp(s.beta) / std::cyl_bessel_i(0.0, s.beta);
    // left[i] = sum_{k < i} q^(i - k); the keys after i add left[N - 1 - i] when unmasked.
    std::vector<double> left(N, 0.0), z(N, 0.0);
    for (std::size_t i = 1; i < N; ++i) left[i] = q * (1.0 + left[i - 1]);
    for (std::size_t i = 0; i < N; ++i) z[i] = kappa + left[i] + (s.masked ? 0.0 : left[N - 1 - i]);

    // term = c^m / m! e_last W^m, one row-vector product per power: (r W)_k = sum_{i != k sees k} (r_i / z_i)
    // q^|i - k|, a sweep from the end (queries after k) and, unmasked, one from the start (queries before k).
    std::vector<double> term(N, 0.0), next(N, 0.0), sum(N, 0.0);
    term[N - 1] = 1.0;
    double factor = 1.0; // c^m / m!, which bounds |term|_1 since W's rows sum to less than 1
    for (int m = 1; m <= 100000 && c > 0.0; ++m) {
        double after = 0.0;
        for (std::size_t k = N; k-- > 0;) {
            next[k] = after;
            after = q * (after + term[k] / z[k]);
        }
        if (!s.masked) {
            double before = 0.0;
            for (std::size_t k = 0; k < N; ++k) {
                next[k] += before;
                before = q * (before + term[k] / z[k]);
            }
        }
        factor *= c / m;
        double norm = 0.0, total = 0.0;
        for (std::size_t k = 0; k < N; ++k) {
            term[k] = next[k] * c / m;
            sum[k] += term[k];
            norm += std::abs(term[k]);
            total += std::abs(sum[k]);
        }
        if (norm == 0.0) break; // masked: W is strictly lower triangular, W^N = 0
        // The rest: sum_{j > m} c^j / j! <= c^(m+1) / (m+1)! / (1 - c / (m + 2)) once m + 2 > c.
        const double rest = m + 2 > c ? factor * c / (m + 1) / (1.0 - c / (m + 2)) : INFINITY;
        if (rest <= s.tolerance * total) break;
    }
    sum.pop_back(); // the last token itself
    for (double& v : sum) v *= double(N);
    return sum;
}

std::vector<double> influenceProfile(const InfluenceSetting& s, double t) {
    checkSetting(s);
    checkTime(t);
    std::vector<double> profile(std::size_t(s.n - 1), 0.0);
    double largest = 0.0;
    sumModes(
        s, t,
        [&](double weight, double c) {
            const std::vector<double> mode = modeInfluence(s, c);
            for (std::size_t k = 0; k < profile.size(); ++k) {
                profile[k] += weight * mode[k];
                largest = std::max(largest, std::abs(profile[k]));
            }
        },
        // Every entry of one mode is at most N (e^c - 1): the row of exp(c W) - I sums to that over N.
        [&](double c) { return double(s.n) * std::expm1(c); }, [&] { return largest; });
    return profile;
}

double psiSeries(double c, double y, double tolerance) {
    if (!(c >= 0.0) || !(y >= 0.0)) throw std::invalid_argument("psi_c(y): c and y must be >= 0");
    double term = c, total = c;
    for (int k = 0; k < 1000000 && term > 0.0; ++k) {
        term *= c * y / ((k + 1.0) * (k + 2.0));
        total += term;
        // The ratios of successive terms decrease: once below 1 the rest is a geometric series' worth.
        const double ratio = c * y / ((k + 2.0) * (k + 3.0));
        if (ratio < 1.0 && term * ratio / (1.0 - ratio) <= tolerance * total) break;
    }
    return total;
}

double meanFieldModeInfluence(double c, double lambda, double s, double tolerance) {
    if (!(s > 0.0 && s <= 1.0)) throw std::invalid_argument("influence profile: s must be in (0, 1]");
    if (!(lambda >= 0.0)) throw std::invalid_argument("influence profile: lambda must be >= 0");
    if (lambda == 0.0) return psiSeries(c, -std::log(s), tolerance);
    // lambda e^{lambda s} / (e^lambda - 1) and log((e^lambda - 1) / (e^{lambda s} - 1)), written with
    // e^{-lambda}: finite for any lambda.
    const double front = lambda * std::exp(-lambda * (1.0 - s)) / -std::expm1(-lambda);
    const double y = lambda * (1.0 - s) + std::log(-std::expm1(-lambda)) - std::log(-std::expm1(-lambda * s));
    return front * psiSeries(c, std::max(y, 0.0), tolerance);
}

double meanFieldInfluence(const InfluenceSetting& st, double t, double s) {
    checkSetting(st);
    checkTime(t);
    double sum = 0.0;
    // psi_c grows with c, so one mode's G_c(s) bounds those of every smaller c.
    sumModes(
        st, t, [&](double weight, double c) { sum += weight * meanFieldModeInfluence(c, st.lambda, s); },
        [&](double c) { return meanFieldModeInfluence(c, st.lambda, s); }, [&] { return std::abs(sum); });
    return sum;
}

double uShapeEndTime(const InfluenceSetting& st) {
    checkSetting(st);
    if (st.lambda == 0.0) return 0.0;
    double s1 = 0.0, s2 = 0.0, rate = influenceModeRate(1, st.beta);
    for (int n = 1; n <= kMaxModes; ++n) {
        const double w = retrievalWeight(n, st.width);
        s1 += w * rate, s2 += w * rate * rate;
        const double next = influenceModeRate(n + 1, st.beta);
        // Past the peak of a_n the rest of S1 is at most a_{n+1} times the weights' tail (S2 below
        // a_{n+1}^2).
        if (next <= rate && next * weightTail(n, st.width) <= st.tolerance * s1 &&
            next * next * weightTail(n, st.width) <= st.tolerance * s2)
            break;
        rate = next;
    }
    return 2.0 * -std::expm1(-st.lambda) * s1 / s2;
}

ProfileShape profileShape(const std::vector<double>& profile) {
    ProfileShape shape;
    if (profile.empty()) return shape;
    const auto least = std::min_element(profile.begin(), profile.end());
    shape.argmin = int(least - profile.begin());
    shape.uShaped = profile.front() > *least && profile.back() > *least;
    return shape;
}

} // namespace flowscope
