#include "render/ConeData.h"

#include "engine/gaussian/Cone.h"
#include "engine/gaussian/MomentField.h"
#include "engine/scene/RunBudget.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace flowscope {

namespace {

bool finite(const Eigen::Vector3d& p) {
    return p.allFinite();
}

std::optional<Eigen::Vector3d> vector3(const nlohmann::json& j) {
    if (!j.is_array() || j.size() != 3) return std::nullopt;
    Eigen::Vector3d v;
    for (int i = 0; i < 3; ++i) {
        if (!j[std::size_t(i)].is_number()) return std::nullopt;
        v[i] = j[std::size_t(i)].get<double>();
    }
    if (!v.allFinite()) return std::nullopt;
    return v;
}

double number(const nlohmann::json& j, const char* key, double fallback) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return fallback;
    const double v = it->get<double>();
    return std::isfinite(v) ? v : fallback;
}

ConeTrajectory toConeTrajectory(const MomentTrajectory& m) {
    ConeTrajectory out;
    out.event = m.event;
    out.tMax = m.tMax;
    for (std::size_t k = 0; k < m.states.size() && k < m.times.size(); ++k) {
        const Eigen::Vector3d p = toCone(m.states[k].cov);
        if (!finite(p)) break; // nothing after a non-finite state is meaningful
        out.times.push_back(m.times[k]);
        out.points.push_back(p);
    }
    return out;
}

// Running solves, joined when the process ends (see runDetached).
class DetachedJobs {
  public:
    ~DetachedJobs() {
        std::lock_guard lock(mutex_);
        for (Job& j : jobs_) j.thread.join();
    }
    void start(std::function<void()> job) {
        std::lock_guard lock(mutex_);
        // Reap the jobs that have finished: joining them is immediate.
        for (auto it = jobs_.begin(); it != jobs_.end();) {
            if (it->done->load()) {
                it->thread.join();
                it = jobs_.erase(it);
            } else {
                ++it;
            }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        jobs_.push_back({std::thread([job = std::move(job), done] {
                             job();
                             done->store(true);
                         }),
                         done});
    }

  private:
    struct Job {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::mutex mutex_;
    std::list<Job> jobs_;
};

} // namespace

ConeHints coneHints(const std::string& viewJson) {
    ConeHints h;
    const nlohmann::json root = nlohmann::json::parse(viewJson, nullptr, /*allow_exceptions=*/false);
    if (!root.is_object()) return h;
    const auto cone = root.find("cone");
    if (cone == root.end() || !cone->is_object()) return h;
    const nlohmann::json& c = *cone;
    h.elev = std::clamp(number(c, "elev", h.elev), -90.0, 90.0);
    h.azim = number(c, "azim", h.azim);
    if (const auto it = c.find("color_by"); it != c.end() && it->is_string())
        if (it->get<std::string>() == "final_trace") h.colorBy = ConeColorBy::FinalTrace;
    if (const auto it = c.find("plot"); it != c.end() && it->is_string())
        if (it->get<std::string>() == "disc") h.plot = ConeMode::Disc;
    if (const auto it = c.find("reference_rays"); it != c.end() && it->is_array())
        for (const auto& ray : *it)
            if (const auto p = vector3(ray); p && p->z() > 0.0) h.referenceRays.push_back(*p);
    if (const auto it = c.find("reference_plane_normal"); it != c.end())
        if (const auto n = vector3(*it); n && n->norm() > 0.0) h.referencePlaneNormal = n->normalized();
    return h;
}

Eigen::Vector3d ConeTrajectory::at(double t) const {
    if (points.empty()) return Eigen::Vector3d::Constant(std::nan(""));
    if (t <= times.front()) return points.front();
    if (t >= times.back()) return points.back();
    const auto k =
        std::size_t(std::upper_bound(times.begin(), times.end(), t) - times.begin()); // times[k] > t
    const double t0 = times[k - 1], t1 = times[k];
    const double f = t1 > t0 ? (t - t0) / (t1 - t0) : 1.0;
    return (1.0 - f) * points[k - 1] + f * points[k];
}

double ConeTrajectory::peakTrace() const {
    double z = 0.0;
    for (const Eigen::Vector3d& p : points) z = std::max(z, p.z());
    return z;
}

std::vector<double> ConeData::colorValues(ConeColorBy by) const {
    std::vector<double> v;
    v.reserve(trajectories.size());
    for (const ConeTrajectory& t : trajectories) {
        if (t.points.empty())
            v.push_back(0.0);
        else
            v.push_back(by == ConeColorBy::InitialY ? t.points.front().y() : t.points.back().z());
    }
    return v;
}

std::optional<std::string> coneUnsupported(const Scene& scene) {
    if (scene.d != 2)
        return "The covariance cone needs d = 2; this scene has d = " + std::to_string(scene.d) + ".";
    try {
        initialGaussians(scene);
        makeMomentField(scene);
    } catch (const std::exception& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

double coneHeightCap(const std::vector<ConeTrajectory>& trajectories) {
    std::vector<double> peaks;
    for (const ConeTrajectory& t : trajectories)
        if (!t.points.empty()) peaks.push_back(t.peakTrace());
    if (peaks.empty()) return 1.0;
    std::sort(peaks.begin(), peaks.end());
    const double highest = peaks.back(), median = peaks[peaks.size() / 2];
    const double cap = median > 0.0 ? std::min(highest, 10.0 * median) : highest;
    return cap > 0.0 ? cap : 1.0; // everything at the apex: keep a unit cone to draw
}

ConeData computeConeData(const Scene& scene) {
    ConeData out;
    if (const auto why = coneUnsupported(scene)) {
        out.message = *why;
        return out;
    }
    std::vector<MomentTrajectory> solved;
    try {
        solved = solveAllMoments(
            scene, boundedMomentOptions(scene, defaultMemoryLimit(), false, "half this machine's memory"));
    } catch (const std::exception& e) {
        out.message = e.what();
        return out;
    }
    std::map<std::string, int> others;
    out.trajectories.reserve(solved.size());
    for (const MomentTrajectory& m : solved) {
        out.trajectories.push_back(toConeTrajectory(m));
        switch (m.event) {
        case MomentEvent::Converged:
            ++out.converged;
            break;
        case MomentEvent::BlowUp:
            ++out.blowUp;
            break;
        default:
            ++out.other;
            ++others[m.event == MomentEvent::None ? "reached T" : toString(m.event)];
        }
    }
    for (const auto& [kind, count] : others)
        out.otherKinds += (out.otherKinds.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
    out.heightCap = coneHeightCap(out.trajectories);
    for (const ConeTrajectory& t : out.trajectories) {
        const double peak = t.peakTrace();
        out.peakTrace = std::max(out.peakTrace, peak);
        if (peak > out.heightCap) ++out.clipped;
    }
    return out;
}

void runDetached(std::function<void()> job) {
    static DetachedJobs jobs; // constructed after the engine's pool, so destroyed (joined) before it
    jobs.start(std::move(job));
}

} // namespace flowscope
