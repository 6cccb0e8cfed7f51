// Flowscope engine: the steps of the moment solvers (MomentSolver.h), on any matrix types.
//
// MomentStepper<Field> holds a field by reference and every workspace a step needs, so that with a
// FixedMomentField<D> (d = D <= 4: Eigen::Matrix<double, D, D>, and the adaptive state as a matrix of at most
// D x (D + 1)) a step touches no heap: the field evaluation, the Dormand-Prince stages, the PSD projection
// and its eigensolver all live on the stack or in the stepper. DynamicMomentField adapts any MomentField to
// the same interface (Vec, Mat: allocating, as MomentField::affine does), which is the path for d > 4 and for
// a MomentField subclass of one's own. The two paths do the same arithmetic in the same order
// (tests/unit/test_moment_fixed_size.cpp; tests/unit/alloc/ counts the allocations).
#pragma once

#include "engine/dynamics/DormandPrince.h"
#include "engine/gaussian/MomentField.h"

#include <algorithm>

namespace flowscope {

// Any MomentField on the dynamic types: affine() copies MomentField::affine's (b, L).
class DynamicMomentField {
  public:
    static constexpr int Dim = Eigen::Dynamic;
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
    static constexpr int D = Field::Dim;
    using Vector = typename Field::Vector;
    using Matrix = typename Field::Matrix;
    // The adaptive state Y = [alpha | R], d x (1 + r), Sigma = R R^T (r <= d): at most D x (D + 1), on the
    // stack (a single row is stored row-major, as Eigen requires).
    using Packed = Eigen::Matrix<double, D, Eigen::Dynamic, D == 1 ? Eigen::RowMajor : Eigen::ColMajor, D,
                                 D == Eigen::Dynamic ? Eigen::Dynamic : D + 1>;

    MomentStepper(const Field& field, const IntegratorSpec& spec)
        : field_(field), control_(spec.rtol, spec.atol, spec.minStep) {}

    // alpha' = b + L alpha and Sigma' = L Sigma + Sigma L^T at (t, mean, cov) (MomentField::rates).
    void rates(double t, const Vector& mean, const Matrix& cov, Vector& rateMean, Matrix& rateCov) {
        field_.affine(t, mean, cov, b_, L_);
        P_ = L_ * cov;
        rateMean = b_ + L_ * mean;
        rateCov = P_ + P_.transpose();
    }

    // The authors' PSD projection in place: symmetrize, replace negative eigenvalues by 1e-14.
    void projectPsd(Matrix& S) {
        symmetric_ = 0.5 * (S + S.transpose());
        eig_.compute(symmetric_);
        lambda_ = eig_.eigenvalues();
        if (lambda_.minCoeff() >= 0.0) {
            S = symmetric_;
            return;
        }
        for (Eigen::Index i = 0; i < lambda_.size(); ++i)
            if (lambda_[i] < 0.0) lambda_[i] = 1e-14;
        S = eig_.eigenvectors() * lambda_.asDiagonal() * eig_.eigenvectors().transpose();
    }

    // (alpha, Sigma = R R^T) of a packed state.
    static void unpack(const Packed& Y, Vector& mean, Matrix& cov) {
        const auto R = Y.rightCols(Y.cols() - 1);
        mean = Y.col(0);
        cov = R * R.transpose();
    }

    // The adaptive solver's right-hand side: alpha' = b + L alpha, R' = L R.
    void derivative(double t, const Packed& Y, Packed& dY) {
        const Eigen::Index r = Y.cols() - 1;
        const auto R = Y.rightCols(r);
        mean_ = Y.col(0);
        cov_ = R * R.transpose();
        field_.affine(t, mean_, cov_, b_, L_);
        dY.resize(Y.rows(), Y.cols());
        dY.col(0) = b_ + L_ * mean_;
        dY.rightCols(r) = L_ * R;
        ++evaluations;
    }

    // Dormand-Prince 5(4) from t to t + H: Integrator.cpp's DormandPrince, stage for stage, on Packed.
    StepResult advance(double t, double H, Packed& X) {
        using T = DormandPrinceTableau;
        static constexpr double a21 = T::a[1][0], a31 = T::a[2][0], a32 = T::a[2][1], a41 = T::a[3][0],
                                a42 = T::a[3][1], a43 = T::a[3][2], a51 = T::a[4][0], a52 = T::a[4][1],
                                a53 = T::a[4][2], a54 = T::a[4][3], a61 = T::a[5][0], a62 = T::a[5][1],
                                a63 = T::a[5][2], a64 = T::a[5][3], a65 = T::a[5][4], b1 = T::a[6][0],
                                b3 = T::a[6][2], b4 = T::a[6][3], b5 = T::a[6][4], b6 = T::a[6][5],
                                e1 = T::e[0], e3 = T::e[2], e4 = T::e[3], e5 = T::e[4], e6 = T::e[5],
                                e7 = T::e[6];
        if (!control_.begin(t, H)) return control_.result();
        derivative(t, X, k1_);
        while (const std::optional<double> step = control_.next()) {
            const double h = *step;
            t = control_.time();
            tmp_ = X + h * a21 * k1_;
            derivative(T::stageTime(1, t, h), tmp_, k2_);
            tmp_ = X + h * (a31 * k1_ + a32 * k2_);
            derivative(T::stageTime(2, t, h), tmp_, k3_);
            tmp_ = X + h * (a41 * k1_ + a42 * k2_ + a43 * k3_);
            derivative(T::stageTime(3, t, h), tmp_, k4_);
            tmp_ = X + h * (a51 * k1_ + a52 * k2_ + a53 * k3_ + a54 * k4_);
            derivative(T::stageTime(4, t, h), tmp_, k5_);
            tmp_ = X + h * (a61 * k1_ + a62 * k2_ + a63 * k3_ + a64 * k4_ + a65 * k5_);
            derivative(t + h, tmp_, k6_);
            xNew_ = X + h * (b1 * k1_ + b3 * k3_ + b4 * k4_ + b5 * k5_ + b6 * k6_);
            derivative(t + h, xNew_, k7_);
            err_ = h * (e1 * k1_ + e3 * k3_ + e4 * k4_ + e5 * k5_ + e6 * k6_ + e7 * k7_);
            const auto scale =
                control_.atol() + control_.rtol() * X.cwiseAbs().cwiseMax(xNew_.cwiseAbs()).array();
            if (control_.judge(std::sqrt((err_.array() / scale).square().mean()))) {
                X.swap(xNew_);
                k1_.swap(k7_); // first same as last
            }
        }
        return control_.result();
    }

    // tr Sigma' at (t, mean, cov).
    double traceRate(double t, const Vector& mean, const Matrix& cov) {
        rates(t, mean, cov, rateMean_, rateCov_);
        return rateCov_.trace();
    }

    // One chunk of the adaptive solver from t toward `next`: at most half the distance g = tr Sigma / (tr
    // Sigma)' to a possible singularity (at least 1e-6 of the way). Updates t; returns advance()'s result.
    StepResult chunk(double& t, double next, Packed& Y) {
        unpack(Y, mean_, cov_);
        const double trace = cov_.trace();
        const double rate = traceRate(t, mean_, cov_);
        double h = next - t;
        if (rate > 0.0) h = std::min(h, std::max(0.5 * trace / rate, 1e-6 * h));
        StepResult r = advance(t, h, Y);
        if (r.ok && !(r.reached > t)) r.ok = false; // no progress in t: stop (StepCollapse)
        t = r.reached;
        return r;
    }

    long evaluations = 0; // derivative() calls (the adaptive solver's count)

  private:
    const Field& field_;
    DormandPrinceControl control_;
    Vector b_, mean_, rateMean_;
    Vector lambda_;
    Matrix L_, P_, cov_, rateCov_, symmetric_;
    Eigen::SelfAdjointEigenSolver<Matrix> eig_;
    Packed k1_, k2_, k3_, k4_, k5_, k6_, k7_, tmp_, xNew_, err_;
};

} // namespace flowscope
