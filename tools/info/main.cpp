// canopy-info: what Canopy finds on this node and the location tree it
// builds from it, as a program would see it (CANOPY_CONFIG, CANOPY_DEVICES and
// CANOPY_CPU_LEAVES apply).
//
//   canopy-info            devices, absent backends and why, the tree
//   canopy-info --json     the same as JSON
//   canopy-info --dot      the tree for Graphviz
//   canopy-info --config   the tree in Gecko's configuration format
//   canopy-info --model    the machine model per leaf (calibrated once, then read from the cache directory)
//   canopy-info --mpi      under mpirun: every rank's part of its node and its tree, grouped by node
//                          (only in a Canopy built with MPI: canopy_mpi)
#include <cstdio>
#include <cstring>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/runtime/host_memory.hpp>
#include <canopy/runtime/machine_model.hpp>
#ifdef CANOPY_WITH_MPI
#include <canopy/runtime/mpi/job.hpp>
#endif

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json(const canopy::Runtime& rt) {
  const auto& node = rt.node();
  std::string out = "{\"cpu_model\":" + quoted(node.cpu_model) + ",\"cores\":" + std::to_string(node.cores.size()) +
                    ",\"numa_nodes\":" + std::to_string(node.numa_nodes.size()) +
                    ",\"vector_width\":" + std::to_string(node.vector_width) + ",\"devices\":[";
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    const auto& d = node.devices[i];
    out += (i ? "," : "") + std::string("{\"id\":") + quoted(d.id) + ",\"name\":" + quoted(d.name) +
           ",\"kind\":" + quoted(std::string(canopy::name_of(d.kind))) +
           ",\"numa_node\":" + std::to_string(d.numa_node) + "}";
  }
  out += "],\"absent\":[";
  for (std::size_t i = 0; i < node.absent.size(); ++i)
    out += (i ? "," : "") + std::string("{\"backend\":") + quoted(node.absent[i].backend) +
           ",\"reason\":" + quoted(node.absent[i].reason) + "}";
  out += "],\"jit_target\":" + quoted(canopy::jit::CpuCompiler::shared().target_description());
  out += ",\"host_pages\":" + quoted(canopy::runtime::advises_huge_pages() ? "huge" : "small");
  out += ",\"hierarchy\":" + rt.hierarchy().to_json() + "}\n";
  return out;
}

// --mpi: rank 0 prints the whole job (collective: every rank runs it).
int print_job(int argc, char** argv) {
#ifdef CANOPY_WITH_MPI
  canopy::mpi::Job job(argc, argv);
  const auto ranks = job.hierarchies();
  if (job.rank() == 0) std::fputs(canopy::mpi::job_text(ranks).c_str(), stdout);
  return 0;
#else
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "canopy-info: --mpi needs a Canopy built with MPI (install libopenmpi-dev and rebuild)\n");
  return 1;
#endif
}

int usage(std::FILE* out, int status) {
  std::fprintf(out,
               "usage: canopy-info [--json | --dot | --config | --model | --mpi]\n"
               "  (no option)  devices found, backends absent and why, the location tree\n"
               "  --json       the same as JSON\n"
               "  --dot        the location tree as a Graphviz digraph\n"
               "  --config     the location tree in Gecko's configuration format\n"
               "  --model      each leaf's cores, caches, measured bandwidth, flop rates and launch latency\n"
               "  --mpi        under mpirun: each rank's share of its node and its tree, grouped by node\n");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string option = argc > 1 ? argv[1] : "";
  if (argc > 2 || (!option.empty() && option != "--json" && option != "--dot" && option != "--config" &&
                   option != "--model" && option != "--mpi")) {
    if (option == "--help" || option == "-h") return usage(stdout, 0);
    std::fprintf(stderr, "canopy-info: unknown argument '%s'\n", argc > 2 ? argv[2] : option.c_str());
    return usage(stderr, 2);
  }
  try {
    if (option == "--mpi") return print_job(argc, argv);
    canopy::Runtime rt;
    if (option == "--json")
      std::fputs(json(rt).c_str(), stdout);
    else if (option == "--dot")
      std::fputs(rt.hierarchy().to_dot().c_str(), stdout);
    else if (option == "--config")
      std::fputs(rt.hierarchy().to_config().c_str(), stdout);
    else if (option == "--model")
      std::fputs(canopy::MachineModel::load_or_calibrate(rt).describe().c_str(), stdout);
    else
      std::fputs(rt.describe().c_str(), stdout);
  } catch (const canopy::Error& e) {
    std::fprintf(stderr, "canopy-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
