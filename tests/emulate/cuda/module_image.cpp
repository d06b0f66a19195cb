// The machinery of module_image.hpp: an image's size from its ELF headers,
// the hexadecimal "PTX" decoded, the shared object opened and checked.
#include "module_image.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace canopy_emulated {

namespace {

// The size of an ELF64 image: the end of its section header table or of
// its last segment, whichever is further (the driver, too, reads a cubin's
// size from its headers).
std::size_t elf_size(const unsigned char* image) {
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      image[4] != 2)
    return 0;  // ELFCLASS64
  auto read = [&](std::size_t offset, std::size_t bytes) {
    std::uint64_t value = 0;
    std::memcpy(&value, image + offset, bytes);
    return value;
  };
  const std::uint64_t phoff = read(32, 8), shoff = read(40, 8);
  const std::uint64_t phentsize = read(54, 2), phnum = read(56, 2), shentsize = read(58, 2), shnum = read(60, 2);
  std::uint64_t end = shoff + shentsize * shnum;
  for (std::uint64_t k = 0; k < phnum; ++k) {
    const std::uint64_t header = phoff + k * phentsize;
    end = std::max(end, read(header + 8, 8) + read(header + 32, 8));  // p_offset + p_filesz
  }
  return static_cast<std::size_t>(end);
}

// The image's shared object bytes: the ELF image itself, or decoded from
// the emulated NVRTC's "PTX"; empty when it is neither.
std::string library_bytes(const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (const std::size_t size = elf_size(bytes); size > 0)
    return std::string(reinterpret_cast<const char*>(bytes), size);
  const auto* text = static_cast<const char*>(image);
  const std::size_t header = std::strlen(canopy_emulated::kPtxHeader);
  if (std::strncmp(text, canopy_emulated::kPtxHeader, header) != 0) return "";
  std::string library;
  int high = -1;
  for (const char* c = text + header; *c; ++c) {
    int digit = -1;
    if (*c >= '0' && *c <= '9') digit = *c - '0';
    if (*c >= 'a' && *c <= 'f') digit = *c - 'a' + 10;
    if (digit < 0) continue;
    if (high < 0) {
      high = digit;
    } else {
      library += static_cast<char>(high * 16 + digit);
      high = -1;
    }
  }
  return elf_size(reinterpret_cast<const unsigned char*>(library.data())) > 0 ? library : "";
}

template <class T>
T* symbol(void* library, const char* name) {
  return reinterpret_cast<T*>(dlsym(library, name));
}

}  // namespace

std::unique_ptr<Module> open_module(const void* image, std::string& error) {
  const std::string bytes = library_bytes(image);
  if (bytes.empty()) {
    error = "the image is not a module of Canopy's emulated NVRTC (real PTX and cubins do not run here)";
    return nullptr;
  }
  char path[] = "/tmp/canopy-emulated-module-XXXXXX";
  const int file = mkstemp(path);
  if (file < 0) {
    error = "cannot write the module to /tmp";
    return nullptr;
  }
  const bool written = write(file, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  close(file);
  void* library = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (!library) error = written ? dlerror() : "cannot write the module to /tmp";
  unlink(path);
  if (!library) return nullptr;
  auto module = std::make_unique<Module>();
  module->library = library;
  module->thread_index = symbol<unsigned int>(library, "threadIdx");
  module->block_index = symbol<unsigned int>(library, "blockIdx");
  module->block_dim = symbol<unsigned int>(library, "blockDim");
  module->grid_dim = symbol<unsigned int>(library, "gridDim");
  module->warp_size = symbol<int>(library, "canopy_emulated_warp_size");
  module->warp_slots = symbol<unsigned long long*>(library, "canopy_emulated_warp_slots");
  module->barrier = symbol<canopy_emulated::Barrier>(library, "canopy_emulated_barrier");
  module->warp_barrier = symbol<canopy_emulated::Barrier>(library, "canopy_emulated_warp_barrier");
  const int* cooperates = symbol<const int>(library, "canopy_emulated_uses_barrier");
  if (!module->thread_index || !module->block_index || !module->block_dim || !module->grid_dim || !module->warp_size ||
      !module->warp_slots || !module->barrier || !module->warp_barrier || !cooperates) {
    error = "the shared object lacks the emulated kernel ABI (kernel_abi.hpp)";
    dlclose(library);
    return nullptr;
  }
  module->cooperates = *cooperates != 0;
  return module;
}

}  // namespace canopy_emulated
