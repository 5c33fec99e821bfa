// The one check behind every process-only call (see the rule in
// <herd/actors/process.hpp>): the caller gets an exception it can catch and a
// test can check, never an abort, and the message is worded the same way for
// every call, so a user who meets it once recognises it everywhere.
#include <herd/actors/process.hpp>

#include "node_state.hpp"
#include "process.hpp"

#include <pthread.h>

#include <string>

namespace herd {
namespace {

std::string describe_outside(const char* call) {
  char name[32] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0]) name[0] = '?', name[1] = 0;
  std::string s = std::string(call) + ": called outside a herd process (on thread '" + name + "'";
  if (!detail::current_node()) s += ", and no node is running";
  s += "); run this code in a process started by herd::node::run or herd::spawn";
  return s;
}

}  // namespace

not_in_process::not_in_process(const char* call) : std::logic_error(describe_outside(call)), call_(call) {}

bool in_process() noexcept { return detail::self_process() != nullptr; }

}  // namespace herd

namespace herd::detail {

process* require_process(const char* call) {
  process* p = self_process();
  if (!p) throw not_in_process(call);
  return p;
}

}  // namespace herd::detail
