// Flowscope UI: the application's look applied: Qt's Fusion style with a theme's palette
// (render/picture/Theme).
#pragma once

#include "render/picture/Theme.h"

class QApplication;

namespace flowscope {

void applyTheme(QApplication& app, ThemeKind kind);
inline void applyDarkTheme(QApplication& app) {
    applyTheme(app, ThemeKind::Dark);
}

} // namespace flowscope
