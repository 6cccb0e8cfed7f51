// Flowscope UI: toolbar icons drawn in code, in the palette's text colour.
//
// The style's standard media icons are black glyphs, close to invisible on a dark toolbar; drawing our own
// keeps them legible in any palette and sharp at any devicePixelRatio, with no image files to ship.
#pragma once

#include <QColor>
#include <QIcon>

namespace flowscope {

enum class IconKind { Play, Pause, Step, Reset, Frame, Follow, Open };

QIcon makeIcon(IconKind kind, const QColor& color);

} // namespace flowscope
