// Reading the emulators' own variables (CANOPY_EMULATED_*), shared by the
// emulated CUDA and Level Zero drivers.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace canopy_emulated_environment {

/// Bytes from variable `name` ("2G", "48K", "1048576"), else `fallback`.
inline std::size_t size_from_environment(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  std::size_t scale = 1;
  if (end && (*end == 'K' || *end == 'k')) scale = std::size_t{1} << 10;
  if (end && (*end == 'M' || *end == 'm')) scale = std::size_t{1} << 20;
  if (end && (*end == 'G' || *end == 'g')) scale = std::size_t{1} << 30;
  return value > 0 ? static_cast<std::size_t>(value * static_cast<double>(scale)) : fallback;
}

}  // namespace canopy_emulated_environment
