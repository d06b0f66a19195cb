#include "program.hpp"

#include <fmt/format.h>

#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

#include <canopy/ir/error.hpp>
#include <canopy/ir/parser.hpp>
#include <canopy/ir/printer.hpp>

namespace canopy::diff {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::int64_t Rng::between(std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

std::int64_t ArraySpec::size() const {
  std::int64_t n = 1;
  for (auto e : extents) n *= e;
  return n;
}

namespace {

std::int64_t random_integer(ir::ScalarType type, Rng& rng) {
  const bool narrow = type == ir::ScalarType::I32;
  const std::int64_t lowest =
      narrow ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min();
  const std::int64_t highest =
      narrow ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
  const double draw = rng.unit();
  if (draw < 0.7) return rng.between(-20, 20);
  if (draw < 0.85) return rng.between(-100000, 100000);
  const std::int64_t edges[] = {0, 1, -1, lowest, highest, lowest + 1, highest - 1, 65536, -65537, 1 << 30};
  return edges[rng.below(std::size(edges))];
}

double random_float(Rng& rng) {
  const double draw = rng.unit();
  if (draw < 0.7) return static_cast<double>(rng.between(-512, 512)) / 64.0;  // exact in f32 too
  if (draw < 0.8) return static_cast<double>(rng.between(-9, 9));
  if (draw < 0.95) return (rng.unit() - 0.5) * 200.0;
  const double edges[] = {0.0,
                          -0.0,
                          1e30,
                          -1e30,
                          1e-30,
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::quiet_NaN(),
                          3.0e38,
                          1e-40};
  return edges[rng.below(std::size(edges))];
}

}  // namespace

ir::RefValue random_value(ir::ScalarType type, Rng& rng) {
  switch (type) {
    case ir::ScalarType::Bool: return ir::RefValue::boolean(rng.chance(0.5));
    case ir::ScalarType::I32: return ir::RefValue::i32(static_cast<std::int32_t>(random_integer(type, rng)));
    case ir::ScalarType::I64: return ir::RefValue::i64(random_integer(type, rng));
    case ir::ScalarType::F32: return ir::RefValue::f32(static_cast<float>(random_float(rng)));
    case ir::ScalarType::F64: return ir::RefValue::f64(random_float(rng));
  }
  return {};
}

ir::RefArray initial_contents(const ArraySpec& array) {
  ir::RefArray contents = ir::RefArray::zeros(array.type, array.extents);
  Rng rng(array.seed);
  const std::int64_t n = array.size();
  for (std::int64_t e = 0; e < n; ++e) {
    auto& element = contents.elements[static_cast<std::size_t>(e)];
    switch (array.contents) {
      case Contents::Values: element = random_value(array.type, rng); break;
      case Contents::Indices: element = ir::RefValue::i64(static_cast<std::int64_t>(rng.below(array.bound))); break;
      case Contents::Permutation: element = ir::RefValue::i64(e); break;
    }
  }
  if (array.contents == Contents::Permutation)
    for (std::int64_t e = n - 1; e > 0; --e)
      std::swap(contents.elements[static_cast<std::size_t>(e)],
                contents.elements[rng.below(static_cast<std::uint64_t>(e) + 1)]);
  return contents;
}

void host_write(const ArraySpec& array, std::uint64_t seed, std::int64_t count, ir::RefArray& contents) {
  Rng rng(seed);
  const auto n = static_cast<std::uint64_t>(array.size());
  if (n == 0) return;
  for (std::int64_t k = 0; k < count; ++k) {
    auto& element = contents.elements[rng.below(n)];
    switch (array.contents) {
      case Contents::Values: element = random_value(array.type, rng); break;
      case Contents::Indices: element = ir::RefValue::i64(static_cast<std::int64_t>(rng.below(array.bound))); break;
      case Contents::Permutation: std::swap(element, contents.elements[rng.below(n)]); break;
    }
  }
}

// ---- the text form -------------------------------------------------------------

std::string_view name_of(PolicyKind policy) {
  switch (policy) {
    case PolicyKind::Static: return "static";
    case PolicyKind::Flatten: return "flatten";
    case PolicyKind::Percentage: return "percentage";
    case PolicyKind::Range: return "range";
    case PolicyKind::Any: return "any";
    case PolicyKind::Adaptive: return "adaptive";
  }
  return "?";
}

std::string_view name_of(TreeChange change) {
  switch (change) {
    case TreeChange::Drop: return "drop";
    case TreeChange::Lift: return "lift";
    case TreeChange::Restore: return "restore";
    case TreeChange::Add: return "add";
  }
  return "?";
}

namespace {

std::string_view name_of(Contents contents) {
  switch (contents) {
    case Contents::Values: return "values";
    case Contents::Indices: return "indices";
    case Contents::Permutation: return "permutation";
  }
  return "?";
}

template <class Enum, std::size_t N>
Enum named(const std::string& word, const Enum (&all)[N], const char* what) {
  for (Enum e : all)
    if (name_of(e) == word) return e;
  throw Error(fmt::format("unknown {} '{}'", what, word));
}

}  // namespace

std::string value_text(const ir::RefValue& value) {
  const auto type = std::string(ir::name_of(value.type));
  if (ir::is_float(value.type)) return fmt::format("{}:{}", type, fmt::format("{:a}", value.f));
  return fmt::format("{}:{}", type, value.i);
}

std::string range_text(const std::vector<std::int64_t>& range) {
  std::string text;
  for (auto e : range) text += (text.empty() ? "" : "x") + std::to_string(e);
  return text;
}

namespace {

std::string args_text(const Program& program, const Step& step) {
  std::string text;
  for (const auto& arg : step.args) {
    text += ' ';
    if (auto* array = std::get_if<int>(&arg))
      text += program.arrays[static_cast<std::size_t>(*array)].name;
    else if (auto* value = std::get_if<ir::RefValue>(&arg))
      text += value_text(*value);
    else
      text += '-';
  }
  return text;
}

std::string step_text(const Program& program, const Step& step) {
  const auto kernel_name = [&] { return program.kernels[static_cast<std::size_t>(step.kernel)]->name; };
  const auto array_name = [&] { return program.arrays[static_cast<std::size_t>(step.array)].name; };
  switch (step.kind) {
    case StepKind::Launch:
      return fmt::format("launch {} over {} policy {} {} at {} args{}", kernel_name(), range_text(step.range),
                         name_of(step.policy), step.policy_seed, step.at_leaf < 0 ? "-" : std::to_string(step.at_leaf),
                         args_text(program, step));
    case StepKind::Refused:
    case StepKind::Faulty:
      return fmt::format("{} {} over {} args{}", step.kind == StepKind::Refused ? "refused" : "faulty", kernel_name(),
                         range_text(step.range), args_text(program, step));
    case StepKind::HostWrite: return fmt::format("hostwrite {} seed {} count {}", array_name(), step.seed, step.count);
    case StepKind::HostRead: return fmt::format("hostread {}", array_name());
    case StepKind::Pause: return "pause";
    case StepKind::Tree: return fmt::format("tree {} {}", name_of(step.change), step.leaf);
  }
  return "?";
}

}  // namespace

std::string print(const Program& program) {
  std::string text = fmt::format("seed {}\n", program.seed);
  for (const auto& a : program.arrays) {
    text += fmt::format("array {} {} {} {} {}", a.name, ir::name_of(a.type), range_text(a.extents), name_of(a.contents),
                        a.seed);
    if (a.contents == Contents::Indices) text += fmt::format(" below {}", a.bound);
    text += '\n';
  }
  for (const auto& k : program.kernels) text += "kernel\n" + ir::print(*k) + "end\n";
  for (const auto& step : program.steps) text += step_text(program, step) + '\n';
  return text;
}

// ---- reading it back -------------------------------------------------------------

namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::int64_t number(const std::string& word) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(word.c_str(), &end, 10);
  if (word.empty() || *end || errno) throw Error(fmt::format("'{}' is not a whole number", word));
  return value;
}

std::vector<std::int64_t> extents_of(const std::string& word) {
  std::vector<std::int64_t> extents;
  std::size_t at = 0;
  while (at <= word.size()) {
    const auto x = word.find('x', at);
    extents.push_back(number(word.substr(at, x == std::string::npos ? std::string::npos : x - at)));
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return extents;
}

ir::RefValue value_of(const std::string& word) {
  const auto colon = word.find(':');
  const auto type = ir::scalar_type_named(word.substr(0, colon == std::string::npos ? 0 : colon));
  if (!type) throw Error(fmt::format("'{}' is not a value (type:value)", word));
  const std::string digits = word.substr(colon + 1);
  if (ir::is_float(*type)) return ir::RefValue::of(*type, std::strtod(digits.c_str(), nullptr));
  ir::RefValue value = ir::RefValue::i64(number(digits));
  value.type = *type;
  return value;
}

Step step_of(StepKind kind) {
  Step step;
  step.kind = kind;
  return step;
}

class ProgramReader {
 public:
  explicit ProgramReader(const std::string& text) : in_(text) {}

  Program read() {
    for (std::string line; std::getline(in_, line);) {
      ++line_number_;
      const auto words = words_of(line);
      if (words.empty() || words[0][0] == '#') continue;
      try {
        read_line(words);
      } catch (const Error& e) {
        throw Error(fmt::format("program line {}: {}", line_number_, e.what()));
      }
    }
    return std::move(program_);
  }

 private:
  void read_line(const std::vector<std::string>& w) {
    const std::string& what = w[0];
    if (what == "seed") {
      program_.seed = static_cast<std::uint64_t>(number(w.at(1)));
    } else if (what == "array") {
      read_array(w);
    } else if (what == "kernel") {
      read_kernel();
    } else if (what == "launch" || what == "refused" || what == "faulty") {
      read_launch(w);
    } else if (what == "hostwrite") {
      Step step = step_of(StepKind::HostWrite);
      step.array = array_named(w.at(1));
      step.seed = static_cast<std::uint64_t>(number(w.at(3)));
      step.count = number(w.at(5));
      program_.steps.push_back(step);
    } else if (what == "hostread") {
      Step step = step_of(StepKind::HostRead);
      step.array = array_named(w.at(1));
      program_.steps.push_back(step);
    } else if (what == "pause") {
      program_.steps.push_back(step_of(StepKind::Pause));
    } else if (what == "tree") {
      Step step = step_of(StepKind::Tree);
      step.change =
          named(w.at(1), {TreeChange::Drop, TreeChange::Lift, TreeChange::Restore, TreeChange::Add}, "tree change");
      step.leaf = static_cast<int>(number(w.at(2)));
      program_.steps.push_back(step);
    } else {
      throw Error(fmt::format("unknown line '{}'", what));
    }
  }

  void read_array(const std::vector<std::string>& w) {
    ArraySpec a;
    a.name = w.at(1);
    const auto type = ir::scalar_type_named(w.at(2));
    if (!type) throw Error(fmt::format("unknown type '{}'", w.at(2)));
    a.type = *type;
    a.extents = extents_of(w.at(3));
    a.contents = named(w.at(4), {Contents::Values, Contents::Indices, Contents::Permutation}, "contents");
    a.seed = static_cast<std::uint64_t>(number(w.at(5)));
    if (a.contents == Contents::Indices) a.bound = number(w.at(7));
    program_.arrays.push_back(a);
  }

  void read_kernel() {
    std::string text;
    for (std::string line; std::getline(in_, line);) {
      ++line_number_;
      if (line == "end") {
        program_.kernels.push_back(std::make_shared<const ir::Kernel>(ir::parse(text, "kernel")));
        return;
      }
      text += line + '\n';
    }
    throw Error("a kernel has no 'end' line");
  }

  void read_launch(const std::vector<std::string>& w) {
    Step step = step_of(w[0] == "launch" ? StepKind::Launch : w[0] == "refused" ? StepKind::Refused : StepKind::Faulty);
    step.kernel = kernel_named(w.at(1));
    step.range = extents_of(w.at(3));
    std::size_t at = 4;
    if (step.kind == StepKind::Launch) {
      step.policy = named(w.at(5),
                          {PolicyKind::Static, PolicyKind::Flatten, PolicyKind::Percentage, PolicyKind::Range,
                           PolicyKind::Any, PolicyKind::Adaptive},
                          "policy");
      step.policy_seed = static_cast<std::uint64_t>(number(w.at(6)));
      step.at_leaf = w.at(8) == "-" ? -1 : static_cast<int>(number(w.at(8)));
      at = 9;
    }
    if (w.at(at) != "args") throw Error("expected 'args'");
    for (std::size_t k = at + 1; k < w.size(); ++k) {
      if (w[k] == "-")
        step.args.emplace_back(NoArgument{});
      else if (w[k].find(':') != std::string::npos)
        step.args.emplace_back(value_of(w[k]));
      else
        step.args.emplace_back(array_named(w[k]));
    }
    program_.steps.push_back(step);
  }

  int array_named(const std::string& name) const {
    for (std::size_t k = 0; k < program_.arrays.size(); ++k)
      if (program_.arrays[k].name == name) return static_cast<int>(k);
    throw Error(fmt::format("no array '{}'", name));
  }

  int kernel_named(const std::string& name) const {
    for (std::size_t k = 0; k < program_.kernels.size(); ++k)
      if (program_.kernels[k]->name == name) return static_cast<int>(k);
    throw Error(fmt::format("no kernel '{}'", name));
  }

  std::istringstream in_;
  int line_number_ = 0;
  Program program_;
};

}  // namespace

Program parse_program(const std::string& text) { return ProgramReader(text).read(); }

}  // namespace canopy::diff
