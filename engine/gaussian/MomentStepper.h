// Flowscope engine: the steps of the moment solvers (MomentSolver.h), on any matrix types.
//
// MomentStepper<Field> holds a field by reference and every workspace a step needs, so that with a
// FixedMomentField (d <= 4: matrices stored inline, and the adaptive state as a matrix of at most d x (d +
// 1)) a step touches no heap: the field evaluation, the Dormand-Prince stages, the PSD projection and its
// eigensolver all live on the stack or in the stepper. DynamicMomentField adapts any MomentField to the same
// interface (Vec, Mat: allocating, as MomentField::affine does), which is the path for d > 4 and for a
// MomentField subclass of one's own. The two paths do the same arithmetic in the same order
// (tests/engine/test_moment_fixed_size.cpp; tests/engine/alloc/ counts the allocations).
#pragma once

#include "engine/dynamics/DormandPrince.h"
#include "engine/gaussian/MomentField.h"

#include <algorithm>

namespace flowscope {

// Any MomentField on the dynamic types: affine() copies MomentField::affine's (b, L).
class DynamicMomentField {
  public:
    static constexpr int Dim = Eigen::Dynamic, MaxDim = Eigen::Dynamic;
    using Vector = Vec;
    using Matrix = Mat;

    explicit DynamicMomentField(const MomentField& field) : field_(field) {}
    void affine(double t, const Vec& mean, const Mat& cov, Vec& b, Mat& L) const {
        AffineField f = field_.affine(t, mean, cov);
        b.swap(f.b);
        L.swap(f.L);
    }

  private:
    const MomentField& field_;
};

template <class Field> class MomentStepper {
  public:
    static constexpr int D = Field::Dim, MaxD = Field::MaxDim;
    using Vector = typename Field::Vector;
    using Matrix = typename Field::Matrix;
    // The adaptive state Y = [alpha | R], d x (1 + r), Sigma = R R^T (r <= d): at most MaxD x (MaxD + 1),
    // inline (a single row is stored row-major, as Eigen requires).
    using Packed = Eigen::Matrix<double, D, Eigen::Dynamic, D == 1 ? Eigen::RowMajor : Eigen::ColMajor, MaxD,
                                 MaxD == Eigen::Dynamic ? Eigen::Dynamic : MaxD + 1>;

    MomentStepper(const Field& field, const IntegratorSpec& spec)
        : field_(field), control_(spec.rtol, spec.atol, spec.minStep) {}

    // alpha' = b + L alpha and Sigma' = L Sigma + Sigma L^T at (t, mean, cov) (MomentField::rates).
    void rates(double t, const Vector& mean, const Matrix& cov, Vector& rateMean, Matrix& rateCov);
    // The authors' PSD projection in place: symmetrize, replace negative eigenvalues by 1e-14.
    void projectPsd(Matrix& S);
    // (alpha, Sigma = R R^T) of a packed state.
    static void unpack(const Packed& Y, Vector& mean, Matrix& cov);
    // The adaptive solver's right-hand side: alpha' = b + L alpha, R' = L R.
    void derivative(double t, const Packed& Y, Packed& dY);
    // Dormand-Prince 5(4) from t to t + H: the stages of Integrator.cpp's DormandPrince (DormandPrince.h),
    // on Packed.
    StepResult advance(double t, double H, Packed& X);
    // tr Sigma' at (t, mean, cov).
    double traceRate(double t, const Vector& mean, const Matrix& cov);
    // One chunk of the adaptive solver from t toward `next`: at most half the distance g = tr Sigma / (tr
    // Sigma)' to a possible singularity (at least 1e-6 of the way). Updates t; returns advance()'s result.
    StepResult chunk(double& t, double next, Packed& Y);

    long evaluations = 0; // derivative() calls (the adaptive solver's count)

  private:
    const Field& field_;
    DormandPrinceControl control_;
    Vector b_, mean_, rateMean_;
    Vector lambda_;
    Matrix L_, P_, cov_, rateCov_, symmetric_;
    Eigen::SelfAdjointEigenSolver<Matrix> eig_;
    DormandPrinceStages<Packed> stages_;
};

// The steps are defined in MomentStepper.inc, which MomentSolver.cpp includes and instantiates for the three
// fields it runs (where they inline into the solvers); any other file links to those copies.
extern template class MomentStepper<FixedMomentField<2>>;
extern template class MomentStepper<SmallMomentField>;
extern template class MomentStepper<DynamicMomentField>;

} // namespace flowscope
