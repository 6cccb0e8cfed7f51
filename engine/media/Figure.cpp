// Flowscope media: vector figures as SVG and RGBA pixels (Figure.h).
#include "engine/media/Figure.h"

#include "engine/core/Text.h"
#include "engine/io/AtomicFile.h"
#include "engine/media/PngWriter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#ifdef FLOWSCOPE_HAVE_FREETYPE
#include <ft2build.h>
#include FT_FREETYPE_H
#endif

namespace flowscope {

namespace {

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

std::string escaped(const std::string& s) {
    return escapeChars(s, {{'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}, {'"', "&quot;"}});
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

struct Canvas {
    int w, h;
    std::vector<std::uint8_t> px;
    void blend(int x, int y, Rgb c, double a) {
        if (x < 0 || y < 0 || x >= w || y >= h || a <= 0) return;
        a = std::min(a, 1.0);
        std::uint8_t* p = &px[(std::size_t(y) * std::size_t(w) + std::size_t(x)) * 4];
        p[0] = std::uint8_t(std::lround(p[0] * (1 - a) + c.r * a));
        p[1] = std::uint8_t(std::lround(p[1] * (1 - a) + c.g * a));
        p[2] = std::uint8_t(std::lround(p[2] * (1 - a) + c.b * a));
    }
};

#ifdef FLOWSCOPE_HAVE_FREETYPE
const char* fontPath() {
    static const char* kFonts[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                                   "/usr/share/fonts/TTF/DejaVuSans.ttf",
                                   "/usr/share/fonts/dejavu/DejaVuSans.ttf"};
    for (const char* p : kFonts)
        if (std::filesystem::exists(p)) return p;
    return nullptr;
}

void drawTexts(const Figure& f, Canvas& c) {
    const char* path = fontPath();
    if (!path)
        throw std::runtime_error(
            "no DejaVuSans.ttf for the figure's text (Debian: fonts-dejavu-core); write .svg instead");
    FT_Library lib = nullptr;
    FT_Face face = nullptr;
    if (FT_Init_FreeType(&lib) || FT_New_Face(lib, path, 0, &face)) {
        if (lib) FT_Done_FreeType(lib);
        throw std::runtime_error(std::string("cannot load the font ") + path);
    }
    for (const Figure::Text& t : f.texts) {
        FT_Set_Pixel_Sizes(face, 0, FT_UInt(std::lround(t.size)));
        double width = 0;
        for (unsigned char ch : t.text)
            if (!FT_Load_Char(face, ch, FT_LOAD_DEFAULT)) width += double(face->glyph->advance.x) / 64;
        double x = t.x - (t.anchor == Figure::Anchor::Middle ? width / 2
                          : t.anchor == Figure::Anchor::End  ? width
                                                             : 0);
        for (unsigned char ch : t.text) {
            if (FT_Load_Char(face, ch, FT_LOAD_RENDER)) continue;
            const FT_GlyphSlot g = face->glyph;
            const int x0 = int(std::lround(x)) + g->bitmap_left, y0 = int(std::lround(t.y)) - g->bitmap_top;
            for (unsigned r = 0; r < g->bitmap.rows; ++r)
                for (unsigned col = 0; col < g->bitmap.width; ++col)
                    c.blend(x0 + int(col), y0 + int(r), t.colour,
                            g->bitmap.buffer[r * unsigned(g->bitmap.pitch) + col] / 255.0);
            x += double(g->advance.x) / 64;
        }
    }
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
}
#else
void drawTexts(const Figure& f, Canvas&) {
    if (!f.texts.empty())
        throw std::runtime_error("this build has no FreeType for the figure's text; write .svg instead");
}
#endif

} // namespace

std::string figureSvg(const Figure& f) {
    std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(f.width) +
                    "\" height=\"" + std::to_string(f.height) + "\" viewBox=\"0 0 " +
                    std::to_string(f.width) + " " + std::to_string(f.height) + "\">\n";
    s += "<rect width=\"100%\" height=\"100%\" fill=\"" + hex(f.background) + "\"/>\n";
    for (const Figure::Rect& r : f.rects)
        s += "<rect x=\"" + num(r.x) + "\" y=\"" + num(r.y) + "\" width=\"" + num(r.w) + "\" height=\"" +
             num(r.h) + "\" fill=\"" + hex(r.fill) + "\"/>\n";
    for (const Figure::Line& l : f.lines)
        s += "<line x1=\"" + num(l.x0) + "\" y1=\"" + num(l.y0) + "\" x2=\"" + num(l.x1) + "\" y2=\"" +
             num(l.y1) + "\" stroke=\"" + hex(l.colour) + "\" stroke-width=\"" + num(l.width) +
             "\" stroke-linecap=\"square\"/>\n";
    static const char* kAnchor[] = {"start", "middle", "end"};
    for (const Figure::Text& t : f.texts)
        s += "<text x=\"" + num(t.x) + "\" y=\"" + num(t.y) +
             "\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"" + num(t.size) + "\" text-anchor=\"" +
             kAnchor[int(t.anchor)] + "\" fill=\"" + hex(t.colour) + "\">" + escaped(t.text) + "</text>\n";
    return s + "</svg>\n";
}

std::vector<std::uint8_t> rasteriseFigure(const Figure& f) {
    Canvas c{f.width, f.height,
             std::vector<std::uint8_t>(std::size_t(f.width) * std::size_t(f.height) * 4, 255)};
    for (int y = 0; y < f.height; ++y)
        for (int x = 0; x < f.width; ++x) c.blend(x, y, f.background, 1);
    for (const Figure::Rect& r : f.rects)
        for (int y = int(std::floor(r.y)); y < int(std::ceil(r.y + r.h)); ++y)
            for (int x = int(std::floor(r.x)); x < int(std::ceil(r.x + r.w)); ++x) c.blend(x, y, r.fill, 1);
    for (const Figure::Line& l : f.lines) {
        // Sample the segment every half pixel and fill a square of the line's width around each sample.
        const double len = std::hypot(l.x1 - l.x0, l.y1 - l.y0);
        const int steps = std::max(1, int(std::ceil(len * 2)));
        const double half = l.width / 2;
        for (int i = 0; i <= steps; ++i) {
            const double x = l.x0 + (l.x1 - l.x0) * i / steps, y = l.y0 + (l.y1 - l.y0) * i / steps;
            for (int py = int(std::floor(y - half)); py <= int(std::ceil(y + half)) - 1; ++py)
                for (int px = int(std::floor(x - half)); px <= int(std::ceil(x + half)) - 1; ++px)
                    c.blend(px, py, l.colour, 1);
        }
    }
    drawTexts(f, c);
    return c.px;
}

void writeFigure(const Figure& f, const std::string& path) {
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".svg") {
        const std::string svg = figureSvg(f);
        writeFileAtomically(path, [&](std::ostream& o) { o << svg; });
    } else if (ext == ".png") {
        const std::vector<std::uint8_t> px = rasteriseFigure(f);
        writePng(path, f.width, f.height, px.data(), f.width * 4);
    } else {
        throw std::invalid_argument("expected a .png or .svg file, got " + path);
    }
}

} // namespace flowscope
