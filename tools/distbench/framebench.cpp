// framebench: the receive path's per-frame costs, in ns per frame —
//   decode_frame        the bounded scanner (dist/src/etf_scan.cpp) on a SEND_SENDER
//                       and a REG_SEND frame, as the connection process runs it;
//   ei_control          the same control tuples read with ei's decoders, as decode_frame
//                       did before (ei_decode_version/tuple_header/long/pid/atom);
//   payload_term        etf_message::term() of the payload {tick, 12345} — what a
//                       receiver pays when it wants a herd::term;
//   frame_send          writing a SEND_SENDER frame (the sender's side).
//   framebench [N]
#include <herd/dist/node.hpp>

#include <ei.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wire.hpp"

namespace {

using clk = std::chrono::steady_clock;
volatile long sink = 0;

template <class F>
double ns_per(long n, F&& f) {
  auto t0 = clk::now();
  for (long i = 0; i < n; ++i) f();
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - t0).count()) / double(n);
}

// A pid as decode_frame made it before (from_erlang): ours, or interned.
herd::pid from_ei(const erlang_pid& p) {
  if (std::string_view(p.node) == "bench@host") return herd::pid{p.num, p.serial};
  return herd::dist::intern({p.node, p.num, p.serial, p.creation});
}

// The control tuple as decode_frame read it with ei before the scanner.
long ei_control(const std::string& body) {
  const char* buf = body.data();
  int i = 1, version = 0, arity = 0;
  long op = 0;
  if (ei_decode_version(buf, &i, &version) || ei_decode_tuple_header(buf, &i, &arity) || ei_decode_long(buf, &i, &op))
    return -1;
  erlang_pid p{};
  char atom[MAXATOMLEN_UTF8];
  if (op == 22) {
    if (ei_decode_pid(buf, &i, &p)) return -1;
    herd::pid from = from_ei(p);
    if (ei_decode_pid(buf, &i, &p)) return -1;
    return i + long(from_ei(p).index) + long(from.index);
  } else if (op == 6) {
    if (ei_decode_pid(buf, &i, &p)) return -1;
    herd::pid from = from_ei(p);
    if (ei_skip_term(buf, &i) || ei_decode_atom(buf, &i, atom)) return -1;
    std::string name = atom;
    return i + long(from.index) + long(name.size());
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000000;
  ei_init();
  herd::dist::detail::self_id me{"bench@host", 3};
  herd::pid there = herd::dist::intern({"beam@host", 85, 1, 7});
  std::string payload = herd::term_to_binary(herd::term::tuple({herd::atom("tick"), 12345}));
  std::string send = herd::dist::detail::frame_send(me, there, herd::pid{7, 1}, payload, true).substr(4);
  std::string reg = herd::dist::detail::frame_reg_send(me, there, "counter", payload).substr(4);
  for (auto& [name, body] : {std::pair{"send_sender", &send}, std::pair{"reg_send", &reg}}) {
    double scan = ns_per(n, [&] { sink = sink + long(herd::dist::detail::decode_frame(me, *body)->payload.size()); });
    double ei = ns_per(n, [&] { sink = sink + ei_control(*body); });
    std::printf("RESULT bench=framebench frame=%s decode_frame_ns=%.1f ei_control_ns=%.1f\n", name, scan, ei);
  }
  herd::dist::etf_message m{there, payload};
  double term = ns_per(n, [&] { sink = sink + long(m.term()->size()); });
  double enc = ns_per(n, [&] { sink = sink + long(herd::dist::detail::frame_send(me, herd::pid{7, 1}, there, payload, true).size()); });
  std::printf("RESULT bench=framebench payload_term_ns=%.1f frame_send_ns=%.1f n=%ld\n", term, enc, n);
  return 0;
}
