#include "device_copies.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <canopy/ir/error.hpp>

#include "trace.hpp"

namespace canopy::runtime {

namespace {

// host[i] = host[i] op copy[i] for `count` elements of T.
template <class T>
void combine_into(void* host, const void* copy, std::size_t count, ir::ReduceOp op) {
  auto* h = static_cast<T*>(host);
  const auto* c = static_cast<const T*>(copy);
  for (std::size_t i = 0; i < count; ++i) {
    if (op == ir::ReduceOp::Sum) {
      if constexpr (std::is_integral_v<T>)
        h[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(h[i]) + static_cast<std::make_unsigned_t<T>>(c[i]));
      else
        h[i] = h[i] + c[i];
    } else if constexpr (std::is_floating_point_v<T>) {
      h[i] = op == ir::ReduceOp::Min ? std::fmin(h[i], c[i]) : std::fmax(h[i], c[i]);
    } else {
      h[i] = op == ir::ReduceOp::Min ? std::min(h[i], c[i]) : std::max(h[i], c[i]);
    }
  }
}

void combine(ir::ScalarType type, void* host, const void* copy, std::size_t count, ir::ReduceOp op) {
  switch (type) {
    case ir::ScalarType::I32: combine_into<std::int32_t>(host, copy, count, op); break;
    case ir::ScalarType::I64: combine_into<std::int64_t>(host, copy, count, op); break;
    case ir::ScalarType::F32: combine_into<float>(host, copy, count, op); break;
    case ir::ScalarType::F64: combine_into<double>(host, copy, count, op); break;
    case ir::ScalarType::Bool: combine_into<std::uint8_t>(host, copy, count, op); break;
  }
}

}  // namespace

DeviceCopies::DeviceCopies(ir::ScalarType type, std::int64_t elements, void* host, std::optional<ir::ReduceOp> merge,
                           std::shared_ptr<TransferTotals> totals)
    : type_(type),
      element_size_(ir::size_of(type)),
      host_(host),
      merge_(merge),
      totals_(std::move(totals)),
      directory_(elements, static_cast<std::int64_t>(element_size_), Routing::ThroughHost) {}

DeviceCopies::~DeviceCopies() {
  std::unique_lock lock = totals_ ? std::unique_lock(totals_->held_mutex) : std::unique_lock<std::mutex>();
  for (auto& [place, copy] : copies_) {
    copy.device->free(copy.buffer);
    forget(place, copy);
  }
}

void DeviceCopies::forget(int place, const Copy& copy) {
  if (!totals_) return;
  auto& held = totals_->held[place];
  held.now -= bytes_of(copy);
  held.copies.erase(copy.in_use_order);
}

std::int64_t DeviceCopies::bytes() const { return directory_.elements() * static_cast<std::int64_t>(element_size_); }

std::int64_t DeviceCopies::bytes_of(const Copy& copy) const {
  return copy.window.size() * static_cast<std::int64_t>(element_size_);
}

std::size_t DeviceCopies::offset_in(const Copy& copy, std::int64_t element) const {
  return static_cast<std::size_t>(element - copy.window.begin) * element_size_;
}

Range DeviceCopies::rounded(Range window) const {
  const std::int64_t elements = directory_.elements();
  if (window.empty()) window = Range{0, 1};
  // An eighth more on each side: the next pieces here usually need a little
  // more (a halo row the first piece wrote but did not read, a split that
  // moves), and growing moves the whole copy.
  const std::int64_t margin = window.size() / 8;
  window = Range{std::max<std::int64_t>(0, window.begin - margin), window.end + margin};
  const std::int64_t begin = std::clamp<std::int64_t>(window.begin / kWindowGrain * kWindowGrain, 0, elements);
  const std::int64_t end = std::min(elements, (window.end + kWindowGrain - 1) / kWindowGrain * kWindowGrain);
  return Range{begin, std::max(begin, end)};
}

std::int64_t DeviceCopies::window_bytes(Range window) const {
  return rounded(window).size() * static_cast<std::int64_t>(element_size_);
}

std::int64_t DeviceCopies::bytes_at(int place) const {
  auto it = copies_.find(place);
  return it == copies_.end() ? 0 : bytes_of(it->second);
}

std::int64_t DeviceCopies::grown_bytes(int place, Range window) const {
  auto it = copies_.find(place);
  if (it == copies_.end()) return window_bytes(window);
  const Range held = it->second.window;
  return window_bytes(Range{std::min(held.begin, window.begin), std::max(held.end, window.end)});
}

std::int64_t DeviceCopies::capacity(int place) const {
  if (!totals_) return 0;
  std::lock_guard lock(totals_->held_mutex);
  auto it = totals_->held.find(place);
  return it == totals_->held.end() ? 0 : it->second.capacity;
}

void DeviceCopies::evict(int place) {
  if (place == Coherence::kHost || !copies_.count(place)) return;
  std::unique_lock lock = totals_ ? std::unique_lock(totals_->held_mutex) : std::unique_lock<std::mutex>();
  const auto before = directory_.counters().device_to_host;
  const std::int64_t freed = bytes_of(copies_.at(place));
  flush_and_free(place);
  if (!totals_) return;
  auto& held = totals_->held[place];
  held.written_back += directory_.counters().device_to_host - before;
  held.evicted += freed;
}

bool DeviceCopies::may_free_while_used_elsewhere(int place) const {
  if (!directory_.merging().empty()) return false;
  return !pinned(Coherence::kHost) || directory_.only_at(place).empty();
}

bool DeviceCopies::must_grow(int place, Range window) const {
  auto it = copies_.find(place);
  return it != copies_.end() && !window.empty() &&
         (window.begin < it->second.window.begin || it->second.window.end < window.end);
}

DeviceCopies::Placed DeviceCopies::hold(int place, const std::shared_ptr<backends::Device>& device, Range window) {
  std::unique_lock held_lock = totals_ ? std::unique_lock(totals_->held_mutex) : std::unique_lock<std::mutex>();
  auto it = copies_.find(place);
  if (it != copies_.end()) {
    Copy& copy = it->second;
    if (totals_) {  // used now: the last to be evicted
      auto& copies = totals_->held[place].copies;
      copies.splice(copies.end(), copies, copy.in_use_order);
    }
    if (must_grow(place, window))
      grow(place, copy,
           rounded(Range{std::min(copy.window.begin, window.begin), std::max(copy.window.end, window.end)}), held_lock);
    return Placed{copy.buffer, copy.window.begin};
  }
  const Range part = rounded(window);
  const std::int64_t need = part.size() * static_cast<std::int64_t>(element_size_);
  if (totals_) make_room(place, device->info().id, need, held_lock);
  backends::Buffer buffer;
  try {
    buffer = device->allocate(static_cast<std::size_t>(need));
  } catch (const std::exception& e) {
    throw AllocationFailed(e.what());
  }
  Copy& copy = copies_.emplace(place, Copy{device, buffer, part, {}}).first->second;
  if (totals_) {
    auto& held = totals_->held[place];
    held.now += need;
    held.peak = std::max(held.peak, held.now);
    copy.in_use_order = held.copies.insert(held.copies.end(), this);
  }
  return Placed{buffer, part.begin};
}

void DeviceCopies::grow(int place, Copy& copy, Range grown, std::unique_lock<std::mutex>& held_lock) {
  const std::int64_t before_bytes = bytes_of(copy);
  const std::int64_t need = grown.size() * static_cast<std::int64_t>(element_size_);
  if (totals_) make_room(place, copy.device->info().id, need - before_bytes, held_lock);
  backends::Buffer larger;
  try {
    larger = copy.device->allocate(static_cast<std::size_t>(need));
  } catch (const std::exception& e) {
    throw AllocationFailed(e.what());
  }
  // What the copy holds current, and its private merge copy, go into the
  // larger buffer, so the directory's record stays true: what the host holds
  // current too comes from the host, the rest (newer here, or the merge copy)
  // through the host from the old buffer. (Merges are not combined here:
  // pieces at other places may still be adding to theirs.) All had come from
  // the old buffer: a read-only array a split region read grew on each
  // device and went back to the host for nothing (1.6 MB of 8 MB).
  IntervalSet from_host = directory_.valid(place).intersect(directory_.valid(Coherence::kHost));
  from_host.subtract(directory_.merging(place));
  IntervalSet kept = directory_.valid(place);
  kept.add(directory_.merging(place));
  kept.subtract(from_host);
  Bytes saved;
  try {
    saved = copy_out(place, kept);
  } catch (...) {
    copy.device->free(larger);
    throw;
  }
  copy.device->free(copy.buffer);
  copy.buffer = larger;
  copy.window = grown;
  copy_in(place, kept, saved);
  std::int64_t uploaded = static_cast<std::int64_t>(saved.size);
  for (const auto& range : from_host) {
    const std::size_t size = static_cast<std::size_t>(range.size()) * element_size_;
    retrying([&] {
      const trace::CopySpan traced(copy.device->info(), trace::Direction::HostToDevice, size);
      copy.device->copy_in(copy.buffer, offset_in(copy, range.begin),
                           static_cast<const char*>(host_) + static_cast<std::size_t>(range.begin) * element_size_,
                           size);
    });
    uploaded += static_cast<std::int64_t>(size);
  }
  twins_.host_to_device += uploaded;
  if (!totals_) return;
  totals_->host_to_device += uploaded;
  auto& held = totals_->held[place];
  held.now += need - before_bytes;
  held.peak = std::max(held.peak, held.now);
}

void DeviceCopies::make_room(int place, const std::string& device, std::int64_t need,
                             std::unique_lock<std::mutex>& held_lock) {
  const DeviceCopies* const self[] = {this};
  make_room(*totals_, place, device, need, self, held_lock);
}

void DeviceCopies::make_room(TransferTotals& totals, int place, const std::string& device, std::int64_t need,
                             std::span<const DeviceCopies* const> keep, std::unique_lock<std::mutex>& held_lock) {
  auto& held = totals.held[place];
  if (held.capacity <= 0 || held.now + need <= held.capacity) return;
  // A piece's arrays together (make_room_for) or one array's copy.
  const std::string what = keep.size() > 1 ? std::to_string(need) + " bytes of copies for the piece's " +
                                                 std::to_string(keep.size()) + " arrays"
                                           : "a copy of " + std::to_string(need) + " bytes";
  if (need > held.capacity)
    throw AllocationFailed(what + " on " + device + " does not fit a device memory of " +
                           std::to_string(held.capacity) +
                           " bytes (CANOPY_DEVICE_MEMORY, or the capacity the configuration or the device gives)");
  // An array another thread holds (a piece elsewhere preparing it, the host
  // reading it) is waited for, with the ledger let go meanwhile.
  for (int attempt = 0; held.now + need > held.capacity; ++attempt) {
    bool busy = false;
    for (auto it = held.copies.begin(); it != held.copies.end() && held.now + need > held.capacity;) {
      DeviceCopies* victim = *it++;  // advanced first: the eviction takes the victim's entry away
      if (std::find(keep.begin(), keep.end(), victim) != keep.end()) continue;
      if (!victim->mutex.try_lock()) {
        busy = true;
        continue;
      }
      std::lock_guard victim_lock(victim->mutex, std::adopt_lock);
      // In use by a piece here: it stays. In use by a piece elsewhere: freed
      // where that is safe, else waited for.
      if (victim->pinned(place)) continue;
      if (victim->pinned() && !victim->may_free_while_used_elsewhere(place)) {
        busy = true;
        continue;
      }
      const auto before = victim->directory_.counters().device_to_host;
      const std::int64_t freed = victim->bytes_of(victim->copies_.at(place));
      victim->flush_and_free(place);
      held.written_back += victim->directory_.counters().device_to_host - before;
      held.evicted += freed;
    }
    // Pieces end: wait up to about 5 s for those elsewhere (two pieces on
    // two devices each waiting for the other's arrays end with a refusal).
    if (held.now + need <= held.capacity || !busy || attempt == 50000) break;
    held_lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    held_lock.lock();
  }
  if (held.now + need > held.capacity)
    throw AllocationFailed(what + " on " + device + " does not fit a device memory of " +
                           std::to_string(held.capacity) + " bytes beside the " + std::to_string(held.now) +
                           " bytes of copies in use there now (the arrays of the piece itself included)");
}

void DeviceCopies::count(const CoherenceCounters& before) {
  if (!totals_) return;
  const auto& now = directory_.counters();
  totals_->host_to_device += now.host_to_device - before.host_to_device;
  totals_->device_to_host += now.device_to_host - before.device_to_host;
  totals_->device_to_device += now.device_to_device - before.device_to_device;
  totals_->avoided += now.avoided - before.avoided;
}

void DeviceCopies::perform(const std::vector<Transfer>& transfers, bool retry) {
  for (const auto& t : transfers) {
    if (retry)
      retrying([&] { transfer(t); });
    else
      transfer(t);
  }
}

void DeviceCopies::retrying(const std::function<void()>& copy) {
  try {
    copy();
  } catch (const std::exception& first) {
    copy();  // a second failure goes up
    if (totals_) ++totals_->copies_retried;
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true))
      std::fprintf(stderr, "canopy: recovered: a copy failed and succeeded when tried again (%s)\n", first.what());
  }
}

void DeviceCopies::transfer(const Transfer& t) {
  const std::size_t offset = static_cast<std::size_t>(t.range.begin) * element_size_;
  const std::size_t bytes = static_cast<std::size_t>(t.range.size()) * element_size_;
  char* host = static_cast<char*>(host_) + offset;
  const auto start = std::chrono::steady_clock::now();
  if (t.from == Coherence::kHost) {
    auto& copy = copies_.at(t.to);
    const trace::CopySpan traced(copy.device->info(), trace::Direction::HostToDevice, bytes);
    copy.device->copy_in(copy.buffer, offset_in(copy, t.range.begin), host, bytes);
  } else if (t.to == Coherence::kHost) {
    auto& copy = copies_.at(t.from);
    const trace::CopySpan traced(copy.device->info(), trace::Direction::DeviceToHost, bytes);
    copy.device->copy_out(copy.buffer, offset_in(copy, t.range.begin), host, bytes);
  } else {
    // Routed through the host by the directory; never planned directly.
    throw Error("internal: a device-to-device transfer was planned without the host");
  }
  if (totals_) {
    const auto took = std::chrono::steady_clock::now() - start;
    totals_->timed(t.from == Coherence::kHost ? t.to : t.from, static_cast<std::int64_t>(bytes),
                   std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
  }
}

CoherenceCounters DeviceCopies::counters() const {
  CoherenceCounters total = directory_.counters();
  total += twins_;
  return total;
}

void DeviceCopies::acquire(int place, const IntervalSet& need) {
  if (need.empty()) return;
  if (directory_.merging().overlaps(need)) combine_merges();
  const auto before = directory_.counters();
  const Coherence saved = directory_;
  try {
    perform(directory_.acquire(place, need), false);
  } catch (const std::exception& e) {
    // What arrived before the failure is current where it arrived, but the
    // old record is still true (only staler): go back to it.
    directory_ = saved;
    throw TransferFailed(e.what());
  }
  count(before);
}

void DeviceCopies::wrote(int place, const IntervalSet& written) {
  if (written.total() > 0) directory_.wrote(place, written);
}

void DeviceCopies::begin_merge(int place, const IntervalSet& span, std::uint64_t region, ir::ReduceOp op) {
  if (span.total() == 0) return;
  if (merge_region_ != region && directory_.merging().total() > 0) combine_merges();
  merge_region_ = region;
  merge_op_ = op;
  const auto before = directory_.counters();
  auto start = directory_.begin_merge(place, span);
  perform(start.flush, true);
  count(before);
  if (place == Coherence::kHost) return;
  auto& copy = copies_.at(place);
  auto identity = backends::identity_value(op, type_);
  // IEEE's additive identity is -0: x + -0 is x for every x, where x + +0
  // turns an element's -0 that no piece added to into +0.
  if (op == ir::ReduceOp::Sum && ir::is_float(type_)) identity.float_value = -0.0;
  for (const auto& range : start.initialize)
    copy.device->fill(copy.buffer, static_cast<std::size_t>(range.begin - copy.window.begin),
                      static_cast<std::size_t>(range.size()), identity);
}

void DeviceCopies::combine_merges() {
  if (directory_.merging().total() == 0) return;
  const auto before = directory_.counters();
  std::vector<char> scratch;
  for (const auto& t : directory_.end_merge()) {
    auto& copy = copies_.at(t.from);
    const std::size_t count = static_cast<std::size_t>(t.range.size());
    const std::size_t offset = static_cast<std::size_t>(t.range.begin) * element_size_;
    scratch.resize(count * element_size_);
    // The directory has already ended the merge: this copy must not be lost.
    retrying([&] {
      const trace::CopySpan traced(copy.device->info(), trace::Direction::DeviceToHost, scratch.size());
      copy.device->copy_out(copy.buffer, offset_in(copy, t.range.begin), scratch.data(), scratch.size());
    });
    combine(type_, static_cast<char*>(host_) + offset, scratch.data(), count, merge_op_);
  }
  count(before);
}

void DeviceCopies::drop_contents() {
  combine_merges();  // ends the merges; what they combine is dropped with the rest
  if (directory_.elements() > 0) directory_.wrote(Coherence::kHost, IntervalSet(Range{0, directory_.elements()}));
}

Bytes DeviceCopies::copy_out(int place, const IntervalSet& ranges) {
  auto& copy = copies_.at(place);
  Bytes bytes(static_cast<std::size_t>(ranges.total()) * element_size_);
  std::size_t at = 0;
  for (const auto& range : ranges) {
    const std::size_t size = static_cast<std::size_t>(range.size()) * element_size_;
    retrying([&] {
      const trace::CopySpan traced(copy.device->info(), trace::Direction::DeviceToHost, size);
      copy.device->copy_out(copy.buffer, offset_in(copy, range.begin), bytes.data.get() + at, size);
    });
    at += size;
  }
  const auto moved = static_cast<std::int64_t>(bytes.size);
  twins_.device_to_host += moved;
  if (totals_) totals_->device_to_host += moved;
  return bytes;
}

void DeviceCopies::copy_in(int place, const IntervalSet& ranges, const Bytes& bytes) {
  auto& copy = copies_.at(place);
  std::size_t at = 0;
  for (const auto& range : ranges) {
    const std::size_t size = static_cast<std::size_t>(range.size()) * element_size_;
    retrying([&] {
      const trace::CopySpan traced(copy.device->info(), trace::Direction::HostToDevice, size);
      copy.device->copy_in(copy.buffer, offset_in(copy, range.begin), bytes.data.get() + at, size);
    });
    at += size;
  }
}

Bytes DeviceCopies::begin_changes(int place, const IntervalSet& ranges) {
  acquire(Coherence::kHost, ranges);
  Bytes twin(static_cast<std::size_t>(ranges.total()) * element_size_);
  std::size_t at = 0;
  for (const auto& range : ranges) {
    const std::size_t size = static_cast<std::size_t>(range.size()) * element_size_;
    std::memcpy(twin.data.get() + at,
                static_cast<const char*>(host_) + static_cast<std::size_t>(range.begin) * element_size_, size);
    at += size;
  }
  // Every element from the twin, also those the directory calls current there.
  const auto before = directory_.counters();
  directory_.acquire(place, ranges);
  count(before);
  const std::int64_t planned = directory_.counters().host_to_device - before.host_to_device;
  copy_in(place, ranges, twin);
  const std::int64_t beyond = static_cast<std::int64_t>(twin.size) - planned;
  twins_.host_to_device += beyond;
  if (totals_) totals_->host_to_device += beyond;
  return twin;
}

namespace {

// Writes into `host` every element of `now` that differs from `twin` (`bytes`
// bytes of elements of type T), a block at a time: most blocks of a span are
// usually unchanged.
template <class T>
void copy_changed(char* host, const char* now, const char* twin, std::size_t bytes) {
  constexpr std::size_t kBlock = 4096;
  for (std::size_t block = 0; block < bytes; block += kBlock) {
    const std::size_t end = std::min(bytes, block + kBlock);
    if (std::memcmp(now + block, twin + block, end - block) == 0) continue;
    for (std::size_t e = block; e < end; e += sizeof(T)) {
      T a, b;  // bit patterns: a NaN written over a NaN is no change, -0 over 0 is one
      std::memcpy(&a, now + e, sizeof(T));
      std::memcpy(&b, twin + e, sizeof(T));
      if (a != b) std::memcpy(host + e, &a, sizeof(T));
    }
  }
}

}  // namespace

void DeviceCopies::merge_changed(int place, const IntervalSet& ranges, const Bytes& twin) {
  const Bytes now = copy_out(place, ranges);
  std::size_t at = 0;
  for (const auto& range : ranges) {
    char* host = static_cast<char*>(host_) + static_cast<std::size_t>(range.begin) * element_size_;
    const std::size_t size = static_cast<std::size_t>(range.size()) * element_size_;
    const char* a = now.data.get() + at;
    const char* b = twin.data.get() + at;
    switch (element_size_) {
      case 1: copy_changed<std::uint8_t>(host, a, b, size); break;
      case 4: copy_changed<std::uint32_t>(host, a, b, size); break;
      default: copy_changed<std::uint64_t>(host, a, b, size); break;
    }
    at += size;
  }
  directory_.wrote(Coherence::kHost, ranges);
}

void DeviceCopies::sync_host(bool host_will_write) {
  combine_merges();
  const auto before = directory_.counters();
  perform(directory_.acquire_host(), true);
  count(before);
  if (host_will_write && directory_.elements() > 0 && copies_.size() > 0)
    directory_.wrote(Coherence::kHost, Range{0, directory_.elements()});
}

void DeviceCopies::pull_to_host(const IntervalSet& ranges) {
  if (!directory_.merging().empty()) return;
  const auto before = directory_.counters();
  for (const Range& range : ranges) perform(directory_.acquire_host(range), true);
  count(before);
}

void DeviceCopies::release(int place) {
  if (place == Coherence::kHost || !copies_.count(place)) return;
  std::unique_lock lock = totals_ ? std::unique_lock(totals_->held_mutex) : std::unique_lock<std::mutex>();
  flush_and_free(place);
}

void DeviceCopies::flush_and_free(int place) {
  combine_merges();
  const auto before = directory_.counters();
  perform(directory_.release(place), true);
  count(before);
  auto copy = copies_.at(place);
  copies_.erase(place);
  copy.device->free(copy.buffer);
  forget(place, copy);
}

}  // namespace canopy::runtime
