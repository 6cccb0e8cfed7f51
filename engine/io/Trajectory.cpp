#include "engine/io/Trajectory.h"

#include "engine/io/Npy.h"

#include <cstdint>
#include <stdexcept>

namespace flowscope {

void writeTrajectoryNpy(const std::string& path, const std::vector<const Tokens*>& frames, bool asFloat32) {
    if (frames.empty()) throw std::invalid_argument("trajectory: no frame to write");
    const std::int64_t T = std::int64_t(frames.size()), N = frames.front()->rows(),
                       d = frames.front()->cols();
    std::vector<double> data(std::size_t(T * N * d));
    for (std::int64_t k = 0; k < T; ++k) {
        const Tokens& x = *frames[std::size_t(k)];
        if (x.rows() != N || x.cols() != d)
            throw std::invalid_argument("trajectory: frame " + std::to_string(k) + " has another shape");
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t c = 0; c < d; ++c) data[std::size_t((k * N + i) * d + c)] = x(i, c);
    }
    writeNpy(path, {T, N, d}, data.data(), asFloat32);
}

} // namespace flowscope
