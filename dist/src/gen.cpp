// gen_server across nodes (gen.hpp): herd::server answering Erlang's
// '$gen_call' / '$gen_cast', and herd calling any node's gen_server.
//
// A remote caller's Tag (any term: OTP 25 sends [alias | Ref]) does not fit
// herd::from's 64-bit ref, so the call is parked in a node-wide table under a
// fresh key, and from = {remote caller pid, key}. The server's reply is a
// reply_envelope<herd::term> to that remote pid; the send hook gives it to
// deliver_gen_reply, which takes the Tag back out and sends {Tag, Reply}.
#include <herd/actors/call.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/send.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>
#include <herd/dist/term_codec.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <atomic>
#include <cstring>
#include <set>
#include <unordered_map>

#include "gen_adapt.hpp"
#include "remote_pids.hpp"
#include "state.hpp"
#include "term_node.hpp"

namespace herd::dist {

namespace detail {

namespace {

struct parked_call {
  std::string tag;   // the caller's Tag, encoded without 131
  std::string node;  // the caller's node: forgotten when its connection ends
};

struct gen_table {
  herd::rt::mutex mu;
  std::set<herd::pid> exported HERD_GUARDED_BY(mu);
  std::unordered_map<uint64_t, parked_call> parked HERD_GUARDED_BY(mu);
  uint64_t next_key HERD_GUARDED_BY(mu) = 1;
  std::atomic<std::size_t> exported_count{0};  // no exports: the connection's path stays as it was
};

gen_table& table() {
  static gen_table* t = new gen_table;  // outlives every process that may touch it
  return *t;
}

const herd::atom& gen_call_atom() {
  static const herd::atom a("$gen_call");
  return a;
}
const herd::atom& gen_cast_atom() {
  static const herd::atom a("$gen_cast");
  return a;
}

bool is_exported(herd::pid p) {
  gen_table& t = table();
  if (t.exported_count.load(std::memory_order_acquire) == 0) return false;
  herd::rt::lock_guard g(t.mu);
  return t.exported.count(p) != 0;
}

herd::pid pid_of(const herd::erl_pid& p) {
  return intern(remote_pid{std::string(p.node.text()), p.id, p.serial, p.creation});
}

// Only when it has to: the payload's first bytes must name '$gen_call' or
// '$gen_cast' (131, a tuple, the atom) before it is decoded at all.
bool looks_gen(std::string_view payload) {
  return payload.size() > 12 && payload[0] == char(131) && (payload[1] == 'h') &&
         (payload.find("$gen_ca") != std::string_view::npos);
}

}  // namespace

bool deliver_gen(herd::pid to, herd::pid from, std::string_view payload, const std::string& node) {
  (void)from;
  if (!looks_gen(payload) || !to.valid() || to.is_remote() || !is_exported(to)) return false;
  const uint32_t origin = node_number(node);
  auto t = [&] {
    // New atoms in a request come out of the connection's share.
    herd::detail::atom_charge_scope charge(node_atom_budget(origin));
    herd::detail::pid_origin_scope pids(origin);  // a handler mapping the request's pids charges the connection
    return binary_to_term(payload);
  }();
  if (!t || !t->is_tuple() || t->size() < 2) return false;
  const herd::term& m = *t;
  if (m[0].is_atom(gen_cast_atom()) && m.size() == 2) {
    herd::send(to, herd::cast_request<herd::term>{m[1]});
    return true;
  }
  if (!m[0].is_atom(gen_call_atom()) || m.size() != 3 || !m[1].is_tuple() || m[1].size() != 2 || !m[1][0].is_pid())
    return false;
  // The caller's pid counts against the connection's remote pid cap, as
  // the frame's own pids do. Past it the call is dropped (consumed, so not
  // delivered as a plain message either); the connection sees its budget
  // spent after this frame and closes.
  herd::pid caller;
  bool refused = false;
  {
    pid_charge_scope charge(origin);
    caller = pid_of(m[1][0].as_pid());
    refused = !caller.valid() && charge_refused();
  }
  if (refused) return true;
  std::string tag;
  encode_term(m[1][1], tag);
  uint64_t key;
  {
    gen_table& g = table();
    herd::rt::lock_guard l(g.mu);
    key = g.next_key++;
    g.parked.emplace(key, parked_call{std::move(tag), node});
  }
  herd::send(to, herd::call_request<herd::term>{herd::from{caller, key}, m[2]});
  return true;
}

bool deliver_gen(std::string_view name, herd::pid from, std::string_view payload, const std::string& node) {
  if (table().exported_count.load(std::memory_order_acquire) == 0 || !looks_gen(payload)) return false;
  auto to = herd::whereis(name);
  return to && deliver_gen(*to, from, payload, node);
}

bool is_gen_reply(const herd::detail::message* m) noexcept {
  return m->type == herd::detail::type_id<herd::reply_envelope<herd::term>>;
}

bool deliver_gen_reply(herd::pid to, herd::detail::message* m) noexcept {
  try {
    auto& e = m->as<herd::reply_envelope<herd::term>>();
    std::optional<parked_call> c;
    {
      gen_table& g = table();
      herd::rt::lock_guard l(g.mu);
      auto it = g.parked.find(e.ref);
      if (it != g.parked.end()) {
        c = std::move(it->second);
        g.parked.erase(it);
      }
    }
    if (!c) {  // answered twice, or its connection is gone
      herd::detail::destroy_message(m);
      return false;
    }
    std::string bytes = "\x83\x68\x02" + c->tag;
    encode_term(e.value, bytes);
    herd::detail::destroy_message(m);
    return herd::dist::send(to, std::move(bytes));
  } catch (...) {
    herd::detail::destroy_message(m);
    return false;
  }
}

void forget_gen_calls(const std::string& node) noexcept {
  try {
    gen_table& g = table();
    herd::rt::lock_guard l(g.mu);
    std::erase_if(g.parked, [&](const auto& kv) { return kv.second.node == node; });
  } catch (...) {
  }
}

}  // namespace detail

bool export_server(herd::pid server) {
  if (!server.valid() || server.is_remote()) return false;
  detail::gen_table& t = detail::table();
  herd::rt::lock_guard g(t.mu);
  if (t.exported.insert(server).second) t.exported_count.fetch_add(1, std::memory_order_release);
  return true;
}

}  // namespace herd::dist
