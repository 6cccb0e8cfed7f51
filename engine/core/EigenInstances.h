// Flowscope engine: Eigen's dense decompositions of MatrixXd, instantiated once for the whole tree
// (EigenInstances.cpp) instead of in every file that uses one. An SVD, an eigensolver or a Cholesky costs a
// file seconds of compile time each (clang 14, -O3: JacobiSVD alone ~8 s); these declarations make the
// compiler call the one instantiation instead. Included by engine/core/Types.h, so every file that uses
// the engine's matrix types sees them. Hand them a MatrixXd, not an expression: `es(Mat(A + A.transpose()))`.
// An expression argument instantiates compute<Expression> and, through it, the whole tridiagonalization again
// in that file (seen in -ftime-trace: ~2.5 s of CPU per file).
#pragma once

#include <Eigen/Dense>

// X(extern) declares, X() defines (in EigenInstances.cpp only). Member templates (compute of a MatrixXd) are
// named one by one: a class's explicit instantiation does not cover them.
#define FLOWSCOPE_EIGEN_INSTANCES(X)                                                                         \
    X template class Eigen::JacobiSVD<Eigen::MatrixXd>;                                                      \
    X template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;                                         \
    X template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>&                                               \
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>::compute<Eigen::MatrixXd>(                                \
        const Eigen::EigenBase<Eigen::MatrixXd>&, int);                                                      \
    X template class Eigen::LLT<Eigen::MatrixXd>;                                                            \
    X template Eigen::LLT<Eigen::MatrixXd>& Eigen::LLT<Eigen::MatrixXd>::compute<Eigen::MatrixXd>(           \
        const Eigen::EigenBase<Eigen::MatrixXd>&);                                                           \
    X template class Eigen::LDLT<Eigen::MatrixXd>;                                                           \
    X template Eigen::LDLT<Eigen::MatrixXd>& Eigen::LDLT<Eigen::MatrixXd>::compute<Eigen::MatrixXd>(         \
        const Eigen::EigenBase<Eigen::MatrixXd>&);                                                           \
    X template class Eigen::PartialPivLU<Eigen::MatrixXd>;                                                   \
    X template class Eigen::ColPivHouseholderQR<Eigen::MatrixXd>;                                            \
    X template class Eigen::HouseholderQR<Eigen::MatrixXd>;                                                  \
    X template class Eigen::EigenSolver<Eigen::MatrixXd>;

FLOWSCOPE_EIGEN_INSTANCES(extern)
