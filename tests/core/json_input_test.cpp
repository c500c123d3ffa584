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
