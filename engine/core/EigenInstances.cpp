// The one instantiation of the decompositions EigenInstances.h declares.
#include "engine/core/EigenInstances.h"

FLOWSCOPE_EIGEN_INSTANCES()
