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

// WCAG 2's contrast ratio of two opaque colours, (L1 + 0.05) / (L2 + 0.05) with L the relative luminance of
// the sRGB colour (the lighter one's first): 1 to 21; text is legible at 4.5 (level AA).
double contrastRatio(const QColor& a, const QColor& b);
// `top` with opacity `alpha` drawn over `bottom` (per sRGB channel, as the GL blend does).
QColor blend(const QColor& top, double alpha, const QColor& bottom);

} // namespace flowscope
