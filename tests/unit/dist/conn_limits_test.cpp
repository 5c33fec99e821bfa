// What one connection may cost this node: a peer's new atoms come out of a
// per-connection share (max_atoms_per_connection), the remote pids it
// brought are capped (max_remote_pids_per_connection) and go when it ends, and a process sending to a peer that does not
// read waits once dist_buf_busy_limit bytes are queued. The peer is a fake
// node in this test process: the real handshake on a TCP connection to our
// own listener, then hand-made frames (or none read at all). Every wait is
// bounded; nothing outside this process is started but epmd.
#include <herd/actors.hpp>
#include <herd/actors/introspect.hpp>
#include <herd/dist/gen.hpp>
#include <herd/dist/node.hpp>
#include <herd/tables/pg.hpp>
#include <herd/net/tcp.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>
#include <unistd.h>

#include "bytes.hpp"
#include "epmd.hpp"
#include "fake_node.hpp"
#include "handshake.hpp"
#include "peers.hpp"
#include "remote_pids.hpp"
#include "state.hpp"
#include "support/node_fixture.hpp"
#include "support/scale.hpp"
#include "wire.hpp"

using namespace std::chrono_literals;
using herd::atom;
using herd::term;
namespace dd = herd::dist::detail;
using herd_test_dist::fake_node;

namespace {

const std::string cookie = "herd_conn_limits_cookie";

herd::dist::dist_options dist_opts(const std::string& base) { return herd::test::test_node_options(base, cookie); }


std::optional<herd::detail::remote_node_stats> row_of(const std::string& node) {
  for (auto& r : dd::nodes_report().nodes)
    if (r.node == node) return r;
  return std::nullopt;
}

void put32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += char((v >> s) & 0xff);
}

// A payload [Pid, ...] of `count` pids, the i-th of node "<stem><first+i>@nowhere",
// written byte by byte (NEW_PID_EXT, SMALL_ATOM_UTF8_EXT node): as a peer
// crafts it, and without making the atoms here first.
std::string pids_of_new_nodes(const std::string& stem, uint32_t first, uint32_t count) {
  std::string p = {char(131), 'l'};
  put32(p, count);
  for (uint32_t i = 0; i < count; ++i) {
    std::string node = stem + std::to_string(first + i) + "@nowhere";
    p += 'X';
    p += char(119);
    p += char(node.size());
    p += node;
    put32(p, 1 + i % 1000);  // id
    put32(p, 0);             // serial
    put32(p, 1);             // creation
  }
  p += 'j';
  return p;
}

// Two sweeps with nothing connected: what earlier tests left goes.
void sweep_twice() {
  dd::sweep_remote_pids({}, {});
  dd::sweep_remote_pids({}, {});
}

// A herd::server whose calls are counted.
struct counted : herd::server<counted> {
  using calls = herd::types<herd::term>;
  explicit counted(std::atomic<int>* n) : n_(n) {}
  herd::term handle_call(const herd::term& req, const herd::from&) {
    n_->fetch_add(1);
    return req;
  }
  std::atomic<int>* n_;
};

}  // namespace

TEST_CASE("a peer whose messages make more new atoms than max_atoms_per_connection is cut off, and the table grows by the share only") {
  herd::test::log_to_file log("conn_limits");
  std::string err, first_refusal;
  int decoded = 0, refused = 0, sent = 0;
  uint32_t atoms_before = 0, atoms_after = 0;
  bool closed = false;
  constexpr int share = 50, attempts = 200;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("atoms");
    o.max_atoms_per_connection = share;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    herd::pid main = herd::self();
    // Decodes every message it gets (what a receiver of peer terms does).
    herd::pid sink = herd::spawn([main, &decoded, &refused, &first_refusal] {
      herd::register_name("atom_sink", herd::self());
      herd::send(main, term(atom("ready")));
      for (;;)
        herd::receive([&](const herd::dist::etf_message& m) {
          auto t = m.term();
          if (t) ++decoded;
          else if (refused++ == 0) first_refusal = t.error().message();
        }, [](const term&) { herd::exit(herd::exit_reason::normal()); });
    });
    herd::receive([](const term&) {});
    fake_node fake(*me, "atomfake", cookie);
    if (!fake.sock) return void(err = fake.err);
    (void)atom("stop");  // the sink's stop, made before the count is taken
    atoms_before = herd::atom::count();
    // Each payload one atom nobody has made: written byte by byte
    // (SMALL_ATOM_UTF8_EXT), as herd::atom here would intern it first.
    const std::string stem = "conn_limits_" + std::to_string(::getpid()) + "_";
    for (int i = 0; i < attempts; ++i) {
      std::string text = stem + std::to_string(i);
      std::string payload = {char(131), char(119), char(text.size())};
      payload += text;
      if (!fake.reg_send_raw(1, "atom_sink", payload)) break;
      ++sent;
    }
    closed = fake.closed_within(30s);
    // Whatever reached the sink has been decoded once it has the stop.
    herd::send(sink, term(atom("stop")));
    herd::test::eventually_gone(sink, 10s);
    atoms_after = herd::atom::count();
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nfirst refusal: " << first_refusal << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(decoded == share);
  CHECK(refused >= 1);
  CHECK(first_refusal.find("atom_table_full") != std::string::npos);
  CHECK(first_refusal.find("share") != std::string::npos);
  CHECK(atoms_after - atoms_before == uint32_t(share));
  CHECK(logged.find("new atoms (dist_options::max_atoms_per_connection)") != std::string::npos);
  CHECK(sent > share);
}

TEST_CASE("the remote pids a connection brought go when it ends, and a kept one names nobody") {
  std::string err;
  std::size_t baseline = 0, with_peer = 0, after_first = 0, after_second = 0, after_third = 0;
  bool stale_send = true, stale_describe = true, fresh_differs = false, ghost_kept_once = false;
  constexpr uint32_t senders = 100;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("pids"));
    if (!me) return void(err = me.error().message());
    // Earlier tests' pids: two sweeps with nothing connected clear them.
    dd::sweep_remote_pids({}, {});
    dd::sweep_remote_pids({}, {});
    baseline = dd::remote_pid_count();
    herd::register_name("pid_sink", herd::self());
    herd::pid kept;
    std::string fake_name;
    {
      fake_node fake(*me, "pidfake", cookie);
      if (!fake.sock) return void(err = fake.err);
      fake_name = fake.id.name;
      // From 100 processes of the fake node; the last one names a pid of a
      // node nobody is connected to.
      for (uint32_t i = 1; i <= senders; ++i)
        if (!fake.reg_send(i, "pid_sink", term(int64_t(i)))) return;
      term ghost = term::pid(herd::erl_pid{atom("ghost@nowhere"), 3, 0, 1});
      if (!fake.reg_send(senders + 1, "pid_sink", ghost)) return;
      for (uint32_t got = 0; got < senders + 1;) {
        bool in_time = herd::receive([&](herd::dist::etf_message& m) {
          ++got;
          kept = m.from;
          if (auto t = m.term(); t && t->is_pid()) (void)herd::from_term<herd::pid>(*t);  // interns the ghost
          return true;
        }, herd::after(30s, [] { return false; }));
        if (!in_time) return void(err = "messages missing: " + std::to_string(got));
      }
      with_peer = dd::remote_pid_count();
      fake.sock->close();
      if (!herd::test::eventually([&] { return row_of(fake_name) == std::nullopt; }, 30s))
        return void(err = "the connection did not end");
    }
    herd::test::eventually([&] { return dd::remote_pid_count() <= baseline + 1; }, 10s);
    after_first = dd::remote_pid_count();
    ghost_kept_once = after_first == baseline + 1;  // the ghost: unused for one sweep only
    stale_describe = herd::dist::describe(kept).has_value();
    stale_send = herd::dist::send(kept, herd::term_to_binary(term(1)));
    herd::pid again = herd::dist::intern(herd::dist::remote_pid{fake_name, senders + 1, 0, 7});
    fresh_differs = again != kept;
    // Other connections that end sweep too: the ghost, unused since the
    // last sweep, goes at the next; `again` (its node is the first fake,
    // now unconnected) one sweep later.
    auto connect_and_close = [&](const std::string& base) {
      fake_node f(*me, base, cookie);
      if (!f.sock) return void(err = f.err);
      std::string n = f.id.name;
      if (!herd::test::eventually([&] { return row_of(n).has_value() && row_of(n)->up; }, 30s))
        return void(err = n + " is not up");
      f.sock->close();
      if (!herd::test::eventually([&] { return row_of(n) == std::nullopt; }, 30s))
        return void(err = "the connection to " + n + " did not end");
    };
    connect_and_close("pidfake2");
    herd::test::eventually([&] { return dd::remote_pid_count() <= baseline + 1; }, 10s);
    after_second = dd::remote_pid_count();
    connect_and_close("pidfake3");
    herd::test::eventually([&] { return dd::remote_pid_count() == baseline; }, 10s);
    after_third = dd::remote_pid_count();
    herd::dist::stop();
  });
  INFO(err);
  CHECK(err.empty());
  CHECK(with_peer >= baseline + senders + 1);
  CHECK(ghost_kept_once);
  CHECK(after_second == baseline + 1);  // `again`
  CHECK(after_third == baseline);
  CHECK_FALSE(stale_describe);
  CHECK_FALSE(stale_send);
  CHECK(fresh_differs);
}

TEST_CASE("a peer whose frames name more remote pids than max_remote_pids_per_connection is cut off with a log line") {
  herd::test::log_to_file log("conn_limits_pids");
  std::string err;
  int delivered = 0, with_sender = 0;
  bool closed = false;
  std::size_t held_after = 1;
  constexpr uint32_t cap = 20, senders = 100;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("pidcap");
    o.max_remote_pids_per_connection = cap;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    herd::register_name("pid_cap_sink", herd::self());
    std::string fake_name;
    {
      fake_node fake(*me, "pidcapfake", cookie);
      if (!fake.sock) return void(err = fake.err);
      fake_name = fake.id.name;
      // Each from a process of its own: one new remote pid per frame.
      for (uint32_t i = 1; i <= senders; ++i)
        if (!fake.reg_send(i, "pid_cap_sink", term(int64_t(i)))) break;
      closed = fake.closed_within(30s);
    }
    // The connection delivered what it took before it closed: all of it is
    // in this mailbox by now.
    for (bool more = true; more;)
      herd::receive([&](const herd::dist::etf_message& m) {
        ++delivered;
        if (m.from.valid()) ++with_sender;
      }, herd::after(0ms, [&] { more = false; }));
    if (!herd::test::eventually([&] { return row_of(fake_name) == std::nullopt; }, 30s))
      return void(err = "the connection did not end");
    held_after = dd::pids_held_by(dd::node_number(fake_name));
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(delivered == int(cap));  // the frame past the cap is dropped, not delivered without its sender
  CHECK(with_sender == int(cap));
  CHECK(held_after == 0);  // its pids went with the connection
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
}

TEST_CASE("a process sending to a peer that reads nothing waits at dist_buf_busy_limit, its worker free, and the queue stays under it") {
  std::string err;
  constexpr std::size_t limit = 256 * 1024, chunk = 64 * 1024;
  constexpr int messages = 300, from_thread = 20;
  const int n_msgs = int(herd::test::scaled(messages, 120));
  std::atomic<int> sent{0};
  uint64_t max_queued = 0, queued_while_waiting = 0;
  bool waited = false, thread_returned = false;
  int frames_seen = 0, in_order = 0, thread_frames = 0;
  std::size_t frame_size = 0;
  herd::test::run_node(herd::test::opts(1), [&] {
    auto o = dist_opts("busy");
    o.dist_buf_busy_limit = limit;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    fake_node fake(*me, "busyfake", cookie);
    if (!fake.sock) return void(err = fake.err);
    herd::pid remote = herd::dist::intern(herd::dist::remote_pid{fake.id.name, 5, 0, fake.id.creation});
    const std::string big(chunk, 'x');
    frame_size = dd::frame_send(dd::self_id{*me, 1}, herd::self(), remote,
                                herd::term_to_binary(term::tuple({term(0), term::binary(big)})), true).size();
    herd::pid sender = herd::spawn([remote, &big, &sent, n_msgs] {
      for (int i = 0; i < n_msgs; ++i) {
        herd::send(remote, term::tuple({term(i), term::binary(big)}));
        sent.fetch_add(1);
      }
    });
    // The fake node reads nothing: the sender must end up parked (this
    // process, on the node's only worker, goes on meanwhile).
    waited = herd::test::eventually([&] {
      auto r = row_of(fake.id.name);
      if (!r) return false;
      max_queued = std::max(max_queued, r->queued_bytes);
      queued_while_waiting = r->queued_bytes;
      return herd::test::parked(sender) && sent.load() < n_msgs && r->queued_bytes >= limit;
    }, 60s);
    // A thread that is not a process never waits.
    auto t = std::async(std::launch::async, [&] {
      for (int i = 0; i < from_thread; ++i) herd::send(remote, term::tuple({term(-1), term::binary(big)}));
    });
    thread_returned = t.wait_for(30s) == std::future_status::ready;
    // Now read it all: the sender finishes, every frame arrives in order.
    std::string in;
    int next = 0;
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while ((next < n_msgs || thread_frames < from_thread) && std::chrono::steady_clock::now() < deadline) {
      auto r = fake.sock->recv(0, 1s);
      if (!r) {
        if (r.error().code == herd::net::errc::timeout) continue;
        err = "read: " + r.error().message();
        break;
      }
      in.append(r->view());
      std::size_t at = 0;
      while (in.size() - at >= 4) {
        uint32_t len = dd::get32(in, at);
        if (in.size() - at - 4 < len) break;
        std::string_view body = std::string_view(in).substr(at + 4, len);
        at += 4 + len;
        if (len == 0) continue;  // a tick
        auto f = dd::decode_frame(fake.self(), body);
        if (!f) continue;
        auto t = herd::binary_to_term(f->payload);
        if (!t || !t->is_tuple() || t->size() != 2) continue;
        ++frames_seen;
        int64_t i = (*t)[0].to_int64().value_or(-2);
        if (i == -1) ++thread_frames;
        else if (i == next) ++in_order, ++next;
      }
      in.erase(0, at);
    }
    herd::test::eventually_gone(sender, 30s);
    herd::dist::stop();
  });
  INFO(err << "\nmax queued " << max_queued << ", while waiting " << queued_while_waiting << ", frame " << frame_size
            << ", sent " << sent.load() << ", frames " << frames_seen);
  CHECK(err.empty());
  CHECK(waited);
  CHECK(thread_returned);
  // Only this process waits: what the thread queued is on top.
  CHECK(queued_while_waiting >= limit);
  CHECK(max_queued <= limit + frame_size + 64);  // + a tick or two the connection wrote itself
  CHECK(in_order == n_msgs);
  CHECK(thread_frames == from_thread);
}

TEST_CASE("pids of 100,000 node names in a peer's messages leave no node records behind once they are gone") {
  std::string err;
  constexpr uint32_t per_message = 1000, messages = 100, names = per_message * messages;
  std::size_t recs_before = 0, pids_before = 0, recs_with = 0, held_with = 0, recs_after = 1, pids_after = 1,
              held_after = 1;
  uint32_t mapped = 0;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("recs");
    o.max_atoms_per_connection = 0;  // 100,000 new atoms (the node names): the node-wide limit only
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    herd::register_name("rec_sink", herd::self());
    sweep_twice();
    recs_before = dd::node_record_count();
    pids_before = dd::remote_pid_count();
    const std::string stem = "rec" + std::to_string(::getpid()) + "_";
    std::string fake_name;
    {
      fake_node fake(*me, "recfake", cookie);
      if (!fake.sock) return void(err = fake.err);
      fake_name = fake.id.name;
      for (uint32_t m = 0; m < messages; ++m)
        if (!fake.reg_send_raw(1, "rec_sink", pids_of_new_nodes(stem, m * per_message, per_message)))
          return void(err = "send failed at message " + std::to_string(m));
      for (uint32_t got = 0; got < messages; ++got) {
        bool in_time = herd::receive([&](herd::dist::etf_message& m) {
          auto pids = m.as<std::vector<herd::pid>>();
          if (!pids) {
            err = pids.error().message();
            return true;
          }
          for (herd::pid p : *pids) mapped += p.is_remote();
          return true;
        }, herd::after(60s, [] { return false; }));
        if (!in_time) return void(err = "messages missing: " + std::to_string(got));
      }
      recs_with = dd::node_record_count();
      held_with = dd::pids_held_by(dd::node_number(fake_name));
      fake.sock->close();
      if (!herd::test::eventually([&] { return row_of(fake_name) == std::nullopt; }, 30s))
        return void(err = "the connection did not end");
    }
    // The pids went out of use with the messages: a pid of a node nobody is
    // connected to lives through one sweep after its last use, no more.
    sweep_twice();
    recs_after = dd::node_record_count();
    pids_after = dd::remote_pid_count();
    held_after = dd::pids_held_by(dd::node_number(fake_name));
    herd::dist::stop();
  });
  INFO(err);
  CHECK(err.empty());
  CHECK(mapped == names);
  CHECK(recs_with >= recs_before + names);
  CHECK(held_with >= names);  // as<T>() charged them to the connection
  CHECK(recs_after == recs_before);  // the fake node's own went too: nothing names it any more
  CHECK(pids_after == pids_before);
  CHECK(held_after == 0);
}

namespace {

// Inside run_node: distribution starts with max_remote_pids_per_connection =
// cap, and a fake peer sends a registered sink one message of `count` pids
// of nodes never seen. `use` gets the peer (still connected: to watch it
// close) and the message; then the connection's end is waited for (bounded)
// and the sweeps run. Returns the peer's name and the record count before
// the peer came, or nothing (with `err` set) if a step failed.
struct capped_peer_run {
  std::string fake_name;
  std::size_t recs_before = 0;
};
template <class Use>
std::optional<capped_peer_run> pids_from_capped_peer(const std::string& tag, uint32_t cap, uint32_t count,
                                                     std::string& err, Use use) {
  auto o = dist_opts(tag);
  o.max_remote_pids_per_connection = cap;
  auto me = herd::dist::start(o);
  if (!me) return err = me.error().message(), std::nullopt;
  herd::register_name(tag + "_sink", herd::self());
  sweep_twice();
  capped_peer_run run;
  run.recs_before = dd::node_record_count();
  const std::string stem = tag + std::to_string(::getpid()) + "_";
  {
    fake_node fake(*me, tag + "fake", cookie);
    if (!fake.sock) return err = fake.err, std::nullopt;
    run.fake_name = fake.id.name;
    if (!fake.reg_send_raw(1, tag + "_sink", pids_of_new_nodes(stem, 0, count))) return err = "send failed", std::nullopt;
    std::optional<herd::dist::etf_message> got;
    herd::receive([&](herd::dist::etf_message& m) { got = std::move(m); }, herd::after(60s, [] {}));
    if (!got) return err = "the message did not arrive", std::nullopt;
    use(fake, *got);
  }
  if (!herd::test::eventually([&] { return row_of(run.fake_name) == std::nullopt; }, 30s))
    return err = "the connection did not end", std::nullopt;
  sweep_twice();
  return run;
}

}  // namespace

TEST_CASE("max_remote_pids_per_connection counts the pids a receiver maps from a peer's payload") {
  herd::test::log_to_file log("conn_limits_payload_pids");
  std::string err, refusal;
  constexpr uint32_t cap = 50, count = 100;
  bool closed = false;
  std::size_t recs_before = 0, recs_after = 1, held_after = 1;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto run = pids_from_capped_peer("paycap", cap, count, err, [&](fake_node& fake, const herd::dist::etf_message& m) {
      auto pids = m.as<std::vector<herd::pid>>();
      if (pids) err = "mapped all " + std::to_string(pids->size()) + " pids past the cap";
      else refusal = pids.error().message();
      closed = fake.closed_within(30s);
    });
    if (!run) return;
    recs_before = run->recs_before;
    recs_after = dd::node_record_count();
    held_after = dd::pids_held_by(dd::node_number(run->fake_name));
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nrefusal: " << refusal << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(refusal.find("max_remote_pids_per_connection") != std::string::npos);
  CHECK(closed);
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
  CHECK(recs_after == recs_before);  // neither the refused pids' nodes nor the fake node left a record
  CHECK(held_after == 0);
}

TEST_CASE("a '$gen_call' whose From is past max_remote_pids_per_connection is dropped and the connection closes") {
  herd::test::log_to_file log("conn_limits_gen_call_pids");
  std::string err;
  std::atomic<int> calls{0};
  bool closed = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("gencap");
    o.max_remote_pids_per_connection = 1;  // the frame's sender takes it
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    auto s = herd::start_server<counted>(herd::spawn_options{.name = "gencap_srv"}, &calls);
    if (!herd::dist::export_server(s)) return void(err = "export_server refused a local pid");
    fake_node fake(*me, "gencapfake", cookie);
    if (!fake.sock) return void(err = fake.err);
    herd::erl_pid sender{atom(fake.id.name), 1, 0, fake.id.creation};
    herd::erl_pid other{atom(fake.id.name), 2, 0, fake.id.creation};
    auto call = [&](const herd::erl_pid& from) {
      return term::tuple({atom("$gen_call"), term::tuple({term::pid(from), term::reference(herd::erl_ref{atom(fake.id.name), fake.id.creation, 3, {1, 2, 3}})}),
                          atom("hello")});
    };
    // From its sender: no new pid, the call is answered.
    if (!fake.reg_send(1, "gencap_srv", call(sender))) return void(err = "send failed");
    if (!herd::test::eventually([&] { return calls.load() == 1; }, 30s)) return void(err = "the first call was not served");
    // From another of its processes: a second pid, past the cap.
    if (!fake.reg_send(1, "gencap_srv", call(other))) return void(err = "send failed");
    closed = fake.closed_within(30s);
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(calls.load() == 1);
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
}

TEST_CASE("pids nobody charges, of ever new unconnected nodes, are swept as the table grows, not kept until a connection ends") {
  // As a receiver that maps a peer's pids from a bare herd::term does (no
  // connection to charge): 300,000 pids of 300,000 node names, each used once.
  constexpr uint32_t names = 300000;
  sweep_twice();
  const std::size_t pids_before = dd::remote_pid_count(), recs_before = dd::node_record_count();
  std::size_t most_pids = 0, most_recs = 0;
  uint32_t valid = 0;
  const std::string stem = "unch" + std::to_string(::getpid()) + "_";
  for (uint32_t i = 0; i < names; ++i) {
    valid += dd::intern_remote(herd::dist::remote_pid{stem + std::to_string(i) + "@nowhere", 1, 0, 1}).is_remote();
    if (i % 1000 == 0) {
      most_pids = std::max(most_pids, dd::remote_pid_count());
      most_recs = std::max(most_recs, dd::node_record_count());
    }
  }
  sweep_twice();
  INFO("most pids " << most_pids << ", most records " << most_recs);
  CHECK(valid == names);
  // A sweep runs at twice the live entries (or 65,536 more) and keeps those
  // made since the one before: the table stays within a few steps.
  CHECK(most_pids <= pids_before + 3 * 65536);
  CHECK(most_recs <= recs_before + 3 * 65536);
  CHECK(dd::remote_pid_count() == pids_before);
  CHECK(dd::node_record_count() == recs_before);
}

TEST_CASE("the member pids a pg peer sends count against its connection's remote pid cap") {
  herd::test::log_to_file log("conn_limits_pg_pids");
  std::string err;
  constexpr uint32_t cap = 50, count = 100;
  bool closed = false;
  std::size_t most_members = 0, held_after = 1;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("pgcap");
    o.max_remote_pids_per_connection = cap;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    const std::string scope = "conn_limits_pg";
    (void)herd::pg::get_members(scope, "g");  // makes the scope while distribution runs
    if (!herd::test::eventually([&] { return herd::whereis(scope).has_value(); }, 30s))
      return void(err = "the scope process is not registered");
    auto mon = herd::pg::monitor(scope, "g");
    std::string fake_name;
    {
      fake_node fake(*me, "pgcapfake", cookie);
      if (!fake.sock) return void(err = fake.err);
      fake_name = fake.id.name;
      // Its scope process is <1.0>, the frames' sender too.
      auto pid_of = [&](uint32_t id) { return term::pid(herd::erl_pid{atom(fake_name), id, 0, fake.id.creation}); };
      std::vector<term> members;
      for (uint32_t i = 0; i < count; ++i) members.push_back(pid_of(2 + i));
      if (!fake.reg_send(1, scope, term::tuple({atom("discover"), pid_of(1)})) ||
          !fake.reg_send(1, scope, term::tuple({atom("join"), pid_of(1), atom("g"), term::list(std::move(members))})))
        return void(err = "send failed");
      closed = fake.closed_within(30s);
    }
    if (!herd::test::eventually([&] { return row_of(fake_name) == std::nullopt; }, 30s))
      return void(err = "the connection did not end");
    // The joins the scope made, and their leaves when the node went.
    std::size_t now = 0;
    for (bool more = true; more;)
      herd::receive([&](const herd::pg::event& e) {
        now = e.kind == herd::pg::event::join ? now + e.pids.size() : now - std::min(now, e.pids.size());
        most_members = std::max(most_members, now);
      }, herd::after(0ms, [&] { more = false; }));
    sweep_twice();
    held_after = dd::pids_held_by(dd::node_number(fake_name));
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(most_members == cap - 1);  // the sender took one; the rest past the cap were skipped
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
  CHECK(held_after == 0);
}

TEST_CASE("the pids a receiver maps from a peer's term, one by one after decoding it, count against max_remote_pids_per_connection") {
  herd::test::log_to_file log("conn_limits_term_pids");
  std::string err, refusal;
  constexpr uint32_t cap = 50, count = 100;
  bool closed = false, built_here_mapped = false;
  uint32_t mapped = 0;
  std::size_t recs_before = 0, recs_after = 1;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto run = pids_from_capped_peer("termcap", cap, count, err, [&](fake_node& fake, const herd::dist::etf_message& m) {
      auto kept = m.term();
      if (!kept) return void(err = kept.error().message());
      // The term outlives its message: its pids still name the connection.
      for (const term& e : kept->elements()) {
        auto p = herd::from_term<herd::pid>(e);
        if (p) ++mapped;
        else if (refusal.empty()) refusal = p.error().message();
      }
      closed = fake.closed_within(30s);
      // A term built here names no connection: not charged (the sweeps bound it).
      auto here = herd::from_term<herd::pid>(
          term::pid(herd::erl_pid{atom("termcap" + std::to_string(::getpid()) + "_here@nowhere"), 1, 0, 1}));
      built_here_mapped = here && here->is_remote();
    });
    if (!run) return;
    recs_before = run->recs_before;
    recs_after = dd::node_record_count();
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nrefusal: " << refusal << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(mapped == cap - 1);  // the frame's sender took one
  CHECK(refusal.find("max_remote_pids_per_connection") != std::string::npos);
  CHECK(closed);
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
  CHECK(built_here_mapped);
  CHECK(recs_after == recs_before);
}

TEST_CASE("2,000 short-lived nodes that connect and go leave the node record count at its baseline, and a kept pid names none of them") {
  std::string err;
  const std::size_t nodes = herd::test::scaled(2000, 200);
  std::size_t recs_before = 0, most_recs = 0, recs_after = 1, pids_before = 0, pids_after = 1;
  bool number_reused = false, kept_describes = true, kept_sends = true, fresh_differs = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto me = herd::dist::start(dist_opts("churn"));
    if (!me) return void(err = me.error().message());
    herd::register_name("churn_sink", herd::self());
    sweep_twice();
    recs_before = dd::node_record_count();
    pids_before = dd::remote_pid_count();
    herd::pid kept;
    uint32_t first_no = 0;
    for (std::size_t i = 0; i < nodes; ++i) {
      fake_node f(*me, "churn", cookie);
      if (!f.sock) return void(err = "node " + std::to_string(i) + ": " + f.err);
      const std::string name = f.id.name;
      if (!herd::test::eventually([&] { return row_of(name).has_value() && row_of(name)->up; }, 30s))
        return void(err = name + " is not up");
      if (i == 0) {
        // A pid of the first node, kept by user code past its connection.
        if (!f.reg_send(1, "churn_sink", term(1))) return void(err = f.err);
        if (!herd::receive([&](herd::dist::etf_message& m) { kept = m.from; return true; },
                           herd::after(30s, [] { return false; })))
          return void(err = "the first node's message did not arrive");
        first_no = dd::node_number(name);
      } else if (i == 1) {
        // The first node's record went with its connection: its number is this node's now.
        number_reused = dd::node_number(name) == first_no;
        fresh_differs = herd::dist::intern(herd::dist::remote_pid{name, 1, 0, f.id.creation}) != kept;
        kept_describes = herd::dist::describe(kept).has_value();
        kept_sends = herd::dist::send(kept, herd::term_to_binary(term(2)));
      }
      most_recs = std::max(most_recs, dd::node_record_count());
      f.sock->close();
      if (!herd::test::eventually([&] { return row_of(name) == std::nullopt; }, 30s))
        return void(err = "the connection to " + name + " did not end");
    }
    herd::test::eventually([&] { return dd::node_record_count() == recs_before; }, 10s);
    recs_after = dd::node_record_count();
    sweep_twice();
    pids_after = dd::remote_pid_count();
    herd::dist::stop();
  });
  INFO(err << "\nrecords: before " << recs_before << ", most " << most_recs << ", after " << recs_after);
  CHECK(err.empty());
  CHECK(most_recs <= recs_before + 2);  // the node connected now (and the one just gone)
  CHECK(recs_after == recs_before);
  CHECK(pids_after == pids_before);
  CHECK(number_reused);
  CHECK(fresh_differs);
  CHECK_FALSE(kept_describes);
  CHECK_FALSE(kept_sends);
}

namespace {

// A herd::server whose handler maps the request's pids one by one from the
// bare term it is given, as a user's handler does.
struct pid_mapper : herd::server<pid_mapper> {
  using calls = herd::types<herd::term>;
  pid_mapper(std::atomic<int>* mapped, std::string* refusal) : mapped_(mapped), refusal_(refusal) {}
  herd::term handle_call(const herd::term& req, const herd::from&) {
    if (req.is_proper_list())
      for (const term& e : req.elements()) {
        auto p = herd::from_term<herd::pid>(e);
        if (p) mapped_->fetch_add(1);
        else if (refusal_->empty()) *refusal_ = p.error().message();
      }
    return atom("ok");
  }
  std::atomic<int>* mapped_;
  std::string* refusal_;
};

}  // namespace

TEST_CASE("the pids a herd::server's handler maps from a peer's '$gen_call' request count against max_remote_pids_per_connection") {
  herd::test::log_to_file log("conn_limits_gen_call_request_pids");
  std::string err, refusal;
  std::atomic<int> mapped{0};
  constexpr uint32_t cap = 50, count = 100;
  bool closed = false;
  herd::test::run_node(herd::test::opts(2), [&] {
    auto o = dist_opts("reqcap");
    o.max_remote_pids_per_connection = cap;
    auto me = herd::dist::start(o);
    if (!me) return void(err = me.error().message());
    auto s = herd::start_server<pid_mapper>(herd::spawn_options{.name = "reqcap_srv"}, &mapped, &refusal);
    if (!herd::dist::export_server(s)) return void(err = "export_server refused a local pid");
    fake_node fake(*me, "reqcapfake", cookie);
    if (!fake.sock) return void(err = fake.err);
    const std::string stem = "req" + std::to_string(::getpid()) + "_";
    std::vector<term> pids;
    for (uint32_t i = 0; i < count; ++i)
      pids.push_back(term::pid(herd::erl_pid{atom(stem + std::to_string(i) + "@nowhere"), 1, 0, 1}));
    herd::erl_pid sender{atom(fake.id.name), 1, 0, fake.id.creation};
    term call = term::tuple({atom("$gen_call"),
                             term::tuple({term::pid(sender), term::reference(herd::erl_ref{atom(fake.id.name), fake.id.creation, 3, {1, 2, 3}})}),
                             term::list(std::move(pids))});
    if (!fake.reg_send(1, "reqcap_srv", call)) return void(err = "send failed");
    closed = fake.closed_within(30s);
    herd::dist::stop();
  });
  std::string logged = log.text();
  INFO(err << "\nrefusal: " << refusal << "\nlog: " << logged);
  CHECK(err.empty());
  CHECK(closed);
  CHECK(mapped.load() == int(cap) - 1);  // the caller's pid took one
  CHECK(refusal.find("max_remote_pids_per_connection") != std::string::npos);
  CHECK(logged.find("remote pids (dist_options::max_remote_pids_per_connection)") != std::string::npos);
}
