// The simulated clients of the C1000K WebSocket run: shard processes, each
// holding the client ends of its share of the sessions — the part a real
// deployment leaves to the kernel and the users' devices.
//
// A shard keeps 25 bytes per client end (the 16-byte handle, its id for the
// lookup, a stage byte) so that the RSS growth stays the server's. Ids of
// one shard's ends increase (memory transports take them from one counter),
// so a tcp_data's end is found by binary search, with no map. Everything a
// client end reads is checked: the 101 with the accept key for its own
// Sec-WebSocket-Key, then frames through herd::ws::frame_parser in a
// client's role ("joined", the room's payload exactly once, pings answered).
#include <algorithm>
#include <herd/actors/process.hpp>
#include <herd/actors/receive.hpp>
#include <herd/actors/send.hpp>
#include <herd/websocket/handshake.hpp>
#include <herd/websocket/parser.hpp>
#include <unordered_map>

#include "ws_room_parts.hpp"

namespace c1000k::detail {

using herd::net::active;
using herd::net::memory_transport;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64: a key per index, nothing stored
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string key_for(uint64_t idx) {
  static constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned char raw[18] = {};  // 16 random bytes, padded to a multiple of 3
  uint64_t a = mix(idx), b = mix(idx ^ 0x5bd1e995u);
  for (int i = 0; i < 8; ++i) {
    raw[i] = static_cast<unsigned char>(a >> (8 * i));
    raw[8 + i] = static_cast<unsigned char>(b >> (8 * i));
  }
  std::string out;
  for (int i = 0; i < 18; i += 3) {
    uint32_t v = uint32_t(raw[i]) << 16 | uint32_t(raw[i + 1]) << 8 | raw[i + 2];
    for (int k = 3; k >= 0; --k) out += b64[(v >> (6 * k)) & 63];
  }
  out.resize(22);  // 16 bytes are 22 characters and "=="
  return out + "==";
}

std::string upgrade_request(uint64_t idx) {
  return "GET /ws HTTP/1.1\r\nHost: c1000k\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: " +
         key_for(idx) + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

head_check check_101(std::string_view bytes, uint64_t idx) {
  auto end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (bytes.size() > 4096) return {0, "no end of the 101 head in 4 KiB"};
    return {};
  }
  std::string_view head = bytes.substr(0, end + 4);
  if (!head.starts_with("HTTP/1.1 101 ")) return {0, "not a 101: " + std::string(head.substr(0, 40))};
  std::string accept = "\r\nSec-WebSocket-Accept: " + herd::ws::accept_key(key_for(idx)) + "\r\n";
  if (head.find(accept) == std::string_view::npos) return {0, "wrong Sec-WebSocket-Accept"};
  return {head.size(), {}};
}

std::size_t whole_frames(std::string_view b) {
  std::size_t at = 0;
  for (;;) {
    if (b.size() - at < 2) return at;
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(b[at + i]); };
    uint64_t len = byte(1) & 0x7f;
    std::size_t hdr = 2;
    if (len == 126) {
      hdr = 4;
      if (b.size() - at < hdr) return at;
      len = uint64_t(byte(2)) << 8 | byte(3);
    } else if (len == 127) {
      hdr = 10;
      if (b.size() - at < hdr) return at;
      len = 0;
      for (int i = 2; i < 10; ++i) len = len << 8 | byte(i);
    }
    if (byte(1) & 0x80) hdr += 4;  // a mask key (a server must not send one: the parser refuses it)
    if (b.size() - at < hdr || b.size() - at - hdr < len) return at;
    at += hdr + len;
  }
}

std::string client_frame(herd::ws::opcode op, std::string_view payload, uint32_t mask) {
  std::string f;
  herd::ws::write_frame(f, op, payload, true, mask);
  return f;
}

std::size_t shard_bytes_per_client() { return sizeof(memory_transport) + sizeof(uint64_t) + sizeof(uint8_t); }

namespace {

// A client end's byte: its stage in the low nibble, the room frames it has
// read in the high one.
enum stage : uint8_t { handshaking = 0, open = 1, joining = 2, joined = 3, stage_bits = 0x0f, one_round = 0x10 };

class shard {
 public:
  explicit shard(shard_config c) : c_(std::move(c)) {
    ends_.reserve(c_.capacity);
    ids_.reserve(c_.capacity);
    stage_.reserve(c_.capacity);
  }

  void run() {
    for (bool more = true; more;) {
      more = herd::receive(
          [&](herd::net::tcp_data& d) {
            on_data(d.sock.v, d.data.view());
            return true;
          },
          [&](const herd::net::tcp_closed& e) {
            fail("a session was closed by the server", e.sock.v);
            return true;
          },
          [&](const herd::net::tcp_error& e) {
            fail("a session failed", e.sock.v);
            return true;
          },
          [&](const shard_open& o) {
            target_ = std::min(o.target, c_.capacity);
            return true;
          },
          [&](const shard_join&) {
            joining_ = true;
            return true;
          },
          [&](const shard_expect_room& e) {
            expect_room_ = true;
            round_ = e.round;
            room_text_ = e.text;
            room_read_ = 0;
            return true;
          },
          [&](const shard_stop&) {
            std::size_t n = ends_.size();
            ends_.clear();  // each end closes: its session reads EOF and ends
            report(shard_report::stopped, n);
            return false;
          },
          herd::after(c_.stall, [&] {
            if (busy()) fail("no progress for the stall time", 0);
            return true;
          }));
      if (more && error_.empty()) step();
    }
  }

 private:
  bool busy() const {
    return opened_ < target_ || (joining_ && joined_ < ends_.size()) || (expect_room_ && room_read_ < ends_.size());
  }

  // Starts what the window allows, and reports finished phases.
  void step() {
    while (ends_.size() < target_ && ends_.size() - opened_ < c_.window)
      if (!open_one()) return;
    if (opened_ == target_ && reported_open_ < target_) {
      reported_open_ = target_;
      report(shard_report::opened, opened_);
    }
    if (joining_) {
      while (join_issued_ < ends_.size() && join_issued_ - joined_ < c_.window) {
        if (!ends_[join_issued_].send(client_frame(herd::ws::opcode::text, "join", next_mask())))
          return fail("cannot send join", ids_[join_issued_]);
        stage_[join_issued_] = joining;
        ++join_issued_;
      }
      if (joined_ == ends_.size()) {
        joining_ = false;
        report(shard_report::joined, joined_);
      }
    }
  }

  bool open_one() {
    uint64_t idx = c_.first_idx + ends_.size();
    auto c = herd::net::memory_connect(c_.server);
    if (!c) {
      fail("memory_connect: " + c.error().message(), 0);
      return false;
    }
    if (!ids_.empty() && c->client.id().v <= ids_.back()) {
      fail("memory ids do not increase", 0);
      return false;
    }
    if (!c->client.set_active(active::once()) || !c->client.send(upgrade_request(idx))) {
      fail("cannot send the upgrade request", c->client.id().v);
      return false;
    }
    if (ends_.size() % 1000 == 0) sample_.push_back(c->server);
    ids_.push_back(c->client.id().v);
    ends_.push_back(std::move(c->client));
    stage_.push_back(handshaking);
    return true;
  }

  void on_data(uint64_t id, std::string_view bytes) {
    if (!error_.empty()) return;  // a failed run only waits for its stop
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (it == ids_.end() || *it != id) return fail("data for an unknown end", id);
    std::size_t i = std::size_t(it - ids_.begin());
    std::string kept;
    if (auto p = partial_.find(uint32_t(i)); p != partial_.end()) {
      kept = std::move(p->second);
      partial_.erase(p);
      kept.append(bytes);
      bytes = kept;
    }
    if ((stage_[i] & stage_bits) == handshaking) {
      head_check h = check_101(bytes, c_.first_idx + i);
      if (!h.error.empty()) return fail(h.error, id);
      if (h.length == 0) return keep(i, bytes);
      stage_[i] = open;
      ++opened_;
      bytes.remove_prefix(h.length);
    }
    std::size_t whole = whole_frames(bytes);
    if (whole > 0) frames(i, bytes.substr(0, whole));
    if (whole < bytes.size()) return keep(i, bytes.substr(whole));
    if (error_.empty() && !ends_[i].set_active(active::once())) fail("cannot re-arm", id);
  }

  void keep(std::size_t i, std::string_view rest) {
    partial_[uint32_t(i)] = std::string(rest);
    if (!ends_[i].set_active(active::once())) fail("cannot re-arm", ids_[i]);
  }

  void frames(std::size_t i, std::string_view bytes) {
    herd::ws::frame_parser p({.max_message = 1 << 20, .require_mask = false});
    p.feed(bytes);
    while (auto e = p.next()) {
      using k = herd::ws::event::kind;
      switch (e->type) {
        case k::text:
          text(i, e->payload);
          break;
        case k::ping:
          if (!ends_[i].send(client_frame(herd::ws::opcode::pong, e->payload, next_mask())))
            fail("cannot answer a ping", ids_[i]);
          break;
        case k::pong:
          break;
        case k::close:
          fail("the server sent close " + std::to_string(e->code), ids_[i]);
          break;
        case k::binary:
          fail("a binary frame", ids_[i]);
          break;
        case k::fail:
          fail(std::string("a bad frame from the server: ") + e->why, ids_[i]);
          break;
      }
    }
  }

  void text(std::size_t i, std::string_view t) {
    uint8_t s = stage_[i] & stage_bits;
    if (t == "joined") {
      if (s != joining) return fail("joined without a join", ids_[i]);
      stage_[i] = uint8_t((stage_[i] & ~stage_bits) | joined);
      ++joined_;
    } else if (room_text_ && t == *room_text_) {
      if (s != joined) return fail("a room frame on a session not joined", ids_[i]);
      if (stage_[i] >> 4 != round_ - 1)
        return fail("a room frame twice, or before the one of the round before", ids_[i]);
      stage_[i] = uint8_t(stage_[i] + one_round);
      if (++room_read_ == ends_.size()) {
        expect_room_ = false;
        report(shard_report::room_done, room_read_);
      }
    } else {
      fail("unexpected text: " + std::string(t.substr(0, 40)), ids_[i]);
    }
  }

  uint32_t next_mask() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return uint32_t(rng_);
  }

  void report(shard_report::kind_t k, std::size_t n) {
    shard_report r{k, c_.index, n, clock::now()};
    if (k == shard_report::opened) r.sample = std::exchange(sample_, {});
    herd::send(c_.driver, std::move(r));
  }

  // The first error goes to the driver, which stops the run.
  void fail(std::string why, uint64_t id) {
    if (!error_.empty()) return;
    error_ = "shard " + std::to_string(c_.index) + ": " + std::move(why);
    if (id != 0) error_ += " (memory:" + std::to_string(id) + ")";
    shard_report r{shard_report::failed, c_.index, 0, clock::now()};
    r.error = error_;
    herd::send(c_.driver, std::move(r));
  }

  shard_config c_;
  std::vector<memory_transport> ends_;
  std::vector<uint64_t> ids_;
  std::vector<uint8_t> stage_;
  std::unordered_map<uint32_t, std::string> partial_;  // bytes of a cut head or frame, rare
  std::vector<herd::pid> sample_;
  std::size_t target_ = 0, opened_ = 0, reported_open_ = 0, join_issued_ = 0, joined_ = 0, room_read_ = 0;
  bool joining_ = false, expect_room_ = false;
  int round_ = 0;
  std::shared_ptr<const std::string> room_text_;
  std::string error_;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace

void run_shard(shard_config c) {
  c.window = std::max<std::size_t>(c.window, 1);
  shard s(std::move(c));
  s.run();  // until the driver's stop, after a failure too: it decides when the ends close
}

}  // namespace c1000k::detail
