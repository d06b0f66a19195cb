// Shared by the heterogeneous end-to-end tests (tests/hetero/*.cpp): regions
// split over a CPU leaf and OpenCL devices through the real runtime.
//
// CTest runs them with CANOPY_DEVICES=cpu,opencl and POCL_DEVICES="pthread
// pthread", so discovery gives node -> numa0 -> {cpu0, opencl0, opencl1}.
// A test picks the leaves it means with use_leaves() (a tree that keeps only
// them, with their discovered traits), and is skipped, saying so, when this
// machine lacks one of them (no OpenCL here, or CANOPY_DEVICES left unset).
// Where no OpenCL platform is found, CANOPY_DEVICES=cpu,opencl would make
// every Runtime an error: the tests then ask for the CPU alone.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <canopy/backends/opencl/opencl_device.hpp>
#include <canopy/canopy.hpp>

#include "common/skip.hpp"
#include "runtime/engine_trees.hpp"

namespace canopy::hetero_tests {

/// Sets CANOPY_DEVICES=cpu when it says cpu,opencl and this machine has no
/// OpenCL device, so that a Runtime can be made and the tests that need an
/// OpenCL leaf skip themselves (has_leaves). Returns whether it did.
inline bool ask_for_the_cpu_alone_without_opencl() {
  const char* devices = std::getenv("CANOPY_DEVICES");
  if (!devices || std::string(devices) != "cpu,opencl") return false;
  if (!backends::opencl::discover_opencl({"", "off"}).devices.empty()) return false;
  setenv("CANOPY_DEVICES", "cpu", 1);
  return true;
}

/// Done once per process, before any test runs.
inline const bool asked_for_the_cpu_alone = ask_for_the_cpu_alone_without_opencl();

/// The backend of the device leaves these tests split over: "cuda" where
/// CANOPY_DEVICES names cuda (CTest's hetero-cuda-emulated: two emulated
/// CUDA devices, tests/emulate/cuda/), "level_zero" where it names
/// level_zero (hetero-level-zero-emulated: two emulated Level Zero devices,
/// tests/emulate/level_zero/), else "opencl" (PoCL's two devices).
inline const std::string& accelerator_backend() {
  static const std::string backend = [] {
    const char* named = std::getenv("CANOPY_DEVICES");
    const std::string devices = named ? named : "";
    if (devices.find("cuda") != std::string::npos) return std::string("cuda");
    if (devices.find("level_zero") != std::string::npos) return std::string("level_zero");
    return std::string("opencl");
  }();
  return backend;
}

/// The name of device leaf `k` of that backend: "opencl0", "cuda1", ...
inline std::string accelerator(int k) { return accelerator_backend() + std::to_string(k); }

/// The kind of those leaves.
inline LocationKind accelerator_kind() {
  if (accelerator_backend() == "cuda") return LocationKind::Cuda;
  if (accelerator_backend() == "level_zero") return LocationKind::LevelZero;
  return LocationKind::OpenCL;
}

using engine_tests::error_of;
using engine_tests::last_region;
using engine_tests::pieces_of;
using engine_tests::use_tree;

/// The executing leaves of `tree` whose kind is `kind`, in tree order.
inline std::vector<std::string> leaves_of_kind(const Hierarchy& tree, LocationKind kind) {
  std::vector<std::string> names;
  if (!tree.root()) return names;
  for (const Location* leaf : tree.leaves(*tree.root()))
    if (leaf->kind() == kind) names.push_back(leaf->name());
  return names;
}

/// True when `tree` has every leaf of `names`; otherwise the test is skipped,
/// saying which leaf is missing (tests/common/skip.hpp), and the caller
/// returns. Where OpenCL must be present (CANOPY_TEST_REQUIRE_OPENCL=1, which
/// CI sets: it installs PoCL), a missing OpenCL leaf fails the test instead.
inline bool has_leaves(const Hierarchy& tree, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const Location* found = tree.find(name);
    if (found && found->executes()) continue;
    const bool opencl = name.rfind("opencl", 0) == 0;
    canopy_test::skip("this node has no leaf '" + name + "'" +
                          (opencl ? " (no OpenCL device found; the test expects CANOPY_DEVICES=cpu,opencl and "
                                    "POCL_DEVICES=\"pthread pthread\" with PoCL installed)"
                                  : "") +
                          "; the tree is:\n" + tree.to_text(),
                      opencl ? canopy_test::Needs::OpenCL : canopy_test::Needs::Other);
    return false;
  }
  return true;
}

/// The tree that keeps of `discovered` only the leaves `names` and their
/// ancestors, each with its discovered kind and traits, in discovered order.
inline Hierarchy tree_with_leaves(const Hierarchy& discovered, const std::vector<std::string>& names) {
  Hierarchy tree;
  for (const Location* location : discovered.all()) {
    bool keep = false;
    for (const auto& name : names) {
      const Location& leaf = discovered.at(name);
      keep = keep || Hierarchy::is_above_or_same(*location, leaf);
    }
    if (!keep) continue;
    tree.add(location->name(), location->kind(), location->traits(),
             location->parent() ? location->parent()->name() : std::string());
  }
  return tree;
}

/// Replaces the runtime's tree by the one with only the leaves `names` (see
/// tree_with_leaves); arrays keep their data.
inline void use_leaves(Runtime& rt, const Hierarchy& discovered, const std::vector<std::string>& names) {
  use_tree(rt, tree_with_leaves(discovered, names));
}

/// A 2-D 5-point stencil, in -> out; the boundary keeps its value. The store
/// is unconditional and covers the piece's rows entirely, so a piece copies
/// nothing of `out` in; it reads `in` over its rows and one row above and
/// below (whole rows: the column index depends on index(1)). The halo and
/// trace tests iterate it over a split.
inline const Kernel<void(Out<double, 2>, In<double, 2>)>& halo_stencil() {
  static const Kernel kernel("halo_stencil",
                             [](Out<double, 2> out, In<double, 2> in) {
                               Idx i = index(0), j = index(1);
                               Var<double> v = in(i, j);
                               If(i > 0 && i < in.extent(0) - 1 && j > 0 && j < in.extent(1) - 1,
                                  [&] { v = 0.25 * (in(i - 1, j) + in(i + 1, j) + in(i, j - 1) + in(i, j + 1)); });
                               out(i, j) = v;
                             },
                             {"out", "in"});
  return kernel;
}

/// The transfer counters, one array's or the runtime's, as one value to
/// compare and print.
struct Moved {
  std::int64_t host_to_device = 0;
  std::int64_t device_to_host = 0;
  std::int64_t device_to_device = 0;
  std::int64_t avoided = 0;
  bool operator==(const Moved&) const = default;
  Moved operator+(const Moved& o) const {
    return {host_to_device + o.host_to_device, device_to_host + o.device_to_host, device_to_device + o.device_to_device,
            avoided + o.avoided};
  }
  Moved operator-(const Moved& o) const {
    return {host_to_device - o.host_to_device, device_to_host - o.device_to_host, device_to_device - o.device_to_device,
            avoided - o.avoided};
  }
};

inline std::ostream& operator<<(std::ostream& out, const Moved& m) {
  return out << "{h2d " << m.host_to_device << ", d2h " << m.device_to_host << ", d2d " << m.device_to_device
             << ", avoided " << m.avoided << "}";
}

/// Every byte the runtime moved so far.
inline Moved moved(const Runtime& rt) {
  const TransferStats t = rt.stats().transfers;
  return {t.host_to_device, t.device_to_host, t.device_to_device, t.bytes_avoided};
}

/// The bytes moved so far for the array named `name` (zero when it moved
/// nothing and is left out of the statistics).
inline Moved moved(const Runtime& rt, const std::string& name) {
  for (const ArrayTransferStats& a : rt.stats().arrays)
    if (a.array.find("'" + name + "'") != std::string::npos)
      return {a.host_to_device, a.device_to_host, a.device_to_device, a.bytes_avoided};
  return {};
}

/// "a b c": the pieces of a region, for messages that show them.
inline std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

/// The policies every split is tried with, for a region over `rows` rows
/// (rows >= 10): the range list has four chunks, so it folds over two leaves.
inline std::vector<std::string> every_policy(std::int64_t rows) {
  const std::int64_t a = rows / 10, b = rows / 4, c = rows * 3 / 10;
  return {"static", "flatten", "percentage:[30,70]",
          "range:[" + std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "," +
              std::to_string(rows - a - b - c) + "]",
          "any"};
}

/// Where `policy` (from every_policy) puts `rows` rows when the region's
/// location holds exactly the two leaves `first` and `second`, in that order;
/// empty for "any" (one leaf, whichever is idle).
inline std::vector<std::string> expected_pieces(const std::string& policy, std::int64_t rows, const std::string& first,
                                                const std::string& second) {
  auto piece = [](const std::string& leaf, std::int64_t b, std::int64_t e) {
    return leaf + "[" + std::to_string(b) + "," + std::to_string(e) + ")";
  };
  if (policy == "any") return {};
  if (policy.rfind("percentage", 0) == 0) {
    const std::int64_t cut = (rows * 30 + 50) / 100;
    return {piece(first, 0, cut), piece(second, cut, rows)};
  }
  if (policy.rfind("range", 0) == 0) {
    const std::int64_t a = rows / 10, b = rows / 4, c = rows * 3 / 10;
    return {piece(first, 0, a), piece(second, a, a + b), piece(first, a + b, a + b + c),
            piece(second, a + b + c, rows)};
  }
  const std::int64_t half = rows / 2;  // static and flatten
  return {piece(first, 0, half), piece(second, half, rows)};
}

}  // namespace canopy::hetero_tests
