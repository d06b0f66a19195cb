// canopy::Error: the one exception type Canopy throws for anything a user can
// cause (bad input, a kernel that does not verify, a device that refuses work).
// Its message names the thing at fault and, where there is one, the fix.
#pragma once

#include <stdexcept>
#include <string>

namespace canopy {

/// Thrown for every error a user can cause. `what()` is a complete sentence
/// naming the input at fault and what to do about it.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace canopy
