// Flowscope UI: the application's look: dark and light Fusion palettes, and the plot colours that match them.
#pragma once

#include "render/picture/PlotDecorations.h"

class QApplication;

namespace flowscope {

enum class ThemeKind { Dark, Light };

void applyTheme(QApplication& app, ThemeKind kind);
inline void applyDarkTheme(QApplication& app) {
    applyTheme(app, ThemeKind::Dark);
}
// The plot background, grid and label colours of a theme.
PlotStyle plotStyle(ThemeKind kind);

} // namespace flowscope
