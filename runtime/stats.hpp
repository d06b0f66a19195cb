// Statistics: what the runtime did, for users to see that work went where
// they meant and that only the necessary data moved. `rt.stats()` returns a
// snapshot; it prints itself.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "shape.hpp"

namespace canopy {

/// One leaf's part of a region.
struct PieceStats {
  std::string leaf;
  std::int64_t begin = 0, end = 0;  ///< rows (index 0) it ran
  double seconds = 0;               ///< time the leaf spent on it
  /// The device's run of the kernel alone (no copies, no waiting for
  /// earlier regions).
  double run_seconds = 0;
  /// From the region's launch (its pieces queued) to the end of this piece:
  /// when the leaf finished, what the adaptive policy balances.
  double finished_seconds = 0;
  /// adaptive and any launches: the fraction of the region's rows it took,
  /// and the time the machine model (or, for any, the history) predicted
  /// for it; 0 when not known.
  double share = 0;
  double predicted_seconds = 0;
  /// The parts its rows ran in, one after the other: more than 1 where the
  /// windows of its arrays did not fit its device's memory together (each
  /// pass's copies are written back and evicted before the next).
  std::int64_t passes = 1;
};

/// One region, as it was placed and split.
struct RegionStats {
  std::uint64_t id = 0;
  std::string kernel;
  std::string location;  ///< where it ran (the MCD of its arrays, or .at())
  std::string policy;
  Shape range{0};
  std::vector<PieceStats> pieces;
  /// The launched kernels this region ran, in order, when it is a fused
  /// kernel (runtime/internal/recorder.hpp); empty otherwise.
  std::vector<std::string> fused;
  /// Of a fused region: the arrays only its chain used, kept in registers
  /// instead of memory (never written, their pages never touched).
  int arrays_in_registers = 0;
  /// Where the adaptive policy gave up the region's own split for the one
  /// that left its inputs where they are, since moving
  /// their rows to other memories was predicted to cost more than the
  /// imbalance (runtime/internal/sequence_placement.hpp): the kernel of the
  /// region that left them so. Empty otherwise.
  std::string follows;
  /// The arrays it passed, each as "in", "out" or "inout" and the array
  /// ("in grid#3": its name, if it has one, and its number): regions depend
  /// on each other only through the arrays they share, so these are the
  /// edges of the program's graph (CANOPY_DUMP=program prints them).
  std::vector<std::string> arrays;
};

/// One leaf's totals.
struct LeafStats {
  std::string leaf;
  std::int64_t regions = 0;     ///< pieces of regions it ran
  std::int64_t iterations = 0;  ///< points it ran
  double busy_seconds = 0;
};

/// Bytes moved between memories (only device leaves move data; CPU leaves
/// work in host memory in place).
struct TransferStats {
  std::int64_t host_to_device = 0;
  std::int64_t device_to_host = 0;
  std::int64_t device_to_device = 0;
  std::int64_t bytes_avoided = 0;  ///< bytes a piece or a host view needed that were already current there
};

/// One array's transfers (arrays that moved nothing are left out).
struct ArrayTransferStats {
  std::string array;  ///< as ArrayStorage::describe() prints it
  std::int64_t host_to_device = 0;
  std::int64_t device_to_host = 0;
  std::int64_t device_to_device = 0;
  std::int64_t bytes_avoided = 0;
};

/// Faults the runtime survived: pieces of regions that ran again on another
/// leaf (or on the same one) after a launch or a copy failed there, kernels
/// that failed to compile on a device, and transfers retried. (An array a
/// device cannot allocate is not survived: the region fails with the
/// device's error.) CANOPY_FAULT injects such faults for tests.
struct RecoveryStats {
  std::int64_t launches = 0;  ///< pieces run again after their launch failed
  std::int64_t copies = 0;    ///< pieces run again after a copy for them failed, plus transfers retried
  std::int64_t compiles = 0;  ///< kernels compiled again, or pieces moved, after a device could not compile them
  std::int64_t total() const { return launches + copies + compiles; }
};

/// Regions split over memories whose pieces may write the same elements (a
/// scatter, a histogram, a transposed write), and how every write was kept
/// (runtime/internal/split_writes.hpp).
struct SplitWriteStats {
  /// Regions whose device pieces wrote back only the elements they changed.
  std::int64_t changed_merged = 0;
  /// Regions whose device pieces added atomically into private copies, summed at the end.
  std::int64_t sums_merged = 0;
  /// Regions run on one memory instead, since neither keeps their writes.
  std::int64_t one_memory = 0;
  /// Why regions ran on one memory, once per kernel, parameter and reason
  /// (the first array it happened with named).
  std::vector<std::string> notes;
};

/// What one device leaf's memory holds of the program's arrays (whole
/// copies, made the first time a piece there uses an array, freed with it).
struct DeviceMemoryStats {
  std::string leaf;             ///< the leaf that runs the device, or "opencl:1 (no leaf)" where none does now
  std::int64_t held_bytes = 0;  ///< now
  std::int64_t peak_bytes = 0;  ///< the most at any time since its capacity was last set
  std::int64_t capacity_bytes =
      0;  ///< what it may hold (CANOPY_DEVICE_MEMORY, the configuration, the device); 0: no limit set
  /// Copies freed to make room for others (least recently used first, never
  /// one a piece there is using), and the bytes of them written back to the
  /// host first (what only that copy held current).
  std::int64_t evicted_bytes = 0;
  std::int64_t written_back_bytes = 0;
};

/// What arrays a memory location (host, unified or file memory) holds:
/// Canopy's own arrays placed there or at a location below it (memory given
/// with wrap() is the program's and not counted).
struct MemoryLocationStats {
  std::string location;
  std::int64_t held_bytes = 0;      ///< now
  std::int64_t peak_bytes = 0;      ///< the most after any array was placed there
  std::int64_t capacity_bytes = 0;  ///< the configuration's `size` or what discovery found; 0: no limit
  /// Arrays moved up to the location's parent to make room for others
  /// (least recently used first): a memory location holds the only host
  /// copy, so evicting one writes it back to the parent's memory.
  std::int64_t evicted_bytes = 0;
};

struct Stats {
  std::int64_t regions = 0;         ///< regions launched so far
  std::vector<LeafStats> leaves;    ///< every leaf that ran something, and the current leaves
  std::vector<RegionStats> recent;  ///< the most recent regions (at most 64), oldest first
  TransferStats transfers;
  std::vector<ArrayTransferStats> arrays;             ///< per live array
  RecoveryStats recoveries;                           ///< faults survived so far
  SplitWriteStats split_writes;                       ///< regions whose pieces in several memories wrote one array
  std::vector<DeviceMemoryStats> device_memory;       ///< per device leaf that has held copies
  std::vector<MemoryLocationStats> memory_locations;  ///< per memory location of the tree
  /// Launched regions that ran inside a fused kernel, and the runs of fused kernels.
  std::int64_t fused_regions = 0;
  std::int64_t fused_kernels = 0;
  /// Bytes between the last-level cache and DRAM that the cost model
  /// (ir/analysis/cost.hpp) predicts for the kernels actually run.
  double modeled_dram_bytes = 0;
  /// Regions that took the placement their inputs were left in
  /// (RegionStats::follows) instead of their own.
  std::int64_t followed_regions = 0;

  /// All of it as text, one line per leaf, memory, array and recent region
  /// (to print or log after a run).
  std::string to_text() const;
};

std::ostream& operator<<(std::ostream& out, const Stats& stats);

}  // namespace canopy
