#include "render/picture/OffscreenApplication.h"

#include "render/picture/Theme.h"

namespace flowscope {

std::unique_ptr<QGuiApplication> makeOffscreenApplication(const char* name) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    qputenv("QT_QPA_OFFSCREEN_NO_GLX", "1");
    static int argc = 1;
    static char* argv[] = {const_cast<char*>(name), nullptr};
    auto app = std::make_unique<QGuiApplication>(argc, argv);
    QGuiApplication::setPalette(themePalette(ThemeKind::Dark));
    return app;
}

} // namespace flowscope
