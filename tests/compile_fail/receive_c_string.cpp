// A handler for `const char*`: send(p, "hello") sends a std::string.
#include <herd/actors/receive.hpp>

#include <string>

void body() {
#ifdef HERD_RIGHT_WAY
  herd::receive([](const std::string& s) { (void)s; });
#else
  herd::receive([](const char* s) { (void)s; });
#endif
}
