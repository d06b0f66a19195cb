#include "recovery.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <canopy/ir/passes/bounds_check.hpp>
#include <canopy/ir/settings.hpp>

#include "device_copies.hpp"

namespace canopy::runtime {

const char* name_of(RecoveryKind kind) {
  switch (kind) {
    case RecoveryKind::Launch: return "launch";
    case RecoveryKind::Copy: return "copy";
    case RecoveryKind::Alloc: return "alloc";
    case RecoveryKind::Compile: return "compile";
  }
  return "?";
}

void RecoveryLog::recovered(RecoveryKind kind, const std::string& leaf, const std::string& what) {
  switch (kind) {
    case RecoveryKind::Launch: ++launches_; break;
    case RecoveryKind::Copy: ++copies_; break;
    case RecoveryKind::Alloc: break;  // never recovered
    case RecoveryKind::Compile: ++compiles_; break;
  }
  std::lock_guard lock(logged_mutex_);
  if (logged_.insert(std::string(name_of(kind)) + "|" + leaf).second)
    std::fprintf(stderr, "canopy: recovered: %s\n", what.c_str());
}

void RecoveryLog::add_to(RecoveryStats& stats, std::int64_t copies_retried) const {
  stats.launches += launches_.load();
  stats.copies += copies_.load() + copies_retried;
  stats.compiles += compiles_.load();
}

RecoveryKind recovery_kind_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const TransferFailed&) {
    return RecoveryKind::Copy;
  } catch (const AllocationFailed&) {
    return RecoveryKind::Alloc;
  } catch (...) {
    return RecoveryKind::Launch;
  }
}

std::string message_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

bool bounds_checks_from_environment() {
  return settings().check == "bounds";  // "", off or bounds (settings.hpp checks)
}

CheckedOutcome run_checked(backends::Device& device, const backends::Program& program,
                           std::vector<backends::KernelArg> args, const backends::Range& range) {
  ir::FaultRecord record{};
  backends::ArrayArg fault;
  fault.extents = {ir::kFaultRecordSize, 1, 1};
  backends::Buffer buffer;
  if (device.info().host_memory) {
    fault.data = record.data();
  } else {
    buffer = device.allocate(sizeof record);
    fault.data = buffer.handle;
  }
  args.emplace_back(fault);
  CheckedOutcome outcome;
  try {
    if (buffer) device.copy_in(buffer, 0, record.data(), sizeof record);
    outcome.partials = device.run(program, args, range);
    if (buffer) device.copy_out(buffer, 0, record.data(), sizeof record);
  } catch (...) {
    if (buffer) device.free(buffer);
    throw;
  }
  if (buffer) device.free(buffer);
  outcome.fault = ir::describe_fault(program.kernel(), record);
  return outcome;
}

}  // namespace canopy::runtime
