// libdocfeed.so's own translation unit: the library is the whole static archives of the
// components (cmake/DocfeedInstall.cmake); this file only gives the target a source.
#include "docfeed/loader.h"
