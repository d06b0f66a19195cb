#include "job.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include <canopy/ir/passes/optimize.hpp>
#include <canopy/ir/settings.hpp>
#include <canopy/jit/cpu_compiler.hpp>
#include <canopy/jit/disk_cache.hpp>

#include "../internal/device_copies.hpp"
#include "../internal/engine_access.hpp"
#include "../internal/trace.hpp"

namespace canopy::mpi {

namespace {

// Throws canopy::Error for an MPI error code, naming the call.
void check(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error("MPI failed in " + what + ": " + std::string(text, static_cast<std::size_t>(length)));
}

MPI_Datatype datatype_of(ir::ScalarType type) {
  switch (type) {
    case ir::ScalarType::Bool: return MPI_UNSIGNED_CHAR;
    case ir::ScalarType::I32: return MPI_INT32_T;
    case ir::ScalarType::I64: return MPI_INT64_T;
    case ir::ScalarType::F32: return MPI_FLOAT;
    case ir::ScalarType::F64: return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MPI_Op op_of(Op op) {
  switch (op) {
    case Op::Sum: return MPI_SUM;
    case Op::Min: return MPI_MIN;
    case Op::Max: return MPI_MAX;
  }
  return MPI_SUM;
}

int rank_or_null(int rank) { return rank < 0 ? MPI_PROC_NULL : rank; }

// A peer is a rank of the job or no_rank, and a tag is 0 or more: -2 had
// been taken for no_rank, and a tag of -1 is MPI's wildcard in a receive.
void check_peer(int rank, int tag, int size, const char* operation) {
  if (rank != no_rank && (rank < 0 || rank >= size))
    throw Error(std::string(operation) + ": rank " + std::to_string(rank) + " is not a rank of this job (0 to " +
                std::to_string(size - 1) + ", or mpi::no_rank for none)");
  if (tag < 0)
    throw Error(std::string(operation) + ": tag " + std::to_string(tag) + " is negative; give a tag of 0 or more");
}

// Receives the message from `source` with `tag` into `data` (room for `n`
// elements of `type`, `what` names them) for `operation`, and throws unless
// it held `n` elements, naming both lengths. The message is matched first,
// so that a longer one is taken whole (into scratch memory) and named by its
// length, where MPI_Recv fails with MPI_ERR_TRUNCATE and leaves the program
// only MPI's word for it.
void receive_matched(MPI_Comm world, void* data, int n, MPI_Datatype type, int source, int tag, const std::string& what,
                     const char* operation) {
  MPI_Status status;
  MPI_Message message = MPI_MESSAGE_NULL;
  int got = 0;
  check(MPI_Mprobe(rank_or_null(source), tag, world, &message, &status),
        "MPI_Mprobe for " + what + " from rank " + std::to_string(source));
  MPI_Get_count(&status, type, &got);
  if (source >= 0 && got > n) {
    int size = 0;
    MPI_Type_size(type, &size);
    std::vector<char> scratch(static_cast<std::size_t>(got) * static_cast<std::size_t>(size));
    check(MPI_Mrecv(scratch.data(), got, type, &message, &status), "MPI_Mrecv from rank " + std::to_string(source));
  } else {
    check(MPI_Mrecv(data, n, type, &message, &status),
          "MPI_Mrecv into " + what + " from rank " + std::to_string(source));
    MPI_Get_count(&status, type, &got);
  }
  if (source >= 0 && got != n)
    throw Error(std::string(operation) + " into " + what + ": rank " + std::to_string(source) + " sent " +
                std::to_string(got) + " elements, the slice holds " + std::to_string(n) +
                "; send and receive slices of one length");
}

// An MPI count for `count` elements of `array`; throws past INT_MAX.
int count_of(const runtime::ArrayStorage& array, std::int64_t count, const char* operation) {
  if (count > INT_MAX)
    throw Error(std::string(operation) + " of " + std::to_string(count) + " elements of " + array.describe() +
                ": one message holds at most " + std::to_string(INT_MAX) + " elements; send it in slices");
  return static_cast<int>(count);
}

void check_slice(const runtime::ArrayStorage& array, std::int64_t first, std::int64_t count, const char* operation) {
  const std::int64_t elements = array.shape().size();
  if (first < 0 || count < 0 || first + count > elements)
    throw Error(std::string(operation) + ": elements [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") are not within " + array.describe());
}

// Waits for the regions using `array`, then makes elements [first,
// first+count) current in its host copy (only stale ranges move).
void* host_for_reading(runtime::ArrayStorage& array, std::int64_t first, std::int64_t count) {
  array.wait_idle();
  auto& copies = array.copies();
  std::lock_guard lock(copies.mutex);
  copies.acquire(runtime::Coherence::kHost, runtime::IntervalSet(runtime::Range{first, first + count}));
  return static_cast<char*>(array.host_data()) + first * static_cast<std::int64_t>(ir::size_of(array.type()));
}

// Waits for the regions using `array` and combines pending merges of it, so
// that the host copy of the range may be overwritten.
void* host_for_writing(runtime::ArrayStorage& array, std::int64_t first) {
  array.wait_idle();
  auto& copies = array.copies();
  {
    std::lock_guard lock(copies.mutex);
    copies.combine_merges();
  }
  return static_cast<char*>(array.host_data()) + first * static_cast<std::int64_t>(ir::size_of(array.type()));
}

// The host copy now holds elements [first, first+count); device copies of them are stale.
void host_wrote(runtime::ArrayStorage& array, std::int64_t first, std::int64_t count) {
  auto& copies = array.copies();
  std::lock_guard lock(copies.mutex);
  copies.wrote(runtime::Coherence::kHost, runtime::IntervalSet(runtime::Range{first, first + count}));
}

// Strings packed as (length, bytes) pairs, for gathers.
void pack(std::string& out, const std::string& text) {
  const auto length = static_cast<std::uint32_t>(text.size());
  out.append(reinterpret_cast<const char*>(&length), sizeof length);
  out.append(text);
}

std::vector<std::string> unpack(const char* data, std::size_t bytes) {
  std::vector<std::string> texts;
  std::size_t at = 0;
  while (at + sizeof(std::uint32_t) <= bytes) {
    std::uint32_t length = 0;
    std::memcpy(&length, data + at, sizeof length);
    at += sizeof length;
    texts.emplace_back(data + at, std::min<std::size_t>(length, bytes - at));
    at += length;
  }
  return texts;
}

// Every rank's `text` on every rank of `comm`, in rank order.
std::vector<std::string> allgather_text(MPI_Comm comm, const std::string& text) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm),
        "MPI_Allgatherv");
  std::vector<std::string> texts;
  for (int r = 0; r < size; ++r)
    texts.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return texts;
}

// What a rank tells the node's other ranks: the processing units its
// process may use (process_affinity; empty when unknown), then its
// CANOPY_DEVICES, one line each.
std::string selection_text(const std::vector<unsigned>& pus, const std::string& devices) {
  std::string text;
  for (unsigned pu : pus) text += (text.empty() ? "" : ",") + std::to_string(pu);
  return text + "\n" + devices;
}

struct Selection {
  std::vector<unsigned> pus;
  std::string devices;
};

Selection selection_of(const std::string& text) {
  Selection selection;
  const std::size_t line = text.find('\n');
  selection.devices = line == std::string::npos ? std::string() : text.substr(line + 1);
  const std::string list = text.substr(0, line);
  for (std::size_t at = 0; at < list.size();) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    selection.pus.push_back(static_cast<unsigned>(std::stoul(list.substr(at, end - at))));
    at = end + 1;
  }
  return selection;
}

// The node's CPU cores as the ranks may use them, and this rank's share of
// them: the node is first narrowed to the cores some local rank's process
// may use (so `taskset -c 2-5 mpirun ...` limits the whole job), then
// divided; a rank whose share lies outside its own mask (a launcher bound
// it elsewhere) keeps to its mask, as a lone Runtime does.
RankShare share_within_affinity(NodeInventory whole, const std::vector<Selection>& selections, int local_rank) {
  std::vector<unsigned> allowed;
  bool all_known = true;
  for (const auto& selection : selections) {
    all_known = all_known && !selection.pus.empty();
    allowed.insert(allowed.end(), selection.pus.begin(), selection.pus.end());
  }
  if (all_known) {
    NodeInventory within = whole;
    keep_cores(within, allowed);
    if (!within.cores.empty()) whole = std::move(within);
  }
  std::vector<std::string> devices;
  for (const auto& selection : selections) devices.push_back(selection.devices);
  RankShare share = assign_ranks(whole, devices).at(static_cast<std::size_t>(local_rank));
  const std::vector<unsigned>& mine = selections.at(static_cast<std::size_t>(local_rank)).pus;
  if (share.pus.empty() || mine.empty()) return share;
  auto in_mine = [&](unsigned pu) { return std::find(mine.begin(), mine.end(), pu) != mine.end(); };
  std::vector<unsigned> kept;
  std::copy_if(share.pus.begin(), share.pus.end(), std::back_inserter(kept), in_mine);
  if (kept.empty())
    for (const CoreInfo& core : whole.cores)
      if (in_mine(core.pu)) kept.push_back(core.pu);
  if (!kept.empty()) share.pus = std::move(kept);
  return share;
}

// This node as the engine will see it: hwloc's view plus every backend's
// devices (a GPU seen through two APIs once).
NodeInventory discover_whole_node() {
  NodeInventory node = discover_node();
  std::vector<backends::DeviceInfo> known;
  for (auto& found : discover_selected_backends()) {
    auto kept = without_duplicates(std::move(found), known);
    add_backend_devices(node, kept);
    for (const auto& device : kept.devices) known.push_back(device->info());
  }
  return node;
}

// What compiling one kernel for one kind of device did on this rank.
struct LocalCompile {
  std::string key;        ///< its disk cache key
  std::string cache_dir;  ///< its disk cache directory, empty when none
  bool built = false;     ///< compiled by this call (not found in memory or on disk)
};

// One kind of device this rank uses: the CPU (device null) or a device.
struct Kind {
  std::string fingerprint;
  std::string device_id;
  std::shared_ptr<backends::Device> device;
};

// Compiles `optimized` for `kind` on this rank.
LocalCompile compile_kind(const Kind& kind, const std::shared_ptr<const ir::Kernel>& optimized) {
  if (!kind.device) {
    auto& compiler = jit::CpuCompiler::shared();
    const auto compiled = compiler.compile(*optimized);
    // The other ranks load it from the disk cache once this rank says so.
    compiler.flush_disk_cache();
    LocalCompile result;
    result.key = compiled.key;
    result.built = compiled.source == jit::CpuCompiler::Source::Compiled;
    if (compiler.disk_cache()) result.cache_dir = compiler.disk_cache()->directory();
    return result;
  }
  const auto program = kind.device->compile(optimized);
  LocalCompile result;
  result.key = program->cache_key();
  result.built = program->origin() == backends::ProgramOrigin::Built;
  if (const auto* disk = kind.device->disk_cache()) result.cache_dir = disk->directory();
  return result;
}

}  // namespace

int CompileReport::built() const {
  return static_cast<int>(std::count_if(kinds.begin(), kinds.end(), [](const KindCompile& k) { return k.built; }));
}

std::string job_text(const std::vector<RankHierarchy>& ranks) {
  std::map<int, std::vector<const RankHierarchy*>> by_node;
  for (const auto& r : ranks) by_node[r.node].push_back(&r);
  std::string text =
      "job: " + std::to_string(ranks.size()) + " rank(s) on " + std::to_string(by_node.size()) + " node(s)\n";
  for (auto& [node, members] : by_node) {
    std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    text += "node " + std::to_string(node) + " (" + members.front()->node_name +
            "): " + std::to_string(members.size()) + " rank(s)\n";
    for (const auto* r : members) {
      text += "  rank " + std::to_string(r->rank) + " (" + r->share + ")\n";
      std::size_t at = 0;
      while (at < r->hierarchy.size()) {
        std::size_t end = r->hierarchy.find('\n', at);
        if (end == std::string::npos) end = r->hierarchy.size();
        text += "    " + r->hierarchy.substr(at, end - at) + "\n";
        at = end + 1;
      }
    }
  }
  return text;
}

struct Job::State {
  bool started_mpi = false;
  bool multiple = false;
  std::mutex serial;  ///< held around MPI calls when !multiple
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm node_comm = MPI_COMM_NULL;
  int rank = 0, size = 1, local_rank = 0, local_size = 1, node = 0, nodes = 1;
  std::string node_name;
  RankShare share;
  std::unique_ptr<Runtime> runtime;

  std::mutex kinds_mutex;
  bool kinds_known = false;
  std::vector<Kind> kinds;  ///< this rank's, by fingerprint
  /// Per fingerprint of the whole job, sorted: its ranks' communicator
  /// (MPI_COMM_NULL on ranks that do not use it) and its size.
  std::vector<std::tuple<std::string, MPI_Comm, int>> groups;

  std::unique_lock<std::mutex> lock() {
    return multiple ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(serial);
  }

  void start(int* argc, char*** argv) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
      throw Error(
          "mpi::Job: MPI was finalized already (by an earlier Job or by the program), and MPI cannot start twice in a "
          "process; make one Job for the whole program");
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      // Open MPI's ranks spin while they wait in MPI, on a core the rank's
      // Canopy leaves also run on: with other work on the node, a 2-rank
      // heat solver took 4-10x as long as with them yielding. Unless the
      // launcher or the program chose, they yield (other MPIs ignore it).
      setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
      check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      started_mpi = true;
    } else {
      MPI_Query_thread(&provided);
    }
    multiple = provided >= MPI_THREAD_MULTIPLE;
    // A communicator of our own: the program's messages never match ours.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    check(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_comm), "MPI_Comm_split_type");
    MPI_Comm_set_errhandler(node_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(node_comm, &local_rank);
    MPI_Comm_size(node_comm, &local_size);
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = 0;
    MPI_Get_processor_name(name, &length);
    node_name.assign(name, static_cast<std::size_t>(length));
    // Nodes are numbered by their first ranks.
    MPI_Comm leaders = MPI_COMM_NULL;
    check(MPI_Comm_split(world, local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders), "MPI_Comm_split");
    int numbers[2] = {0, 1};
    if (leaders != MPI_COMM_NULL) {
      MPI_Comm_rank(leaders, &numbers[0]);
      MPI_Comm_size(leaders, &numbers[1]);
      MPI_Comm_free(&leaders);
    }
    check(MPI_Bcast(numbers, 2, MPI_INT, 0, node_comm), "MPI_Bcast");
    node = numbers[0];
    nodes = numbers[1];

    // Divide the node: every local rank's CANOPY_DEVICES, then one
    // assignment that every rank of the node computes alike.
    std::vector<Selection> selections;
    for (const auto& text : allgather_text(node_comm, selection_text(process_affinity(), reload_settings().devices)))
      selections.push_back(selection_of(text));
    share = share_within_affinity(discover_whole_node(), selections, local_rank);
    canopy::runtime::trace::set_rank(rank);  // CANOPY_TRACE=run.json: this rank writes run.<rank>.json
    runtime = std::make_unique<Runtime>(share.options());
  }

  // The kinds of device this rank compiles for (call with kinds_mutex held).
  void find_kinds() {
    if (kinds_known) return;
    kinds_known = true;
    kinds.push_back(Kind{"cpu " + jit::CpuCompiler::shared().target_description(), "cpu", nullptr});
    const Hierarchy tree = runtime->hierarchy();
    for (const Location* leaf : tree.leaves(*tree.root())) {
      const std::string& id = leaf->traits().device;
      if (id.empty()) continue;
      auto device = runtime::engine_of(*runtime).device(id);
      if (!device || device->info().host_memory) continue;
      const auto& info = device->info();
      std::string fingerprint =
          info.fingerprint.empty() ? info.backend + " " + info.name + " " + info.driver_version : info.fingerprint;
      const bool known =
          std::any_of(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.fingerprint == fingerprint; });
      if (!known) kinds.push_back(Kind{fingerprint, id, device});
    }
    std::sort(kinds.begin(), kinds.end(), [](const Kind& a, const Kind& b) { return a.fingerprint < b.fingerprint; });
    std::string mine;
    for (const Kind& k : kinds) pack(mine, k.fingerprint);
    std::set<std::string> every;
    for (const std::string& packed : allgather_text(world, mine))
      for (std::string& f : unpack(packed.data(), packed.size())) every.insert(std::move(f));
    for (const std::string& fingerprint : every) {
      const bool member =
          std::any_of(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.fingerprint == fingerprint; });
      MPI_Comm group = MPI_COMM_NULL;
      check(MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, rank, &group), "MPI_Comm_split");
      int group_size = 0;
      if (group != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN);
        MPI_Comm_size(group, &group_size);
      }
      groups.emplace_back(fingerprint, group, group_size);
    }
  }
};

Job::Job(int& argc, char**& argv) : state_(std::make_unique<State>()) { state_->start(&argc, &argv); }

Job::Job() : state_(std::make_unique<State>()) { state_->start(nullptr, nullptr); }

Job::~Job() {
  state_->runtime.reset();
  // The program may have finalized MPI itself: nothing of MPI may be called then.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Left by an exception (this rank failed): MPI_Finalize would wait for
  // ranks that wait for this one, and the program's handler would never
  // print the error. Without finalizing, the process ends after the handler,
  // and mpirun ends the job.
  if (std::uncaught_exceptions() > 0) return;
  for (auto& [fingerprint, group, group_size] : state_->groups)
    if (group != MPI_COMM_NULL) MPI_Comm_free(&group);
  if (state_->node_comm != MPI_COMM_NULL) MPI_Comm_free(&state_->node_comm);
  if (state_->world != MPI_COMM_NULL) MPI_Comm_free(&state_->world);
  if (state_->started_mpi) MPI_Finalize();
}

int Job::rank() const { return state_->rank; }
int Job::size() const { return state_->size; }
int Job::local_rank() const { return state_->local_rank; }
int Job::local_size() const { return state_->local_size; }
int Job::node() const { return state_->node; }
int Job::nodes() const { return state_->nodes; }
const std::string& Job::node_name() const { return state_->node_name; }
bool Job::thread_multiple() const { return state_->multiple; }
const RankShare& Job::share() const { return state_->share; }
Runtime& Job::runtime() { return *state_->runtime; }

std::vector<RankHierarchy> Job::hierarchies() {
  std::string mine;
  pack(mine, std::to_string(state_->rank));
  pack(mine, std::to_string(state_->node));
  pack(mine, state_->node_name);
  pack(mine, std::to_string(state_->local_rank));
  pack(mine, state_->share.describe());
  pack(mine, state_->runtime->hierarchy().to_text());
  auto lock = state_->lock();
  const auto all = allgather_text(state_->world, mine);
  std::vector<RankHierarchy> ranks;
  if (state_->rank != 0) return ranks;
  for (const std::string& packed : all) {
    const auto fields = unpack(packed.data(), packed.size());
    if (fields.size() != 6) throw Error("hierarchies(): a rank sent a damaged record");
    ranks.push_back(RankHierarchy{std::stoi(fields[0]), std::stoi(fields[1]), fields[2], std::stoi(fields[3]),
                                  fields[4], fields[5]});
  }
  return ranks;
}

void Job::send_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                        int destination, int tag) {
  check_slice(*array, first, count, "send");
  check_peer(destination, tag, state_->size, "send");
  const int n = count_of(*array, count, "send");
  void* data = host_for_reading(*array, first, count);
  auto lock = state_->lock();
  check(MPI_Send(data, n, datatype_of(array->type()), rank_or_null(destination), tag, state_->world),
        "MPI_Send of " + array->describe() + " to rank " + std::to_string(destination));
}

void Job::recv_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                        int source, int tag) {
  check_slice(*array, first, count, "recv");
  check_peer(source, tag, state_->size, "recv");
  const int n = count_of(*array, count, "recv");
  void* data = host_for_writing(*array, first);
  {
    auto lock = state_->lock();
    receive_matched(state_->world, data, n, datatype_of(array->type()), source, tag, array->describe(), "recv");
  }
  if (source >= 0) host_wrote(*array, first, count);
}

void Job::sendrecv_elements(const std::shared_ptr<runtime::ArrayStorage>& outgoing, std::int64_t out_first,
                            std::int64_t out_count, int destination,
                            const std::shared_ptr<runtime::ArrayStorage>& incoming, std::int64_t in_first,
                            std::int64_t in_count, int source, int tag) {
  check_slice(*outgoing, out_first, out_count, "sendrecv");
  check_slice(*incoming, in_first, in_count, "sendrecv");
  check_peer(destination, tag, state_->size, "sendrecv");
  check_peer(source, tag, state_->size, "sendrecv");
  if (outgoing->type() != incoming->type())
    throw Error("sendrecv: " + outgoing->describe() + " and " + incoming->describe() + " have different types");
  if (outgoing == incoming && out_first < in_first + in_count && in_first < out_first + out_count)
    throw Error("sendrecv: the slices of " + outgoing->describe() + " overlap; send and receive disjoint rows");
  const int n_out = count_of(*outgoing, out_count, "sendrecv"), n_in = count_of(*incoming, in_count, "sendrecv");
  void* out = destination >= 0 ? host_for_reading(*outgoing, out_first, out_count) : nullptr;
  void* in = host_for_writing(*incoming, in_first);
  const MPI_Datatype type = datatype_of(outgoing->type());
  {
    // The send goes out first, without waiting; the receive is matched as
    // recv's is, so a longer message is named by its length too.
    auto lock = state_->lock();
    MPI_Request sending = MPI_REQUEST_NULL;
    check(MPI_Isend(out, destination >= 0 ? n_out : 0, type, rank_or_null(destination), tag, state_->world, &sending),
          "MPI_Isend of " + outgoing->describe() + " to rank " + std::to_string(destination));
    try {
      receive_matched(state_->world, in, n_in, type, source, tag, incoming->describe(), "sendrecv");
    } catch (...) {
      MPI_Wait(&sending, MPI_STATUS_IGNORE);
      throw;
    }
    check(MPI_Wait(&sending, MPI_STATUS_IGNORE), "MPI_Wait for the send of " + outgoing->describe());
  }
  if (source >= 0) host_wrote(*incoming, in_first, in_count);
}

void Job::agree_on_slices(const runtime::ArrayStorage& array, int n, const char* what, int root) {
  const int type = static_cast<int>(array.type());
  int mine[6] = {n, -n, type, -type, root, -root}, all[6] = {0, 0, 0, 0, 0, 0};
  {
    auto lock = state_->lock();
    check(MPI_Allreduce(mine, all, 6, MPI_INT, MPI_MAX, state_->world),
          std::string("MPI_Allreduce of the slice lengths before ") + what);
  }
  if (all[0] != -all[1])
    throw Error(std::string(what) + " of " + array.describe() + ": the ranks give slices of " +
                std::to_string(-all[1]) + " to " + std::to_string(all[0]) + " elements (this rank " +
                std::to_string(n) + "); every rank must give one length");
  if (all[2] != -all[3])
    throw Error(std::string(what) + " of " + array.describe() +
                ": the ranks give arrays of different element types; every rank must give one type");
  if (all[4] != -all[5])
    throw Error(std::string(what) + " of " + array.describe() + ": the ranks name roots " + std::to_string(-all[5]) +
                " to " + std::to_string(all[4]) + " (this rank " + std::to_string(root) +
                "); every rank must name one root");
}

void Job::allreduce_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first,
                             std::int64_t count, Op op) {
  check_slice(*array, first, count, "allreduce");
  if (array->type() == ir::ScalarType::Bool && op == Op::Sum)
    throw Error("allreduce of " + array->describe() +
                ": a sum of bools is not a bool; use Op::Max (any rank's true) or Op::Min (every rank's), or "
                "an integer array to count");
  const int n = count_of(*array, count, "allreduce");
  agree_on_slices(*array, n, "allreduce");
  void* data = host_for_reading(*array, first, count);
  {
    auto lock = state_->lock();
    check(MPI_Allreduce(MPI_IN_PLACE, data, n, datatype_of(array->type()), op_of(op), state_->world),
          "MPI_Allreduce of " + array->describe());
  }
  host_wrote(*array, first, count);
}

void Job::bcast_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                         int root) {
  check_slice(*array, first, count, "bcast");
  const int n = count_of(*array, count, "bcast");
  agree_on_slices(*array, n, "bcast", root);
  const bool sending = root == state_->rank;
  void* data = sending ? host_for_reading(*array, first, count) : host_for_writing(*array, first);
  {
    auto lock = state_->lock();
    check(MPI_Bcast(data, n, datatype_of(array->type()), root, state_->world),
          "MPI_Bcast of " + array->describe() + " from rank " + std::to_string(root));
  }
  if (!sending) host_wrote(*array, first, count);
}

double Job::allreduce(double value, Op op) {
  auto lock = state_->lock();
  double result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, op_of(op), state_->world), "MPI_Allreduce");
  return result;
}

std::int64_t Job::allreduce(std::int64_t value, Op op) {
  auto lock = state_->lock();
  std::int64_t result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_INT64_T, op_of(op), state_->world), "MPI_Allreduce");
  return result;
}

std::vector<double> Job::allgather(double value) {
  auto lock = state_->lock();
  std::vector<double> values(static_cast<std::size_t>(state_->size));
  check(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, state_->world), "MPI_Allgather");
  return values;
}

void Job::barrier() {
  auto lock = state_->lock();
  check(MPI_Barrier(state_->world), "MPI_Barrier");
}

CompileReport Job::compile(const KernelBase& kernel) {
  std::lock_guard kinds_lock(state_->kinds_mutex);
  {
    auto lock = state_->lock();
    state_->find_kinds();
  }
  CompileReport report;
  report.kernel = kernel.name();
  // The engine optimizes the traced kernel the same way, so its programs
  // have the same cache keys.
  const auto optimized = std::make_shared<const ir::Kernel>(ir::optimize(kernel.ir()));
  for (auto& [fingerprint, group, group_size] : state_->groups) {
    if (group == MPI_COMM_NULL) continue;
    const auto kind = std::find_if(state_->kinds.begin(), state_->kinds.end(),
                                   [&](const Kind& k) { return k.fingerprint == fingerprint; });
    KindCompile done;
    done.fingerprint = fingerprint;
    done.device = kind->device_id;
    done.ranks = group_size;
    int group_rank = 0;
    MPI_Comm_rank(group, &group_rank);
    // The lowest rank of the kind compiles, then shares its cache entry.
    std::string key, payload;
    if (group_rank == 0) {
      const LocalCompile local = compile_kind(*kind, optimized);
      done.built = local.built;
      key = local.key;
      // The entry travels with one byte saying its form: 'L' loadable, 'E' plain.
      if (!local.cache_dir.empty() && !key.empty())
        if (auto entry = jit::DiskCache(local.cache_dir).get_stored(key))
          payload = (entry->loadable ? "L" : "E") + std::move(entry->payload);
    }
    std::int64_t sizes[2] = {static_cast<std::int64_t>(key.size()), static_cast<std::int64_t>(payload.size())};
    {
      auto lock = state_->lock();
      check(MPI_Bcast(sizes, 2, MPI_INT64_T, 0, group), "MPI_Bcast of a compiled kernel's size");
      if (sizes[1] > INT_MAX) sizes[1] = 0;  // too large for one message: each rank compiles
      key.resize(static_cast<std::size_t>(sizes[0]));
      payload.resize(static_cast<std::size_t>(sizes[1]));
      check(MPI_Bcast(key.data(), static_cast<int>(sizes[0]), MPI_CHAR, 0, group), "MPI_Bcast of a cache key");
      check(MPI_Bcast(payload.data(), static_cast<int>(sizes[1]), MPI_CHAR, 0, group),
            "MPI_Bcast of a compiled kernel");
    }
    if (group_rank != 0) {
      std::string cache_dir;
      if (!kind->device) {
        if (const auto* disk = jit::CpuCompiler::shared().disk_cache()) cache_dir = disk->directory();
      } else if (const auto* disk = kind->device->disk_cache()) {
        cache_dir = disk->directory();
      }
      if (!cache_dir.empty() && !payload.empty()) {
        // On a directory the ranks share, the entry is there already and
        // nobody writes it again.
        jit::DiskCache disk(cache_dir);
        if (!disk.get_stored(key)) {
          disk.put_stored(key, {payload.substr(1), payload[0] == 'L'});
          done.shared = true;
        }
      }
      const LocalCompile local = compile_kind(*kind, optimized);
      done.built = local.built;
      done.shared = done.shared || (!local.built && !payload.empty());
    }
    report.kinds.push_back(std::move(done));
  }
  return report;
}

}  // namespace canopy::mpi
