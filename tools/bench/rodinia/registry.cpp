#include <algorithm>
#include <map>

#include <canopy/ir/error.hpp>

#include "workload.hpp"

namespace canopy::bench::rodinia {

namespace {

std::multimap<int, std::function<std::unique_ptr<Workload>()>>& factories() {
  static std::multimap<int, std::function<std::unique_ptr<Workload>()>> registered;
  return registered;
}

}  // namespace

const char* name_of(Size size) {
  switch (size) {
    case Size::Small: return "small";
    case Size::Medium: return "medium";
    case Size::Large: return "large";
  }
  return "?";
}

double Workload::run_opencl(backends::opencl::OpenCLDevice&) {
  throw Error("workload '" + name() + "' has no OpenCL baseline");
}

Registration::Registration(int order, std::function<std::unique_ptr<Workload>()> factory) {
  factories().emplace(order, std::move(factory));
}

std::vector<std::unique_ptr<Workload>> all_workloads() {
  std::vector<std::unique_ptr<Workload>> workloads;
  for (auto& [order, factory] : factories()) workloads.push_back(factory());
  return workloads;
}

}  // namespace canopy::bench::rodinia
