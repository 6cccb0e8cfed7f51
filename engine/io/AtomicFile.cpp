#include "engine/io/AtomicFile.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace flowscope {

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    try {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot open " + tmp + " for writing");
        write(out);
        out.flush();
        if (!out) throw std::runtime_error("write failed for " + path);
        out.close();
        if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename to " + path);
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
}

} // namespace flowscope
