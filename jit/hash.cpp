// The hash: two 64-bit lanes absorb the input 16 bytes at a time. Each lane
// xors in its 8 bytes and is then multiplied by an odd constant with the full
// 128-bit product folded back to 64 bits (high half xor low half), which
// spreads every input bit over the whole lane; the lanes are then stirred into
// each other so that both halves of the result depend on every byte. The
// length goes into the seed and a final xor-shift-multiply avalanche finishes
// each half. Bytes are read little-endian explicitly, so the value does not
// depend on the machine.
#include "hash.hpp"

#include <array>

namespace canopy::jit {

namespace {

constexpr std::uint64_t kLaneMultiplierA = 0x8F3A5C71D2B94E67ull;
constexpr std::uint64_t kLaneMultiplierB = 0xB5E1C39A7D4F2863ull;
constexpr std::uint64_t kSeedA = 0x3C6EF372FE94F82Bull;
constexpr std::uint64_t kSeedB = 0x6A09E667F3BCC909ull;
constexpr std::uint64_t kLengthMultiplier = 0xE7192D4B6A85F3C1ull;
constexpr std::uint64_t kFinishMultiplier1 = 0xD1B54A32D192ED03ull;
constexpr std::uint64_t kFinishMultiplier2 = 0xAEF17502108EF2D9ull;
constexpr std::uint64_t kHash64Seed = 0x5851F42D4C957F2Dull;

constexpr std::uint64_t rotate_left(std::uint64_t v, int bits) { return (v << bits) | (v >> (64 - bits)); }

// The 128-bit product of a and b, folded to 64 bits.
inline std::uint64_t folded_multiply(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}

inline std::uint64_t avalanche(std::uint64_t v) {
  v ^= v >> 31;
  v *= kFinishMultiplier1;
  v ^= v >> 29;
  v *= kFinishMultiplier2;
  v ^= v >> 32;
  return v;
}

// Little-endian read of `count` (<= 8) bytes.
inline std::uint64_t read_bytes(const unsigned char* p, std::size_t count) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < count; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

struct Lanes {
  std::uint64_t a, b;

  void absorb(std::uint64_t x, std::uint64_t y) {
    a = folded_multiply(a ^ x, kLaneMultiplierA) ^ rotate_left(x, 17);
    b = folded_multiply(b ^ y, kLaneMultiplierB) ^ rotate_left(y, 43);
    a += rotate_left(b, 23);
    b ^= rotate_left(a, 41);
  }
};

Hash128 hash_seeded(std::string_view bytes, std::uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t left = bytes.size();
  Lanes lanes{kSeedA ^ seed ^ (bytes.size() * kLengthMultiplier), kSeedB + seed + bytes.size()};
  while (left >= 16) {
    lanes.absorb(read_bytes(p, 8), read_bytes(p + 8, 8));
    p += 16;
    left -= 16;
  }
  // The tail (0-15 bytes), with a marker byte after it so that trailing zero
  // bytes change the value.
  std::array<unsigned char, 16> tail{};
  for (std::size_t i = 0; i < left; ++i) tail[i] = p[i];
  tail[left] = 0x80;
  lanes.absorb(read_bytes(tail.data(), 8), read_bytes(tail.data() + 8, 8));
  lanes.absorb(lanes.b, lanes.a);
  return Hash128{avalanche(lanes.a + rotate_left(lanes.b, 29)), avalanche(lanes.b ^ rotate_left(lanes.a, 13))};
}

}  // namespace

Hash128 hash128(std::string_view bytes) { return hash_seeded(bytes, 0); }

std::uint64_t hash64(std::string_view bytes) {
  const Hash128 h = hash_seeded(bytes, kHash64Seed);
  return h.low ^ rotate_left(h.high, 32);
}

std::string to_hex(const Hash128& hash) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text(32, '0');
  for (int i = 0; i < 16; ++i) {
    text[15 - i] = digits[(hash.high >> (4 * i)) & 15];
    text[31 - i] = digits[(hash.low >> (4 * i)) & 15];
  }
  return text;
}

std::string hash_hex(std::string_view bytes) { return to_hex(hash128(bytes)); }

}  // namespace canopy::jit
