// libFuzzer: herd's external term format decoder on arbitrary bytes. It
// must return a term or an error (never crash, read out of bounds or
// allocate past the input's proportion), and whatever it accepts must
// re-encode and decode to an equal term that prints, hashes and compares.
#include <herd/dist/term_codec.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  herd::decode_options o;
  o.max_size = 1 << 20;
  auto t = herd::binary_to_term(in, o);
  std::size_t at = 0;
  auto raw = herd::decode_term(in, at, o);  // the same bytes as a dist payload (no version byte)
  for (auto* r : {&t, &raw}) {
    if (!*r) {
      if ((*r).error().message().empty()) std::abort();
      continue;
    }
    const herd::term& x = **r;
    std::string b = herd::term_to_binary(x);
    auto back = herd::binary_to_term(b, o);
    if (!back || !(*back == x) || back->hash() != x.hash() || (x <=> *back) != 0) std::abort();
    if (herd::term_to_binary(*back) != b) std::abort();
    (void)herd::to_string(x);
  }
  return 0;
}
