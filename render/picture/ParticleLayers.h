// Flowscope picture: the layers of the particle picture. Each turns the shown snapshot into vertices for
// render/PointRenderer: `enabled` says whether it draws, `append` adds its vertices to a buffer (points, or
// lines as vertex pairs). The particle picture (ParticlePicture) stacks them:
//
//   lines under the points   TrailsLayer      the last recorded frames, fading with age
//   points                   TokensLayer      one round point per token, coloured by index, speed, cluster
//                                             or attention entropy
//   lines over the points    GaussianLayer    the moment ODE's Gaussian: 1- and 2-sigma ellipses
//                            AttentionLayer   the picked token's attention row as lines
//                            AxesLayer        3-D: the coordinate directions from the cloud's corner
//   lines under the points   SphereLayer      3-D on the sphere: the unit sphere's wireframe
//
// Vertices are in the shown coordinates (the d-dimensional tokens times the view's d x k basis, k = 2 or 3)
// minus the frame's origin, so that float32 keeps its precision far from 0. No widgets, no GL calls.
#pragma once

#include "engine/core/Types.h"
#include "render/PointRenderer.h"

#include <QColor>

#include <Eigen/Core>

#include <memory>
#include <vector>

namespace flowscope {

class GaussianOverlay;
struct Snapshot;

using VertexBuffer = std::vector<PointVertex>;

// What every layer draws from: the shown snapshot and where its tokens are in the shown coordinates.
struct ParticleFrame {
    const Snapshot* snapshot = nullptr; // never null when a layer is asked to append
    const Snapshot* previous = nullptr; // the one before it in the same run (speed colouring), or null
    Mat basis;                          // d x k: the shown coordinates are x^T basis
    Tokens projected;                   // N x k: the snapshot's tokens in the shown coordinates
    bool is3D = false;                  // k = 3 (an orbit camera), else the plane
    Eigen::Vector3d origin = Eigen::Vector3d::Zero(); // subtracted from every vertex
    Eigen::Vector3d boxLo = Eigen::Vector3d::Zero(), boxHi = Eigen::Vector3d::Zero(); // finite tokens' box
    bool boxValid = false;

    // A point in the shown coordinates (k entries, or more: the rest is ignored) as a vertex position.
    Eigen::Vector3d place(const Vec& shown) const;
};

PointVertex pointVertex(const Eigen::Vector3d& p, const QColor& c, double alpha = 1.0);
// Whether row i of P has only finite entries (a diverged token has none to draw).
bool finiteRow(const Tokens& P, Eigen::Index i);
// Bounding box of the finite rows of P (N x k, k <= 3; missing coordinates 0); false when there are none.
bool finiteBox(const Tokens& P, Eigen::Vector3d& lo, Eigen::Vector3d& hi);

enum class ColorBy { Index, Speed, Cluster, Entropy };

// One vertex per token (vertex i is token i, as drawing from a device copy needs); a diverged token gets a
// transparent vertex, which the shader discards. Colours: viridis of i / (N - 1); of the speed |dx/dt|
// (finite difference with the previous snapshot) over its 95th percentile; a categorical colour per cluster
// (greedy leader clustering at clusterTol); viridis of the attention entropy H_i / log N of the latest
// recorded frame (0: attends to one token, 1: uniform), grey before there is one.
struct TokensLayer {
    ColorBy colorBy = ColorBy::Index;
    double clusterTol = 1e-3;
    void append(const ParticleFrame& f, VertexBuffer& points) const;
};

// Segments from each token's place in one of the last kFrames recorded frames to the next, with opacity
// growing towards the present, in the token's index colour. Off above kMaxTokens tokens (the line count).
struct TrailsLayer {
    static constexpr int kFrames = 24;
    static constexpr Eigen::Index kMaxTokens = 20000;
    bool enabled = false;
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// The Gaussian N(m, S) of the moment ODE at the snapshot's time, projected (m' = B^T m, S' = B^T S B): the
// ellipses {m' + k S'^(1/2) u : |u| = 1} for k = 1 and 2, in the plane; in 3-D the three ellipses of the
// principal planes of S'. Drawn only where the overlay has a solution in the scene's dimension.
struct GaussianLayer {
    bool enabled = true;
    const GaussianOverlay* overlay = nullptr;
    QColor color{235, 235, 240};
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// The picked token's attention row P_i.: a line to every other token j with opacity 0.9 P_ij / max_j P_ij
// (weights under 2 % of the largest are left out).
struct AttentionLayer {
    int token = -1; // none
    Vec weights;    // P_i., one per token; empty when the variant has no attention distribution
    bool enabled() const { return token >= 0 && weights.size() > 0; }
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// 3-D, tokens on the unit sphere (the scene's attention.sphere): the sphere about the shown origin as a
// wireframe, meridians every 30 degrees of longitude and parallels every 30 degrees of latitude, so that the
// cloud has the surface it lives on around it (with the picture's depth cue its far side fades).
struct SphereLayer {
    static constexpr int kMeridians = 6, kParallels = 5, kSegments = 72; // segments per circle
    bool enabled = false;
    QColor color{150, 160, 180};
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// The plane, causal attention on the circle (hasParkingPicture, d = 2): the Rényi-parking leaders of the
// initial tokens (engine/dynamics/CausalParking.h) where they started: a ring around each, a radial tick
// outside the circle, and the arc of half the spacing delta on either side of it just outside the circle,
// so that the parking spots and the clusters that form at them can be compared.
struct ParkingLayer {
    static constexpr int kRingSegments = 24;
    static constexpr double kRing = 0.05, kArcRadius = 1.08; // in the tokens' units (the unit circle)
    bool enabled = true;
    Tokens leaders; // the leaders' initial directions (unit rows, d = 2); empty: nothing to draw
    double delta = 0.0;
    QColor color{240, 160, 40};
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// The plane, hardmax attention (hasHardmaxCells): the boundaries of the keys' cells at the shown tokens,
// each cell a cone from the origin (engine/dynamics/HardmaxCells.h), drawn as its two rays out to 1.5 times
// the farthest token. Off above kMaxTokens tokens (N^2 work per frame).
struct HardmaxLayer {
    static constexpr Eigen::Index kMaxTokens = 2048;
    bool enabled = true;
    bool active = false; // the scene has the cells
    Mat M;               // the score matrix Q^T K
    QColor color{120, 200, 230};
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

// 3-D only: the three coordinate directions (red, green, blue) from the corner boxLo of the cloud, a quarter
// of its extent long; their labels are text, drawn by the picture.
struct AxesLayer {
    bool enabled = true;
    static double length(const ParticleFrame& f); // a quarter of the cloud's largest extent
    void append(const ParticleFrame& f, VertexBuffer& lines) const;
};

} // namespace flowscope
