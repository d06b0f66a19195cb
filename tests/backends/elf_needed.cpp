// One binary that runs anywhere: Canopy's libraries and tools must not
// link a vendor library (libcuda, libnvrtc, libOpenCL, libze_loader), which
// the backends open with dlopen instead. This test reads the DT_NEEDED
// entries of build/lib/libcanopy_*.so, build/bin/canopy-info and
// canopy-bench, and this test program itself, with a small ELF64 reader of
// its own (the dynamic segment, its string table found through the
// loadable segments), and checks that none names a vendor library, and
// that the reader works: every one needs the C library, and Canopy's
// libraries need each other.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/skip.hpp"

namespace {

namespace fs = std::filesystem;

// ELF64 as the System V ABI lays it out (little-endian, as on x86-64 and AArch64).
constexpr std::uint32_t kLoad = 1, kDynamic = 2;                                         // p_type
constexpr std::int64_t kNull = 0, kNeeded = 1, kStringTable = 5, kStringTableSize = 10;  // d_tag

template <class T>
T read_at(const std::string& bytes, std::uint64_t offset) {
  T value{};
  if (offset > bytes.size() || sizeof value > bytes.size() - offset)
    throw std::runtime_error("read past the end of the file at offset " + std::to_string(offset));
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

struct Segment {
  std::uint32_t type = 0;
  std::uint64_t offset = 0, address = 0, file_size = 0;
};

// The DT_NEEDED entries of the ELF64 file at `path`, in order. Throws
// std::runtime_error saying what is wrong with a file that is not one.
std::vector<std::string> needed_libraries(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 64 || bytes.compare(0, 4,
                                         "\x7f"
                                         "ELF") != 0)
    throw std::runtime_error("not an ELF file");
  if (bytes[4] != 2) throw std::runtime_error("not a 64-bit ELF file");
  if (bytes[5] != 1) throw std::runtime_error("not a little-endian ELF file");
  const auto header_offset = read_at<std::uint64_t>(bytes, 0x20);  // e_phoff
  const auto header_size = read_at<std::uint16_t>(bytes, 0x36);    // e_phentsize
  const auto header_count = read_at<std::uint16_t>(bytes, 0x38);   // e_phnum
  std::vector<Segment> segments;
  for (std::uint16_t h = 0; h < header_count; ++h) {
    const std::uint64_t at = header_offset + std::uint64_t{h} * header_size;
    Segment segment;
    segment.type = read_at<std::uint32_t>(bytes, at);              // p_type
    segment.offset = read_at<std::uint64_t>(bytes, at + 0x08);     // p_offset
    segment.address = read_at<std::uint64_t>(bytes, at + 0x10);    // p_vaddr
    segment.file_size = read_at<std::uint64_t>(bytes, at + 0x20);  // p_filesz
    segments.push_back(segment);
  }
  // A virtual address as an offset in the file, through the loadable segment holding it.
  auto file_offset = [&](std::uint64_t address) {
    for (const Segment& segment : segments)
      if (segment.type == kLoad && address >= segment.address && address - segment.address < segment.file_size)
        return segment.offset + (address - segment.address);
    throw std::runtime_error("address " + std::to_string(address) + " is in no loadable segment");
  };
  std::vector<std::uint64_t> name_offsets;
  std::uint64_t strings = 0, strings_size = 0;
  bool dynamic = false;
  for (const Segment& segment : segments) {
    if (segment.type != kDynamic) continue;
    dynamic = true;
    for (std::uint64_t at = segment.offset; at + 16 <= segment.offset + segment.file_size; at += 16) {
      const auto tag = read_at<std::int64_t>(bytes, at);
      const auto value = read_at<std::uint64_t>(bytes, at + 8);
      if (tag == kNull) break;
      if (tag == kNeeded) name_offsets.push_back(value);
      if (tag == kStringTable) strings = value;
      if (tag == kStringTableSize) strings_size = value;
    }
  }
  if (!dynamic) throw std::runtime_error("no dynamic segment (a static executable)");
  if (strings == 0 || strings_size == 0) throw std::runtime_error("a dynamic segment without a string table");
  const std::uint64_t table = file_offset(strings);
  std::vector<std::string> names;
  for (std::uint64_t offset : name_offsets) {
    if (offset >= strings_size) throw std::runtime_error("a DT_NEEDED name outside the string table");
    const auto start = table + offset;
    const auto end = bytes.find('\0', start);
    if (end == std::string::npos) throw std::runtime_error("an unterminated DT_NEEDED name");
    names.push_back(bytes.substr(start, end - start));
  }
  return names;
}

// Canopy's built files: its shared libraries (each once, through their
// symbolic links), the tools, and this program; beside this program
// (build/tests/) they are in build/lib and build/bin.
struct BuiltFiles {
  std::vector<fs::path> libraries, tools, missing;
};

BuiltFiles built_files() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path build = self.parent_path().parent_path();
  BuiltFiles files;
  std::set<fs::path> seen;
  if (fs::is_directory(build / "lib"))
    for (const auto& entry : fs::directory_iterator(build / "lib")) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("libcanopy_", 0) != 0 || name.find(".so") == std::string::npos) continue;
      const fs::path real = fs::canonical(entry.path());
      if (seen.insert(real).second) files.libraries.push_back(real);
    }
  for (const char* tool : {"canopy-info", "canopy-bench"}) {
    const fs::path path = build / "bin" / tool;
    (fs::exists(path) ? files.tools : files.missing).push_back(path);
  }
  files.tools.push_back(self);
  return files;
}

bool is_vendor_library(const std::string& name) {
  for (const char* vendor : {"libcuda", "libnvrtc", "libOpenCL", "libze_loader", "libnvidia", "libze_"})
    if (name.rfind(vendor, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("elf: the reader finds DT_NEEDED entries in a system library") {
  // libstdc++ needs the C library on every glibc system.
  for (const char* candidate : {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6",
                                "/lib64/libstdc++.so.6"}) {
    if (!fs::exists(candidate)) continue;
    const auto names = needed_libraries(candidate);
    INFO(candidate);
    CHECK(std::find(names.begin(), names.end(), "libc.so.6") != names.end());
    return;
  }
  canopy_test::skip("no libstdc++.so.6 in the usual places");
}

TEST_CASE("elf: Canopy's libraries and tools link no vendor library (CUDA, NVRTC, OpenCL, Level Zero)") {
  const BuiltFiles files = built_files();
  for (const auto& path : files.missing) MESSAGE("not built, not checked: " << path.string());
  CHECK(files.tools.size() >= 1);
  std::vector<fs::path> all = files.libraries;
  all.insert(all.end(), files.tools.begin(), files.tools.end());
  std::set<std::string> canopy_needed;
  for (const auto& path : all) {
    std::vector<std::string> names;
    try {
      names = needed_libraries(path);
    } catch (const std::exception& error) {
      FAIL_CHECK(path.string() << ": " << error.what());
      continue;
    }
    std::string list;
    for (const auto& name : names) list += " " + name;
    INFO(path.string(), " needs", list);
    CHECK(std::find(names.begin(), names.end(), "libc.so.6") != names.end());
    for (const auto& name : names) {
      CHECK_FALSE(is_vendor_library(name));
      if (name.rfind("libcanopy_", 0) == 0) canopy_needed.insert(name.substr(0, name.find(".so")));
    }
  }
  // With shared libraries (the default build), the tools and the libraries
  // above the IR need Canopy's own: the reader sees them.
  if (!files.libraries.empty()) {
    CHECK(files.libraries.size() >= 5);
    CHECK(canopy_needed.count("libcanopy_backends") == 1);
    CHECK(canopy_needed.count("libcanopy_jit") == 1);
    CHECK(canopy_needed.count("libcanopy_ir") == 1);
  }
}

TEST_CASE("elf: only libcanopy_llvm links libLLVM, so a program that never compiles never loads it") {
  const BuiltFiles files = built_files();
  if (files.libraries.empty()) canopy_test::skip("a static build: LLVM is part of libcanopy_jit");
  bool plugin = false;
  std::vector<fs::path> checked = files.libraries;
  checked.insert(checked.end(), files.tools.begin(), files.tools.end() - 1);  // the tools, not this test
  for (const auto& path : checked) {
    const auto names = needed_libraries(path);
    const bool llvm =
        std::any_of(names.begin(), names.end(), [](const std::string& name) { return name.rfind("libLLVM", 0) == 0; });
    INFO(path.string());
    if (path.filename().string().rfind("libcanopy_llvm.so", 0) == 0) {
      plugin = true;
      CHECK(llvm);
    } else {
      CHECK_FALSE(llvm);
    }
  }
  CHECK(plugin);
}
