// Workspace.h declares signals: this file makes AUTOMOC compile its meta-object code.
#include "ui/shell/Workspace.h"
