// libFuzzer: decode_frame (a distribution frame's body, after its length)
// on arbitrary bytes, as a peer could send them. It must return a frame or
// refuse with a reason — never read past the input (ASan: the input is an
// exact-size copy), and whatever spans it hands back lie inside the input.
// net_kernel's is_auth reply reads peer payloads too: fed the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "wire.hpp"

namespace {

bool inside(std::string_view part, const std::string& whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const herd::dist::detail::self_id me{"fuzz@host", 1};
  std::string body(reinterpret_cast<const char*>(data), size);
  std::string why;
  auto f = herd::dist::detail::decode_frame(me, body, &why);
  if (!f) {
    if (why.empty()) std::abort();
  } else if (!inside(f->payload, body) || !inside(f->from_raw, body) || !inside(f->to_raw, body) ||
             !inside(f->ref_raw, body)) {
    std::abort();
  }
  if (size > 1) (void)herd::dist::detail::is_auth_reply(me, std::string_view(body).substr(1), true);
  return 0;
}
