// Small pieces of the public runtime types: shapes, traits, completions,
// array storage.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>

#include <canopy/ir/error.hpp>

#include <canopy/backends/cpu/poll.hpp>

#include "array.hpp"
#include "completion.hpp"
#include "host_memory.hpp"
#include "internal/device_copies.hpp"
#include "numa_binding.hpp"
#include "region.hpp"
#include "shape.hpp"
#include "traits.hpp"

namespace canopy {

std::string Shape::to_string() const {
  std::string s;
  for (int d = 0; d < rank_; ++d) {
    if (d > 0) s += 'x';
    s += std::to_string(extents_[static_cast<std::size_t>(d)]);
  }
  return s;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.to_string(); }

MemoryTraits MemoryTraits::operator|(const MemoryTraits& other) const {
  MemoryTraits t = *this;
  if (!other.location.empty()) {
    t.location = other.location;
    t.distance.reset();
  }
  if (other.distance) {
    t.distance = other.distance;
    t.location.clear();
  }
  if (other.lifetime != Lifetime::Persistent) t.lifetime = other.lifetime;
  t.read_only = t.read_only || other.read_only;
  t.uninitialized = t.uninitialized || other.uninitialized;
  if (!other.name.empty()) t.name = other.name;
  if (other.merge) t.merge = other.merge;
  return t;
}

MemoryTraits per_region() {
  MemoryTraits t;
  t.lifetime = Lifetime::PerRegion;
  return t;
}

MemoryTraits moving() {
  // Not a distance: the array keeps a place of its own (at() or the root)
  // until a region elsewhere uses it (see Engine::State::region_location).
  MemoryTraits t;
  t.lifetime = Lifetime::Moving;
  return t;
}

MemoryTraits read_only() {
  MemoryTraits t;
  t.read_only = true;
  return t;
}

MemoryTraits uninitialized() {
  MemoryTraits t;
  t.uninitialized = true;
  return t;
}

MemoryTraits merge(MergeOp op) {
  MemoryTraits t;
  t.merge = op;
  return t;
}

MemoryTraits named(std::string name) {
  MemoryTraits t;
  t.name = std::move(name);
  return t;
}

std::string_view name_of(Lifetime lifetime) {
  switch (lifetime) {
    case Lifetime::Persistent: return "persistent";
    case Lifetime::PerRegion: return "per_region";
    case Lifetime::Moving: return "moving";
  }
  return "?";
}

MemoryTraits at(std::string location) {
  MemoryTraits t;
  t.location = std::move(location);
  return t;
}

MemoryTraits close() {
  MemoryTraits t;
  t.distance = 0;
  return t;
}

MemoryTraits far(int levels) {
  if (levels < 0) throw Error("far(" + std::to_string(levels) + "): the distance must be 0 or more levels");
  MemoryTraits t;
  t.distance = levels;
  return t;
}

std::ostream& operator<<(std::ostream& out, const MemoryTraits& traits) {
  if (traits.distance)
    return out << (*traits.distance == 0 ? "close" : "far(" + std::to_string(*traits.distance) + ")");
  return out << "at(" << (traits.location.empty() ? "root" : traits.location) << ")";
}

namespace runtime {

namespace {
std::atomic<unsigned> forks_seen{0};
void count_fork() { forks_seen.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

unsigned forks_so_far() {
  static const bool counting = pthread_atfork(nullptr, nullptr, count_fork) == 0;
  (void)counting;
  return forks_seen.load(std::memory_order_relaxed);
}

void refuse_after_fork(unsigned forks_before, const char* what) {
  if (forks_so_far() == forks_before) return;
  throw Error(std::string(what) +
              " in a child process (after fork()) on a Runtime its parent made: the Runtime's threads do not "
              "survive fork(). Finish the parent's work (pause()) before fork() and make a new Runtime in the child");
}

void Completion::finish(std::exception_ptr error) {
  error_ = std::move(error);
  state_.store(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) state_.notify_all();
}

void Completion::finish_as(const std::shared_ptr<const Completion>& cause) {
  cause_ = cause->cause_ ? cause->cause_ : cause;
  finish(cause->error_);
}

void Completion::wait(bool rethrow) const {
  if (!done()) {
    refuse_after_fork(forks_before_, "waiting for a region");
    // A short region ends within microseconds: polling avoids two futex calls.
    if (!backends::cpu::poll_until([&] { return done(); })) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (state_.load(std::memory_order_seq_cst) == 0) state_.wait(0, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
  if (rethrow && error_) {
    reported().store(true, std::memory_order_release);
    std::rethrow_exception(error_);
  }
}

namespace {
std::atomic<std::uint64_t> next_array_id{1};
std::atomic<std::uint64_t> use_clock{1};  // ArrayStorage::last_use
}  // namespace

ArrayStorage::ArrayStorage(ir::ScalarType type, Shape shape, MemoryTraits traits, std::string location,
                           std::shared_ptr<TransferTotals> totals)
    : ArrayStorage(type, shape, std::move(traits), std::move(location), nullptr, std::move(totals)) {}

ArrayStorage::ArrayStorage(ir::ScalarType type, Shape shape, MemoryTraits traits, std::string location, void* user_data,
                           std::shared_ptr<TransferTotals> totals)
    : type_(type), shape_(shape), traits_(std::move(traits)), id_(next_array_id++), location_(std::move(location)) {
  last_use_.store(use_clock++, std::memory_order_relaxed);
  for (int d = 0; d < shape_.rank(); ++d)
    if (shape_[d] < 0)
      throw Error("an array cannot have a negative extent (" + shape_.to_string() + "); give extents of 0 or more");
  // Elements and bytes both stay below 2^62, so that neither wraps around in
  // the size_t and int64 arithmetic that follows.
  const std::size_t limit = (std::size_t{1} << 62) / ir::size_of(type_);
  std::size_t elements = 1;
  for (int d = 0; d < shape_.rank(); ++d) {
    const auto extent = static_cast<std::size_t>(shape_[d]);
    if (extent != 0 && elements > limit / extent)
      throw Error("an array of " + shape_.to_string() + " " + std::string(ir::name_of(type_)) +
                  " elements is too large to address (at most 2^62 bytes); split it into smaller arrays");
    elements *= extent;
  }
  bytes_ = elements * ir::size_of(type_);
  if (user_data) {
    host_ = user_data;
    owns_memory_ = false;
  } else {
    bool owed = false;
    host_ = allocate_host(bytes_, traits_.uninitialized ? HostFill::None : HostFill::Zero, &owed);
    clear_owed_.store(owed, std::memory_order_release);
  }
  copies_ = std::make_unique<DeviceCopies>(type_, static_cast<std::int64_t>(elements), host_, traits_.merge,
                                           std::move(totals));
  if (owns_memory_ && copies_->totals())
    copies_->totals()->add_host_bytes(location_, static_cast<std::int64_t>(bytes_));
}

ArrayStorage::~ArrayStorage() {
  if (owns_memory_ && copies_->totals())
    copies_->totals()->add_host_bytes(location_, -static_cast<std::int64_t>(bytes_));
  copies_.reset();
  // The block may be kept for another array (host_memory.hpp), which must not inherit the binding.
  if (numa_node_ >= 0) bind_pages(host_, mapped_length(bytes_), -1);
  if (owns_memory_) free_host(host_, bytes_);
}

void ArrayStorage::sync_host(bool host_will_write) {
  {
    std::lock_guard lock(copies_->mutex);
    copies_->sync_host(host_will_write);
  }
  if (host_will_write) set_placed_rows(nullptr);
}

std::shared_ptr<const RowPlacement> ArrayStorage::placed_rows() const {
  std::lock_guard lock(mutex_);
  return placed_rows_;
}

void ArrayStorage::set_placed_rows(std::shared_ptr<const RowPlacement> placed) {
  std::lock_guard lock(mutex_);
  placed_rows_ = std::move(placed);
}

std::string ArrayStorage::location() const {
  std::lock_guard lock(mutex_);
  return location_;
}

void ArrayStorage::set_location(std::string location) {
  std::lock_guard lock(mutex_);
  if (owns_memory_ && copies_->totals()) {
    copies_->totals()->add_host_bytes(location_, -static_cast<std::int64_t>(bytes_));
    copies_->totals()->add_host_bytes(location, static_cast<std::int64_t>(bytes_));
  }
  location_ = std::move(location);
}

void ArrayStorage::bind_to_numa_node(int os_node) {
  const std::size_t length = mapped_length(bytes_);
  if (!owns_memory_ || length == 0) return;
  {
    std::lock_guard lock(mutex_);
    if (numa_node_ == os_node) return;
    numa_node_ = os_node;
  }
  if (std::string why = bind_pages(host_, length, os_node); !why.empty()) {
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "canopy: %s stays where the system put it: binding it to NUMA node %d failed (%s)\n",
                   describe().c_str(), os_node, why.c_str());
    });
  }
}

std::string ArrayStorage::describe() const {
  std::string s = traits_.name.empty() ? "unnamed array #" + std::to_string(id_) : "array '" + traits_.name + "'";
  return s + " (" + std::string(ir::name_of(type_)) + " " + shape_.to_string() + " at " + location() + ")";
}

void ArrayStorage::release_contents() {
  {
    // Device pieces' copies too: until 2026-11-29 only the host's pages went,
    // and the next region's pieces on OpenCL leaves read what the last left.
    std::lock_guard lock(copies_->mutex);
    copies_->drop_contents();
  }
  if (!owns_memory_) return;
  std::lock_guard lock(clear_mutex_);
  release_host(host_, bytes_);
  clear_owed_.store(false, std::memory_order_release);
}

void ArrayStorage::settle_contents(bool overwritten) const {
  if (!clear_owed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(clear_mutex_);
  if (!clear_owed_.load(std::memory_order_relaxed)) return;  // settled by another thread meanwhile
  if (!overwritten) std::memset(host_, 0, bytes_);
  clear_owed_.store(false, std::memory_order_release);
}

std::vector<CompletionPtr> ArrayStorage::add_use(const CompletionPtr& use, bool reads, bool writes,
                                                 CompletionPtr* writer_before) {
  last_use_.store(use_clock++, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  std::vector<CompletionPtr> deps;
  if (last_writer_ && !last_writer_->done()) deps.push_back(last_writer_);
  if (writer_before) *writer_before = last_writer_ != use ? last_writer_ : nullptr;
  if (writes) {
    for (auto& r : readers_)
      if (!r->done()) deps.push_back(r);
    readers_.clear();
    prune_readers_at_ = 0;
    last_writer_ = use;
  } else if (reads) {
    prune_when_doubled(readers_, prune_readers_at_, [](const CompletionPtr& r) { return r->done(); });
    readers_.push_back(use);
  }
  // A region that passes one array twice must not wait for itself.
  std::erase(deps, use);
  return deps;
}

bool ArrayStorage::writer_failed_unreported() const {
  std::lock_guard lock(mutex_);
  return last_writer_ && last_writer_->unreported_error();
}

void ArrayStorage::view_opened(bool writable) {
  views_.fetch_add(1, std::memory_order_acq_rel);
  if (writable) writable_views_.fetch_add(1, std::memory_order_acq_rel);
}

void ArrayStorage::view_closed(bool writable) {
  views_.fetch_sub(1, std::memory_order_acq_rel);
  if (writable) writable_views_.fetch_sub(1, std::memory_order_acq_rel);
}

void ArrayStorage::host_may_have_written() {
  if (host_may_write()) memory_shared_may_have_changed();
}

void ArrayStorage::memory_shared_may_have_changed() {
  if (recorded_.load(std::memory_order_acquire) > 0) return;
  {
    std::lock_guard lock(mutex_);
    if (last_writer_ && !last_writer_->done()) return;
    for (const auto& reader : readers_)
      if (!reader->done()) return;
  }
  {
    std::lock_guard lock(copies_->mutex);
    if (!copies_->has_device_copies()) return;  // nothing to refresh: every leaf works in the host copy
    copies_->sync_host(true);
  }
  set_placed_rows(nullptr);
}

void ArrayStorage::add_recorded(void* recorder, StartRecorded start, int delta) {
  std::lock_guard lock(recorded_mutex_);
  auto it = std::find_if(recorded_by_.begin(), recorded_by_.end(),
                         [&](const RecordedBy& by) { return by.recorder == recorder; });
  if (it == recorded_by_.end()) it = recorded_by_.insert(it, RecordedBy{recorder, start, 0});
  it->count += delta;
  if (it->count == 0) recorded_by_.erase(it);  // a Runtime that ends leaves nothing behind
  recorded_.fetch_add(delta, std::memory_order_acq_rel);
}

void ArrayStorage::start_recorded(const void* except, bool waits) {
  if (recorded_.load(std::memory_order_acquire) == 0) return;
  // Copied out, then started without the lock: a recorder that starts a
  // chain counts it off here. (Nothing is copied, nor allocated, when only
  // `except` holds regions on the array: a launch in the middle of a chain.)
  std::vector<RecordedBy> starts;
  {
    std::lock_guard lock(recorded_mutex_);
    for (const auto& by : recorded_by_)
      if (by.recorder != except) starts.push_back(by);
  }
  for (const auto& by : starts) by.start(by.recorder, waits, this);
}

void ArrayStorage::start_recorded_elsewhere(const void* except) { start_recorded(except, false); }

void ArrayStorage::wait_idle(bool report) {
  // In a child of fork() the recorders' threads are gone: what they held is
  // not started, and a region still running in the parent is refused below.
  if (forks_so_far() == forks_before_) start_recorded(nullptr, true);
  std::vector<CompletionPtr> pending;
  CompletionPtr writer;
  {
    std::lock_guard lock(mutex_);
    writer = last_writer_;
    if (last_writer_) pending.push_back(last_writer_);
    pending.insert(pending.end(), readers_.begin(), readers_.end());
  }
  for (auto& c : pending) c->wait(false);
  if (!report || !writer) return;
  if (auto error = writer->claim_error()) std::rethrow_exception(error);
}

namespace {

[[noreturn]] void refuse_scalar(const ir::Kernel& kernel, std::size_t index, const std::string& value) {
  const ir::Param& param = kernel.params.at(index);
  const std::string type(ir::name_of(param.type));
  throw Error("kernel '" + kernel.name + "' parameter " + kernel.describe_param(index) + " of type " + type +
              " cannot hold " + value + "; pass a value that " + type + " holds, or give the parameter a wider type");
}

}  // namespace

void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, long long value) {
  refuse_scalar(kernel, index, std::to_string(value));
}

void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, unsigned long long value) {
  refuse_scalar(kernel, index, std::to_string(value));
}

void throw_out_of_range(const ir::Kernel& kernel, std::size_t index, double value) {
  // The shortest text that reads back as `value`: at 6 digits, a value just
  // past FLT_MAX printed as FLT_MAX.
  char text[64];
  const auto written = std::to_chars(text, text + sizeof text, value);
  refuse_scalar(kernel, index, std::string(text, written.ptr));
}

}  // namespace runtime
}  // namespace canopy
