// No heap allocation inside a step of the moment solvers on the heap-free path (d <= 4; MomentStepper.h):
// 1000 projected Euler steps and 1000 adaptive chunks, for d = 1 to 4 and every Gaussian variant, with
// every malloc counted. Its own executable (flowscope_alloc_tests): it replaces malloc and its kin (glibc's
// __libc_* underneath), which catches Eigen's dynamic matrices (Eigen calls malloc itself) as well as
// operator new (libstdc++'s calls malloc). The counter only counts while a Counting lives on the calling
// thread, and the same steps on the dynamic path (Vec/Mat) must count some, so the check can fail.
#include "engine/gaussian/MomentSolver.h"
#include "engine/gaussian/MomentStepper.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {

thread_local bool gCounting = false;
thread_local long gAllocations = 0;

void count() {
    if (gCounting) ++gAllocations;
}

// Counts the allocations of this thread while it lives.
class Counting {
  public:
    Counting() {
        gAllocations = 0;
        gCounting = true;
    }
    ~Counting() { gCounting = false; }
    long allocations() const { return gAllocations; }
};

} // namespace

extern "C" {
void* malloc(std::size_t size) {
    count();
    return __libc_malloc(size);
}
void* calloc(std::size_t n, std::size_t size) {
    count();
    return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t size) {
    count();
    return __libc_realloc(p, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
    count();
    return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
    count();
    return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
    count();
    void* p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void free(void* p) {
    __libc_free(p);
}
}

using namespace flowscope;

namespace {

// Every Gaussian variant, one head in dimension d (A + A^T positive definite: the covariance grows, so that
// 1000 steps stay busy; tol_high is not tested here).
Scene variantScene(AttentionType type, int d) {
    Scene s;
    s.d = d;
    s.attention.type = type;
    Mat Q = Mat::Identity(d, d);
    Q(0, d - 1) = 0.3;
    s.attention.heads = {{0.2 * Q, Mat::Identity(d, d), Mat::Identity(d, d)}};
    s.attention.sinkhornEps = 0.5;
    s.integrator.rtol = 1e-9;
    s.integrator.atol = 1e-12;
    return s;
}

constexpr AttentionType kVariants[] = {AttentionType::Softmax, AttentionType::Linear, AttentionType::L2,
                                       AttentionType::Sinkhorn, AttentionType::Drifting};
constexpr int kSteps = 1000;

struct Counts {
    long euler = 0, adaptive = 0;
};

// 1000 projected Euler steps and 1000 adaptive chunks (each several Dormand-Prince sub-steps) with `field`;
// the allocations inside them. The stepper, the state and the first evaluation are set up outside.
template <class Field> Counts countSteps(const Field& field, const Scene& s) {
    using Stepper = MomentStepper<Field>;
    const int d = s.d;
    Counts c;
    {
        Stepper st(field, s.integrator);
        typename Stepper::Vector mean = Vec::Constant(d, 0.1), rateMean = mean;
        typename Stepper::Matrix cov = 0.2 * Mat::Identity(d, d), rateCov = cov;
        st.rates(0.0, mean, cov, rateMean, rateCov);
        const double tau = 1e-3;
        const Counting counting;
        for (int k = 0; k < kSteps; ++k) {
            st.rates(double(k) * tau, mean, cov, rateMean, rateCov);
            mean += tau * rateMean;
            cov += tau * rateCov;
            st.projectPsd(cov);
        }
        c.euler = counting.allocations();
    }
    {
        Stepper st(field, s.integrator);
        typename Stepper::Packed Y(d, 1 + d);
        Y.col(0) = Vec::Constant(d, 0.1);
        Y.rightCols(d) = std::sqrt(0.2) * Mat::Identity(d, d);
        double t = 0.0;
        st.chunk(t, 1e-3, Y); // the workspaces take their shapes
        const Counting counting;
        for (int k = 0; k < kSteps; ++k) st.chunk(t, t + 1e-3, Y);
        c.adaptive = counting.allocations();
        EXPECT_GT(st.evaluations, 6 * kSteps);
    }
    return c;
}

template <int D> void expectNoAllocations() {
    for (AttentionType type : kVariants) {
        SCOPED_TRACE(toString(type));
        const Scene s = variantScene(type, D);
        const auto field = makeMomentField(s);
        const auto& fixed = std::get<MomentFieldOf<D>>(field->fixedSize());
        const Counts c = countSteps(fixed, s);
        EXPECT_EQ(c.euler, 0) << "allocations in " << kSteps << " projected Euler steps, d = " << D;
        EXPECT_EQ(c.adaptive, 0) << "allocations in " << kSteps << " adaptive chunks, d = " << D;
    }
}

} // namespace

TEST(MomentAllocations, NoneInsideFixedSizeStepsInTwoDimensions) {
    expectNoAllocations<2>();
}

TEST(MomentAllocations, NoneInsideFixedSizeStepsInThreeDimensions) {
    expectNoAllocations<3>();
}

// d = 1 and 4 share the run-time-sized form with d = 3 (SmallMomentField), at its smallest and its largest.
TEST(MomentAllocations, NoneInsideHeapFreeStepsInOneAndFourDimensions) {
    expectNoAllocations<1>();
    expectNoAllocations<4>();
}

// The check can fail: the same steps on the dynamic path allocate (at least once a step).
TEST(MomentAllocations, TheDynamicPathIsSeenAllocating) {
    for (int d : {2, 3}) {
        const Scene s = variantScene(AttentionType::Softmax, d);
        const auto field = makeMomentField(s);
        const Counts c = countSteps(DynamicMomentField(*field), s);
        EXPECT_GE(c.euler, kSteps) << "d = " << d;
        EXPECT_GE(c.adaptive, kSteps) << "d = " << d;
    }
}

// A whole solve on the fixed-size path allocates only to set up and to record: as many allocations for 2000
// paper Euler steps as for 1000 when both record only their first and last states.
TEST(MomentAllocations, AWholeSolveAllocatesIndependentlyOfItsLength) {
    Scene s = variantScene(AttentionType::Softmax, 2);
    s.moments.method = MomentMethod::PaperEuler;
    s.moments.step = 1e-4;
    s.moments.tolLow = 0.0;
    s.moments.tolHigh = 1e12;
    MomentSolveOptions o;
    o.recordEveryIter = 1L << 40;
    const auto field = makeMomentField(s);
    const GaussianState initial{Vec::Constant(2, 0.1), 0.2 * Mat::Identity(2, 2)};
    long counts[2] = {};
    for (int i = 0; i < 2; ++i) {
        s.moments.maxIter = 1000 * (i + 1);
        MomentTrajectory tr;
        {
            const Counting counting;
            tr = solveMoments(*field, initial, s, o);
            counts[i] = counting.allocations();
        }
        EXPECT_EQ(tr.iterations, s.moments.maxIter);
        EXPECT_EQ(tr.event, MomentEvent::MaxIter);
    }
    EXPECT_EQ(counts[0], counts[1]);
    EXPECT_GT(counts[0], 0); // the records
}
