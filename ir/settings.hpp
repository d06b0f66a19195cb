// Settings: every CANOPY_* environment variable Canopy reads, read in one
// place. The environment is read when a Runtime is made (reload_settings())
// and, for code that runs before any Runtime exists, the first time
// settings() is called; nothing else in the library calls getenv. A bad value
// is a canopy::Error naming the variable, the value and what is allowed, the
// same for every variable, raised when the Runtime is made.
//
// This header lives in ir/, the bottom of the layering, so that every folder
// may read the settings: the CPU compiler, the dumps, the disk cache and the
// backends' library loaders are process-wide objects that take their values
// from here. What a variable means belongs to the code that uses it;
// variables whose values only a higher layer can parse (CANOPY_POLICY,
// CANOPY_FAULT, CANOPY_DEVICES) are kept as text here and checked by their
// owners when the Runtime is made, with bad_setting()'s message.
//
// setting_names() lists every variable; a test checks that README.md's table
// documents exactly these.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy {

/// The values of Canopy's environment variables, as one snapshot. An unset
/// or empty variable is empty text (or an empty optional).
struct Settings {
  std::string cache_dir;         ///< CANOPY_CACHE_DIR; empty: $HOME/.cache/canopy ("off" when HOME is unset)
  std::string cache_shared;      ///< CANOPY_CACHE_SHARED: "" or "group"
  std::string dump;              ///< CANOPY_DUMP: comma-separated dump kinds (checked)
  std::string dump_dir;          ///< CANOPY_DUMP_DIR; empty: ./canopy-dump
  std::string streaming_stores;  ///< CANOPY_STREAMING_STORES: "", "auto", "on" or "off"
  std::string simd;              ///< CANOPY_SIMD: "", "auto", "on" or "off"
  std::string fuse;              ///< CANOPY_FUSE: "", "on" or "off" (fusion of launched regions)
  int simd_width = 0;            ///< CANOPY_SIMD_WIDTH: lanes per vector, a power of two in [2, 64]; 0: from the CPU
  std::string device_memory;   ///< CANOPY_DEVICE_MEMORY: "<leaf>:<size>[,...]", what each device leaf may hold (checked
                               ///< by the runtime)
  std::string prefetch;        ///< CANOPY_PREFETCH: "", "auto" or "off" (software prefetches of row walks)
  std::string huge_pages;      ///< CANOPY_HUGE_PAGES: "", "auto", "on" or "off" (large host blocks)
  std::string config;          ///< CANOPY_CONFIG: a configuration file
  bool config_strict = false;  ///< CANOPY_CONFIG_STRICT=1: a file the node cannot serve as written is an error
  std::string cpu_leaves;      ///< CANOPY_CPU_LEAVES: numa, l3 or core, any case (checked by discovery)
  std::string devices;         ///< CANOPY_DEVICES: a device selection (checked by discovery)
  std::string policy;          ///< CANOPY_POLICY, else Gecko's GECKO_POLICY: a policy (checked by the runtime)
  std::string policy_variable = "CANOPY_POLICY";  ///< which of the two `policy` came from (for messages)
  std::optional<double> adaptive_dead_band;       ///< CANOPY_ADAPTIVE_DEAD_BAND, in [0, 1]
  std::optional<double> adaptive_damping;         ///< CANOPY_ADAPTIVE_DAMPING, in (0, 1]
  std::optional<bool> adaptive_probe;             ///< CANOPY_ADAPTIVE_PROBE: 0 or 1
  std::string lib_opencl;                         ///< CANOPY_LIBOPENCL: the OpenCL ICD loader to open
  std::string lib_cuda;                           ///< CANOPY_LIBCUDA: the CUDA driver library to open
  std::string nvrtc;                              ///< CANOPY_NVRTC: the NVRTC library to open
  std::string lib_ze;                             ///< CANOPY_LIBZE: the Level Zero loader to open
  std::string cuda_home;                          ///< CUDA_HOME: where NVRTC is also looked for (lib64/)
  std::string home;                               ///< HOME: where the default cache directory is
  std::string temp_dir;            ///< TMPDIR: where the CPU compiler links kernels into shared objects (empty: /tmp)
  std::string search_path;         ///< PATH: where the system linker (ld) is looked for (empty: /usr/bin:/bin)
  std::string check;               ///< CANOPY_CHECK: "", "off" or "bounds"
  std::string split_writes;        ///< CANOPY_SPLIT_WRITES: "", "auto", "merge" or "one"
  std::string sequence_placement;  ///< CANOPY_SEQUENCE_PLACEMENT: "", "on", "off" or "always"
  std::string fault;               ///< CANOPY_FAULT: faults to inject (checked by the backends)
  std::string test_rank_time;      ///< CANOPY_TEST_RANK_TIME: modelled step times (checked by mpi::Partition)
  /// CANOPY_TRACE: the file a trace of the run goes to (checked by the
  /// runtime); unset: no trace. Set but empty is kept, to be refused.
  std::optional<std::string> trace;
  /// OMPI_COMM_WORLD_RANK, else PMI_RANK: the rank mpirun gave this process,
  /// which CANOPY_TRACE's file name takes when no MPI job said it.
  std::string mpi_rank;

  /// Reads every variable now; throws canopy::Error (bad_setting's message)
  /// for a value that is not allowed.
  static Settings from_environment();

  /// True when the kind of dump `kind` ("ir", "llvm", ...) is asked for.
  bool dumps(std::string_view kind) const;

  bool operator==(const Settings&) const = default;
};

/// The settings in force: those read by the last reload_settings(), or read
/// now when there was none. The reference stays valid for the process's life.
const Settings& settings();

/// Reads the environment again and puts it in force (the Runtime's
/// constructor calls it, so a program or test that changes a variable sees
/// the change in its next Runtime). Throws canopy::Error for a bad value and
/// then leaves the settings in force as they were.
const Settings& reload_settings();

/// Every environment variable Canopy reads, in the order of README.md's table.
const std::vector<std::string_view>& setting_names();

/// The variables of the environment ("NAME=value") whose names begin with
/// one of `prefixes`, sorted. Not settings: for keys that must change with
/// whatever may steer a driver (backends/discovery_cache.cpp).
std::vector<std::string> environment_starting_with(const std::vector<std::string_view>& prefixes);

/// Throws canopy::Error "NAME='VALUE' is not allowed; use ALLOWED".
[[noreturn]] void bad_setting(std::string_view name, std::string_view value, std::string_view allowed);

}  // namespace canopy
