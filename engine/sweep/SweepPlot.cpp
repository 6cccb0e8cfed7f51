// Flowscope engine: sweep tables as figures (SweepPlot.h).
#include "engine/sweep/SweepPlot.h"

#include "engine/core/Colormap.h"
#include "engine/io/JsonReader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace flowscope {

namespace {

constexpr Rgb kInk{30, 30, 30}, kGrey{200, 200, 200}, kWhite{255, 255, 255};

Rgb viridis(double t) {
    const std::array<double, 3> c = viridisRgb(t);
    return {std::uint8_t(std::lround(255 * c[0])), std::uint8_t(std::lround(255 * c[1])),
            std::uint8_t(std::lround(255 * c[2]))};
}

std::string label(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

// The distinct values of a column, ascending.
std::vector<double> levels(const std::vector<double>& column) {
    std::vector<double> v;
    for (double x : column)
        if (!std::isnan(x)) v.push_back(x);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

std::size_t indexOf(const std::vector<double>& levels, double v) {
    return std::size_t(std::lower_bound(levels.begin(), levels.end(), v) - levels.begin());
}

std::string titleOf(const SweepTable& t) {
    const std::string name = t.record.contains("sweep") ? t.record["sweep"].value("name", "") : "";
    return name.empty() ? "sweep" : name;
}

void text(Figure& f, double x, double y, const std::string& s, double size,
          Figure::Anchor a = Figure::Anchor::Start) {
    f.texts.push_back({x, y, s, size, a, kInk});
}

} // namespace

SweepHeat sweepHeat(const SweepTable& table, const std::string& x, const std::string& y,
                    const std::string& measure, std::vector<double> xLevels, std::vector<double> yLevels) {
    const std::vector<double>&xs = table.column(x), &ys = table.column(y), &ms = table.column(measure);
    SweepHeat h;
    h.xLevels = xLevels.empty() ? levels(xs) : levels(xLevels);
    h.yLevels = yLevels.empty() ? levels(ys) : levels(yLevels);
    const std::size_t nx = h.nx(), ny = h.ny(), n = nx * ny;
    h.rows.assign(n, 0);
    h.numbers.assign(n, 0);
    std::vector<double> sum(n, 0.0), squares(n, 0.0), prop2(n, 0.0), prop2n(n, 0.0);
    const std::vector<double>* blowUp = nullptr;
    for (std::size_t c = 0; c < table.columns.size(); ++c)
        if (table.columns[c] == "prop2_blow_up") blowUp = &table.values[c];
    h.hasProp2 = blowUp != nullptr;
    for (std::size_t r = 0; r < ms.size(); ++r) {
        if (std::isnan(xs[r]) || std::isnan(ys[r])) continue;
        const std::size_t i = indexOf(h.xLevels, xs[r]), j = indexOf(h.yLevels, ys[r]);
        if (i >= nx || j >= ny || h.xLevels[i] != xs[r] || h.yLevels[j] != ys[r]) continue; // not a level
        const std::size_t k = h.index(i, j);
        h.rows[k] += 1;
        if (!std::isnan(ms[r])) {
            sum[k] += ms[r];
            squares[k] += ms[r] * ms[r];
            h.numbers[k] += 1;
        }
        if (blowUp && !std::isnan((*blowUp)[r])) {
            prop2[k] += (*blowUp)[r];
            prop2n[k] += 1;
        }
    }
    h.mean.assign(n, NAN);
    h.sd.assign(n, NAN);
    h.regime.assign(n, -1);
    double lo = INFINITY, hi = -INFINITY;
    for (std::size_t k = 0; k < n; ++k) {
        if (h.numbers[k] > 0) {
            const double m = double(h.numbers[k]);
            h.mean[k] = sum[k] / m;
            if (h.numbers[k] > 1)
                h.sd[k] = std::sqrt(std::max(0.0, (squares[k] - m * h.mean[k] * h.mean[k]) / (m - 1)));
            lo = std::min(lo, h.mean[k]);
            hi = std::max(hi, h.mean[k]);
        }
        if (prop2n[k] > 0) h.regime[k] = prop2[k] / prop2n[k] >= 0.5 ? 1 : 0;
    }
    if (lo <= hi) {
        h.lo = lo;
        h.hi = hi;
    }
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
            const int a = h.regime[h.index(i, j)];
            if (a < 0) continue;
            const auto differs = [&](std::size_t k) { return h.regime[k] >= 0 && h.regime[k] != a; };
            if (i + 1 < nx && differs(h.index(i + 1, j))) h.boundary.push_back({i, j, true});
            if (j + 1 < ny && differs(h.index(i, j + 1))) h.boundary.push_back({i, j, false});
        }
    return h;
}

SweepTable pairedDifference(const SweepTable& a, const SweepTable& b, const std::string& measure) {
    // The axis columns follow the five fixed ones (run, cell, replicate, seed, valid).
    const auto axes = [](const SweepTable& t) {
        const std::size_t n = t.record.contains("sweep") && t.record["sweep"].contains("axes")
                                  ? t.record["sweep"]["axes"].size()
                                  : 0;
        return std::vector<std::string>(t.columns.begin() + std::min<std::ptrdiff_t>(5, t.columns.size()),
                                        t.columns.begin() + std::min(5 + n, t.columns.size()));
    };
    const std::vector<std::string> inA = axes(a);
    std::vector<std::string> keys = {"seed"};
    for (const std::string& name : axes(b))
        if (std::find(inA.begin(), inA.end(), name) != inA.end()) keys.push_back(name);
    const auto keyOf = [&](const SweepTable& t, std::size_t row) {
        std::vector<double> key;
        for (const std::string& name : keys) key.push_back(t.column(name)[row]);
        return key;
    };
    std::map<std::vector<double>, std::pair<double, long>> baseline; // key -> (sum, count) of b's numbers
    const std::vector<double>& mb = b.column(measure);
    for (std::size_t r = 0; r < mb.size(); ++r)
        if (!std::isnan(mb[r])) {
            auto& [sum, count] = baseline[keyOf(b, r)];
            sum += mb[r];
            count += 1;
        }
    (void)a.column(measure); // throws naming it when a lacks it
    SweepTable d = a;
    std::vector<double>& md =
        d.values[std::size_t(std::find(d.columns.begin(), d.columns.end(), measure) - d.columns.begin())];
    for (std::size_t r = 0; r < md.size(); ++r) {
        const auto it = baseline.find(keyOf(a, r));
        md[r] = it == baseline.end() ? NAN : md[r] - it->second.first / double(it->second.second);
    }
    d.record["sweep"]["name"] = titleOf(a) + " - " + titleOf(b);
    return d;
}

Figure sweepHeatmap(const SweepTable& table, const std::string& x, const std::string& y,
                    const std::string& measure) {
    const SweepHeat h = sweepHeat(table, x, y, measure);
    const std::vector<double>&xl = h.xLevels, &yl = h.yLevels;
    const std::size_t nx = h.nx(), ny = h.ny();
    const double lo = h.lo, hi = h.hi;
    Figure f;
    f.width = 760;
    f.height = 600;
    const double left = 90, right = 130, top = 56, bottom = 70;
    const double pw = f.width - left - right, ph = f.height - top - bottom;
    const double cw = pw / double(nx), ch = ph / double(ny);
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
            const std::size_t k = h.index(i, j);
            const Rgb c = h.numbers[k] > 0 ? viridis(h.unit(h.mean[k])) : kGrey;
            f.rects.push_back({left + double(i) * cw, top + ph - double(j + 1) * ch, cw + 0.5, ch + 0.5, c});
            if (nx > 8 || ny > 8 || h.numbers[k] == 0) continue;
            // The cell's mean and spread, light on the dark half of the colour bar.
            const Rgb ink = h.unit(h.mean[k]) < 0.55 ? kWhite : kInk;
            const double cx = left + (double(i) + 0.5) * cw, cy = top + ph - (double(j) + 0.5) * ch;
            f.texts.push_back({cx, cy - 2, label(h.mean[k]), 13, Figure::Anchor::Middle, ink});
            if (!std::isnan(h.sd[k]))
                f.texts.push_back({cx, cy + 14, "sd " + label(h.sd[k]), 11, Figure::Anchor::Middle, ink});
        }
    // Prop 2's predicted boundary: edges between cells of different predicted regimes.
    for (const SweepHeat::Edge& e : h.boundary) {
        const double x0 = left + double(e.i) * cw, y0 = top + ph - double(e.j + 1) * ch;
        if (e.right)
            f.lines.push_back({x0 + cw, y0, x0 + cw, y0 + ch, kWhite, 3});
        else
            f.lines.push_back({x0, y0, x0 + cw, y0, kWhite, 3});
    }
    const bool boundary = !h.boundary.empty();
    // Frame, ticks (at most ~10 labels an axis) and labels.
    f.lines.push_back({left, top, left, top + ph, kInk, 1});
    f.lines.push_back({left, top + ph, left + pw, top + ph, kInk, 1});
    const std::size_t xStep = (nx + 9) / 10, yStep = (ny + 9) / 10;
    for (std::size_t i = 0; i < nx; i += xStep) {
        const double cx = left + (double(i) + 0.5) * cw;
        f.lines.push_back({cx, top + ph, cx, top + ph + 5, kInk, 1});
        text(f, cx, top + ph + 20, label(xl[i]), 12, Figure::Anchor::Middle);
    }
    for (std::size_t j = 0; j < ny; j += yStep) {
        const double cy = top + ph - (double(j) + 0.5) * ch;
        f.lines.push_back({left - 5, cy, left, cy, kInk, 1});
        text(f, left - 8, cy + 4, label(yl[j]), 12, Figure::Anchor::End);
    }
    text(f, left + pw / 2, f.height - 22, x, 15, Figure::Anchor::Middle);
    text(f, left - 8, top - 10, y, 15, Figure::Anchor::End);
    text(f, left + pw / 2, 30, titleOf(table) + ": " + measure + " (mean per cell)", 17,
         Figure::Anchor::Middle);
    // Colour bar.
    const double bx = left + pw + 30, bw = 22;
    const int steps = 100;
    for (int s = 0; s < steps; ++s)
        f.rects.push_back(
            {bx, top + ph * (1 - double(s + 1) / steps), bw, ph / steps + 0.5, viridis((s + 0.5) / steps)});
    f.lines.push_back({bx, top, bx + bw, top, kInk, 1});
    f.lines.push_back({bx, top + ph, bx + bw, top + ph, kInk, 1});
    for (int s = 0; s <= 4; ++s) {
        const double v = lo + (hi - lo) * s / 4, yy = top + ph * (1 - s / 4.0);
        f.lines.push_back({bx + bw, yy, bx + bw + 5, yy, kInk, 1});
        text(f, bx + bw + 8, yy + 4, label(v), 12);
    }
    text(f, bx + bw / 2, top - 10, measure, 13, Figure::Anchor::Middle);
    if (h.hasProp2)
        text(f, left + pw, top + ph + 40,
             boundary ? "white: Prop 2's blow-up boundary" : "Prop 2: one regime in every cell", 11,
             Figure::Anchor::End);
    return f;
}

SweepHistogram sweepHistogram(const SweepTable& table, const std::string& x, const std::string& measure,
                              std::vector<double> panels) {
    const std::vector<double>& ms = table.column(measure);
    const std::vector<double>* xs = x.empty() ? nullptr : &table.column(x);
    SweepHistogram h;
    h.panels = !xs ? std::vector<double>{0} : panels.empty() ? levels(*xs) : levels(panels);
    const std::vector<double> all = levels(ms);
    h.integral = !all.empty() && all.size() <= 64 && std::all_of(all.begin(), all.end(), [](double v) {
        return std::isfinite(v) && v == std::round(v);
    });
    h.lo = all.empty() ? 0 : (h.integral ? std::min(0.0, all.front()) : all.front());
    const double hi = all.empty() ? 1 : all.back();
    h.bins = h.integral ? int(hi - h.lo) + 1 : 20;
    h.width = h.integral ? 1 : (hi > h.lo ? (hi - h.lo) / h.bins : 1);
    h.counts.assign(h.panels.size(), std::vector<long>(std::size_t(h.bins), 0));
    h.excluded.assign(h.panels.size(), 0);
    for (std::size_t r = 0; r < ms.size(); ++r) {
        std::size_t p = 0;
        if (xs) {
            p = indexOf(h.panels, (*xs)[r]);
            if (p >= h.panels.size() || h.panels[p] != (*xs)[r]) continue;
        }
        if (!std::isfinite(ms[r])) {
            ++h.excluded[p];
            continue;
        }
        h.counts[p][std::size_t(h.bin(ms[r]))] += 1;
    }
    return h;
}

int SweepHistogram::bin(double value) const {
    const double at = (value - lo) / width;
    return std::clamp(int(integral ? std::round(at) : std::floor(at)), 0, bins - 1);
}

Figure sweepHistograms(const SweepTable& table, const std::string& x, const std::string& measure) {
    if (!x.empty()) {
        const std::size_t panels = levels(table.column(x)).size();
        if (panels > 12)
            throw std::invalid_argument("--x " + x + ": " + std::to_string(panels) +
                                        " values, more panels than 12");
    }
    const SweepHistogram h = sweepHistogram(table, x, measure);
    const std::vector<double>& panels = h.panels;
    const bool integral = h.integral;
    const double lo = h.lo, width = h.width;
    const int bins = h.bins;

    Figure f;
    const int cols = int(std::min<std::size_t>(panels.size(), 3)), rows = int((panels.size() + 2) / 3);
    f.width = 300 * cols + 40;
    f.height = 250 * rows + 60;
    text(f, f.width / 2.0, 28, titleOf(table) + ": " + measure, 17, Figure::Anchor::Middle);
    for (std::size_t p = 0; p < panels.size(); ++p) {
        const std::vector<long>& count = h.counts[p];
        const long excluded = h.excluded[p];
        const long most = std::max<long>(1, *std::max_element(count.begin(), count.end()));
        const double ox = 50 + 300.0 * double(p % 3), oy = 60 + 250.0 * double(p / 3);
        const double pw = 240, ph = 160, bw = pw / bins;
        for (int b = 0; b < bins; ++b) {
            const double h = ph * double(count[std::size_t(b)]) / double(most);
            f.rects.push_back({ox + b * bw + 1, oy + ph - h, bw - 2, h, viridis(0.35)});
            if (count[std::size_t(b)] > 0)
                text(f, ox + (b + 0.5) * bw, oy + ph - h - 4, std::to_string(count[std::size_t(b)]), 10,
                     Figure::Anchor::Middle);
            if (integral || b % 4 == 0)
                text(f, ox + (integral ? (b + 0.5) * bw : b * bw), oy + ph + 16, label(lo + b * width), 11,
                     Figure::Anchor::Middle);
        }
        f.lines.push_back({ox, oy + ph, ox + pw, oy + ph, kInk, 1});
        f.lines.push_back({ox, oy, ox, oy + ph, kInk, 1});
        std::string title = !x.empty() ? x + " = " + label(panels[p]) : measure;
        if (excluded) title += " (" + std::to_string(excluded) + " without a value)";
        text(f, ox + pw / 2, oy - 8, title, 13, Figure::Anchor::Middle);
        text(f, ox + pw / 2, oy + ph + 34, measure, 12, Figure::Anchor::Middle);
    }
    return f;
}

} // namespace flowscope
