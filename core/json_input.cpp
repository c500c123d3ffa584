#include "core/json_input.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace hetsim {

nlohmann::json JsonInput::parse_file(const std::string& file)
{
  return parse_text(read_input_file(file), file);
}

namespace {

/// Deeper nesting than any HetSim file needs; beyond it a file is refused rather than parsed at length.
constexpr std::size_t kMaxDepth = 64;

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string reason(const nlohmann::json::exception& e)
{
  const std::string what = e.what();
  const auto pos         = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

/// Reads a document as SAX events, before it is parsed into values, to refuse what JSON parsers pass silently:
/// a key given twice in one object (the last would win) and nesting deeper than kMaxDepth; and names the
/// path of a syntax error. Keeps the path of the value being read. (nlohmann's parser with a callback would do
/// both in one pass, but takes quadratic time over long arrays: 40 s for 200,000 objects.)
class StrictCheck final : public nlohmann::json_sax<nlohmann::json> {
public:
  explicit StrictCheck(std::string origin) : origin_(std::move(origin)) {}

  bool null() override { return element_done(); }
  bool boolean(bool) override { return element_done(); }
  bool number_integer(number_integer_t) override { return element_done(); }
  bool number_unsigned(number_unsigned_t) override { return element_done(); }
  bool number_float(number_float_t, const string_t&) override { return element_done(); }
  bool string(string_t&) override { return element_done(); }
  bool binary(binary_t&) override { return element_done(); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& name) override
  {
    Frame& frame = frames_.back();
    frame.key    = name;
    if (!frame.keys.insert(name).second)
      throw InputError(origin_ + ": " + path() + ": expected each key once in an object, got " + quote(name) +
                       " twice");
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override
  {
    // Syntax errors and numbers beyond double range (1e309) alike.
    throw InputError(origin_ + ": invalid JSON: " + reason(e));
  }

private:
  struct Frame {
    bool object = false;
    std::string key;            ///< objects: the member being parsed
    std::size_t index = 0;      ///< arrays: the element being parsed
    std::set<std::string> keys; ///< objects: the keys so far
  };

  bool open(bool object)
  {
    if (frames_.size() >= kMaxDepth)
      throw InputError(origin_ + ": " + path() + ": expected at most " + std::to_string(kMaxDepth) +
                       " levels of nesting");
    frames_.push_back({object, {}, 0, {}});
    return true;
  }
  bool close()
  {
    frames_.pop_back();
    return element_done();
  }
  bool element_done()
  {
    if (!frames_.empty() && !frames_.back().object)
      ++frames_.back().index;
    return true;
  }

  /// A key the path can show as it is; any other (a newline, a dot, 300 characters) is quoted and cut.
  static bool plain_key(const std::string& key)
  {
    return key.size() <= 80 && std::all_of(key.begin(), key.end(), [](unsigned char c) {
             return std::isalnum(c) || c == '_' || c == '-';
           });
  }

  std::string path() const
  {
    std::string result;
    for (const Frame& frame : frames_) {
      if (frame.object && !frame.key.empty())
        result += plain_key(frame.key) ? (result.empty() ? "" : ".") + frame.key : "[" + quote(frame.key) + "]";
      else if (!frame.object)
        result += "[" + std::to_string(frame.index) + "]";
    }
    return result.empty() ? "(top level)" : result;
  }

  std::string origin_;
  std::vector<Frame> frames_;
};

} // namespace

nlohmann::json JsonInput::parse_text(const std::string& text, const std::string& origin)
{
  StrictCheck check(origin);
  nlohmann::json::sax_parse(text, &check);
  return nlohmann::json::parse(text); // checked: it parses
}

std::string json_type_name(const nlohmann::json& value)
{
  if (value.is_number())
    return "number " + value.dump();
  if (value.is_string()) {
    // JSON escapes control characters; a long value is cut so that the message stays one readable line.
    constexpr std::size_t kShown = 80;
    const std::string text = value.dump();
    if (text.size() <= kShown + 2)
      return "string " + text;
    std::size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) // not inside a UTF-8 character
      --cut;
    return "string " + text.substr(0, cut) + "…\"";
  }
  return value.type_name();
}

JsonInput::JsonInput(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path))
{
}

std::string JsonInput::where() const
{
  return file_ + ": " + (path_.empty() ? "(top level)" : path_);
}

void JsonInput::fail(const std::string& expected) const
{
  throw InputError(where() + ": expected " + expected + ", got " + json_type_name(*value_));
}

void JsonInput::require_object() const
{
  if (!value_->is_object())
    fail("an object");
}

void JsonInput::require_array() const
{
  if (!value_->is_array())
    fail("an array");
}

JsonInput JsonInput::at(std::string_view key) const
{
  auto child = find(key);
  if (!child)
    throw InputError(where() + ": missing required field '" + std::string(key) + "'");
  return *child;
}

std::optional<JsonInput> JsonInput::find(std::string_view key) const
{
  require_object();
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null())
    return std::nullopt;
  return JsonInput(*it, file_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

JsonInput JsonInput::at(std::size_t index) const
{
  require_array();
  if (index >= value_->size())
    throw InputError(where() + ": expected at least " + std::to_string(index + 1) + " elements, got " +
                     std::to_string(value_->size()));
  return JsonInput((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::vector<JsonInput> JsonInput::elements() const
{
  require_array();
  std::vector<JsonInput> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.push_back(at(i));
  return out;
}

std::size_t JsonInput::size() const
{
  require_array();
  return value_->size();
}

double JsonInput::number() const
{
  if (!value_->is_number())
    fail("a number");
  double v = value_->get<double>();
  if (!std::isfinite(v))
    fail("a finite number");
  return v;
}

double JsonInput::positive_number() const
{
  double v = number();
  if (!(v > 0))
    fail("a positive number");
  // A subnormal (1e-320) turns into an infinite time once it divides anything.
  if (v < 1e-300)
    fail("a positive number of at least 1e-300");
  return v;
}

double JsonInput::non_negative_number() const
{
  double v = number();
  if (v < 0)
    fail("a non-negative number");
  return v;
}

long long JsonInput::integer() const
{
  if (!value_->is_number_integer() && !(value_->is_number_float() && std::trunc(value_->get<double>()) == value_->get<double>()))
    fail("an integer");
  double as_double = value_->get<double>();
  if (std::fabs(as_double) > 9e15)
    fail("an integer of reasonable size");
  return static_cast<long long>(as_double);
}

int JsonInput::positive_int() const
{
  long long v = integer();
  if (v <= 0 || v > std::numeric_limits<int>::max())
    fail("a positive integer");
  return static_cast<int>(v);
}

int JsonInput::non_negative_int() const
{
  long long v = integer();
  if (v < 0 || v > std::numeric_limits<int>::max())
    fail("a non-negative integer");
  return static_cast<int>(v);
}

std::string JsonInput::string() const
{
  if (!value_->is_string())
    fail("a string");
  return value_->get<std::string>();
}

std::string JsonInput::name() const
{
  constexpr std::size_t kLongestName = 200;
  std::string text = string();
  if (text.empty() || text.size() > kLongestName || holds_control_characters(text))
    fail("a name of 1 to " + std::to_string(kLongestName) +
         " characters without control characters (a newline, a tab, an escape, a bidirectional override)");
  return text;
}

bool JsonInput::boolean() const
{
  if (!value_->is_boolean())
    fail("true or false");
  return value_->get<bool>();
}

double JsonInput::number_or(std::string_view key, double fallback) const
{
  auto child = find(key);
  return child ? child->number() : fallback;
}

double JsonInput::positive_number_or(std::string_view key, double fallback) const
{
  auto child = find(key);
  return child ? child->positive_number() : fallback;
}

double JsonInput::non_negative_number_or(std::string_view key, double fallback) const
{
  auto child = find(key);
  return child ? child->non_negative_number() : fallback;
}

int JsonInput::positive_int_or(std::string_view key, int fallback) const
{
  auto child = find(key);
  return child ? child->positive_int() : fallback;
}

std::string JsonInput::string_or(std::string_view key, const std::string& fallback) const
{
  auto child = find(key);
  return child ? child->string() : fallback;
}

std::string JsonInput::name_or(std::string_view key, const std::string& fallback) const
{
  auto child = find(key);
  return child ? child->name() : fallback;
}

bool JsonInput::boolean_or(std::string_view key, bool fallback) const
{
  auto child = find(key);
  return child ? child->boolean() : fallback;
}

void JsonInput::allow_only(std::initializer_list<std::string_view> known) const
{
  require_object();
  for (const auto& [key, unused] : value_->items()) {
    bool ok = false;
    for (auto k : known)
      ok = ok || k == key;
    if (ok)
      continue;
    std::string list;
    for (auto k : known)
      list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError(where() + ": unknown field " + quote(key) + "; known fields: " + list);
  }
}

} // namespace hetsim
