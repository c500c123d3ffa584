// The cuDNN frontend's copy of nlohmann/json, replaced by the system's (Debian's nlohmann-json3-dev), which the
// rest of HetSim uses: one copy of the library in the build.
#pragma once
#include <nlohmann/json.hpp>
