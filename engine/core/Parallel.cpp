#include "engine/core/Parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace flowscope {
namespace {

thread_local bool tInsideWorker = false;
std::atomic<bool> gBackground{false};
constexpr int kBackgroundNice = 10;

// On Linux nice values are per thread: lower this one's priority.
void lowerThisThread() {
#if defined(__linux__)
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), kBackgroundNice);
#endif
}

class Pool {
  public:
    explicit Pool(int n) {
        for (int i = 0; i < n - 1; ++i) workers_.emplace_back([this] { loop(); });
    }
    ~Pool() {
        {
            std::lock_guard lock(mutex_);
            quit_ = true;
        }
        wake_.notify_all();
        for (auto& w : workers_) w.join();
    }
    int size() const { return int(workers_.size()) + 1; }

    void run(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
        std::lock_guard runLock(runMutex_); // one parallel region at a time
        const std::size_t chunks = (n + grain - 1) / grain;
        {
            std::lock_guard lock(mutex_);
            fn_ = &fn;
            n_ = n;
            grain_ = grain;
            chunks_ = chunks;
            next_.store(0);
            pending_ = workers_.size();
            ++generation_;
        }
        wake_.notify_all();
        const bool wasInside = tInsideWorker;
        tInsideWorker = true; // nested parallelFor calls from fn run inline
        work();               // the caller works too
        tInsideWorker = wasInside;
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return pending_ == 0; });
        fn_ = nullptr;
    }

  private:
    void work() {
        for (;;) {
            const std::size_t c = next_.fetch_add(1);
            if (c >= chunks_) break;
            const std::size_t b = c * grain_;
            (*fn_)(b, std::min(n_, b + grain_));
        }
    }
    void loop() {
        tInsideWorker = true;
        bool lowered = false;
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
                if (quit_) return;
                seen = generation_;
            }
            if (gBackground && !lowered) lowered = (lowerThisThread(), true);
            work();
            std::lock_guard lock(mutex_);
            if (--pending_ == 0) done_.notify_one();
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_, runMutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t, std::size_t)>* fn_ = nullptr;
    std::size_t n_ = 0, grain_ = 1, chunks_ = 0, pending_ = 0;
    std::atomic<std::size_t> next_{0};
    std::uint64_t generation_ = 0;
    bool quit_ = false;
};

int gThreads = 0;
std::unique_ptr<Pool> gPool;
std::mutex gPoolMutex;

Pool& pool() {
    std::lock_guard lock(gPoolMutex);
    if (!gPool) {
        if (gThreads <= 0) gThreads = std::max(1u, std::thread::hardware_concurrency());
        gPool = std::make_unique<Pool>(gThreads);
    }
    return *gPool;
}

} // namespace

int threadCount() {
    return pool().size();
}

void setThreadCount(int n) {
    std::lock_guard lock(gPoolMutex);
    gThreads = std::max(1, n);
    gPool.reset();
}

void useBackgroundPriority() {
    gBackground = true; // workers lower themselves at their next wake-up
    lowerThisThread();
}

void parallelFor(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (n == 0) return;
    grain = std::max<std::size_t>(1, grain);
    if (n <= grain || tInsideWorker) {
        fn(0, n);
        return;
    }
    Pool& p = pool();
    if (p.size() == 1) {
        fn(0, n);
        return;
    }
    p.run(n, grain, fn);
}

bool insideParallelFor() {
    return tInsideWorker;
}

InlineParallelFor::InlineParallelFor() : wasInside_(tInsideWorker) {
    tInsideWorker = true;
}

InlineParallelFor::~InlineParallelFor() {
    tInsideWorker = wasInside_;
}

} // namespace flowscope
