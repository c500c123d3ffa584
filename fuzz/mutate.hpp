#pragma once
/// Seeded mutations of a JSON input file, the way a hostile user or a broken tool would write one: values
/// replaced by extremes of every type (1e309, -1, 2^31, NaN, a newline, 10,000 characters, deep nesting),
/// members dropped, duplicated or misspelt, elements added or dropped, and the text itself cut, flipped or
/// spliced. Same text and seed, same mutation.

#include <cstdint>
#include <random>
#include <string>

namespace hetsim::fuzz {

/// One to three mutations of `text`; JSON-aware when `text` parses, textual otherwise and now and then.
std::string mutate(const std::string& text, std::mt19937_64& random);

} // namespace hetsim::fuzz
