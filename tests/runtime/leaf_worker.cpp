// A leaf's worker thread (runtime/internal/leaf_worker.hpp): woken ahead of
// a task (expect, as Engine::submit does once a region's pieces are known),
// it polls, sleeps again when none comes, and still runs every task pushed
// later, in order, on its own thread.
#include <doctest/doctest.h>

#include <canopy/runtime/internal/leaf_worker.hpp>
#include <chrono>
#include <thread>
#include <vector>

using canopy::runtime::LeafWorker;

TEST_CASE("leaf worker: woken ahead without a task, it sleeps again and runs the tasks pushed later") {
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  auto task = [&](int k) {
    return [&, k](LeafWorker&) {
      order.push_back(k);
      threads.push_back(std::this_thread::get_id());
    };
  };
  {
    LeafWorker worker("leaf", {});
    worker.expect();  // no thread yet: nothing to wake
    worker.push(task(0));
    worker.drain();
    for (int round = 1; round <= 3; ++round) {
      // Long enough for the thread to stop polling and sleep; woken with no
      // task, it polls again and sleeps again.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      worker.expect();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      worker.expect();  // and woken just before the task, as a launch does
      worker.push(task(2 * round - 1));
      worker.push(task(2 * round));
      worker.drain();
      CHECK(worker.idle());
    }
  }
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  REQUIRE(threads.size() == 7);
  for (const auto& id : threads) CHECK(id == threads.front());
  CHECK(threads.front() != std::this_thread::get_id());
  {
    // Destroyed right after a wake-up without a task: the thread stops.
    LeafWorker worker("leaf", {});
    worker.push(task(7));
    worker.drain();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    worker.expect();
  }
  CHECK(order.back() == 7);
}
