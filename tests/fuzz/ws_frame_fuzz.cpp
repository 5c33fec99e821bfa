// libFuzzer target: the WebSocket frame parser and the streaming UTF-8
// validator (sans-I/O, websocket/). The input is fed in pieces cut where
// its first byte says, so frames and UTF-8 sequences split across reads are
// covered. Invariants checked: whole and piecewise feeding give the same
// events; no message exceeds max_message; every text message and close
// reason is valid UTF-8; nothing follows a fail or a close; the streaming
// validator agrees with the one-shot one at every cut.
#include <herd/websocket/parser.hpp>
#include <herd/websocket/utf8.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct seen {
  herd::ws::event::kind type;
  std::string payload;
  uint16_t code;
  bool operator==(const seen&) const = default;
};

std::vector<seen> drain(herd::ws::frame_parser& p, std::size_t max) {
  std::vector<seen> out;
  while (auto e = p.next()) {
    using k = herd::ws::event::kind;
    if ((e->type == k::text || e->type == k::binary) && e->payload.size() > max) std::abort();
    if ((e->type == k::text || e->type == k::close) && !herd::ws::valid_utf8(e->payload)) std::abort();
    out.push_back({e->type, std::string(e->payload), e->code});
    if (e->type == k::fail || e->type == k::close) {
      if (p.next()) std::abort();
      break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::size_t step = 1 + data[0] % 17;
  constexpr std::size_t max = 4096;

  herd::ws::frame_parser whole({.max_message = max}), pieces({.max_message = max});
  whole.feed(in);
  auto a = drain(whole, max);
  std::vector<seen> b;
  for (std::size_t at = 0; at < in.size(); at += step) {
    pieces.feed(in.substr(at, step));
    auto more = drain(pieces, max);
    b.insert(b.end(), more.begin(), more.end());
  }
  if (a != b) std::abort();

  herd::ws::utf8_validator v;
  for (std::size_t at = 0; at < in.size(); at += step) v.feed(in.substr(at, step));
  if (v.complete() != herd::ws::valid_utf8(in)) std::abort();
  return 0;
}
