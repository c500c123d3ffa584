#pragma once
/// Test helper: the message of the InputError a call throws, so tests can check it names file and JSON path.

#include "core/error.hpp"

#include <doctest/doctest.h>

#include <string>

namespace hetsim::models::test {

template <class F> std::string input_error_of(F&& call)
{
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return "";
}

} // namespace hetsim::models::test
