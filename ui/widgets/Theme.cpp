#include "ui/widgets/Theme.h"

#include <QApplication>
#include <QStyleFactory>

namespace flowscope {

void applyTheme(QApplication& app, ThemeKind kind) {
    // Fusion draws the same everywhere and follows the palette fully; native styles may ignore dark palettes.
    app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    app.setPalette(themePalette(kind));
}

} // namespace flowscope
