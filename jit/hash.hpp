// A fast 128-bit non-cryptographic hash of bytes. Canopy names cached kernels
// by it (the kernel cache key) and checks cache files with its 64-bit form.
// It is not meant to resist an attacker; it is meant to make accidental
// collisions between different kernels practically impossible, and it is the
// same on every run and every machine (little- or big-endian).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace canopy::jit {

/// A 128-bit hash value.
struct Hash128 {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  bool operator==(const Hash128&) const = default;
};

/// The 128-bit hash of `bytes`.
Hash128 hash128(std::string_view bytes);
/// The 64-bit hash of `bytes` (a different function from either half of hash128).
std::uint64_t hash64(std::string_view bytes);
/// `hash` as 32 lowercase hex characters, high half first.
std::string to_hex(const Hash128& hash);
/// to_hex(hash128(bytes)): 32 hex characters.
std::string hash_hex(std::string_view bytes);

}  // namespace canopy::jit
