// The messages between the API (supervisor_api.cpp) and the supervisor
// process: herd::call requests (answered with herd::reply), the start_link
// handshake, and the retry a supervisor sends itself when a restart failed.
// A named namespace: message types are identified by their names.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/supervisors/child_spec.hpp>
#include <herd/supervisors/result.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace herd::supervisor::detail::req {

struct start_spec { child_spec spec; };          // -> result<pid>
struct start_args { child_args args; };          // -> result<pid>
struct terminate { std::string id; pid child; }; // -> result<>   (child: by pid when valid)
struct restart { std::string id; };              // -> result<pid>
struct remove { std::string id; };               // -> result<>
struct which {};                                 // -> std::vector<child_info>
struct count {};                                 // -> child_counts
struct tree { std::size_t max; };                // -> tree_children (the observer)

// start_link's handshake: sent to the parent once the children are started.
struct init_ack {
  pid sup;
  bool ok;
  supervisor::error err;
};

// A restart that failed to start the child: try again (OTP's try_again_restart).
struct try_again {
  uint64_t key;
};

}  // namespace herd::supervisor::detail::req
