#include "engine/gaussian/MomentFiles.h"

#include "engine/io/Npy.h"
#include "engine/io/OutputSet.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace flowscope {

std::string momentsCompanionPath(const std::string& path, const std::string& name) {
    const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
    return (npy ? path.substr(0, path.size() - 4) : path) + "_" + name + ".npy";
}

MomentArrays momentArrays(const std::vector<MomentTrajectory>& trajectories) {
    if (trajectories.empty() || trajectories.front().states.empty())
        throw std::invalid_argument("moments: no trajectories to write");
    const Eigen::Index d = trajectories.front().states.front().mean.size();
    std::size_t k = 0;
    for (const MomentTrajectory& t : trajectories) {
        if (t.states.size() != t.times.size())
            throw std::invalid_argument("moments: a trajectory has as many times as states");
        for (const GaussianState& s : t.states)
            if (s.mean.size() != d || s.cov.rows() != d || s.cov.cols() != d)
                throw std::invalid_argument("moments: the trajectories' dimensions differ");
        k = std::max(k, t.times.size());
    }
    const std::size_t r = trajectories.size(), dd = std::size_t(d);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> times(r * k, nan), means(r * k * dd, nan), covs(r * k * dd * dd, nan);
    for (std::size_t i = 0; i < r; ++i)
        for (std::size_t j = 0; j < trajectories[i].times.size(); ++j) {
            const GaussianState& s = trajectories[i].states[j];
            times[i * k + j] = trajectories[i].times[j];
            for (std::size_t a = 0; a < dd; ++a) {
                means[(i * k + j) * dd + a] = s.mean(Eigen::Index(a));
                for (std::size_t b = 0; b < dd; ++b)
                    covs[((i * k + j) * dd + a) * dd + b] = s.cov(Eigen::Index(a), Eigen::Index(b));
            }
        }
    return {std::int64_t(r), std::int64_t(k),  std::int64_t(d),
            std::move(covs), std::move(means), std::move(times)};
}

void writeMomentsNpy(const std::string& path, const std::vector<MomentTrajectory>& trajectories) {
    const MomentArrays a = momentArrays(trajectories);
    const std::string timesPath = momentsCompanionPath(path, "times"),
                      meansPath = momentsCompanionPath(path, "means");
    writeOutputSet({timesPath, meansPath, path}, [&] {
        writeNpy(timesPath, {a.trajectories, a.records}, a.times.data(), false);
        writeNpy(meansPath, {a.trajectories, a.records, a.d}, a.means.data(), false);
        writeNpy(path, {a.trajectories, a.records, a.d, a.d}, a.covs.data(), false);
    });
}

} // namespace flowscope
