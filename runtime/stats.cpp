#include "stats.hpp"

#include <cstdio>

namespace canopy {

std::string Stats::to_text() const {
  std::string out = "regions: " + std::to_string(regions) + "\n";
  char line[256];
  for (const auto& leaf : leaves) {
    std::snprintf(line, sizeof line, "leaf %-12s %8lld pieces %14lld iterations %10.6f s busy\n", leaf.leaf.c_str(),
                  static_cast<long long>(leaf.regions), static_cast<long long>(leaf.iterations), leaf.busy_seconds);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "bytes moved: host->device %lld, device->host %lld, device->device %lld; bytes not moved (already "
                "current) %lld\n",
                static_cast<long long>(transfers.host_to_device), static_cast<long long>(transfers.device_to_host),
                static_cast<long long>(transfers.device_to_device), static_cast<long long>(transfers.bytes_avoided));
  out += line;
  for (const auto& m : device_memory) {
    std::snprintf(line, sizeof line,
                  "device memory %-12s %14lld bytes held, %14lld at most, capacity %lld; evicted %lld, written back "
                  "%lld\n",
                  m.leaf.c_str(), static_cast<long long>(m.held_bytes), static_cast<long long>(m.peak_bytes),
                  static_cast<long long>(m.capacity_bytes), static_cast<long long>(m.evicted_bytes),
                  static_cast<long long>(m.written_back_bytes));
    out += line;
  }
  for (const auto& m : memory_locations) {
    std::snprintf(line, sizeof line, "memory %-19s %14lld bytes held, %14lld at most, capacity %lld; evicted %lld\n",
                  m.location.c_str(), static_cast<long long>(m.held_bytes), static_cast<long long>(m.peak_bytes),
                  static_cast<long long>(m.capacity_bytes), static_cast<long long>(m.evicted_bytes));
    out += line;
  }
  for (const auto& a : arrays) {
    std::snprintf(line, sizeof line, "  %s: host->device %lld, device->host %lld, device->device %lld, avoided %lld\n",
                  a.array.c_str(), static_cast<long long>(a.host_to_device), static_cast<long long>(a.device_to_host),
                  static_cast<long long>(a.device_to_device), static_cast<long long>(a.bytes_avoided));
    out += line;
  }
  if (recoveries.total() > 0) {
    std::snprintf(line, sizeof line, "recoveries: launch %lld, copy %lld, compile %lld\n",
                  static_cast<long long>(recoveries.launches), static_cast<long long>(recoveries.copies),
                  static_cast<long long>(recoveries.compiles));
    out += line;
  }
  if (split_writes.changed_merged + split_writes.sums_merged + split_writes.one_memory > 0) {
    std::snprintf(line, sizeof line,
                  "split writes: %lld regions merged changed elements, %lld summed atomic adds, %lld ran on one "
                  "memory\n",
                  static_cast<long long>(split_writes.changed_merged), static_cast<long long>(split_writes.sums_merged),
                  static_cast<long long>(split_writes.one_memory));
    out += line;
    for (const auto& note : split_writes.notes) out += "  " + note + "\n";
  }
  if (fused_regions > 0) {
    std::snprintf(line, sizeof line, "fusion: %lld regions ran in %lld fused kernels\n",
                  static_cast<long long>(fused_regions), static_cast<long long>(fused_kernels));
    out += line;
  }
  std::snprintf(line, sizeof line, "modelled DRAM bytes of the kernels run: %.0f\n", modeled_dram_bytes);
  out += line;
  if (followed_regions > 0)
    out += "sequence placement: " + std::to_string(followed_regions) +
           " regions took the split their inputs were left in\n";
  for (const auto& region : recent) {
    out += "region " + std::to_string(region.id) + " " + region.kernel + " over " + region.range.to_string() + " at " +
           region.location + " (" + region.policy + "):";
    if (!region.fused.empty()) {
      out += " fused from";
      for (const auto& k : region.fused) out += " " + k;
      if (region.arrays_in_registers > 0)
        out += ", " + std::to_string(region.arrays_in_registers) + " array(s) kept in registers";
      out += ";";
    }
    if (!region.follows.empty()) out += " split as " + region.follows + " left its inputs;";
    for (const auto& piece : region.pieces) {
      std::snprintf(line, sizeof line, " %s[%lld,%lld) %.6fs", piece.leaf.c_str(), static_cast<long long>(piece.begin),
                    static_cast<long long>(piece.end), piece.seconds);
      out += line;
      if (piece.passes > 1) out += " in " + std::to_string(piece.passes) + " passes";
      if (piece.share > 0) {
        std::snprintf(line, sizeof line, " (share %.1f%%, predicted %.6fs, ran %.6fs, finished after %.6fs)",
                      piece.share * 100, piece.predicted_seconds, piece.run_seconds, piece.finished_seconds);
        out += line;
      }
    }
    out += "\n";
  }
  return out;
}

std::ostream& operator<<(std::ostream& out, const Stats& stats) { return out << stats.to_text(); }

}  // namespace canopy
