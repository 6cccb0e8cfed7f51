// Flowscope engine: the plateaus of a curve against log t, for the metastable staircase of the energy E_beta
// (Geshkovski, Koubbi, Polyanskiy, Rigollet; docs/math/theory.md#metastability).
#pragma once

#include <vector>

namespace flowscope {

// How a plateau is told from a step (docs/math/theory.md#plateaus). R is the range max y - min y over the
// samples with t >= tMin; u = log t.
struct PlateauRule {
    double tMin = 1.0;       // samples before tMin are ignored (the groups' own fast collapse)
    double cell = 0.05;      // the curve is resampled on a uniform grid of this spacing in u
    double flatSlope = 0.05; // a cell is flat when |dy/du| <= flatSlope * R
    double minLength = 0.75; // a plateau is a run of flat cells at least this long in u (a factor 2.1 in t)
    double levelGap = 0.05;  // neighbouring plateaus whose levels differ by less than levelGap * R are one
};

struct Plateau {
    double t0 = 0, t1 = 0; // where it starts and ends
    double level = 0;      // the mean of y over it
};

// The plateaus of y(t) (times ascending and > 0; y finite), in order. A curve with R = 0 is one plateau.
std::vector<Plateau> plateaus(const std::vector<double>& t, const std::vector<double>& y,
                              const PlateauRule& rule = {});

} // namespace flowscope
