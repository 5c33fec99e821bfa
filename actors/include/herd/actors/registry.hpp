// Registered names, as Erlang's register/unregister/whereis. A process has at
// most one name; the name is released when the process exits. Any thread.
#pragma once
#include <herd/actors/pid.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd {

// False if the name is taken by a live process (one whose exit has begun no
// longer holds it), p is dead, or p already has a name.
bool register_name(std::string_view name, pid p);
// False if nothing is registered under the name.
bool unregister_name(std::string_view name);
std::optional<pid> whereis(std::string_view name);
// The name a live process is registered under (process_info(P, registered_name)).
std::optional<std::string> registered_name(pid p);
std::vector<std::pair<std::string, pid>> registered();

}  // namespace herd
