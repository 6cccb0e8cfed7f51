#include "render/picture/Colormap.h"

#include "engine/core/Colormap.h"

namespace flowscope {

QColor viridis(double u) {
    const std::array<double, 3> c = viridisRgb(u);
    return QColor::fromRgbF(float(c[0]), float(c[1]), float(c[2]));
}

} // namespace flowscope
