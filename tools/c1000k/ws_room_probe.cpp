// The probe of the C1000K WebSocket run: one session outside the room whose
// client end and pusher are this one process. Every `every` it sends its
// session process a probe_push (herd::send, as a gateway's HTTP handler
// pushes to a user's connection) stamped with the time; the session writes
// it as a text frame; the probe reads it from its client end and records
// the latency, checking the sequence (none lost, none out of order). One
// process for both sides keeps one clock and no shared state; a push that
// falls due while frames are being read goes out late, which the stamp
// does not count — the latency is from the send to the read.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/websocket/parser.hpp>

#include "ws_room_parts.hpp"

namespace c1000k::detail {

using herd::net::active;

latency summarize(std::vector<double>& us) {
  latency l;
  l.count = us.size();
  if (us.empty()) return l;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, std::size_t(std::ceil(q * double(us.size()))) - 1)]; };
  l.p50_us = at(0.50);
  l.p99_us = at(0.99);
  l.max_us = us.back();
  return l;
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
}

class probe {
 public:
  explicit probe(probe_config c) : c_(std::move(c)) {}

  void run() {
    if (!open()) {
      report_error();
      herd::receive([](const probe_stop&) {});
      return;
    }
    probe_report ready{-1};
    herd::send(c_.driver, ready);
    for (bool more = true; more;) more = next();
  }

 private:
  bool open() {
    auto c = herd::net::memory_connect(c_.server);
    if (!c) return fail("probe: memory_connect: " + c.error().message());
    end_ = std::move(c->client);
    server_ = c->server;
    if (!end_.set_active(active::once()) || !end_.send(upgrade_request(c_.idx)))
      return fail("probe: cannot send the upgrade request");
    std::string got;
    for (;;) {
      bool data = herd::receive(
          [&](herd::net::tcp_data& d) {
            got.append(d.data.view());
            return true;
          },
          [](const herd::net::tcp_closed&) { return false; }, [](const herd::net::tcp_error&) { return false; },
          herd::after(c_.stall, [] { return false; }));
      if (!data) return fail("probe: no 101");
      head_check h = check_101(got, c_.idx);
      if (!h.error.empty()) return fail("probe: " + h.error);
      if (!end_.set_active(active::once())) return fail("probe: cannot re-arm");
      if (h.length == 0) continue;
      if (h.length != got.size()) return fail("probe: bytes after the 101");
      return true;
    }
  }

  bool next() {
    std::chrono::milliseconds wait = c_.stall;
    if (pushing_)
      wait = std::chrono::ceil<std::chrono::milliseconds>(std::max(next_push_ - clock::now(), clock::duration::zero()));
    return herd::receive(
        [&](herd::net::tcp_data& d) {
          on_data(d.data.view());
          return true;
        },
        [&](const herd::net::tcp_closed&) { return fail("probe: the server closed its session"); },
        [&](const herd::net::tcp_error&) { return fail("probe: its session failed"); },
        [&](const probe_run& r) {
          phase_ = r.phase;
          stop_after_ = r.stop_after;
          lat_.clear();
          sent_ = read_ = 0;
          pushing_ = true;
          next_push_ = clock::now();
          push_due();
          return true;
        },
        [&](const probe_stop& s) {
          if (!error_.empty() || s.end) return false;
          pushing_ = false;
          stopping_ = true;
          finish_if_done();
          return true;
        },
        herd::after(wait, [&] {
          if (pushing_) {
            push_due();
            return true;
          }
          if (read_ < sent_) return fail("probe: pushes not read within the stall time");
          return true;
        }));
  }

  void push_due() {
    if (!pushing_ || clock::now() < next_push_) return;
    herd::send(server_, probe_push{phase_, seq_++, now_ns()});
    ++sent_;
    next_push_ += c_.every;
    if (next_push_ < clock::now()) next_push_ = clock::now() + c_.every;  // late: no burst to catch up
    if (stop_after_ != 0 && sent_ == stop_after_) pushing_ = false;
  }

  void on_data(std::string_view bytes) {
    pending_.append(bytes);
    std::size_t whole = whole_frames(pending_);
    herd::ws::frame_parser p({.max_message = 1 << 16, .require_mask = false});
    p.feed(std::string_view(pending_).substr(0, whole));
    while (auto e = p.next()) {
      if (e->type == herd::ws::event::kind::ping) {
        (void)end_.send(client_frame(herd::ws::opcode::pong, e->payload, 0x1234567u));
      } else if (e->type == herd::ws::event::kind::text) {
        text(e->payload);
      } else if (e->type != herd::ws::event::kind::pong) {
        fail("probe: unexpected frame");
      }
    }
    pending_.erase(0, whole);
    if (!end_.set_active(active::once())) fail("probe: cannot re-arm");
    if (stop_after_ != 0 && !pushing_ && read_ == sent_ && sent_ == stop_after_) {
      report();
      stop_after_ = 0;
    }
    finish_if_done();
  }

  void text(std::string_view t) {
    int phase = 0;
    unsigned long long seq = 0;
    long long sent = 0;
    std::string s(t);
    if (std::sscanf(s.c_str(), "probe %d %llu %lld", &phase, &seq, &sent) != 3) {
      fail("probe: not a probe frame: " + s.substr(0, 40));
      return;
    }
    if (seq != expect_seq_) ++out_of_order_;
    expect_seq_ = seq + 1;
    ++read_;
    if (phase == phase_) lat_.push_back(double(now_ns() - sent) / 1000.0);
  }

  // A broadcast phase's stop: reported once its last push is read.
  void finish_if_done() {
    if (!stopping_ || read_ < sent_) return;
    report();
    stopping_ = false;
  }

  void report() {
    probe_report r{phase_};
    r.lat = summarize(lat_);
    r.sent = sent_;
    r.read = read_;
    r.out_of_order = out_of_order_;
    r.error = error_;
    herd::send(c_.driver, std::move(r));
  }

  void report_error() {
    probe_report r{-2};
    r.error = error_;
    herd::send(c_.driver, std::move(r));
  }

  bool fail(std::string why) {
    if (error_.empty()) {
      error_ = std::move(why);
      report_error();
    }
    return true;  // the driver stops the run; the probe waits for its stop
  }

  probe_config c_;
  herd::net::memory_transport end_;
  herd::pid server_;
  std::string pending_;
  std::vector<double> lat_;
  int phase_ = 0;
  std::size_t stop_after_ = 0, sent_ = 0, read_ = 0, out_of_order_ = 0;
  uint64_t seq_ = 0, expect_seq_ = 0;
  clock::time_point next_push_{};
  bool pushing_ = false, stopping_ = false;
  std::string error_;
};

}  // namespace

void run_probe(probe_config c) {
  probe p(std::move(c));
  p.run();
}

}  // namespace c1000k::detail
