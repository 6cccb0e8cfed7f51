#include "render/picture/Theme.h"

namespace flowscope {

PlotStyle plotStyle(ThemeKind kind) {
    if (kind == ThemeKind::Dark) return PlotStyle{};
    PlotStyle s;
    s.background = QColor(0xfb, 0xfb, 0xfc);
    s.grid = QColor(0xe4, 0xe6, 0xeb);
    s.axis = QColor(0xa8, 0xae, 0xb9);
    s.label = QColor(0x5a, 0x60, 0x6b);
    return s;
}

QPalette themePalette(ThemeKind kind) {
    const bool dark = kind == ThemeKind::Dark;
    const QColor window = dark ? QColor(0x23, 0x25, 0x2b) : QColor(0xef, 0xf0, 0xf3);
    const QColor base = dark ? QColor(0x1a, 0x1c, 0x21) : QColor(0xff, 0xff, 0xff);
    const QColor text = dark ? QColor(0xe6, 0xe8, 0xee) : QColor(0x1d, 0x20, 0x26);
    const QColor accent(0x3d, 0x8b, 0xd9), muted(0x80, 0x86, 0x93);
    QPalette p;
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, muted);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, dark ? window.lighter(115) : window.lighter(104));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, accent.lighter(130));
    p.setColor(QPalette::Light, dark ? window.lighter(150) : QColor(Qt::white));
    p.setColor(QPalette::Midlight, dark ? window.lighter(125) : window.lighter(103));
    p.setColor(QPalette::Mid, window.darker(120));
    p.setColor(QPalette::Dark, window.darker(150));
    p.setColor(QPalette::Shadow, dark ? QColor(Qt::black) : window.darker(200));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, muted);
    return p;
}

} // namespace flowscope
