#include "config_syntax.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include <canopy/ir/error.hpp>

#include "../config.hpp"

namespace canopy::config_syntax {

namespace {
constexpr std::size_t npos = std::string_view::npos;
}  // namespace

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find(separator, start);
    pieces.push_back(trim(text.substr(start, end == npos ? npos : end - start)));
    if (end == npos) return pieces;
    start = end + 1;
  }
}

[[noreturn]] void fail(const Where& where, const std::string& problem, std::string_view expected) {
  throw Error(fmt::format("{}:{}: {}; expected {}", where.source, where.line, problem, expected));
}

std::optional<Line> split_line(std::string_view text, int number) {
  text = trim(text.substr(0, text.find('#')));
  if (text.empty()) return std::nullopt;
  Line line{number, {}};
  for (std::string_view part : split(text, ';')) {
    if (part.empty()) continue;
    std::vector<std::string_view> items = split(part, ',');
    Field field{lowercase(items.front()), {}};
    field.values.assign(items.begin() + 1, items.end());
    line.fields.push_back(std::move(field));
  }
  return line;
}

const std::string& one_value(const Where& where, const Field& field, std::string_view what) {
  std::size_t count = field.values.size();
  if (count == 1 && !field.values.front().empty()) return field.values.front();
  std::string problem = count == 0 ? "no value" : count == 1 ? "an empty value" : fmt::format("{} values", count);
  fail(where, fmt::format("the field '{}' has {}", field.key, problem), fmt::format("{},{}", field.key, what));
}

const std::vector<std::string>& list_values(const Where& where, const Field& field, std::string_view what) {
  bool empty = std::any_of(field.values.begin(), field.values.end(), [](const auto& v) { return v.empty(); });
  if (field.values.empty() || empty)
    fail(where, fmt::format("the field '{}' has an empty or missing value", field.key),
         fmt::format("{},{}[,{}...]", field.key, what, what));
  return field.values;
}

void no_value(const Where& where, const Field& field) {
  if (!field.values.empty())
    fail(where, fmt::format("the field '{}' takes no value but has '{}'", field.key, field.values.front()),
         fmt::format("'{}' alone between ';'", field.key));
}

long long integer_in(const Where& where, const Field& field, std::string_view text, long long low, long long high) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high)
    fail(where, fmt::format("'{}' is not a valid {}", text, field.key),
         fmt::format("a whole number from {} to {}", low, high));
  return value;
}

long long integer_field(const Where& where, const Field& field, long long low, long long high) {
  return integer_in(where, field, one_value(where, field, "N"), low, high);
}

std::int64_t size_field(const Where& where, const Field& field) {
  const std::string& text = one_value(where, field, "SIZE");
  std::int64_t bytes = parse_size(text);
  if (bytes < 0)
    fail(where, fmt::format("'{}' is not a size", text), "bytes, or a number with B, KB, MB, GB or TB (such as 16GB)");
  return bytes;
}

double bandwidth_field(const Where& where, const Field& field) {
  const std::string& text = one_value(where, field, "GBPS");
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0)
    fail(where, fmt::format("'{}' is not a bandwidth", text), "a number of GB/s such as 100 or 12.5");
  return value;
}

void each_field_once(const Where& where, const Line& line) {
  std::vector<std::string_view> keys;
  for (auto field = line.fields.begin() + 1; field != line.fields.end(); ++field) keys.push_back(field->key);
  std::sort(keys.begin(), keys.end());
  auto twice = std::adjacent_find(keys.begin(), keys.end());
  if (twice != keys.end())
    fail(where, fmt::format("the field '{}' is given twice", *twice), "each field once per line");
}

}  // namespace canopy::config_syntax
