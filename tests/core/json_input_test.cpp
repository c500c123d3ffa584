#include "core/error.hpp"
#include "core/json_input.hpp"

#include <doctest/doctest.h>

using hetsim::InputError;
using hetsim::JsonInput;

TEST_CASE("json input reports the file and path of a bad value")
{
  const auto doc = nlohmann::json::parse(R"({"a": {"b": [1, 2.5, -1, "x"]}, "n": null})");
  JsonInput root(doc, "f.json");
  auto list = root.at("a").at("b");
  CHECK(list.at(0).positive_int() == 1);
  CHECK_THROWS_WITH_AS(list.at(1).integer(), "f.json: a.b[1]: expected an integer, got number 2.5", InputError);
  CHECK_THROWS_WITH_AS(list.at(2).positive_number(), "f.json: a.b[2]: expected a positive number, got number -1", InputError);
  const auto tiny = nlohmann::json::parse("[1e-320]");
  CHECK_THROWS_WITH_AS(JsonInput(tiny, "t.json").at(0).positive_number(),
                       "t.json: [0]: expected a positive number of at least 1e-300, got number 1e-320", InputError);
  CHECK_THROWS_WITH_AS(list.at(3).number(), "f.json: a.b[3]: expected a number, got string \"x\"", InputError);
  CHECK_THROWS_WITH_AS(list.at(9), "f.json: a.b: expected at least 10 elements, got 4", InputError);
  CHECK_THROWS_WITH_AS(root.at("missing"), "f.json: (top level): missing required field 'missing'", InputError);
  CHECK_FALSE(root.has("n"));
  CHECK(root.number_or("n", 7) == 7);
}

TEST_CASE("invalid JSON text names the origin")
{
  CHECK_THROWS_WITH_AS(JsonInput::parse_text("{\"a\": ", "bad.json"), doctest::Contains("bad.json: invalid JSON"),
                       InputError);
}

TEST_CASE("what JSON parsers pass silently or throw unmapped is one input error naming the file")
{
  // A number beyond double range: nlohmann throws out_of_range, not parse_error.
  for (const char* number : {"1e309", "-1e309", "1e999"})
    CHECK_THROWS_WITH_AS(JsonInput::parse_text(std::string("{\"a\": [") + number + "]}", "big.json"),
                         doctest::Contains("big.json: invalid JSON: number overflow"), InputError);
  // A key given twice would silently keep the last value.
  CHECK_THROWS_WITH_AS(JsonInput::parse_text(R"({"regions": [{"gpu": "A", "n": 1}, {"gpu": "B", "gpu": "C"}]})",
                                             "dup.json"),
                       "dup.json: regions[1].gpu: expected each key once in an object, got 'gpu' twice", InputError);
  CHECK_NOTHROW(JsonInput::parse_text(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})", "ok.json"));
  // Nesting without end is refused, not parsed at length.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH_AS(JsonInput::parse_text(deep, "deep.json"), doctest::Contains("deep.json: [0]"), InputError);
  CHECK_THROWS_WITH_AS(JsonInput::parse_text("{\"a\": NaN}", "nan.json"), doctest::Contains("nan.json: invalid JSON"),
                       InputError);
  CHECK_THROWS_WITH_AS(JsonInput::parse_text("{\"a\": \"\xff\"}", "utf.json"),
                       doctest::Contains("utf.json: invalid JSON"), InputError);
}

TEST_CASE("a user's string in a message stays on one line")
{
  CHECK(hetsim::quote("amp") == "'amp'");
  CHECK(hetsim::quote("a\nb\tc\x1b") == "'a\\nb\\tc\\x1b'");
  CHECK(hetsim::quote(std::string(200, 'x'), 10) == "'" + std::string(10, 'x') + "…'");
}

TEST_CASE("a user's key in a path and a long string value stay on one readable line")
{
  CHECK_THROWS_WITH_AS(JsonInput::parse_text("{\"a\\nb\": {\"x\": 1, \"x\": 2}}", "key.json"),
                       "key.json: ['a\\nb'].x: expected each key once in an object, got 'x' twice", InputError);
  const nlohmann::json doc = {{"tp", std::string(500, 'y') + "\n"}};
  JsonInput root(doc, "long.json");
  try {
    (void)root.at("tp").integer();
    FAIL("expected an input error");
  } catch (const hetsim::InputError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.size() < 200);
    CHECK(what.find("got string \"yyy") != std::string::npos);
  }
}
