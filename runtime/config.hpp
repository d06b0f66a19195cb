// Configuration files in Gecko's format, loaded as they are, bound against
// what this node has. A file describes location types, locations, and the
// tree between them:
//
//   # comments and blank lines are skipped
//   loctype;name,host;kind,x64,Skylake;num_cores,4;mem,4MB;
//   loctype;name,tesla;kind,NVIDIA,CC7.0;mem,4GB
//   location;name,LocA;type,unified_memory
//   location;name,LocN;type,virtual
//   location;name,LocN1;type,host
//   location;name,LocG;type,tesla;all
//   hierarchy;children,+,LocN;parent,LocA
//   hierarchy;children,+,LocN1;parent,LocN
//   hierarchy;children,+,LocG;parent,LocA
//
// loctype: `name,N` and `kind,KIND[,SUBKIND...]` are required; `num_cores,N`,
// `mem,SIZE` (or `size,SIZE`), `bandwidth,GBPS` and `optional` may follow.
// KIND is Gecko's (x32, x64 -> cpu; NVIDIA -> cuda; Unified_Memory;
// Permanent_Storage -> file_memory; virtual) or Canopy's (cpu, opencl, cuda,
// level_zero, gpu = any accelerator, host_memory, unified_memory,
// file_memory, virtual), case-insensitive.
// SIZE is bytes, or a number with B, KB, MB, GB, TB (powers of 1024; KiB ...
// too). Fields come in any order; a trailing ';' is fine.
//
// location: `name,N1[,N2...]` and `type,LOCTYPE_OR_KIND` are required;
// `total_count,C` makes C locations N0..N(C-1) of each name; `all` makes as
// many as this node has units of that kind from `start` on (NUMA nodes,
// cores, devices); `start,S` binds the first to unit S (NUMA node S, core S
// in hwloc's logical order, device S of the kind; for "gpu" the S-th
// accelerator), the next ones to the units after it; `pus,P1[,P2...]` binds
// a CPU location to the cores whose first PU has those OS indexes;
// `optional` lets it be absent.
//
// hierarchy: `children,+,C1[,C2...]` or `children,-,C1[,...]` and
// `parent,P`. `+` attaches each child (with its subtree) below P, moving it
// if it had a parent; `-` removes each child, which must be P's, with its
// subtree. A child may name a group: the base name of a `total_count` or
// `all` line stands for all its locations. Gecko's `all` field on a
// hierarchy line is accepted and changes nothing.
//
// Binding: host_memory locations take NUMA nodes, CPU locations take cores
// (num_cores of their type; without it all cores left, or one core each for
// locations made by `total_count` or `all`), device locations take
// discovered devices of their kind ("gpu": any accelerator); in the order
// they are declared, or from `start`/`pus`, never one unit twice. Memories
// and devices bind first, then CPU locations. A location the node cannot
// give what it needs is left out with its subtree when it is optional;
// otherwise a whole text (load_config) takes what there is, with a warning
// (fewer cores, or an empty virtual location), and with
// CANOPY_CONFIG_STRICT=1, or in lines applied to a running tree, loading
// fails, naming it and what was discovered.
//
// Traits: a CPU location gets its cores' PUs, count and NUMA node (-1 when
// they span several) and the node's vector width and CPU model; a device
// its discovered traits; a host memory its NUMA node and capacity. A
// loctype's mem, bandwidth and (for devices) num_cores replace what binding
// found. Subkinds ("x64,Skylake") are notes and ignored.
//
// The tree's root is the one location left without a parent (a whole text
// not loaded strictly keeps the largest tree and leaves the other parentless
// locations out, with a warning). Every error is
// a canopy::Error "SOURCE:LINE: PROBLEM; expected WHAT".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "discovery.hpp"
#include "hierarchy.hpp"

namespace canopy {

/// The location types the configuration texts of one program declared, kept
/// for its later texts: as in Gecko, a `loctype` stays known for the
/// program's life, so a `location` line of `rt.configure(...)` may name a type
/// a file loaded earlier declared. The loctype lines in the order read; a
/// later line for a name replaces an earlier one.
struct ConfigTypes {
  std::vector<std::string> loctype_lines;
};

/// The tree a configuration text describes, bound to `node`'s cores, NUMA
/// nodes and devices. `source_name` names the text in error messages. With
/// `types`, the text may use the types it holds, and its own loctype lines
/// are added to it when it loads.
///
/// A whole text loads as Gecko's files do on a node that differs from the
/// one they were written for, unless CANOPY_CONFIG_STRICT=1 (then each of
/// these is the error it names): a CPU location asking for more cores than
/// are free gets those that are; a location whose device, memory or cores
/// the node cannot give becomes an empty virtual location; locations
/// attached to no parent are left out, with their subtrees, but for the
/// largest tree. Each change is a warning "SOURCE:LINE: ...", added to
/// `warnings` when given, else printed on stderr.
Hierarchy load_config(std::string_view text, std::string_view source_name, const NodeInventory& node,
                      ConfigTypes* types = nullptr, std::vector<std::string>* warnings = nullptr);

/// load_config on the contents of the file at `path` (named by its path in
/// errors). Throws canopy::Error when the file cannot be read.
Hierarchy load_config_file(const std::string& path, const NodeInventory& node, ConfigTypes* types = nullptr,
                           std::vector<std::string>* warnings = nullptr);

/// Applies configuration lines to an existing tree while a program runs:
/// new locations bind to what the tree does not use yet, `+` attaches or
/// moves, `-` removes subtrees. The result must still have exactly one root.
/// On an error `tree` is left as it was.
void apply_config_text(Hierarchy& tree, std::string_view text, std::string_view source_name, const NodeInventory& node,
                       ConfigTypes* types = nullptr);

/// The size in bytes a SIZE field means ("4MB" -> 4194304, "512" -> 512),
/// or -1 when `text` is not a size.
std::int64_t parse_size(std::string_view text);

}  // namespace canopy
