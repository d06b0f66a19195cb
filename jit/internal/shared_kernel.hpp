// Compiled CPU kernels as shared objects, so that a later run loads them with
// the system's dynamic loader and never starts LLVM (about 25 ms and 55 MB
// per process). The CPU compiler emits a relocatable object (what the JIT
// links in the run that compiles it); the system linker, where there is one,
// turns it into a shared object, which is what the disk cache keeps. A
// checked file (checked_file.hpp) is the payload followed by a checksum line,
// and trailing bytes do not change an ELF file's meaning, so the cache entry
// itself is what the loader opens, once DiskCache::get has checked it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canopy::jit {

/// True when `bytes` start like an ELF shared object (ET_DYN), or a
/// relocatable object (ET_REL, what the JIT links), of this machine's class.
bool is_shared_object(std::string_view bytes);
bool is_relocatable_object(std::string_view bytes);

/// `object` (a relocatable ELF object) linked by the system linker (`ld`
/// on the PATH) into a shared object, or nothing when there is no linker or
/// it fails (the reason in `why`).
std::optional<std::string> link_shared_object(std::string_view object, std::string& why);

/// Opens the shared object at `path` (RTLD_NOW, local symbols) and returns
/// the address of `symbol`, or null with the loader's reason in `why`. The
/// object stays loaded until the process exits.
void* load_shared_object(const std::string& path, const std::string& symbol, std::string& why);

/// What identifies this host's CPU for cached code, read without LLVM:
/// the machine (uname) and /proc/cpuinfo's vendor, family, model, stepping,
/// name and feature flags of the first processor.
const std::string& host_identity();

}  // namespace canopy::jit
