// call<void> (gen_server's `ok` habit) and call<const char*> (a literal reply):
// the reply types a caller cannot get.
#include <herd/actors/call.hpp>

#include <string>

void body(herd::pid server) {
#ifdef HERD_RIGHT_WAY
  (void)herd::call<herd::ok>(server, 1);
  (void)herd::call<std::string>(server, "name?");
#elif defined(HERD_C_STRING)
  (void)herd::call<const char*>(server, "name?");
#else
  herd::call<void>(server, 1);
#endif
}
