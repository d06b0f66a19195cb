#include "fuzz_support.hpp"

#include <cstdio>
#include <cstdlib>

namespace canopy::fuzz {

void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz check failed: %.*s\n", static_cast<int>(what.size()), what.data());
  if (!detail.empty()) std::fprintf(stderr, "%.*s\n", static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace canopy::fuzz
