// A device seen through two APIs is used once, through the preferred one.
#include <doctest/doctest.h>

#include <canopy/runtime/discovery.hpp>

using namespace canopy;

namespace {

backends::DeviceInfo device(std::string id, std::string bus) {
  backends::DeviceInfo info;
  info.id = std::move(id);
  info.pci_bus_id = std::move(bus);
  return info;
}

}  // namespace

TEST_CASE("PCI bus ids are compared in one spelling") {
  CHECK(normalized_pci_bus_id("0000:3B:00.0") == "0000:3b:00.0");
  CHECK(normalized_pci_bus_id("3b:00.0") == "0000:3b:00.0");
  CHECK(normalized_pci_bus_id("0001:af:1f.7") == "0001:af:1f.7");
  CHECK(normalized_pci_bus_id("") == "");
  CHECK(normalized_pci_bus_id("not a bus id") == "");
  CHECK(normalized_pci_bus_id("0000:3b:00.0 trailing") == "");
}

TEST_CASE("a GPU already found through CUDA or Level Zero is not used again through OpenCL") {
  const std::vector<backends::DeviceInfo> known{device("cuda:0", "0000:3b:00.0"),
                                                device("level_zero:0", "0000:af:00.0")};
  const std::vector<backends::DeviceInfo> opencl{device("opencl:0", "0000:3B:00.0"),   // the CUDA GPU again
                                                 device("opencl:1", ""),               // PoCL's CPU device
                                                 device("opencl:2", "af:00.0"),        // the Intel GPU again
                                                 device("opencl:3", "0000:5e:00.0")};  // a device only OpenCL has
  CHECK(duplicates(opencl, known) == std::vector<bool>{true, false, true, false});
  CHECK(duplicates(opencl, {}) == std::vector<bool>{false, false, false, false});
}
