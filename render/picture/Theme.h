// Flowscope picture: the application's two looks, as colours: the palette of text and panels (dark and
// light), and the plot colours that match each. The app applies the palette with Qt's Fusion style
// (ui/widgets/Theme); headless pictures paint with it directly.
#pragma once

#include "render/picture/PlotDecorations.h"

#include <QPalette>

namespace flowscope {

enum class ThemeKind { Dark, Light };

QPalette themePalette(ThemeKind kind);
// The plot background, grid and label colours of a theme.
PlotStyle plotStyle(ThemeKind kind);

} // namespace flowscope
