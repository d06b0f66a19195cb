#include "fault_injection.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <canopy/ir/error.hpp>
#include <canopy/ir/settings.hpp>

namespace canopy::backends {

namespace {

struct PlannedFault {
  std::string backend;
  FaultOperation operation;
  std::int64_t call;  ///< 1-based
};

struct FaultPlan {
  std::mutex mutex;
  bool loaded = false;  ///< CANOPY_FAULT read (or a plan set)
  std::vector<PlannedFault> faults;
  std::map<std::pair<std::string, FaultOperation>, std::int64_t> calls;
  std::atomic<bool> active{false};  ///< a fault is planned: calls must be counted
};

FaultPlan& plan() {
  static FaultPlan* const instance = new FaultPlan();  // never destroyed: backends may ask at exit
  return *instance;
}

constexpr FaultOperation kOperations[] = {FaultOperation::Compile, FaultOperation::Alloc, FaultOperation::Copy,
                                          FaultOperation::Launch};
constexpr std::string_view kBackends[] = {"cpu", "opencl", "cuda", "level_zero"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

PlannedFault parse_entry(std::string_view entry, std::string_view whole) {
  auto fail = [&](const std::string& why) -> PlannedFault {
    throw Error("CANOPY_FAULT='" + std::string(whole) + "': entry '" + std::string(entry) + "' " + why +
                "; write <backend>.<operation>:<n> with backend cpu, opencl, cuda or level_zero, operation compile, "
                "alloc, copy or launch, and n >= 1 (e.g. opencl.launch:1)");
  };
  const auto dot = entry.find('.');
  const auto colon = entry.find(':');
  if (dot == std::string_view::npos || colon == std::string_view::npos || colon < dot)
    return fail("is not of the form <backend>.<operation>:<n>");
  PlannedFault fault;
  fault.backend = std::string(trim(entry.substr(0, dot)));
  bool known_backend = false;
  for (auto b : kBackends) known_backend = known_backend || b == fault.backend;
  if (!known_backend) return fail("names no backend Canopy has ('" + fault.backend + "')");
  const auto operation = trim(entry.substr(dot + 1, colon - dot - 1));
  bool known_operation = false;
  for (auto op : kOperations)
    if (name_of(op) == operation) {
      fault.operation = op;
      known_operation = true;
    }
  if (!known_operation)
    return fail("names no operation faults can be injected into ('" + std::string(operation) + "')");
  const std::string count(trim(entry.substr(colon + 1)));
  char* end = nullptr;
  errno = 0;
  const long long n = count.empty() ? 0 : std::strtoll(count.c_str(), &end, 10);
  if (count.empty() || *end != '\0' || n < 1) return fail("has a call number that is not a whole number from 1 up");
  if (errno == ERANGE) return fail("has a call number past " + std::to_string(LLONG_MAX));
  fault.call = n;
  return fault;
}

std::vector<PlannedFault> parse_plan(std::string_view text) {
  std::vector<PlannedFault> faults;
  std::string_view rest = text;
  while (!trim(rest).empty()) {
    const auto comma = rest.find(',');
    const auto entry = trim(rest.substr(0, comma));
    if (!entry.empty()) faults.push_back(parse_entry(entry, text));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return faults;
}

// Reads CANOPY_FAULT the first time (call with the plan's mutex held).
void load_from_environment(FaultPlan& p) {
  if (p.loaded) return;
  p.loaded = true;
  const std::string& text = settings().fault;
  if (text.empty()) return;
  p.faults = parse_plan(text);
  p.active = !p.faults.empty();
}

std::string text_of(const PlannedFault& fault) {
  return fault.backend + "." + std::string(name_of(fault.operation)) + ":" + std::to_string(fault.call);
}

}  // namespace

std::string_view name_of(FaultOperation operation) {
  switch (operation) {
    case FaultOperation::Compile: return "compile";
    case FaultOperation::Alloc: return "alloc";
    case FaultOperation::Copy: return "copy";
    case FaultOperation::Launch: return "launch";
  }
  return "?";
}

bool inject_fault(std::string_view backend, FaultOperation operation) {
  auto& p = plan();
  if (p.loaded && !p.active.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(p.mutex);
  load_from_environment(p);
  if (!p.active) return false;
  const auto call = ++p.calls[{std::string(backend), operation}];
  for (const auto& fault : p.faults)
    if (fault.backend == backend && fault.operation == operation && fault.call == call) return true;
  return false;
}

void check_fault_plan(std::string_view text) { parse_plan(text); }

void set_fault_plan(std::string_view text) {
  auto faults = parse_plan(text);
  auto& p = plan();
  std::lock_guard lock(p.mutex);
  p.loaded = true;
  p.faults = std::move(faults);
  p.calls.clear();
  p.active = !p.faults.empty();
}

std::string fault_plan() {
  auto& p = plan();
  std::lock_guard lock(p.mutex);
  load_from_environment(p);
  std::string text;
  for (const auto& fault : p.faults) text += (text.empty() ? "" : ",") + text_of(fault);
  return text;
}

std::string injected_note(std::string_view backend, FaultOperation operation) {
  auto& p = plan();
  std::lock_guard lock(p.mutex);
  std::int64_t call = 0;
  if (auto it = p.calls.find({std::string(backend), operation}); it != p.calls.end()) call = it->second;
  return " [injected by CANOPY_FAULT=" + std::string(backend) + "." + std::string(name_of(operation)) + ":" +
         std::to_string(call) + "]";
}

}  // namespace canopy::backends
