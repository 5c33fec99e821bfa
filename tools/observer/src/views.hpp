// The answers to the protocol's one-shot requests, as JSON results. Each
// runs on the observer's thread (never a worker) and throws request_failure
// for an error reply. Grouped by what they look at:
//   overview.cpp  overview, and the Prometheus text made from it
//   processes.cpp processes, process
//   kill.cpp      kill (and the wait for the exit)
//   tree.cpp      tree
//   node_views.cpp listeners, set_max_connections, modules, load
//   nodes_view.cpp nodes (the distribution's connections)
#pragma once
#include "protocol.hpp"
#include "sampler.hpp"

#include <herd/actors/introspect.hpp>

#include <string>

namespace herd::observer {

json overview_view(const sampler& s);
std::string prometheus_text(const sampler& s);

// baseline: the node's last reductions sample (sort reductions_rate), or nullptr.
json processes_view(const json& f, introspect::reductions_sample* baseline);
json process_view(const json& f);
json kill_view(const json& f);

json tree_view();

json listeners_view();
json tables_view();
json set_max_connections_view(const json& f);
json modules_view();
json load_view(const json& f);
json nodes_view(const json& f);

}  // namespace herd::observer
