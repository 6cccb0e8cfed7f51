#include "render/picture/Theme.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
    const QColor white(Qt::white);
    // Each role's colour; the disabled text roles are muted below.
    const std::pair<QPalette::ColorRole, QColor> roles[] = {
        {QPalette::Window, window},
        {QPalette::WindowText, text},
        {QPalette::Base, base},
        {QPalette::AlternateBase, window},
        {QPalette::ToolTipBase, base},
        {QPalette::ToolTipText, text},
        {QPalette::PlaceholderText, muted},
        {QPalette::Text, text},
        {QPalette::Button, dark ? window.lighter(115) : window.lighter(104)},
        {QPalette::ButtonText, text},
        {QPalette::BrightText, white},
        {QPalette::Highlight, accent},
        {QPalette::HighlightedText, white},
        {QPalette::Link, accent.lighter(130)},
        {QPalette::Light, dark ? window.lighter(150) : white},
        {QPalette::Midlight, dark ? window.lighter(125) : window.lighter(103)},
        {QPalette::Mid, window.darker(120)},
        {QPalette::Dark, window.darker(150)},
        {QPalette::Shadow, dark ? QColor(Qt::black) : window.darker(200)},
    };
    QPalette p;
    for (const auto& [role, color] : roles) p.setColor(role, color);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, muted);
    return p;
}

} // namespace flowscope

namespace flowscope {

namespace {
// The relative luminance of an sRGB colour (WCAG 2): each channel linearized, then weighted.
double luminance(const QColor& c) {
    const auto linear = [](double v) {
        return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}
} // namespace

double contrastRatio(const QColor& a, const QColor& b) {
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor blend(const QColor& top, double alpha, const QColor& bottom) {
    const auto mix = [alpha](double t, double b) { return alpha * t + (1.0 - alpha) * b; };
    return QColor::fromRgbF(float(mix(top.redF(), bottom.redF())), float(mix(top.greenF(), bottom.greenF())),
                            float(mix(top.blueF(), bottom.blueF())));
}

} // namespace flowscope
