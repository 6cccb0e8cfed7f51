// Flowscope media: a small vector figure (filled rectangles, lines, text) written as SVG or drawn into RGBA
// pixels for a PNG. The sweep plots (engine/sweep/SweepPlot.h) are built as one; the SVG is exact vector
// output, the PNG the same figure rasterised, its text by FreeType with DejaVu Sans (fonts-dejavu-core).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flowscope {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
};

struct Figure {
    enum class Anchor { Start, Middle, End };
    struct Rect {
        double x, y, w, h;
        Rgb fill;
    };
    struct Line {
        double x0, y0, x1, y1;
        Rgb colour;
        double width = 1;
    };
    struct Text {
        double x, y; // the baseline's anchor point
        std::string text;
        double size = 12;
        Anchor anchor = Anchor::Start;
        Rgb colour;
    };
    int width = 640, height = 480;
    Rgb background{255, 255, 255};
    std::vector<Rect> rects;
    std::vector<Line> lines;
    std::vector<Text> texts; // drawn last
};

std::string figureSvg(const Figure& f);

// The figure as RGBA8 pixels (width x height, rows top to bottom). Throws std::runtime_error when the font
// cannot be found or this build has no FreeType and the figure has text.
std::vector<std::uint8_t> rasteriseFigure(const Figure& f);

// Writes `path` as .svg or .png by its extension (atomically); std::invalid_argument for another extension.
void writeFigure(const Figure& f, const std::string& path);

} // namespace flowscope
