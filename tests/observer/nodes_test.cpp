// nodes: the distribution's connections as the observer reports them, with
// a second herd node (dist_node_probe, stopped by PID) that echoes what it
// is sent, so that both directions carry a known number of messages.
#include "observer_fixture.hpp"

#include <herd/dist/node.hpp>
#include <herd/dist/term.hpp>
#include <herd/dist/term_codec.hpp>

#include "peers.hpp"

using namespace observer_test;
using namespace std::chrono_literals;

namespace {

const std::string cookie = "herd_observer_nodes_cookie";

}  // namespace

TEST_CASE("nodes without distribution: no node name, no nodes") {
  live_node n(1, [](root_ctx&) {});
  client c(n.socket());
  json r = c.ask(req("nodes"));
  INFO(r.dump());
  CHECK(r["ok"] == true);
  CHECK(r["result"]["node"].is_null());
  CHECK(r["result"]["nodes"] == json::array());
}

TEST_CASE("nodes lists a connected herd node with its traffic both ways, and refuses a bad node field clearly") {
  constexpr int sent = 20;
  std::string me, probe_node, err;
  live_node n(2, [&](root_ctx& ctx) {
    herd::dist::dist_options o;
    o.sname = herd::test::unique_sname("obsnodes");
    o.cookie = cookie;
    auto started = herd::dist::start(o);
    if (!started) return void(err = started.error().message());
    me = *started;
    std::string p = herd::test::unique_sname("obsprobe");
    auto probe = std::make_shared<herd::test::peer_process>(std::vector<std::string>{HERD_DIST_NODE_PROBE, p, cookie});
    ctx.on_stop = [probe] {
      herd::dist::stop();
      probe->kill_now();
    };
    if (!probe->wait_for("node ")) return void(err = "the probe did not start");
    probe_node = p + "@" + herd::test::short_host();
    if (auto c = herd::dist::connect(probe_node, 30s); !c) return void(err = c.error().message());
    // The probe's echo answers {From, T} with T: `sent` messages each way.
    auto d = herd::dist::describe(herd::self());
    herd::term from = herd::term::pid(herd::erl_pid{herd::atom(d->node), d->id, d->serial, d->creation});
    for (int i = 0; i < sent; ++i)
      herd::dist::send("echo", probe_node, herd::term_to_binary(herd::term::tuple({from, i})));
    for (int i = 0; i < sent; ++i)
      herd::receive([](const herd::dist::etf_message&) {}, herd::after(30s, [&] { err = "no echo"; }));
  });
  REQUIRE(err.empty());
  client c(n.socket());
  json r = c.ask(req("nodes"));
  INFO(r.dump());
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["node"] == me);
  REQUIRE(r["result"]["nodes"].size() == 1);
  const json& row = r["result"]["nodes"][0];
  CHECK(row["name"] == probe_node);
  CHECK(row["up"] == true);
  CHECK(row["messages_out"].get<int>() >= sent);  // the test's sends (and any net_kernel traffic)
  CHECK(row["messages_in"].get<int>() >= sent);   // the echoes
  // Each frame is at least its 4-byte length and a control tuple.
  CHECK(row["bytes_out"].get<int64_t>() > 10 * sent);
  CHECK(row["bytes_in"].get<int64_t>() > 10 * sent);
  CHECK(row["queued_bytes"].is_number_unsigned());
  CHECK(row["queued_frames"].is_number_unsigned());
  CHECK(row["last_received_ms"].is_number());
  CHECK(row["ticks_missed"].is_number_unsigned());

  json one = c.ask(req("nodes", {{"node", probe_node}}));
  CHECK(one["result"]["nodes"].size() == 1);
  json none = c.ask(req("nodes", {{"node", "nobody@nowhere"}}));
  CHECK(none["ok"] == false);
  CHECK(none["error"]["code"] == "not_found");
  json bad = c.ask(req("nodes", {{"node", 5}}));
  CHECK(bad["ok"] == false);
  CHECK(bad["error"]["code"] == "bad_request");
  CHECK(bad["error"]["message"] == "node must be a string");
}
