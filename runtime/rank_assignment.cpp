#include "rank_assignment.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include <canopy/ir/error.hpp>

namespace canopy {

namespace {

// The comma-separated words of a selection, trimmed and lower case.
std::vector<std::string> selection_words(std::string_view selection) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(word);
    word.clear();
  };
  for (char c : selection) {
    if (c == ',')
      flush();
    else if (!std::isspace(static_cast<unsigned char>(c)))
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  flush();
  if (words.empty()) words.push_back("all");
  return words;
}

// What one rank's selection takes from the node.
struct Wants {
  bool cores = false;
  std::vector<bool> devices;  ///< per node.devices entry
  /// Per word naming a backend or a device id: the devices it matches.
  std::vector<std::vector<std::size_t>> named;
};

Wants wants_of(const NodeInventory& node, const std::string& selection) {
  Wants wants;
  wants.devices.assign(node.devices.size(), false);
  NodeInventory whole;
  try {
    whole = select_devices(node, selection);
  } catch (const Error&) {
    return wants;  // the rank's own Runtime reports the bad selection
  }
  wants.cores = !whole.cores.empty();
  for (std::size_t d = 0; d < node.devices.size(); ++d)
    wants.devices[d] = std::any_of(whole.devices.begin(), whole.devices.end(),
                                   [&](const DiscoveredDevice& chosen) { return chosen.id == node.devices[d].id; });
  for (const std::string& word : selection_words(selection)) {
    if (word == "all" || word == "cpu" || word == "gpu") continue;
    std::vector<std::size_t> matches;
    for (std::size_t d = 0; d < node.devices.size(); ++d)
      if (word == node.devices[d].id || word == name_of(node.devices[d].kind)) matches.push_back(d);
    if (!matches.empty()) wants.named.push_back(std::move(matches));
  }
  return wants;
}

// "0-3,6" for sorted PU numbers.
std::string pu_ranges(const std::vector<unsigned>& pus) {
  std::string text;
  for (std::size_t i = 0; i < pus.size();) {
    std::size_t j = i;
    while (j + 1 < pus.size() && pus[j + 1] == pus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(pus[i]);
    if (j > i) text += '-' + std::to_string(pus[j]);
    i = j + 1;
  }
  return text;
}

// Divides the cores between the ranks that use CPU leaves.
void assign_cores(const NodeInventory& node, const std::vector<Wants>& wants, std::vector<RankShare>& shares) {
  std::vector<std::size_t> users;
  for (std::size_t r = 0; r < wants.size(); ++r)
    if (wants[r].cores) users.push_back(r);
  const std::size_t cores = node.cores.size(), count = users.size();
  if (cores == 0 || count == 0) return;
  for (std::size_t i = 0; i < count; ++i) {
    RankShare& share = shares[users[i]];
    if (count <= cores) {
      for (std::size_t c = i * cores / count; c < (i + 1) * cores / count; ++c) share.pus.push_back(node.cores[c].pu);
    } else {
      share.pus.push_back(node.cores[i * cores / count].pu);
    }
    std::sort(share.pus.begin(), share.pus.end());
  }
  // Shared: a core another rank got too (with 3 ranks on 2 cores, ranks 0
  // and 1 share core 0, and rank 2 has core 1 alone).
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = 0; j < count; ++j) {
      if (i == j) continue;
      const auto& mine = shares[users[i]].pus;
      const auto& theirs = shares[users[j]].pus;
      if (std::find_first_of(mine.begin(), mine.end(), theirs.begin(), theirs.end()) != mine.end())
        shares[users[i]].shares_cores = true;
    }
}

// The NUMA nodes of a rank's cores.
std::set<int> numa_nodes_of(const NodeInventory& node, const RankShare& share) {
  std::set<int> numa;
  for (const CoreInfo& core : node.cores)
    if (std::find(share.pus.begin(), share.pus.end(), core.pu) != share.pus.end())
      numa.insert(nearest_numa_node(node, core.numa_node));
  return numa;
}

}  // namespace

runtime::RuntimeOptions RankShare::options() const {
  runtime::RuntimeOptions options;
  options.pus = pus;
  options.device_ids = device_ids;
  return options;
}

std::string RankShare::describe() const {
  std::string text = "local rank " + std::to_string(local_rank) + ": ";
  text += pus.empty() ? "no cores" : "pus " + pu_ranges(pus) + (shares_cores ? " (shared)" : "");
  text += "; devices ";
  if (device_ids.empty()) text += "none";
  for (std::size_t i = 0; i < device_ids.size(); ++i) {
    const bool shared = std::find(shared_devices.begin(), shared_devices.end(), device_ids[i]) != shared_devices.end();
    text += (i ? ", " : "") + device_ids[i] + (shared ? " (shared)" : "");
  }
  return text;
}

std::vector<RankShare> assign_ranks(const NodeInventory& node, const std::vector<std::string>& selections) {
  const std::size_t ranks = selections.size();
  std::vector<Wants> wants;
  for (const std::string& selection : selections) wants.push_back(wants_of(node, selection));
  std::vector<RankShare> shares(ranks);
  for (std::size_t r = 0; r < ranks; ++r) shares[r].local_rank = static_cast<int>(r);
  assign_cores(node, wants, shares);

  std::vector<std::set<int>> numa(ranks);
  for (std::size_t r = 0; r < ranks; ++r) numa[r] = numa_nodes_of(node, shares[r]);
  std::vector<int> holders(node.devices.size(), 0);
  std::vector<std::vector<std::size_t>> held(ranks);
  auto give = [&](std::size_t r, std::size_t d) {
    held[r].push_back(d);
    ++holders[d];
  };
  // How a rank ranks for device d: smaller is better.
  auto order = [&](std::size_t r, std::size_t d) {
    const bool idle = shares[r].pus.empty() && held[r].empty();
    const bool near = numa[r].count(nearest_numa_node(node, node.devices[d].numa_node)) > 0;
    return std::tuple(idle ? 0 : 1, near ? 0 : 1, held[r].size(), r);
  };

  for (std::size_t d = 0; d < node.devices.size(); ++d) {
    std::optional<std::size_t> best;
    for (std::size_t r = 0; r < ranks; ++r)
      if (wants[r].devices[d] && (!best || order(r, d) < order(*best, d))) best = r;
    if (best) give(*best, d);
  }

  // Ranks that would not get what they named (or anything at all) share.
  auto share_one = [&](std::size_t r, const std::vector<std::size_t>& candidates) {
    std::optional<std::size_t> best;
    auto key = [&](std::size_t d) {
      const bool near = numa[r].count(nearest_numa_node(node, node.devices[d].numa_node)) > 0;
      return std::tuple(holders[d], near ? 0 : 1, d);
    };
    for (std::size_t d : candidates)
      if (!best || key(d) < key(*best)) best = d;
    if (best) give(r, *best);
  };
  for (std::size_t r = 0; r < ranks; ++r) {
    for (const auto& matches : wants[r].named) {
      const bool has_one = std::any_of(matches.begin(), matches.end(), [&](std::size_t d) {
        return std::find(held[r].begin(), held[r].end(), d) != held[r].end();
      });
      if (!has_one) share_one(r, matches);
    }
    if (shares[r].pus.empty() && held[r].empty()) {
      std::vector<std::size_t> allowed;
      for (std::size_t d = 0; d < node.devices.size(); ++d)
        if (wants[r].devices[d]) allowed.push_back(d);
      share_one(r, allowed);
    }
  }

  for (std::size_t r = 0; r < ranks; ++r) {
    std::sort(held[r].begin(), held[r].end());
    for (std::size_t d : held[r]) {
      shares[r].device_ids.push_back(node.devices[d].id);
      if (holders[d] > 1) shares[r].shared_devices.push_back(node.devices[d].id);
    }
  }
  return shares;
}

std::vector<RankShare> assign_ranks(const NodeInventory& node, int local_ranks) {
  if (local_ranks < 1)
    throw Error("assign_ranks was asked for " + std::to_string(local_ranks) +
                " ranks on a node; a node has at least one rank");
  return assign_ranks(node, std::vector<std::string>(static_cast<std::size_t>(local_ranks), "all"));
}

}  // namespace canopy
