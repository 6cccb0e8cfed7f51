#include "engine/core/Text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace flowscope {

std::size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string_view closestName(std::string_view word, std::span<const std::string_view> names,
                             std::size_t maxEdits) {
    std::string_view best;
    std::size_t bestDistance = maxEdits + 1;
    for (const std::string_view name : names) {
        // Lengths further apart than maxEdits are that many edits apart (and a 5 MB key is not compared).
        if (word.size() > name.size() + maxEdits || name.size() > word.size() + maxEdits) continue;
        if (const std::size_t distance = editDistance(word, name); distance < bestDistance) {
            bestDistance = distance;
            best = name;
        }
    }
    return best;
}

std::string fnv1a64Hex(std::string_view text) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ULL;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

} // namespace flowscope
