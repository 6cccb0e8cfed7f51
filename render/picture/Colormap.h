// Flowscope picture: colour maps for per-token colours.
#pragma once

#include <QColor>

namespace flowscope {

// Matplotlib's viridis at u in [0, 1] (clamped): perceptually uniform and readable by colour-blind users.
QColor viridis(double u);

} // namespace flowscope
