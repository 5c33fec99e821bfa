// herd::dist's entry points: start/stop (the keeper process owns the epmd
// registration; the listener accepts nodes), connections on demand, sends.
#include <herd/actors/detail/remote.hpp>
#include <herd/dist/term_registry.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/actors/spawn.hpp>
#include <herd/net/listener.hpp>
#include <herd/runtime/runtime.hpp>

#include <ei.h>
#include <mutex>
#include <unistd.h>

#include "cookie.hpp"
#include "epmd.hpp"
#include "gen_adapt.hpp"
#include "pg_scope.hpp"
#include "remote_pids.hpp"
#include "send_queue.hpp"
#include "state.hpp"
#include "term_node.hpp"

namespace herd::dist {

namespace detail {

dist_state& state() {
  static dist_state* s = new dist_state;  // outlives every process that may touch it
  return *s;
}

void sync_busy_wait(dist_state& st) {
  bool any_up = false;
  if (st.running)
    for (auto& [n, e] : st.conns) any_up = any_up || e.up;
  rt::set_busy_wait_floor(any_up ? st.busy_wait : std::chrono::microseconds{0});
}

namespace {

constexpr const char* listener_name = "herd_dist";

struct published_result {
  bool ok = false;
  uint32_t creation = 0;
  std::string why;
};

}  // namespace

namespace {

// The message's value as external term format bytes: etf as it is, a
// herd::term or a type with a registered encoder (term_registry.hpp)
// encoded here, in the sender's thread. nullopt (and a log line naming
// the type) for anything else.
std::optional<std::string> wire_bytes(herd::pid to, herd::detail::message* m) {
  std::string_view type(m->ops->name, m->ops->name_len);
  try {
    if (m->type == herd::detail::type_id<etf>) return std::move(m->as<etf>().bytes);
    if (m->type == herd::detail::type_id<herd::term>) return herd::term_to_binary(m->as<herd::term>());
    if (auto enc = herd::detail::find_term_encoder(m->type)) return herd::term_to_binary(enc(m->payload()));
    herd::log_report("herd::dist: a " + std::string(type) + " cannot be sent to " + to.to_string() +
                     " on another node: it has no term mapping (HERD_TERM_RECORD, or herd::enable_remote_send<T>() "
                     "for a herd::term_mapping specialization); dropped");
  } catch (const std::exception& e) {
    herd::log_report("herd::dist: a " + std::string(type) + " for " + to.to_string() +
                     " could not be encoded: " + e.what() + "; dropped");
  }
  return std::nullopt;
}

}  // namespace

bool hook_deliver(herd::pid to, herd::detail::message* m) noexcept {
  try {
    if (is_gen_reply(m)) return deliver_gen_reply(to, m);
    auto bytes = wire_bytes(to, m);
    herd::detail::destroy_message(m);
    return bytes && send_remote(to, std::move(*bytes));
  } catch (...) {
    return false;
  }
}

std::string pids_cap_why(uint32_t cap) {
  return "its frames and messages named more than " + std::to_string(cap) +
         " remote pids (dist_options::max_remote_pids_per_connection)";
}

namespace {

struct conn_caps {
  uint32_t atoms, pids;  // dist_options' per-connection caps, as the node runs with them
};

// Any thread: `node`'s connection process (if any) closes, for the reason
// why() words from the caps.
void close_connection_to(const std::string& node, std::string (*why)(const conn_caps&)) {
  herd::pid conn;
  conn_caps caps{};
  {
    rt::lock_guard g(state().mu);
    auto it = state().conns.find(node);
    if (it == state().conns.end()) return;
    conn = it->second.proc;
    caps = {state().max_atoms, state().max_pids};
  }
  herd::send(conn, close_connection{why(caps)});
}

}  // namespace

void close_if_pids_spent(uint32_t origin) {
  if (!origin || !pid_budget_tell(origin)) return;
  close_connection_to(node_name_of(origin), [](const conn_caps& c) { return pids_cap_why(c.pids); });
}

void close_for_atoms(const std::string& node) {
  close_connection_to(node, [](const conn_caps& c) {
    return "its messages made more than " + std::to_string(c.atoms) +
           " new atoms (dist_options::max_atoms_per_connection)";
  });
}

namespace {

// Owns the epmd registration (its socket) for the node's distribution
// lifetime; when it ends — stop(), or the node shutting down — distribution
// ends with it.
void keeper(herd::pid starter, std::string alive, uint16_t port, bool hidden) {
  struct reset {
    ~reset() {
      try {
        std::vector<herd::pid> conns;
        {
          rt::lock_guard g(state().mu);
          if (state().keeper != herd::self()) return;
          state().running = false;
          state().keeper = herd::no_pid;
          sync_busy_wait(state());
          for (auto& [n, e] : state().conns) conns.push_back(e.proc);
        }
        for (herd::pid c : conns) herd::send(c, close_connection{"distribution stopped"});
      } catch (...) {
      }
    }
  } on_exit;
  auto p = epmd_publish(alive, port, hidden);
  if (!p) {
    herd::send(starter, published_result{false, 0, p.error().message()});
    return;
  }
  herd::send(starter, published_result{true, p->creation, {}});
  (void)p->sock.set_active(net::active::once());
  herd::receive([](const close_connection&) {},
                [](const net::tcp_closed&) { herd::log_report("herd::dist: epmd closed our registration"); },
                [](const net::tcp_error&) { herd::log_report("herd::dist: epmd closed our registration"); });
}

bool valid_alive(std::string_view a) {
  if (a.empty() || a.size() > 255) return false;
  for (char c : a)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

result<std::string> node_name(const dist_options& o) {
  if (!o.sname.empty() == !o.name.empty()) return error{errc::bad_options, "give exactly one of sname and name"};
  std::string n = o.sname.empty() ? o.name : o.sname;
  auto at = n.find('@');
  if (at == std::string::npos) {
    if (!o.name.empty()) return error{errc::bad_options, "a long name needs a host: " + n};
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string h = host;
    h = h.substr(0, h.find('.'));
    n += "@" + h;
    at = n.find('@');
  }
  if (!valid_alive(std::string_view(n).substr(0, at)) || at + 1 >= n.size())
    return error{errc::bad_options, "bad node name \"" + n + "\" (letters, digits, _ and - before the @)"};
  return n;
}

}  // namespace

conn_entry& start_initiator(std::string_view node) {
  auto c = std::make_shared<conn_counters>();
  herd::pid p = herd::spawn([n = std::string(node), c] { initiate(n, c); });
  return state().conns.emplace(std::string(node), conn_entry{p, false, true, 0, {}, c}).first->second;
}

herd::pid connection_for(std::string_view node) {
  if (node.find('@') == std::string_view::npos || !herd::in_process()) return herd::no_pid;
  rt::lock_guard g(state().mu);
  if (!state().running || node == state().me.name) return herd::no_pid;
  auto it = state().conns.find(node);
  if (it != state().conns.end()) return it->second.proc;
  return start_initiator(node).proc;
}

}  // namespace detail

using namespace detail;

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::bad_options: return "bad_options";
    case errc::cookie: return "cookie";
    case errc::epmd: return "epmd";
    case errc::already: return "already";
    case errc::not_started: return "not_started";
    case errc::no_node: return "no_node";
    case errc::connect: return "connect";
    case errc::handshake: return "handshake";
    case errc::not_allowed: return "not_allowed";
    case errc::timeout: return "timeout";
  }
  return "unknown";
}

std::string error::message() const { return herd::detail::code_and_detail(to_string(code), detail); }

result<std::string> start(const dist_options& o) {
  herd::detail::require_process("herd::dist::start");
  // ei asks for one ei_init before use. herd uses only ei's encoders and
  // decoders, which keep no state; its connection code (the part with
  // per-process tables) is not used.
  static std::once_flag ei_ready;
  std::call_once(ei_ready, [] { ei_init(); });
  auto name = node_name(o);
  if (!name) return name.error();
  if (o.net_ticktime.count() < 4) return error{errc::bad_options, "net_ticktime below 4 ms"};
  if (o.busy_wait.count() < 0 || o.busy_wait > rt::max_busy_wait)
    return error{errc::bad_options, "busy_wait must be from 0 to " + std::to_string(rt::max_busy_wait.count()) +
                                        " us, not " + std::to_string(o.busy_wait.count()) + " us"};
  std::string cookie = o.cookie;
  if (cookie.empty()) {
    auto c = herd::blocking([] { return read_cookie_file(default_cookie_path()); });
    if (!c) return c.error();
    cookie = *c;
  }
  {
    rt::lock_guard g(state().mu);
    if (state().running || state().keeper) return error{errc::already, "distribution already runs as " + state().me.name};
  }
  net::listener_options lo;
  lo.port = o.port;
  lo.handshake_timeout = std::chrono::seconds(10);
  auto l = net::start_listener(listener_name, lo, [](net::tcp_socket s) { accept_node(std::move(s)); });
  if (!l) return error{errc::connect, "listen: " + l.error().message()};
  std::string alive = name->substr(0, name->find('@'));
  {
    // Spawned under the lock, so that the keeper is known as such before it
    // can end (its exit clears the state only if it is still the keeper).
    rt::lock_guard g(state().mu);
    state().keeper = herd::spawn([me = herd::self(), alive, port = l->port, hidden = o.hidden] {
      keeper(me, alive, port, hidden);
    });
  }
  published_result pub;
  herd::receive([&](published_result& r) { pub = std::move(r); });
  if (!pub.ok) {
    (void)net::stop_listener(listener_name);
    rt::lock_guard g(state().mu);
    state().keeper = herd::no_pid;
    return error{errc::epmd, pub.why};
  }
  uint64_t flags = dflag_mandatory | dflag_dist_monitor | dflag_dist_monitor_name | dflag_unicode_io |
                   dflag_small_atom_tags | dflag_send_sender | dflag_big_seqtrace_labels | dflag_v4_nc | dflag_unlink_id |
                   dflag_exit_payload |
                   (o.hidden ? 0 : dflag_published);
  {
    rt::lock_guard g(state().mu);
    state().me = identity{*name, cookie, pub.creation, flags};
    state().self = self_id{*name, pub.creation};
    state().ticktime = o.net_ticktime;
    state().max_atoms = o.max_atoms_per_connection;
    state().max_pids = o.max_remote_pids_per_connection;
    state().busy_limit = o.dist_buf_busy_limit;
    state().busy_wait = o.busy_wait;
    state().running = true;
  }
  install_remote_hooks();
  herd::detail::set_remote_nodes_source(&nodes_report);
  start_pg_sync();
  return *name;
}

void stop() {
  herd::detail::require_process("herd::dist::stop");
  herd::pid k;
  std::vector<herd::pid> conns;
  {
    rt::lock_guard g(state().mu);
    k = state().keeper;
    for (auto& [n, e] : state().conns) conns.push_back(e.proc);
  }
  if (!k) return;
  stop_pg_sync();  // while the connections last, so peers hear of it in order
  (void)net::stop_listener(listener_name);
  std::vector<herd::monitor_ref> refs;
  for (herd::pid c : conns) refs.push_back(herd::monitor(c));
  refs.push_back(herd::monitor(k));
  herd::send(k, close_connection{"stop"});
  // The keeper's exit closes the connections; wait until each has ended (its
  // nodedown sent) so that stop() returning means distribution is over.
  for (std::size_t left = refs.size(); left > 0;)
    herd::receive(herd::when([&](const herd::down& d) { return std::find(refs.begin(), refs.end(), d.ref) != refs.end(); },
                             [&](const herd::down&) { --left; }),
                  herd::after(std::chrono::seconds(10), [&] { left = 0; }));
}

std::string this_node() {
  rt::lock_guard g(state().mu);
  return state().running ? state().me.name : std::string();
}

std::vector<std::string> nodes() {
  rt::lock_guard g(state().mu);
  std::vector<std::string> out;
  for (auto& [n, e] : state().conns)
    if (e.up) out.push_back(n);
  return out;
}

result<> connect(std::string_view node, std::chrono::milliseconds timeout) {
  herd::detail::require_process("herd::dist::connect");
  if (node.find('@') == std::string_view::npos) return error{errc::bad_options, "not a node name: " + std::string(node)};
  {
    rt::lock_guard g(state().mu);
    if (!state().running) return error{errc::not_started, {}};
    if (node == state().me.name) return {};
    auto it = state().conns.find(node);
    if (it != state().conns.end() && it->second.up) return {};
    conn_entry& e = it == state().conns.end() ? start_initiator(node) : it->second;
    e.waiters.push_back(herd::self());
  }
  result<> out = error{errc::timeout, "no connection to " + std::string(node) + " within the timeout"};
  herd::receive(herd::when([&](const connect_result& r) { return r.node == node; },
                           [&](connect_result& r) {
                             if (r.ok) out = {};
                             else out = error{r.code, r.why};
                           }),
                herd::after(timeout, [&] {
                  rt::lock_guard g(state().mu);
                  auto it = state().conns.find(node);
                  if (it != state().conns.end()) std::erase(it->second.waiters, herd::self());
                }));
  return out;
}

bool ping(std::string_view node, std::chrono::milliseconds timeout) {
  if (!connect(node, timeout)) return false;
  route r;
  {
    rt::lock_guard g(state().mu);
    auto it = state().conns.find(node);
    if (it == state().conns.end()) return false;
    r.conn = it->second.proc;
    r.q = it->second.counters;
    r.me = state().self;
  }
  std::string ref;
  std::string call = is_auth_call(r.me, herd::self(), ref);
  enqueue(r, frame_reg_send(r.me, herd::self(), "net_kernel", call));
  bool pong = false;
  herd::receive(herd::when([&](const etf_message& m) { return is_auth_yes(m.bytes, ref); },
                           [&](const etf_message&) { pong = true; }),
                herd::after(timeout, [] {}));
  return pong;
}

void monitor_node(std::string_view node, bool on) {
  herd::detail::require_process("herd::dist::monitor_node");
  herd::pid me = herd::self();
  {
    rt::lock_guard g(state().mu);
    if (on) {
      if (state().conns.count(node)) {
        state().node_monitors.emplace(std::string(node), me);
        return;
      }
    } else {
      auto [b, e] = state().node_monitors.equal_range(node);
      for (auto it = b; it != e; ++it)
        if (it->second == me) {
          state().node_monitors.erase(it);
          break;
        }
      return;
    }
  }
  herd::send(me, nodedown{std::string(node)});  // no connection: down at once, as Erlang
}

void monitor_nodes(bool on) {
  herd::detail::require_process("herd::dist::monitor_nodes");
  rt::lock_guard g(state().mu);
  auto& ws = state().all_node_monitors;
  if (on) ws.push_back(herd::self());
  else if (auto it = std::find(ws.begin(), ws.end(), herd::self()); it != ws.end()) ws.erase(it);
}

bool send(herd::pid to, std::string etf_bytes) {
  if (to.is_remote()) return send_remote(to, std::move(etf_bytes));
  herd::pid from = herd::in_process() ? herd::self() : herd::no_pid;
  return herd::detail::deliver(to, herd::detail::make_message<etf_message>(etf_message{from, std::move(etf_bytes)}));
}

bool send(std::string_view name, std::string_view node, std::string etf_bytes) {
  self_id me;
  {
    rt::lock_guard g(state().mu);
    if (!state().running) return false;
    me = state().self;
  }
  herd::pid from = herd::in_process() ? herd::self() : herd::no_pid;
  if (node == me.name) return herd::send(name, etf_message{from, std::move(etf_bytes)});
  auto r = route_with_room(node);
  if (!r) {
    // Not from a process (no connection is started there): only an existing one.
    rt::lock_guard g(state().mu);
    auto it = state().conns.find(node);
    if (it == state().conns.end()) return false;
    r = route{it->second.proc, it->second.counters, false, me, 0};
  }
  enqueue(*r, frame_reg_send(me, from, name, etf_bytes));
  return true;
}

std::optional<remote_pid> describe(herd::pid p) {
  if (p.is_remote()) return lookup_remote(p);
  rt::lock_guard g(state().mu);
  if (!state().running || !p.valid()) return std::nullopt;
  return remote_pid{state().me.name, p.index, p.generation, state().me.creation};
}

herd::term_result<herd::term> etf_message::term(const herd::decode_options& o) const {
  herd::detail::atom_budget* b = origin ? node_atom_budget(origin) : nullptr;
  herd::term_result<herd::term> t = [&] {
    herd::detail::atom_charge_scope charge(b);
    herd::detail::pid_origin_scope pids(origin);  // mapped later, its pids charge `origin`
    return herd::binary_to_term(bytes, o);
  }();
  // The first decode that finds the sender's share spent closes its
  // connection (after the scope: a send may switch fibers).
  if (!t && b && b->spent.load(std::memory_order_acquire) && !b->told.exchange(true))
    close_for_atoms(node_name_of(origin));
  return t;
}

etf_message::pid_charge::pid_charge(uint32_t origin) noexcept : prev_(detail::swap_pid_charge(origin)) {}
etf_message::pid_charge::~pid_charge() { detail::swap_pid_charge(prev_); }

void etf_message::pids_refused() const {
  // After the scope: a send may switch fibers.
  detail::close_if_pids_spent(origin);
}

herd::pid intern(const remote_pid& r) {
  {
    rt::lock_guard g(state().mu);
    if (state().running && r.node == state().me.name && r.creation == state().me.creation)
      return r.id < remote_pid_bit ? herd::pid{r.id, r.serial} : herd::no_pid;
  }
  return intern_remote(r);
}

}  // namespace herd::dist

namespace herd {

term term_mapping<herd::pid>::to(const herd::pid& p) {
  if (auto r = dist::describe(p)) return term::pid(erl_pid{atom(r->node), r->id, r->serial, r->creation});
  // No distribution (or no_pid): this node as Erlang calls an undistributed one.
  return term::pid(erl_pid{atom("nonode@nohost"), p.index, p.generation, 0});
}

bool term_mapping<herd::pid>::from(const term& t, herd::pid& out, std::string& why) {
  if (!t.is_pid()) {
    why = detail::expected("a pid", t);
    return false;
  }
  const erl_pid& e = t.as_pid();
  if (e.node == atom("nonode@nohost") && dist::this_node().empty()) {
    if (e.id >= remote_pid_bit) {
      why = "a local pid's id out of range: " + to_string(t);
      return false;
    }
    out = herd::pid{e.id, e.serial};
    return true;
  }
  // A pid decoded from a peer's message charges that connection (it came
  // by it), even from a bare term: without a scope open (etf_message::as)
  // it opens its own, and closes the connection itself on a refusal.
  const uint32_t scoped = dist::detail::pid_charge_of_thread(), carried = detail::pid_origin_of(t);
  const uint32_t charge = carried ? carried : scoped;
  bool refused;
  {
    dist::detail::pid_charge_scope scope(charge);
    out = dist::intern(dist::remote_pid{std::string(e.node.text()), e.id, e.serial, e.creation});
    refused = !out.valid() && charge && dist::detail::charge_refused();
  }
  if (!refused) return true;
  why = "the sender's remote pids are past dist_options::max_remote_pids_per_connection: " + to_string(t);
  // Within as<T>() its pids_refused() closes the connection, after the
  // scope (a send may switch fibers).
  if (!scoped) dist::detail::close_if_pids_spent(charge);
  return false;
}

}  // namespace herd
