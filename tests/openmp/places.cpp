// A hybrid program: an OpenMP runtime that binds its threads (CTest sets
// OMP_PROC_BIND and OMP_PLACES for this executable) binds the program's
// initial thread to the first place before main() runs. A Runtime made on
// that thread used to see the one core of that place and leave the others
// idle (canopy-bench stream at 0.64-0.67x its OpenMP loops). It now uses the
// cores of every place, runs its regions there, and leaves the OpenMP
// threads' binding as it found it.
#include <doctest/doctest.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <vector>

#include <canopy/canopy.hpp>
#include "common/skip.hpp"
#include "scoped_setting.hpp"

using namespace canopy;
using ScopedEnv = canopy::testing::ScopedSetting;

namespace {

std::vector<unsigned> mask_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  std::vector<unsigned> pus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) pus.push_back(cpu);
  return pus;
}

std::vector<unsigned> place_pus(int place) {
  std::vector<int> ids(static_cast<std::size_t>(omp_get_place_num_procs(place)));
  if (!ids.empty()) omp_get_place_proc_ids(place, ids.data());
  return std::vector<unsigned>(ids.begin(), ids.end());
}

}  // namespace

TEST_CASE("openmp places: a Runtime made on a thread OpenMP bound uses the cores of every place") {
  std::vector<unsigned> places;
  for (int place = 0; place < omp_get_num_places(); ++place)
    for (unsigned pu : place_pus(place)) places.push_back(pu);
  std::sort(places.begin(), places.end());
  places.erase(std::unique(places.begin(), places.end()), places.end());
  if (places.size() < 2) CANOPY_TEST_SKIP(Other, "the OpenMP places hold one processing unit: nothing was left out");
  // What the case is about: OpenMP bound this thread to its first place.
  REQUIRE(omp_get_proc_bind() != omp_proc_bind_false);
  const std::vector<unsigned> bound = mask_of_this_thread();
  REQUIRE(bound == place_pus(0));
  REQUIRE(bound.size() < places.size());

  ScopedEnv devices("CANOPY_DEVICES", "cpu");
  ScopedEnv leaves_env("CANOPY_CPU_LEAVES", nullptr);
  ScopedEnv config("CANOPY_CONFIG", nullptr);
  Runtime rt;
  const Hierarchy tree = rt.hierarchy();
  std::vector<unsigned> used;
  for (const Location* leaf : tree.leaves(*tree.root()))
    used.insert(used.end(), leaf->traits().pus.begin(), leaf->traits().pus.end());
  std::sort(used.begin(), used.end());
  CHECK(used == places);

  // Regions run over all of them, and the thread keeps OpenMP's binding.
  const std::int64_t n = 1 << 20;
  const Kernel square("openmp_places_square", [](Out<std::int64_t> y) {
    Idx i = index(0);
    y[i] = i * i + 7;
  });
  auto y = rt.array<std::int64_t>(n);
  rt.region(square).over(n).launch(y);
  auto host = y.host();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += host.data()[i] != i * i + 7;
  CHECK(wrong == 0);
  CHECK(mask_of_this_thread() == bound);

  // OpenMP's own threads still sit on their places.
  std::vector<int> off_place(static_cast<std::size_t>(omp_get_num_places()), 0);
#pragma omp parallel num_threads(omp_get_num_places())
  {
    const int place = omp_get_place_num();
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    int count = 0;
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) count += CPU_ISSET(cpu, &set) ? 1 : 0;
    const std::vector<unsigned> own = place >= 0 ? place_pus(place) : std::vector<unsigned>{};
    bool same = place >= 0 && count == static_cast<int>(own.size());
    for (unsigned pu : own) same = same && CPU_ISSET(pu, &set);
#pragma omp critical
    if (place >= 0) off_place[static_cast<std::size_t>(place)] = same ? 0 : 1;
  }
  for (int off : off_place) CHECK(off == 0);
}
