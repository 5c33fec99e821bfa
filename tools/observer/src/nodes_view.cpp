// nodes: the distribution's connections (herd::dist), read through the
// source it installs in actors (the observer does not link herd::dist): a
// node without distribution answers with no nodes.
#include "views.hpp"

#include <herd/actors/detail/remote_nodes.hpp>

namespace herd::observer {

json nodes_view(const json& f) {
  std::optional<std::string> only = string_field(f, "node");
  if (only && only->empty()) throw request_failure{"bad_request", "node: the name is empty"};
  herd::detail::remote_nodes_report r = herd::detail::remote_nodes();
  json a = json::array();
  for (auto& n : r.nodes) {
    if (only && n.node != *only) continue;
    a.push_back({{"name", n.node},
                 {"up", n.up},
                 {"bytes_in", n.bytes_in},
                 {"bytes_out", n.bytes_out},
                 {"messages_in", n.messages_in},
                 {"messages_out", n.messages_out},
                 {"queued_bytes", n.queued_bytes},
                 {"queued_frames", n.queued_frames},
                 {"last_received_ms", n.last_received_ms < 0 ? json(nullptr) : json(n.last_received_ms)},
                 {"ticks_missed", n.ticks_missed}});
  }
  if (only && a.empty()) throw request_failure{"not_found", "not connected to node \"" + *only + "\""};
  return {{"node", r.this_node.empty() ? json(nullptr) : json(r.this_node)}, {"nodes", std::move(a)}};
}

}  // namespace herd::observer
