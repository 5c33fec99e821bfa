#include <herd/http/server.hpp>

namespace herd::http {

herd::net::connection_handler serve(router r, server_options o) {
  // One router for every connection: read only from here on.
  auto shared = std::make_shared<const router>(std::move(r));
  return [shared, o](herd::net::tcp_socket s) { serve_connection(std::move(s), shared, o); };
}

template void serve_connection<herd::net::tcp_socket>(herd::net::tcp_socket, std::shared_ptr<const router>,
                                                      server_options);

}  // namespace herd::http
