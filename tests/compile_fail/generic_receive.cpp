// receive([](auto x) { ... }): a generic lambda names no message type.
#include <herd/actors/receive.hpp>

void body() {
#ifdef HERD_RIGHT_WAY
  herd::receive([](const herd::any_message& m) { (void)m.type_name(); });
#else
  herd::receive([](auto x) { (void)x; });
#endif
}
