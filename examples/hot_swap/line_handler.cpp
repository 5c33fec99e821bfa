// The hot-swap example's connection handler, built twice (handler_v1.so with
// LINE_VERSION=1, handler_v2.so with LINE_VERSION=2). Every line a client
// sends is answered with "<version> <n> <line>\n", n counting this
// connection's lines, so a swap is visible on the wire and checkable: the
// version changes once, n goes on without a gap.
//
// State crosses versions as bytes: a fixed C-layout header (magic, layout,
// n, partial-line length) followed by the partial line not yet answered.
// v2 lists v1 in upgrade_from, so a v1 connection switches at its next line.
#include <herd/actors/module_handler.hpp>
#include <herd/net/protocol.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#ifndef LINE_VERSION
#error "build with -DLINE_VERSION=1 or 2"
#endif
#define LINE_STR2(x) #x
#define LINE_STR(x) LINE_STR2(x)
#define LINE_NAME "v" LINE_STR(LINE_VERSION)

namespace {

struct state_header {  // layout 1; grows only at the end
  uint32_t magic = 0x6c696e65;  // "line"
  uint32_t layout = 1;
  uint64_t lines = 0;
  uint64_t partial_bytes = 0;
};

constexpr std::size_t max_line = 64 * 1024;

class line_handler final : public herd::net::protocol {
 public:
  bool on_data(herd::net::stream& sock, std::string_view bytes) override {
    std::string out;
    while (!bytes.empty()) {
      const std::size_t nl = bytes.find('\n');
      if (nl == std::string_view::npos) {
        partial_.append(bytes);
        if (partial_.size() > max_line) {
          (void)sock.send("error line longer than 65536 bytes\n");
          return false;
        }
        break;
      }
      partial_.append(bytes.substr(0, nl));
      bytes.remove_prefix(nl + 1);
      ++lines_;
      out.append(LINE_NAME " ").append(std::to_string(lines_)).append(" ").append(partial_).append("\n");
      partial_.clear();
    }
    return out.empty() || bool(sock.send(out));
  }

  std::string export_state() override {
    state_header h;
    h.lines = lines_;
    h.partial_bytes = partial_.size();
    std::string state(sizeof h, '\0');
    std::memcpy(state.data(), &h, sizeof h);
    return state + partial_;
  }

  void code_change(std::string_view from, std::string state) override {
    state_header h;
    if (state.size() < sizeof h) throw std::runtime_error("line_handler: state from " + std::string(from) + " is too short");
    std::memcpy(&h, state.data(), sizeof h);
    if (h.magic != state_header{}.magic || h.layout != 1 || state.size() - sizeof h != h.partial_bytes)
      throw std::runtime_error("line_handler: state from " + std::string(from) + " has an unknown layout");
    lines_ = h.lines;
    partial_ = state.substr(sizeof h);
  }

 private:
  uint64_t lines_ = 0;
  std::string partial_;
};

}  // namespace

#if LINE_VERSION == 1
HERD_MODULE(line_handler, "line_handler", "v1");
#else
HERD_MODULE(line_handler, "line_handler", "v2", "v1");
#endif
