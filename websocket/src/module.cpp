// The host side of a module WebSocket handler (module.hpp). It is host code:
// the serve loop's hibernate continuation holds it, not module code, so a
// sleeping connection references the module through its handler alone.
#include <herd/websocket/module.hpp>

#include <herd/actors/logger.hpp>
#include <herd/actors/process.hpp>

namespace herd::ws {
namespace {

class module_adapter final : public handler {
 public:
  explicit module_adapter(herd::handler_ref<behaviour> h) : h_(std::move(h)) { h_.watch(); }

  void init(session& s, const http::request& r) override {
    switch_if_outdated();
    h_->init(s, r);
  }
  void handle(session& s, const event& e) override {
    switch_if_outdated();
    h_->handle(s, e);
  }
  void info(session& s, const herd::any_message& m) override {
    switch_if_outdated();
    // The notice is the host's: it only wakes an idle connection to switch.
    if (m.is<herd::modules::code_changed>()) return;
    h_->info(s, m);
  }
  void closing(session& s) override {
    switch_if_outdated();
    h_->closing(s);
  }
  void terminate(const ending& how) override { h_->terminate(how); }

 private:
  // One relaxed load when nothing changed. A failed switch keeps the
  // version that runs (upgrade left it untouched) and is not retried for
  // that version: ending the connection instead would lose every live
  // connection of a node to one bad code_change.
  void switch_if_outdated() {
    if (!h_.outdated()) return;
    try {
      herd::modules::upgrade(h_);
    } catch (const herd::module_error& e) {
      herd::log_report("websocket " + herd::process_label(herd::self()) + " stays on " + std::string(h_.module()) +
                       " " + std::string(h_.version()) + ": switching failed: " + e.what());
    }
  }

  herd::handler_ref<behaviour> h_;
};

}  // namespace

std::unique_ptr<handler> module_handler(std::string_view module) {
  return std::make_unique<module_adapter>(herd::modules::create<behaviour>(module));
}

}  // namespace herd::ws
