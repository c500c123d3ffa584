#pragma once
/// Validated reading of a user's JSON file: every accessor knows the file and the JSON path it reads,
/// so a bad value becomes one line such as `cluster.json: regions[0].nodes[2].gpu: expected a string, got number`.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetsim {

class JsonInput {
public:
  /// Reads and parses a file; a missing file or invalid JSON is an InputError naming the file.
  static nlohmann::json parse_file(const std::string& file);
  /// Parses text that came from `origin` (a file name or a preset name).
  static nlohmann::json parse_text(const std::string& text, const std::string& origin);

  JsonInput(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  /// "file: path" — the prefix of every message about this value.
  std::string where() const;
  [[noreturn]] void fail(const std::string& expected) const;

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_number() const { return value_->is_number(); }
  bool is_string() const { return value_->is_string(); }

  /// Required member of an object.
  JsonInput at(std::string_view key) const;
  /// Optional member; an explicit `null` counts as absent.
  std::optional<JsonInput> find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key).has_value(); }
  /// Element of an array.
  JsonInput at(std::size_t index) const;
  /// Elements of a required array.
  std::vector<JsonInput> elements() const;
  std::size_t size() const;

  double number() const;
  double positive_number() const;
  double non_negative_number() const;
  long long integer() const;
  int positive_int() const;
  int non_negative_int() const;
  std::string string() const;
  /// A string that names something (a node, a region, a cluster, a job): 1 to 200 characters, none of them a
  /// control character or a bidirectional override, so that every message and report shows it as it is.
  std::string name() const;
  bool boolean() const;

  /// Shorthands for a member with a default when absent.
  double number_or(std::string_view key, double fallback) const;
  double positive_number_or(std::string_view key, double fallback) const;
  double non_negative_number_or(std::string_view key, double fallback) const;
  int positive_int_or(std::string_view key, int fallback) const;
  std::string string_or(std::string_view key, const std::string& fallback) const;
  std::string name_or(std::string_view key, const std::string& fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  /// Rejects members not in `known`, which catches typos such as "bandwith_gbps".
  void allow_only(std::initializer_list<std::string_view> known) const;

private:
  void require_object() const;
  void require_array() const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/// The JSON type of a value in words ("number", "string", ...), for messages.
std::string json_type_name(const nlohmann::json& value);

} // namespace hetsim
