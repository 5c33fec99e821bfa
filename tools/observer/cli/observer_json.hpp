// The JSON type of the whole client: ordered_json keeps the node's field
// order, so --json prints the result object as the node sent it.
#pragma once
#include <nlohmann/json.hpp>

namespace observer_cli {
using json = nlohmann::ordered_json;
}  // namespace observer_cli
