#include "core/byte_size.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

TEST_CASE("byte sizes: a number and its unit, binary or decimal")
{
  CHECK(parse_byte_size("30GiB", "--memory-limit") == 30.0 * (1ull << 30));
  CHECK(parse_byte_size("16 GB", "--memory-limit") == 16e9);
  CHECK(parse_byte_size("0.5MiB", "--memory-limit") == 512.0 * 1024);
  CHECK(parse_byte_size("1e3KB", "--memory-limit") == 1e6);
  CHECK(parse_byte_size("2TiB", "--memory-limit") == 2.0 * (1ull << 40));
  CHECK(parse_byte_size("0GiB", "--workspace", true) == 0);
}

TEST_CASE("byte sizes: a bare number, an unknown unit, zero or a negative size is refused, naming the option")
{
  for (const char* text : {"30", "30 gib", "30GiBs", "GiB", "-1GiB", "0GiB", "1e999GiB", "nanGiB", "3..0GB", ""}) {
    CAPTURE(text);
    try {
      parse_byte_size(text, "--memory-limit");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).rfind("--memory-limit: expected a size with a unit", 0) == 0);
    }
  }
}
