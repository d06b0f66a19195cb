// Reading back what CANOPY_TRACE wrote, for the trace tests
// (tests/runtime/trace.cpp, tests/hetero/trace.cpp): a small strict JSON
// parser (a file that is not JSON fails the test, naming where), and the
// trace's events with each one's track name resolved from the thread_name
// metadata, so a test asks "the pieces on cpu0" as a user would in Perfetto.
#pragma once

#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace canopy::trace_tests {

/// One JSON value. Numbers are kept as doubles (the trace's are integers or
/// microseconds with three decimals).
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  bool has(const std::string& key) const { return kind == Kind::Object && fields.count(key) > 0; }
  /// The field `key`; throws when this is not an object that has it.
  const Json& at(const std::string& key) const {
    if (!has(key)) throw std::runtime_error("no field '" + key + "'");
    return fields.at(key);
  }
};

/// Parses `text` as exactly one JSON value; throws std::runtime_error naming
/// the offset of the first thing that is not JSON.
class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  Json parse() {
    Json value = parse_value();
    skip_space();
    if (at_ != text_.size()) fail("text after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("not JSON at offset " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  char peek() {
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    return text_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  void word(const std::string& w) {
    if (text_.compare(at_, w.size(), w) != 0) fail("expected " + w);
    at_ += w.size();
  }
  Json parse_value() {
    Json value;
    const char c = peek();
    if (c == '{') {
      value.kind = Json::Kind::Object;
      ++at_;
      if (peek() == '}') return ++at_, value;
      for (;;) {
        if (peek() != '"') fail("expected a key");
        const std::string key = parse_string();
        expect(':');
        value.fields[key] = parse_value();
        if (peek() == '}') return ++at_, value;
        expect(',');
      }
    }
    if (c == '[') {
      value.kind = Json::Kind::Array;
      ++at_;
      if (peek() == ']') return ++at_, value;
      for (;;) {
        value.items.push_back(parse_value());
        if (peek() == ']') return ++at_, value;
        expect(',');
      }
    }
    if (c == '"') {
      value.kind = Json::Kind::String;
      value.text = parse_string();
      return value;
    }
    if (c == 't' || c == 'f') {
      value.kind = Json::Kind::Bool;
      value.boolean = c == 't';
      word(c == 't' ? "true" : "false");
      return value;
    }
    if (c == 'n') {
      word("null");
      return value;
    }
    const std::size_t start = at_;
    while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) ||
                                  std::string("+-.eE").find(text_[at_]) != std::string::npos))
      ++at_;
    if (start == at_) fail("expected a value");
    char* end = nullptr;
    const std::string digits = text_.substr(start, at_ - start);
    value.kind = Json::Kind::Number;
    value.number = std::strtod(digits.c_str(), &end);
    if (*end != '\0') fail("a malformed number '" + digits + "'");
    return value;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c == '\\') {
        if (at_ >= text_.size()) fail("unexpected end");
        const char e = text_[at_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case '"':
          case '\\':
          case '/': c = e; break;
          case 'u': {
            if (at_ + 4 > text_.size()) fail("a short \\u escape");
            const long code = std::strtol(text_.substr(at_, 4).c_str(), nullptr, 16);
            at_ += 4;
            if (code >= 0x80) fail("a \\u escape beyond ASCII (the trace writes none)");
            c = static_cast<char>(code);
            break;
          }
          default: fail("an unknown escape");
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }

  const std::string& text_;
  std::size_t at_ = 0;
};

/// One event of a trace, with the name of its track.
struct TraceEvent {
  std::string phase, category, name, track;
  double ts = 0, dur = 0;
  Json args;
  /// The argument `key` as a string or a number.
  std::string text(const std::string& key) const { return args.at(key).text; }
  double number(const std::string& key) const { return args.at(key).number; }
};

/// A trace file read back: its events (metadata resolved into track names).
struct Trace {
  std::string process_name;
  std::vector<std::string> tracks;  ///< thread_name metadata, in file order
  std::vector<TraceEvent> events;   ///< every event that is not metadata

  /// The events of category `category` ("piece", "copy", "compile", "pause", "launch").
  std::vector<TraceEvent> of(const std::string& category) const {
    std::vector<TraceEvent> found;
    for (const auto& e : events)
      if (e.category == category) found.push_back(e);
    return found;
  }
};

/// Reads the trace at `path`; fails the test when it is missing, is not JSON,
/// or lacks the fields every event of the format has.
inline Trace read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "no trace at " << path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  Json document;
  try {
    document = JsonParser(content).parse();
  } catch (const std::exception& e) {
    FAIL(path << ": " << e.what());
  }
  REQUIRE(document.has("traceEvents"));
  REQUIRE(document.at("traceEvents").kind == Json::Kind::Array);
  Trace trace;
  std::map<double, std::string> names;  // tid -> thread_name
  for (const Json& e : document.at("traceEvents").items) {
    REQUIRE(e.has("ph"));
    REQUIRE(e.has("pid"));
    REQUIRE(e.has("tid"));
    REQUIRE(e.has("name"));
    if (e.at("ph").text != "M") continue;
    if (e.at("name").text == "thread_name") {
      names[e.at("tid").number] = e.at("args").at("name").text;
      trace.tracks.push_back(e.at("args").at("name").text);
    }
    if (e.at("name").text == "process_name") trace.process_name = e.at("args").at("name").text;
  }
  for (const Json& e : document.at("traceEvents").items) {
    if (e.at("ph").text == "M") continue;
    TraceEvent event;
    event.phase = e.at("ph").text;
    event.category = e.has("cat") ? e.at("cat").text : "";
    event.name = e.at("name").text;
    REQUIRE(e.has("ts"));
    event.ts = e.at("ts").number;
    if (event.phase == "X") {
      REQUIRE(e.has("dur"));
      event.dur = e.at("dur").number;
      const auto named = names.find(e.at("tid").number);
      REQUIRE_MESSAGE(named != names.end(), "an event on a track without a name: " << event.name);
      event.track = named->second;
    }
    if (e.has("args")) event.args = e.at("args");
    trace.events.push_back(std::move(event));
  }
  return trace;
}

}  // namespace canopy::trace_tests
