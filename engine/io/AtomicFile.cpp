#include "engine/io/AtomicFile.h"

#include "engine/io/OutputSet.h"

namespace flowscope {

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
    if (OutputSet* set = OutputSet::capturing(path)) {
        set->write(path, write);
        return;
    }
    OutputSet one({path}, {}, "output");
    one.write(path, write);
    one.commit();
}

} // namespace flowscope
