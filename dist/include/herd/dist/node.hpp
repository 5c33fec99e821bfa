// herd::dist — this node as a member of an Erlang cluster, over Erlang's own
// distribution protocol (epmd, the version 6 handshake with cookies, the
// distribution header "pass-through" frames and ticks).
//
//   herd::node n;
//   n.run([] {
//     auto me = herd::dist::start({.sname = "gw"});      // gw@<host>, cookie from ~/.erlang.cookie
//     if (!me) return herd::log_report(me.error().message());
//     herd::register_name("echo", herd::self());
//     herd::receive([](herd::dist::etf_message& m) {     // from any node
//       herd::dist::send(m.from, std::move(m.bytes));
//     });
//   });
//
// One connection per node pair, carried by one herd process (no thread per
// connection): it owns the socket, reads frames and hands messages to local
// processes, and writes what local senders queued for that node (its
// mailbox is the single writer queue; see docs/distribution.md).
//
// What crosses: herd::term, a type with the term trait (HERD_TERM_RECORD,
// term_convert.hpp) and raw external term format bytes (etf). A receiver
// gets etf_message and decodes it when (and as) it wants: m.term(),
// m.as<T>() — on its own worker, not the connection's.
#pragma once
#include <herd/actors/pid.hpp>
#include <herd/actors/result.hpp>
#include <herd/actors/send.hpp>
#include <herd/dist/term_codec.hpp>
#include <herd/dist/term_convert.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd::dist {

enum class errc : uint8_t {
  bad_options,   // a node name or option that does not parse
  cookie,        // no usable cookie (a file others can read, ...)
  epmd,          // epmd cannot be reached or started, or refused the name
  already,       // start: distribution already runs
  not_started,   // start has not been called (or stop has)
  no_node,       // epmd does not know the node / its host does not resolve
  connect,       // the TCP connection failed
  handshake,     // the peer broke off or spoke something else
  not_allowed,   // cookies differ (or the peer refused us)
  timeout,
};

const char* to_string(errc e) noexcept;

struct error {
  errc code;
  std::string detail{};
  std::string message() const;
};

template <class T = herd::ok>
using result = herd::result<T, error>;

struct dist_options {
  std::string sname;    // "gw" -> gw@<this host's short name>
  std::string name;     // or a long name, "gw@host.example.com"
  std::string cookie;   // empty: ~/.erlang.cookie (created if missing, as erl does)
  // A connection that has received nothing for this long is dropped (ticks
  // are sent every quarter of it). Erlang's net_ticktime.
  std::chrono::milliseconds net_ticktime{60000};
  bool hidden = false;  // true: BEAM nodes list us in nodes(hidden) only
  uint16_t port = 0;    // the port to listen on; 0: any
  // New atoms the messages of one connection may add to the node-wide atom
  // table (atom::max_atoms(), as BEAM's) when decoded with etf_message::term()
  // and in the connection's own frames. Past it such a decode fails
  // (atom_table_full, "share ... spent") and the connection closes; the
  // next connection from that node starts afresh. 0: no share, the
  // node-wide limit only.
  uint32_t max_atoms_per_connection = 65536;
  // Remote pids the frames of one connection may make this node hold (the
  // senders, linkers and monitors its frames name, each an entry of the
  // remote pid table until the connection ends or, for pids of other nodes,
  // until unused). Past it the frame is dropped and the connection closes
  // with a log line. 0: no cap.
  uint32_t max_remote_pids_per_connection = 1u << 20;
  // Erlang's dist_buf_busy_limit: with this many bytes queued for a
  // connection, a process sending to that node waits (parked, its worker
  // free) until the connection has written them down below it, or ends.
  // Threads that are not processes never wait. 0: never wait.
  std::size_t dist_buf_busy_limit = std::size_t(1) << 20;
  // While at least one node connection is up, an idle worker looks for work
  // this long before it sleeps (rt::set_busy_wait_floor; the node's own
  // node_options::busy_wait when that is longer), as BEAM's schedulers do by
  // default: a call between nodes then costs no kernel wake-up on either side
  // (on this project's VM a wake-up is most of a loopback round trip). It is
  // CPU: up to this much per idle gap. 0: off. At most rt::max_busy_wait,
  // else start() fails with bad_options. docs/distribution.md.
  std::chrono::microseconds busy_wait{50};
};

// Payload of a message from another node, as the local receiver gets it.
// `from` is the sender (a remote pid) when the frame names it, else no_pid.
struct etf_message {
  herd::pid from;
  std::string bytes;  // one term in the external term format, with its 131
  // The node it came from, by its number here (0: a local send): new atoms
  // that term() makes are charged to that connection (max_atoms_per_connection),
  // and so are the new remote pids that as<T>() interns
  // (max_remote_pids_per_connection).
  uint32_t origin = 0;

  // The term, decoded now (each call decodes again: keep the result). The
  // decoder is bounded (term_codec.hpp): a malformed or hostile payload is
  // an error value, never a read past the bytes. Its pids map to herd::pid
  // through herd::to_term / from_term<herd::pid> (below).
  herd::term_result<herd::term> term(const herd::decode_options& o = {}) const;
  // The payload as a C++ type with the term trait (from_term's mismatch
  // error says where it differs). A herd::pid in it past the sender's
  // max_remote_pids_per_connection is a mismatch, and closes its connection.
  template <class T>
  herd::term_result<T> as(const herd::decode_options& o = {}) const {
    auto t = term(o);
    if (!t) return t.error();
    auto r = [&] {
      pid_charge c(origin);
      return herd::from_term<T>(*t);
    }();
    if (!r) pids_refused();
    return r;
  }

 private:
  // While open on a thread, the remote pids interned there count against
  // `origin`'s connection. Mapping does not suspend, so a thread-local is
  // safe; the scope must not span a send (so a term_mapping's from() must
  // not send or block, which none of herd's does).
  class pid_charge {
   public:
    explicit pid_charge(uint32_t origin) noexcept;
    ~pid_charge();
    pid_charge(const pid_charge&) = delete;
    pid_charge& operator=(const pid_charge&) = delete;

   private:
    uint32_t prev_;
  };
  // After a failed mapping: the first to find the cap reached closes the
  // sender's connection.
  void pids_refused() const;
};

// herd::send to a remote pid takes this type, herd::term, or a type with
// the term trait (see term_registry.hpp); anything else is dropped with a
// logged error naming its type.
struct etf {
  std::string bytes;
};

// {Name, Node} as a destination: herd::send(name_at{"echo", "beam@h"}, msg).
struct name_at {
  std::string name;
  std::string node;
};

// Sent to monitor_node and monitor_nodes holders.
struct nodedown {
  std::string node;
};
// Sent to monitor_nodes holders when a connection to a node is up.
struct nodeup {
  std::string node;
};

// From a process. Publishes the node to epmd (starting `epmd -daemon` when
// none answers, as erl does), listens for other nodes, and returns the node's
// name. Distribution stops with stop() or when the node ends.
result<std::string> start(const dist_options& o);
// From a process. Closes every connection (each monitor_node holder gets
// nodedown) and unpublishes.
void stop();

// Any thread: "gw@host", or "" when not started.
std::string this_node();
// Any thread: the connected nodes.
std::vector<std::string> nodes();

// From a process: connects unless connected (a blocking point).
result<> connect(std::string_view node, std::chrono::milliseconds timeout = std::chrono::seconds(10));
// From a process: net_adm:ping — true on pong.
bool ping(std::string_view node, std::chrono::milliseconds timeout = std::chrono::seconds(10));
// From a process: the caller gets nodedown{node} when the connection to
// `node` goes down (at once if there is none: connect first); `false`
// removes one such request. Connection-up is not waited for.
void monitor_node(std::string_view node, bool on);
// From a process: net_kernel:monitor_nodes — the caller gets nodeup{node}
// for every connection that comes up and nodedown{node} for every one that
// goes after it was up, until monitor_nodes(false) (once per true; a holder
// that ends without it stays listed, and its messages are dropped).
void monitor_nodes(bool on);

// Any thread. To a remote pid: queued on the connection to its node
// (connecting on first use from a process). To a local pid: delivered as an
// etf_message. False when it cannot go (no such node, not started, dead pid).
bool send(herd::pid to, std::string etf_bytes);
// To a process registered as `name` on `node` ({name, node} ! Msg).
bool send(std::string_view name, std::string_view node, std::string etf_bytes);

// Any thread: what a pid is as Erlang sees it (a local one too, while
// distribution runs: this node's name and creation), for encoding it.
struct remote_pid {
  std::string node;
  uint32_t id = 0;
  uint32_t serial = 0;
  uint32_t creation = 0;
};
std::optional<remote_pid> describe(herd::pid p);
// Any thread: the herd::pid of a process on `node` (interned: the same
// process always gives the same pid). Local pids come back as themselves.
herd::pid intern(const remote_pid& r);

}  // namespace herd::dist

namespace herd {

// A pid in a term is Erlang's (node, id, serial, creation); herd::pid maps
// to it while distribution runs (a local pid as this node's), and back —
// a remote one interned, see herd::dist::intern. Without distribution a
// local pid encodes as nonode@nohost's.
template <>
struct term_mapping<herd::pid> {
  static term to(const herd::pid& p);
  static bool from(const term& t, herd::pid& out, std::string& why);
};

// {Name, Node} ! Msg. Msg is herd::dist::etf, herd::term or a type with the
// term trait (a compile error otherwise); to this node's own name it is a
// local send of the value itself. False when it cannot go (not started, no
// such node; as herd::send(name, ...) for a local name nobody holds).
template <class T>
bool send(const dist::name_at& to, T&& msg) {
  using V = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<V, dist::etf>) {
    return dist::send(to.name, to.node, std::forward<T>(msg).bytes);  // to this node: an etf_message
  } else {
    if (!to.node.empty() && to.node == dist::this_node()) return send(std::string_view(to.name), std::forward<T>(msg));
    if constexpr (std::is_same_v<V, herd::term>) return dist::send(to.name, to.node, term_to_binary(msg));
    else return dist::send(to.name, to.node, term_to_binary(to_term(msg)));
  }
}

}  // namespace herd
