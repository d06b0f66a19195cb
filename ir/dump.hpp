// CANOPY_DUMP: writes what Canopy generated so a user can read what ran.
// CANOPY_DUMP is a comma-separated list of kinds (ir, llvm, asm, opencl,
// cuda, spirv, cost, program, or all); files go to $CANOPY_DUMP_DIR (default
// ./canopy-dump) as <name>.<kind>.
#pragma once

#include <string>
#include <string_view>

namespace canopy {

/// True when CANOPY_DUMP names `kind` (or "all"); settings.hpp checks its words.
bool dump_enabled(std::string_view kind);

/// Writes `text` to <dump dir>/<name>.<kind> when dump_enabled(kind); returns
/// the path written, or an empty string when dumping is off or the write
/// failed (a dump never stops the program; the first failure of the
/// process is said on stderr).
std::string dump(std::string_view kind, std::string_view name, std::string_view text);

}  // namespace canopy
