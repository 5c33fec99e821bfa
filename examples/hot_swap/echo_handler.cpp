// An echo protocol as a module, built twice (echo_v1.so, echo_v2.so; v2 takes
// v1's connections) so that a swap can be measured under connbench's load:
// swap_bench.py. It has no state, so export_state/code_change are the
// defaults.
#include <herd/actors/module_handler.hpp>
#include <herd/net/protocol.hpp>

#ifndef ECHO_VERSION
#error "build with -DECHO_VERSION=1 or 2"
#endif

namespace {

class echo_handler final : public herd::net::protocol {
 public:
  bool on_data(herd::net::stream& sock, std::string_view bytes) override { return bool(sock.send(bytes)); }
};

}  // namespace

#if ECHO_VERSION == 1
HERD_MODULE(echo_handler, "echo_handler", "v1");
#else
HERD_MODULE(echo_handler, "echo_handler", "v2", "v1");
#endif
