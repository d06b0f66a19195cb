// canopy::mpi::Job: one binary on every rank of an MPI job, each rank
// running on what its own node holds. The job starts MPI, finds which ranks
// share a node, gives each of them a disjoint part of that node's cores and
// devices (rank_assignment.hpp: nearest first, CANOPY_DEVICES per rank) and
// builds the rank's Runtime over its part. It then moves Canopy arrays
// between ranks wherever their current copy lives, and compiles each kernel
// once per kind of device in the whole job.
//
//   int main(int argc, char** argv) {
//     canopy::mpi::Job job(argc, argv);
//     canopy::Runtime& rt = job.runtime();
//     auto a = rt.array<double, 2>(Shape(rows + 2, cols));
//     ...
//     job.sendrecv(a.slice(1, 2), job.rank() - 1, a.slice(0, 1), job.rank() - 1);
//   }
//
// Thread level: the job asks MPI for MPI_THREAD_MULTIPLE. When the library
// offers less, the job's own MPI calls take one mutex (so they are never
// concurrent), and thread_multiple() says so; the program must then not call
// MPI itself while another thread is inside a Job call.
//
// Communication works on host memory: an array slice whose current copy is
// on a device is first brought to the host, copying only the elements the
// host lacks (the coherence directory); after a receive the host copy holds
// the received elements and device copies of them are stale, so the next
// region on a device copies in only those. MPI never reads device memory
// directly (no CUDA- or GPU-aware transport is assumed). Every call waits
// for the regions that use the arrays involved, as host() does.
//
// This header does not include <mpi.h>: the library links MPI privately.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <canopy/dsl/kernel.hpp>
#include <canopy/runtime/rank_assignment.hpp>
#include <canopy/runtime/runtime.hpp>

namespace canopy::mpi {

/// A rank number meaning "no rank": a send to it or a receive from it does
/// nothing (MPI_PROC_NULL), which keeps halo exchanges at a domain's edges
/// free of special cases.
inline constexpr int no_rank = -1;

/// How allreduce combines the ranks' values, element by element.
enum class Op : std::uint8_t { Sum, Min, Max };

/// One rank as hierarchies() reports it.
struct RankHierarchy {
  int rank = 0;           ///< in the job (MPI_COMM_WORLD)
  int node = 0;           ///< which node: 0 .. nodes()-1, in the order of their lowest rank
  std::string node_name;  ///< MPI_Get_processor_name
  int local_rank = 0;     ///< among the ranks of its node
  std::string share;      ///< its part of the node (RankShare::describe)
  std::string hierarchy;  ///< its Runtime's tree (Hierarchy::to_text)
};

/// The whole job as text: per node, its name and ranks, then each rank's
/// share and tree (indented), ranks in order.
std::string job_text(const std::vector<RankHierarchy>& ranks);

/// One kind of device a kernel was compiled for by compile().
struct KindCompile {
  /// The kind: "cpu <target>" for the CPU, else the device's fingerprint
  /// (backend, name, driver and compiler versions).
  std::string fingerprint;
  std::string device;   ///< this rank's device of that kind ("cpu" for the CPU)
  int ranks = 0;        ///< how many ranks of the job use this kind
  bool built = false;   ///< this rank compiled it (rather than loading the shared binary)
  bool shared = false;  ///< the binary reached this rank from another one (MPI)
};

/// What compile() did on this rank.
struct CompileReport {
  std::string kernel;
  std::vector<KindCompile> kinds;  ///< one per kind this rank uses, by fingerprint
  /// How many kinds this rank compiled itself.
  int built() const;
};

class Job {
 public:
  /// Starts MPI (MPI_Init_thread asking for MPI_THREAD_MULTIPLE, unless the
  /// program started it already), divides this node between its ranks and
  /// builds this rank's Runtime. Collective: every rank constructs its Job.
  /// Throws canopy::Error when MPI cannot start or the Runtime cannot be built.
  Job(int& argc, char**& argv);
  /// The same without a command line.
  Job();
  /// Stops the Runtime (waiting for its regions), then finalizes MPI when
  /// this Job started it.
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int rank() const;        ///< this rank in the job
  int size() const;        ///< ranks in the job
  int local_rank() const;  ///< this rank among its node's ranks
  int local_size() const;  ///< ranks on this node
  int node() const;        ///< this node's number (see RankHierarchy::node)
  int nodes() const;       ///< nodes in the job
  const std::string& node_name() const;
  /// MPI gave MPI_THREAD_MULTIPLE; false: the job serializes its MPI calls.
  bool thread_multiple() const;
  /// The part of this node this rank was given.
  const RankShare& share() const;

  /// This rank's runtime (built over share()).
  Runtime& runtime();

  /// Gathers every rank's hierarchy to rank 0: on rank 0 one entry per rank,
  /// in rank order; empty on the others. Collective.
  std::vector<RankHierarchy> hierarchies();

  /// Sends `slice`'s elements to rank `destination` with `tag` (blocking).
  template <class T, int Rank>
  void send(const ArraySlice<T, Rank>& slice, int destination, int tag = 0) {
    send_elements(slice.storage(), slice.first_element(), slice.elements(), destination, tag);
  }
  /// Receives into `slice` from rank `source` (blocking). Throws
  /// canopy::Error when the message's length differs from the slice's.
  template <class T, int Rank>
  void recv(const ArraySlice<T, Rank>& slice, int source, int tag = 0) {
    recv_elements(slice.storage(), slice.first_element(), slice.elements(), source, tag);
  }
  /// Sends `outgoing` to `destination` while receiving `incoming` from
  /// `source` (MPI_Sendrecv); either rank may be no_rank. The two slices
  /// must not overlap.
  template <class T, int Rank>
  void sendrecv(const ArraySlice<T, Rank>& outgoing, int destination, const ArraySlice<T, Rank>& incoming, int source,
                int tag = 0) {
    sendrecv_elements(outgoing.storage(), outgoing.first_element(), outgoing.elements(), destination,
                      incoming.storage(), incoming.first_element(), incoming.elements(), source, tag);
  }
  /// Combines `slice` element by element over every rank with `op`; every
  /// rank's slice holds the result. Collective.
  template <class T, int Rank>
  void allreduce(const ArraySlice<T, Rank>& slice, Op op) {
    allreduce_elements(slice.storage(), slice.first_element(), slice.elements(), op);
  }
  /// Copies rank `root`'s `slice` into every other rank's. Collective.
  template <class T, int Rank>
  void bcast(const ArraySlice<T, Rank>& slice, int root) {
    bcast_elements(slice.storage(), slice.first_element(), slice.elements(), root);
  }
  /// The same for whole arrays.
  template <class T, int Rank>
  void send(const Array<T, Rank>& array, int destination, int tag = 0) {
    send(array.slice(), destination, tag);
  }
  template <class T, int Rank>
  void recv(const Array<T, Rank>& array, int source, int tag = 0) {
    recv(array.slice(), source, tag);
  }
  template <class T, int Rank>
  void allreduce(const Array<T, Rank>& array, Op op) {
    allreduce(array.slice(), op);
  }
  template <class T, int Rank>
  void bcast(const Array<T, Rank>& array, int root) {
    bcast(array.slice(), root);
  }

  /// `value` combined over every rank with `op`. Collective.
  double allreduce(double value, Op op);
  std::int64_t allreduce(std::int64_t value, Op op);
  /// Every rank's `value`, in rank order, on every rank. Collective.
  std::vector<double> allgather(double value);
  /// Waits until every rank has called it.
  void barrier();

  /// Compiles `kernel` for every kind of device this rank's Runtime uses
  /// (the CPU always, since every kernel has a CPU program, and each device
  /// fingerprint among its leaves), once per kind in the whole job: the
  /// lowest rank using a kind compiles it and sends the binary (its disk
  /// cache entry) over MPI to the other ranks of that kind, which store it
  /// in their own disk cache unless it is there already, so that their
  /// compile loads it. Regions launched afterwards find the program
  /// compiled. Collective: every rank calls it, with the same kernels in the
  /// same order. Without a disk cache (CANOPY_CACHE_DIR=off) each rank
  /// compiles for itself. The kinds a rank uses are read at the first call.
  CompileReport compile(const KernelBase& kernel);

 private:
  struct State;

  void send_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                     int destination, int tag);
  void recv_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                     int source, int tag);
  void sendrecv_elements(const std::shared_ptr<runtime::ArrayStorage>& outgoing, std::int64_t out_first,
                         std::int64_t out_count, int destination,
                         const std::shared_ptr<runtime::ArrayStorage>& incoming, std::int64_t in_first,
                         std::int64_t in_count, int source, int tag);
  void allreduce_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                          Op op);
  void bcast_elements(const std::shared_ptr<runtime::ArrayStorage>& array, std::int64_t first, std::int64_t count,
                      int root);
  /// Before a collective over `n` elements of `array`: every rank learns
  /// whether all gave the same length and element type, and all throw the
  /// same canopy::Error naming `what` when not (a mismatched MPI collective
  /// truncates on some ranks and hangs on others). One small MPI_Allreduce.
  void agree_on_slices(const runtime::ArrayStorage& array, int n, const char* what, int root = 0);

  std::unique_ptr<State> state_;
};

}  // namespace canopy::mpi
