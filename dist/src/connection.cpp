// One process per connected node. It owns the socket ({active, once}), so it
// alone reads and writes it:
//   - reads: frames are cut from the byte stream and handed to local
//     processes as etf_message (or answered here: net_kernel's is_auth);
//   - writes: local senders put whole frames in its mailbox (out_frame) —
//     the mailbox is the connection's single writer queue, lock-free for the
//     senders; the process appends what has arrived to one buffer and writes
//     it with try_send when its mailbox runs dry (or 256 KiB are pending), so
//     a burst of small sends costs few system calls. What the kernel refuses
//     stays buffered until the socket's tcp_writable (notify_writable) while
//     reading goes on:
//     two herd nodes writing to each other never both block in a write;
//   - ticks: every net_ticktime/4 it writes a tick if it wrote nothing since,
//     and gives up on a peer silent for net_ticktime.
// When it ends, for whatever reason (the peer went away, stop(), the node's
// shutdown unwinding it), its entry is removed and monitor_node holders get
// nodedown.
#include <herd/actors/links.hpp>
#include <herd/actors/logger.hpp>
#include <herd/actors/registry.hpp>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/dist/term_codec.hpp>

#include <algorithm>
#include <map>

#include "bytes.hpp"
#include "conn_links.hpp"
#include "epmd.hpp"
#include "gen_adapt.hpp"
#include "remote_pids.hpp"
#include "state.hpp"
#include "term_node.hpp"

namespace herd::dist::detail {

namespace {

using namespace std::chrono;
using clk = steady_clock;

constexpr std::size_t batch_bytes = 256 * 1024;
constexpr milliseconds handshake_timeout{10000};

void log(const std::string& s) { herd::log_report("herd::dist: " + s); }

// This process now carries `peer`'s connection; false when another one took
// the node over meanwhile.
bool mark_up(const peer_info& peer) {
  dist_state& st = state();
  std::vector<herd::pid> waiters, watchers;
  {
    rt::lock_guard g(st.mu);
    auto it = st.conns.find(peer.name);
    if (it == st.conns.end() || it->second.proc != herd::self()) return false;
    it->second.up = true;
    it->second.peer_flags = peer.flags;
    sync_busy_wait(st);
    waiters.swap(it->second.waiters);
    watchers = st.all_node_monitors;
  }
  for (herd::pid w : waiters) herd::send(w, connect_result{peer.name, true, {}});
  for (herd::pid w : watchers) herd::send(w, nodeup{peer.name});
  return true;
}

// Noexcept and non-blocking: runs while the process unwinds.
void mark_down(const std::string& node, errc code, const std::string& why) noexcept {
  try {
    dist_state& st = state();
    std::vector<herd::pid> waiters, watchers;
    {
      rt::lock_guard g(st.mu);
      auto it = st.conns.find(node);
      if (it == st.conns.end() || it->second.proc != herd::self()) return;
      waiters.swap(it->second.waiters);
      if (it->second.up) watchers = st.all_node_monitors;  // nodeup was sent
      st.conns.erase(it);
      sync_busy_wait(st);
      auto [b, e] = st.node_monitors.equal_range(node);
      for (auto m = b; m != e; ++m) watchers.push_back(m->second);
      st.node_monitors.erase(b, e);
    }
    for (herd::pid w : waiters) herd::send(w, connect_result{node, false, why, code});
    for (herd::pid w : watchers) herd::send(w, nodedown{node});
  } catch (...) {
  }
}

// A connection attempt that lost to the peer's own (simultaneous connect)
// passes what senders queued for the node on to the winner (their bytes
// move to the winner's queue).
void forward_queued(const std::string& node, conn_counters& mine) {
  herd::pid winner;
  std::shared_ptr<conn_counters> theirs;
  {
    rt::lock_guard g(state().mu);
    auto it = state().conns.find(node);
    if (it == state().conns.end() || it->second.proc == herd::self()) return;
    winner = it->second.proc;
    theirs = it->second.counters;
  }
  for (bool more = true; more;)
    herd::receive(
        [&](out_frame& f) {
          mine.queued_bytes.fetch_sub(f.bytes.size(), std::memory_order_acq_rel);
          if (theirs) theirs->queued_bytes.fetch_add(f.bytes.size(), std::memory_order_acq_rel);
          herd::send(winner, std::move(f));
        },
        [&](link_request& r) { herd::send(winner, std::move(r)); }, herd::after(milliseconds(0), [&] { more = false; }));
}

// However a connection process ends, senders parked on its queue go on.
struct queue_closer {
  std::shared_ptr<conn_counters> c;
  ~queue_closer() { c->wake_waiters(true); }
};

struct down_guard {
  const std::string& node;
  std::string why = "connection process ended";
  errc code = errc::connect;
  ~down_guard() { mark_down(node, code, why); }
};

class link_loop {
 public:
  link_loop(net::tcp_socket& s, const peer_info& peer, const std::shared_ptr<conn_counters>& c)
      : s_(s), peer_(peer), stats_(c), origin_(node_number(peer.name)), atoms_(node_atom_budget(origin_)) {
    uint32_t max_atoms;
    {
      rt::lock_guard g(state().mu);
      me_ = state().self;
      tick_ = state().ticktime;
      limit_ = state().busy_limit;
      max_atoms = state().max_atoms;
      max_pids_ = state().max_pids;
    }
    reset_pid_budget(origin_, max_pids_);
    stats_->tick_interval_ms.store(std::max(tick_ / 4, milliseconds(1)).count(), std::memory_order_relaxed);
    stats_->last_received_ns.store(clk::now().time_since_epoch().count(), std::memory_order_relaxed);
    // A new connection from the node: a fresh share of new atoms.
    if (atoms_) atoms_->reset(max_atoms ? int64_t(max_atoms) : INT64_MAX);
  }

  std::string run() {
    auto quarter = std::max(tick_ / 4, milliseconds(1));
    send_sender_ = (peer_.flags & dflag_send_sender) != 0;
    links_.set_unlink_id((peer_.flags & dflag_unlink_id) != 0);
    links_.set_exit_payload((peer_.flags & dflag_exit_payload) != 0);
    last_recv_ = last_send_ = clk::now();
    auto next_tick = last_recv_ + quarter;
    if (auto r = s_.set_active(net::active::once()); !r) return r.error().message();
    while (why_.empty()) {
      auto now = clk::now();
      // With output waiting, do not block: a message that counts in the
      // mailbox but delivers nothing (a socket note whose bytes were already
      // read) would otherwise hold the batch back until the next tick — the
      // first frame after a handshake waited 15 s at a herd acceptor so.
      bool can_write = pending() && !want_write_;
      milliseconds wait = can_write ? milliseconds(0) : std::max(duration_cast<milliseconds>(next_tick - now), milliseconds(0));
      bool idle = false;
      herd::receive(
          [&](net::tcp_data& d) {
            if (d.sock != s_.id()) return;
            in_.append(d.data.view());
            last_recv_ = clk::now();
            stats_->bytes_in.fetch_add(d.data.view().size(), std::memory_order_relaxed);
            stats_->last_received_ns.store(last_recv_.time_since_epoch().count(), std::memory_order_relaxed);
            parse();
            if (why_.empty())
              if (auto r = s_.set_active(net::active::once()); !r) why_ = r.error().message();
          },
          [&](const net::tcp_closed&) { why_ = "closed by the peer"; },
          [&](const net::tcp_error& e) { why_ = e.err.message(); },
          [&](out_frame& f) {
            out_ += f.bytes;
            tracked_ += f.bytes.size();  // its sender counted it
            stats_->messages_out.fetch_add(1, std::memory_order_relaxed);
          },
          [&](link_request& r) { links_.local(r, out_); },
          [&](const close_connection& c) { why_ = c.why; },
          [&](const net::tcp_writable& w) {
            if (w.sock == s_.id()) want_write_ = false;
          },
          [&](const herd::down& d) { monitor_fired(d); }, herd::after(wait, [&] { idle = true; }));
      if (!why_.empty()) break;
      if (atoms_ && atoms_->spent.load(std::memory_order_relaxed)) {
        why_ = "its messages made more than " + std::to_string(atoms_max()) +
               " new atoms (dist_options::max_atoms_per_connection)";
        break;
      }
      if (pending() && !want_write_ && (idle || herd::mailbox_size() == 0 || out_.size() - out_off_ >= batch_bytes)) flush();
      account();
      stats_->queued_frames.store(herd::mailbox_size(), std::memory_order_relaxed);
      now = clk::now();
      if (now >= next_tick) {
        if (now - last_recv_ > tick_) why_ = "net_tick_timeout: nothing received for net_ticktime";
        else if (now - last_send_ >= quarter && !pending()) {
          out_.append(4, '\0');
          flush();
          account();
        }
        next_tick = now + quarter;
      }
    }
    return why_;
  }

 private:
  bool pending() const { return out_off_ < out_.size(); }

  // A frame named a pid past max_remote_pids_per_connection: the frame
  // goes undelivered and the connection closes.
  bool pids_spent() {
    if (!max_pids_ || !pid_budget_spent(origin_)) return false;
    if (why_.empty()) why_ = pids_cap_why(max_pids_);
    return true;
  }

  uint32_t atoms_max() const {
    rt::lock_guard g(state().mu);
    return state().max_atoms;
  }

  // queued_bytes follows this process's unsent bytes: what it wrote itself
  // (ticks, replies, link frames) goes on, what the kernel took comes off;
  // senders' frames were put on by the senders. Parked senders go on once
  // it is below the limit.
  void account() {
    std::size_t now = out_.size() - out_off_;
    if (now > tracked_) stats_->queued_bytes.fetch_add(now - tracked_, std::memory_order_seq_cst);
    else if (now < tracked_) stats_->queued_bytes.fetch_sub(tracked_ - now, std::memory_order_seq_cst);
    tracked_ = now;
    if (limit_ && stats_->has_waiters.load(std::memory_order_seq_cst) &&
        stats_->queued_bytes.load(std::memory_order_seq_cst) < limit_)
      stats_->wake_waiters(false);
  }

  void flush() {
    auto r = s_.try_send(std::string_view(out_).substr(out_off_));
    if (!r) {
      why_ = "write: " + r.error().message();
      return;
    }
    if (*r > 0) last_send_ = clk::now();
    stats_->bytes_out.fetch_add(*r, std::memory_order_relaxed);
    out_off_ += *r;
    if (pending()) {  // the kernel took part: wait for room, reading meanwhile
      if (auto w = s_.notify_writable(); !w) why_ = "write: " + w.error().message();
      else want_write_ = true;
    }
    if (out_off_ == out_.size()) {
      out_.clear();
      out_off_ = 0;
    } else if (out_off_ > batch_bytes) {
      out_.erase(0, out_off_);
      out_off_ = 0;
    }
  }

  void parse() {
    std::string_view in(in_);
    while (in.size() - in_off_ >= 4 && why_.empty()) {
      uint32_t len = get32(in, in_off_);
      if (in.size() - in_off_ - 4 < len) break;
      std::string_view body = in.substr(in_off_ + 4, len);
      in_off_ += 4 + std::size_t(len);
      if (len > 0) {
        stats_->messages_in.fetch_add(1, std::memory_order_relaxed);
        dispatch(body);
      }
    }
    if (in_off_ == in_.size()) {
      in_.clear();
      in_off_ = 0;
    } else if (in_off_ > 65536) {
      in_.erase(0, in_off_);
      in_off_ = 0;
    }
  }

  void dispatch(std::string_view body) {
    // The pids this frame makes us hold count against the connection's cap.
    // Only around the decode: a send counts a reduction and may yield, and
    // the fiber go on on another thread, away from the scope's thread-local.
    std::string bad;
    auto f = [&] {
      pid_charge_scope charge(origin_);
      return decode_frame(me_, body, &bad);
    }();
    if (pids_spent()) return;
    if (!f) {
      why_ = "a frame this node cannot decode (" + bad + "), " + std::to_string(body.size()) + " bytes";
      return;
    }
    switch (f->op) {
      case ctl_send:
      case ctl_send_tt:
      case ctl_send_sender:
        if (f->to.valid() && !f->to.is_remote() && !deliver_gen(f->to, f->from, f->payload, peer_.name))
          herd::send(f->to, etf_message{f->from, std::string(f->payload), origin_});
        pids_spent();  // a '$gen_call' From past the cap
        break;
      case ctl_reg_send:
      case ctl_reg_send_tt:
        if (f->to_name == "net_kernel") {
          std::string reply = is_auth_reply(me_, f->payload, send_sender_);
          if (!reply.empty()) {
            out_ += reply;
            break;
          }
        }
        if (!deliver_gen(f->to_name, f->from, f->payload, peer_.name))
          herd::send(f->to_name, etf_message{f->from, std::string(f->payload), origin_});
        pids_spent();  // a '$gen_call' From past the cap
        break;
      case ctl_monitor_p:
        watch(*f);
        break;
      case ctl_demonitor_p:
        unwatch(*f);
        break;
      case ctl_link:
      case ctl_unlink:
      case ctl_exit:
      case ctl_exit2:
      case ctl_exit_tt:
      case ctl_exit2_tt:
      case ctl_monitor_p_exit:
      case ctl_payload_exit:
      case ctl_payload_exit_tt:
      case ctl_payload_exit2:
      case ctl_payload_exit2_tt:
      case ctl_payload_monitor_p_exit:
      case ctl_unlink_id:
      case ctl_unlink_id_ack:
        if (bool ok = links_.remote(body, out_, atoms_, origin_); !pids_spent() && !ok)
          why_ = "a link or exit frame this node cannot decode";
        break;
      default:
        break;
    }
  }

  // A remote process monitors one of ours (as gen_server:call does, once
  // per call): this process turns the target's `down` into MONITOR_P_EXIT
  // for every remote monitor on it. It holds one herd monitor per target,
  // kept until the target ends or the connection does, so a call costs no
  // signal to the target. A name not registered here is noproc at once.
  struct remote_watch {
    std::string from, to, ref;
  };

  void watch(const incoming& f) {
    remote_watch w{std::string(f.from_raw), std::string(f.to_raw), std::string(f.ref_raw)};
    herd::pid target = f.to;
    if (!f.to_name.empty()) target = herd::whereis(f.to_name).value_or(herd::no_pid);
    // net_kernel is this process itself for is_auth (ping): it does not
    // go away while the connection lasts, so its monitor never fires.
    if (!target.valid() && f.to_name == "net_kernel") return;
    if (!target.valid() || target.is_remote()) {
      out_ += frame_monitor_exit(w.to, w.from, w.ref, reason_term(int(herd::exit_kind::noproc), {}, {}), links_.exit_payload());
      return;
    }
    if (!target_mon_.count(target)) {
      herd::monitor_ref r = herd::monitor(target);  // a dead target: down{noproc} at once
      target_mon_.emplace(target, r);
      mon_target_.emplace(r, target);
    }
    by_ref_[w.ref] = target;
    watches_.emplace(target, std::move(w));
  }

  void unwatch(const incoming& f) {
    auto it = by_ref_.find(std::string(f.ref_raw));
    if (it == by_ref_.end()) return;
    auto [b, e] = watches_.equal_range(it->second);
    for (auto w = b; w != e; ++w)
      if (w->second.ref == it->first) {
        watches_.erase(w);
        break;
      }
    by_ref_.erase(it);
  }

  void monitor_fired(const herd::down& d) {
    auto t = mon_target_.find(d.ref);
    if (t == mon_target_.end()) return;
    // As a link's EXIT carries it (wire_links.cpp), {shutdown, Detail}
    // included; a process ended by `kill` is `killed` to its monitors.
    std::string reason;
    herd::encode_term(d.reason.kind() == herd::exit_kind::kill ? herd::term(herd::atom("killed")) : reason_to_term(d.reason),
                      reason);
    auto [b, e] = watches_.equal_range(t->second);
    for (auto w = b; w != e; ++w) {
      out_ += frame_monitor_exit(w->second.to, w->second.from, w->second.ref, reason, links_.exit_payload());
      by_ref_.erase(w->second.ref);
    }
    watches_.erase(b, e);
    target_mon_.erase(t->second);
    mon_target_.erase(t);
  }

  std::map<herd::pid, herd::monitor_ref> target_mon_;
  std::map<herd::monitor_ref, herd::pid> mon_target_;
  std::multimap<herd::pid, remote_watch> watches_;
  std::map<std::string, herd::pid> by_ref_;
  net::tcp_socket& s_;
  const peer_info& peer_;
  std::shared_ptr<conn_counters> stats_;
  uint32_t origin_;                    // the peer's node number (etf_message::origin)
  herd::detail::atom_budget* atoms_;   // its share of new atoms (never freed)
  std::size_t limit_ = 0;              // dist_buf_busy_limit
  uint32_t max_pids_ = 0;              // max_remote_pids_per_connection
  std::size_t tracked_ = 0;            // unsent bytes already in queued_bytes
  self_id me_;
  milliseconds tick_;
  bool send_sender_ = false;
  bool want_write_ = false;  // notify_writable asked, its tcp_writable not yet taken
  std::string in_, out_;
  std::size_t in_off_ = 0, out_off_ = 0;
  clk::time_point last_recv_, last_send_;
  std::string why_;
  // Links and monitors across this connection; declared last, so it goes
  // first: its noconnection signals leave while the rest still stands.
  link_table links_{me_};
};

identity my_identity() {
  rt::lock_guard g(state().mu);
  return state().me;
}

}  // namespace

// The node's pids go with its connection (unless another connection to it
// has already taken over), and so do the unused pids of unconnected nodes.
void sweep_after(const std::string& node) noexcept {
  try {
    std::vector<std::string> connected;
    {
      rt::lock_guard g(state().mu);
      for (auto& [n, e] : state().conns)
        if (e.proc != herd::self()) connected.push_back(n);
    }  // a map: already sorted
    bool taken_over = std::binary_search(connected.begin(), connected.end(), node);
    sweep_remote_pids(taken_over ? std::string_view() : std::string_view(node), connected);
  } catch (...) {
  }
}

void sweep_unconnected() noexcept {
  try {
    std::vector<std::string> connected;
    {
      rt::lock_guard g(state().mu);
      for (auto& [n, e] : state().conns) connected.push_back(n);
    }  // a map: already sorted
    sweep_remote_pids({}, connected);
  } catch (...) {
  }
}

void run_connection(net::tcp_socket& s, const peer_info& peer, const std::shared_ptr<conn_counters>& c) {
  down_guard guard{peer.name};
  // The node's record (its number, atom share and pid cap) lives while
  // this connection runs; after the sweep below it goes unless entries
  // still name it or are charged to it (remote_pids.hpp).
  struct record_pin {
    uint32_t no;
    ~record_pin() { unpin_node(no); }
  } pin{pin_node(peer.name)};
  guard.why = link_loop(s, peer, c).run();
  forget_gen_calls(peer.name);
  log("connection to " + peer.name + " ended: " + guard.why);
  s.close();
  sweep_after(peer.name);
}

void initiate(std::string node, std::shared_ptr<conn_counters> c) {
  queue_closer closer{c};
  down_guard guard{node};
  auto fail = [&](const std::string& why, errc code = errc::connect) {
    guard.why = why;
    guard.code = code;
    log("cannot connect to " + node + ": " + why);
    forward_queued(node, *c);
  };
  auto at = node.find('@');
  std::string alive = node.substr(0, at), host = node.substr(at + 1);
  auto np = epmd_port_please(host, alive);
  if (!np) return fail(np.error().message());
  auto s = net::tcp_socket::connect(host, np->port, seconds(5));
  if (!s) return fail(s.error().message());
  auto peer = handshake_connect(*s, my_identity(), node, handshake_timeout);
  // The caller of connect() tells a refusal (cookies, or the peer said
  // not_allowed) from a failure to connect by the code, not by the text.
  if (!peer) return fail(peer.error().message(), peer.error().code == errc::not_allowed ? errc::not_allowed : errc::connect);
  if (peer->name != node) return fail("the node on that port is " + peer->name);
  if (!mark_up(*peer)) return fail("superseded by the peer's own connection");
  run_connection(*s, *peer, c);
}

void accept_node(net::tcp_socket s) {
  identity me = my_identity();
  auto c = std::make_shared<conn_counters>();
  queue_closer closer{c};
  std::string claimed;
  // Unwound mid-handshake (the node stopping): the entry it claimed goes.
  down_guard guard{claimed};
  auto status = [&](const std::string& peer) -> std::string {
    dist_state& st = state();
    rt::lock_guard g(st.mu);
    if (!st.running || peer == me.name) return "not_allowed";
    claimed = peer;
    auto it = st.conns.find(peer);
    if (it == st.conns.end()) {
      st.conns[peer] = conn_entry{herd::self(), false, false, 0, {}, c};
      return "ok";
    }
    if (!it->second.up) {
      // Both sides are connecting: the greater name's attempt wins (as net_kernel decides).
      if (peer < me.name) {
        claimed.clear();
        return "nok";
      }
      herd::send(it->second.proc, close_connection{"superseded"});
      it->second.proc = herd::self();
      it->second.counters = c;
      return "ok_simultaneous";
    }
    // It has restarted (it thinks it has no connection to us): the old one goes.
    herd::send(it->second.proc, close_connection{"replaced by a new connection from " + peer});
    it->second.proc = herd::self();
    it->second.counters = c;
    it->second.up = false;
    sync_busy_wait(st);
    return "alive";
  };
  auto peer = handshake_accept(s, me, status, handshake_timeout);
  if (!peer) {
    log(peer.error().message());
    guard.why = peer.error().message();
    return;
  }
  if (!mark_up(*peer)) return;
  run_connection(s, *peer, c);
}

}  // namespace herd::dist::detail
