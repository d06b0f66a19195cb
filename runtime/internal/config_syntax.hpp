// The line and field syntax of Gecko's configuration format, shared by the
// loader (config.cpp): a line is `kind,value;key,value,value;...`, with `#`
// comments, and every error names the source and line it points at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy::config_syntax {

/// `text` in lower case (ASCII).
std::string lowercase(std::string_view text);

/// `text` without leading and trailing white space.
std::string_view trim(std::string_view text);

/// The pieces of `text` between `separator`s, trimmed (empty ones kept).
std::vector<std::string_view> split(std::string_view text, char separator);

/// One `key,value,...` field of a line.
struct Field {
  std::string key;                  ///< lower case
  std::vector<std::string> values;  ///< trimmed, as written
};

/// One line that is not blank or a comment.
struct Line {
  int number = 0;
  std::vector<Field> fields;  ///< the first names the line kind
};

/// The line an error points at.
struct Where {
  std::string_view source;
  int line = 0;
};

/// Throws canopy::Error "source:line: problem; expected ...".
[[noreturn]] void fail(const Where& where, const std::string& problem, std::string_view expected);

/// Line `number`'s fields, or nothing for a blank or comment line.
std::optional<Line> split_line(std::string_view text, int number);

/// The one value of `field`; fails when it has none or several, or it is empty.
const std::string& one_value(const Where& where, const Field& field, std::string_view what);

/// The values of a list field (at least one, none empty).
const std::vector<std::string>& list_values(const Where& where, const Field& field, std::string_view what);

/// Fails when a field that takes no value has one.
void no_value(const Where& where, const Field& field);

/// `text` as an integer in [low, high]; fails naming the field otherwise.
long long integer_in(const Where& where, const Field& field, std::string_view text, long long low, long long high);

/// The field's one value as an integer in [low, high].
long long integer_field(const Where& where, const Field& field, long long low, long long high);

/// The field's one value as a size: bytes, or a number with B, KB, MB, GB or TB.
std::int64_t size_field(const Where& where, const Field& field);

/// The field's one value as a bandwidth in GB/s.
double bandwidth_field(const Where& where, const Field& field);

/// Fails when two fields of the line have the same key.
void each_field_once(const Where& where, const Line& line);

}  // namespace canopy::config_syntax
