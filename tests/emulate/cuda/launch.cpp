// The machinery of launch.hpp: the fibers of a block and their barriers,
// and the signal handlers and timer that end a launch gone wrong.
#include "launch.hpp"

#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <numeric>

namespace canopy_emulated {

namespace {

// The threads of one block as fibers: each runs the kernel's entry until it
// returns or waits at a barrier; the scheduler lets a barrier go when every
// thread it concerns (the block's, or the warp's) waits there, and fails
// the launch when the threads left can never all meet.
class BlockRun {
 public:
  static constexpr std::size_t kStackBytes = 128 * 1024;

  BlockRun(Module& module, canopy_emulated::Entry entry, void** params, const unsigned int block[3], int warp_size)
      : module_(module), entry_(entry), params_(params), warp_size_(std::max(1, warp_size)) {
    for (int d = 0; d < 3; ++d) block_[d] = block[d];
    threads_ = static_cast<std::size_t>(block[0]) * block[1] * block[2];
  }

  // Runs the block whose index the module's blockIdx holds. Returns
  // an empty string, or why the launch failed.
  std::string run() {
    running_ = this;
    *module_.barrier = &block_barrier;
    *module_.warp_barrier = &warp_barrier;
    slots_.assign(threads_, 0);
    *module_.warp_slots = slots_.data();
    make_fibers();
    std::string failure;
    for (;;) {
      bool ran = false;
      for (std::size_t t = 0; t < threads_; ++t) {
        Fiber& fiber = fibers_[t];
        if (fiber.state != State::Ready) continue;
        resume(t);
        ran = true;
      }
      if (ran) continue;
      if (std::all_of(fibers_.begin(), fibers_.end(), [](const Fiber& f) { return f.state == State::Done; })) break;
      failure = release_barriers();
      if (!failure.empty()) break;
    }
    running_ = nullptr;
    return failure;
  }

 private:
  enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

  // One fiber per thread of the block, each at the start of the kernel. Out
  // of line: getcontext returns twice, so no local of run() may share its frame.
  [[gnu::noinline]] void make_fibers() {
    fibers_.resize(threads_);
    if (stacks_.size() < threads_) stacks_.resize(threads_);
    for (std::size_t t = 0; t < threads_; ++t) {
      Fiber& fiber = fibers_[t];
      fiber = Fiber{};
      if (!stacks_[t]) stacks_[t] = std::make_unique<char[]>(kStackBytes);
      getcontext(&fiber.context);
      fiber.context.uc_stack.ss_sp = stacks_[t].get();
      fiber.context.uc_stack.ss_size = kStackBytes;
      fiber.context.uc_link = &scheduler_;
      makecontext(&fiber.context, &start, 0);
    }
  }
  struct Fiber {
    ucontext_t context{};
    State state = State::Ready;
  };

  static thread_local BlockRun* running_;

 public:
  /// Forgets the block that ran when a fault ended it.
  static void abandon() { running_ = nullptr; }

 private:
  void resume(std::size_t t) {
    current_ = t;
    std::size_t rest = t;
    const unsigned int x = static_cast<unsigned int>(rest % block_[0]);
    rest /= block_[0];
    module_.thread_index[0] = x;
    module_.thread_index[1] = static_cast<unsigned int>(rest % block_[1]);
    module_.thread_index[2] = static_cast<unsigned int>(rest / block_[1]);
    swapcontext(&scheduler_, &fibers_[t].context);
  }

  static void start() {
    BlockRun& run = *running_;
    run.entry_(run.params_);
    run.fibers_[run.current_].state = State::Done;  // uc_link returns to the scheduler
  }

  void wait(State at) {
    Fiber& fiber = fibers_[current_];
    fiber.state = at;
    swapcontext(&fiber.context, &scheduler_);
  }
  static void block_barrier() { running_->wait(State::AtBlockBarrier); }
  static void warp_barrier() { running_->wait(State::AtWarpBarrier); }

  // Every thread is done or waiting: lets go the barriers all their threads
  // reached, or says why none can be.
  std::string release_barriers() {
    const bool block_waits =
        std::any_of(fibers_.begin(), fibers_.end(), [](const Fiber& f) { return f.state == State::AtBlockBarrier; });
    if (block_waits) {
      std::size_t waiting = 0, done = 0;
      for (const Fiber& f : fibers_) {
        waiting += f.state == State::AtBlockBarrier;
        done += f.state == State::Done;
      }
      if (waiting == threads_) {
        for (Fiber& f : fibers_) f.state = State::Ready;
        return "";
      }
      if (waiting + done == threads_)
        return std::to_string(waiting) + " of the block's " + std::to_string(threads_) +
               " threads wait at __syncthreads, which the others returned without reaching";
    }
    bool released = false;
    for (std::size_t first = 0; first < threads_; first += static_cast<std::size_t>(warp_size_)) {
      const std::size_t end = std::min(threads_, first + static_cast<std::size_t>(warp_size_));
      bool all = true, any = false;
      for (std::size_t t = first; t < end; ++t) {
        all = all && fibers_[t].state == State::AtWarpBarrier;
        any = any || fibers_[t].state == State::AtWarpBarrier;
      }
      if (all) {
        for (std::size_t t = first; t < end; ++t) fibers_[t].state = State::Ready;
        released = true;
      } else if (any) {
        const bool rest_done = std::all_of(
            fibers_.begin() + static_cast<std::ptrdiff_t>(first), fibers_.begin() + static_cast<std::ptrdiff_t>(end),
            [](const Fiber& f) { return f.state == State::Done || f.state == State::AtWarpBarrier; });
        if (rest_done)
          return "threads of warp " + std::to_string(first / static_cast<std::size_t>(warp_size_)) +
                 " wait at a warp shuffle that others of the warp returned without reaching";
      }
    }
    if (released) return "";
    return "the block's threads wait at different barriers (__syncthreads and a warp shuffle): none can go on";
  }

  Module& module_;
  canopy_emulated::Entry entry_;
  void** params_;
  int warp_size_;
  unsigned int block_[3] = {1, 1, 1};
  std::size_t threads_ = 0, current_ = 0;
  ucontext_t scheduler_{};
  std::vector<Fiber> fibers_;
  std::vector<unsigned long long> slots_;
  static thread_local std::vector<std::unique_ptr<char[]>> stacks_;
};

thread_local BlockRun* BlockRun::running_ = nullptr;
thread_local std::vector<std::unique_ptr<char[]>> BlockRun::stacks_;

void unreachable_barrier() {
  std::fprintf(stderr, "canopy emulated CUDA: a barrier was reached outside a launch\n");
  std::abort();
}

// The order blocks run in: as a GPU promises none, a scrambled one unless
// CANOPY_EMULATED_CUDA_ORDER=in-order (read at each launch). Block k of
// the launch is the grid's block (offset + k * step) mod total, with a step
// coprime to the total, so every block runs once; the offset changes from
// launch to launch.
struct BlockOrder {
  std::uint64_t total = 1, step = 1, offset = 0;

  explicit BlockOrder(std::uint64_t blocks) : total(std::max<std::uint64_t>(1, blocks)) {
    const char* order = std::getenv("CANOPY_EMULATED_CUDA_ORDER");
    if ((order && std::string(order) == "in-order") || total < 3) return;
    static std::atomic<std::uint64_t> launches{0};
    step = 0x9E3779B97F4A7C15ULL % total;
    while (std::gcd(step, total) != 1) step = (step + 1) % total;
    offset = (launches++ * 0x632BE59BD9B4E019ULL) % total;
  }
  // The grid's block to run k-th (step and offset are below total, so no product overflows 128 bits).
  std::uint64_t at(std::uint64_t k) const {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(k) * step + offset) % total);
  }
};

// Runs every block of the grid, the module's variables set. Returns an
// empty string, or why it failed.
std::string run_blocks(Function& function, BlockRun* cooperating, const unsigned int grid[3],
                       const unsigned int block[3], void** params) {
  Module& module = *function.module;
  const BlockOrder order(std::uint64_t{grid[0]} * grid[1] * grid[2]);
  for (std::uint64_t k = 0; k < order.total; ++k) {
    const std::uint64_t b = order.at(k);
    const auto x = static_cast<unsigned int>(b % grid[0]);
    const auto y = static_cast<unsigned int>(b / grid[0] % grid[1]);
    const auto z = static_cast<unsigned int>(b / grid[0] / grid[1]);
    module.block_index[0] = x;
    module.block_index[1] = y;
    module.block_index[2] = z;
    if (cooperating) {
      if (std::string failure = cooperating->run(); !failure.empty())
        return "block (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + "): " + failure;
      continue;
    }
    for (unsigned int tz = 0; tz < block[2]; ++tz)
      for (unsigned int ty = 0; ty < block[1]; ++ty)
        for (unsigned int tx = 0; tx < block[0]; ++tx) {
          module.thread_index[0] = tx;
          module.thread_index[1] = ty;
          module.thread_index[2] = tz;
          function.entry(params);
        }
  }
  return "";
}

// A kernel's access outside memory it may touch (a guard page, an address
// no allocation has) raises SIGSEGV or SIGBUS on the launching thread; the
// handler, installed while any launch runs (over a test framework's own),
// jumps back to the launch, which fails. Other faults go to the handler
// that was there before. A launch that runs past its time (a kernel that
// never ends) is ended the same way by a timer's SIGALRM.
thread_local sigjmp_buf* launch_recovery = nullptr;
thread_local void* fault_address = nullptr;
thread_local bool timed_out = false;
std::mutex handler_mutex;
int launches_running = 0;
struct sigaction previous_segv, previous_bus, previous_alarm;

void on_timeout(int, siginfo_t*, void*) {
  if (sigjmp_buf* recovery = launch_recovery) {
    launch_recovery = nullptr;
    timed_out = true;
    siglongjmp(*recovery, 1);
  }
  // A timer of a launch that has just ended: nothing to do.
}

void on_fault(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* recovery = launch_recovery) {
    launch_recovery = nullptr;
    fault_address = info->si_addr;
    siglongjmp(*recovery, 1);
  }
  const struct sigaction& before = signal == SIGSEGV ? previous_segv : previous_bus;
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction) return before.sa_sigaction(signal, info, context);
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    return before.sa_handler(signal);
  }
  sigaction(signal, &before, nullptr);  // the default action when the access is made again
}

// Catches faults for as long as it lives (and any other launch's does).
class CatchFaults {
 public:
  CatchFaults() {
    std::lock_guard lock(handler_mutex);
    if (launches_running++ > 0) return;
    struct sigaction action {};
    action.sa_sigaction = &on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
    action.sa_sigaction = &on_timeout;
    sigaction(SIGALRM, &action, &previous_alarm);
  }
  ~CatchFaults() {
    std::lock_guard lock(handler_mutex);
    if (--launches_running > 0) return;
    sigaction(SIGSEGV, &previous_segv, nullptr);
    sigaction(SIGBUS, &previous_bus, nullptr);
    sigaction(SIGALRM, &previous_alarm, nullptr);
  }
  CatchFaults(const CatchFaults&) = delete;
  CatchFaults& operator=(const CatchFaults&) = delete;
};

// A one-shot timer that sends SIGALRM to the calling thread after
// CANOPY_EMULATED_CUDA_TIMEOUT seconds (default 120; 0: none), read at each launch.
class LaunchTimer {
 public:
  LaunchTimer() {
    const char* text = std::getenv("CANOPY_EMULATED_CUDA_TIMEOUT");
    seconds_ = text && *text ? std::atof(text) : 120.0;
    if (seconds_ <= 0) return;
    struct sigevent event {};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGALRM;
    event._sigev_un._tid = static_cast<pid_t>(gettid());
    if (timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) return;
    armed_ = true;
    struct itimerspec when {};
    when.it_value.tv_sec = static_cast<time_t>(seconds_);
    when.it_value.tv_nsec = static_cast<long>((seconds_ - static_cast<double>(when.it_value.tv_sec)) * 1e9);
    timer_settime(timer_, 0, &when, nullptr);
  }
  ~LaunchTimer() {
    if (armed_) timer_delete(timer_);
  }
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  double seconds() const { return seconds_; }

 private:
  timer_t timer_{};
  bool armed_ = false;
  double seconds_ = 0;
};

}  // namespace

std::string run_grid(Function& function, const unsigned int grid[3], const unsigned int block[3], void** params,
                     int warp_size, CUresult& status) {
  Module& module = *function.module;
  std::lock_guard lock(module.launching);
  for (int d = 0; d < 3; ++d) {
    module.block_dim[d] = block[d];
    module.grid_dim[d] = grid[d];
  }
  *module.warp_size = warp_size;
  *module.barrier = &unreachable_barrier;
  *module.warp_barrier = &unreachable_barrier;
  std::unique_ptr<BlockRun> cooperating;
  if (module.cooperates) cooperating = std::make_unique<BlockRun>(module, function.entry, params, block, warp_size);
  CatchFaults catching;
  timed_out = false;
  LaunchTimer timer;
  sigjmp_buf recovery;
  if (sigsetjmp(recovery, 1) != 0) {
    BlockRun::abandon();
    char text[128];
    if (timed_out) {
      status = kLaunchTimeout;
      std::snprintf(text, sizeof text, "still running after %g s (CANOPY_EMULATED_CUDA_TIMEOUT)", timer.seconds());
    } else {
      status = kIllegalAddress;
      std::snprintf(text, sizeof text, "an access at address %p, outside every allocation", fault_address);
    }
    return text;
  }
  launch_recovery = &recovery;
  std::string failure = run_blocks(function, cooperating.get(), grid, block, params);
  launch_recovery = nullptr;
  status = kLaunchFailed;
  return failure;
}

}  // namespace canopy_emulated
