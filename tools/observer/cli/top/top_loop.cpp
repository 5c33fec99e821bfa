// top's event loop: one connection held open; every second it pipelines
// `overview`, `processes` (as many rows as fit, in the chosen order) and, in
// the process view, `process`, then draws one frame. Between refreshes it
// sleeps in poll(2) on the keyboard and the SIGWINCH wake pipe, so a key or
// a resize is answered at once (a sort change or a resize also refreshes at
// once: the list's length and order come from the node).
//
// Keys: r/m/b sort by reductions/memory/mailbox; up/down (and j, PgUp/PgDn,
// Home/End) move the selection, which follows its process across refreshes;
// Enter opens the process view, Esc/Backspace closes it; k asks "kill <pid>?
// y/n" for the selected (or viewed) process; q quits. The issue asks for
// both "j/k select" and "k kills"; k kills (the wording, and htop's),
// and moving up is the up arrow.
#include "top/top_loop.hpp"

#include "cli_error.hpp"
#include "command_views.hpp"
#include "node_connection.hpp"
#include "top/terminal.hpp"
#include "top/top_keys.hpp"
#include "top/top_screen.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace observer_cli {
namespace {

using namespace std::chrono_literals;

constexpr auto refresh_period = 1s;
// How long a lone ESC waits for the rest of an arrow key's sequence.
constexpr int escape_wait_ms = 50;

json result_of(const json& reply, const std::string& path) {
  if (!reply.contains("result") || !reply.at("result").is_object())
    throw node_failure("malformed reply from the node at " + path + ": no \"result\" object");
  return reply.at("result");
}

std::size_t row_count(const top_state& s) {
  return s.processes.is_object() ? s.processes.at("processes").size() : 0;
}

// After a refresh the selection stays on its process if it is still listed,
// else on the same row (clamped).
void follow_selection(top_state& s) {
  std::size_t n = row_count(s);
  if (n == 0) {
    s.selected = 0;
    s.selected_pid.clear();
    return;
  }
  const json& list = s.processes.at("processes");
  for (std::size_t i = 0; i < n; ++i)
    if (list[i].at("pid").get<std::string>() == s.selected_pid) {
      s.selected = i;
      return;
    }
  s.selected = std::min(s.selected, n - 1);
  s.selected_pid = list[s.selected].at("pid").get<std::string>();
}

void refresh(node_connection& node, top_state& s, screen_size size) {
  long ov = node.send({{"req", "overview"}});
  long pr = node.send({{"req", "processes"},
                       {"sort", sort_name(s.sort)},
                       {"limit", process_rows(s, size.rows, size.cols)}});
  long pv = s.process_view ? node.send({{"req", "process"}, {"pid", s.viewed_pid}}) : 0;
  auto deadline = clock_type::now() + reply_timeout;
  s.overview = result_of(node.read_reply(ov, deadline), node.path());
  s.processes = result_of(node.read_reply(pr, deadline), node.path());
  follow_selection(s);
  if (pv) {
    // A process that exits while viewed is news to show, not a failure.
    try {
      s.process = result_of(node.read_reply(pv, deadline), node.path());
      s.process_error.clear();
    } catch (const node_error_reply& e) {
      s.process = nullptr;
      s.process_error = e.code == "noproc" ? s.viewed_pid + " is no longer alive" : e.what();
    }
  }
}

void kill_process(node_connection& node, top_state& s, const std::string& pid) {
  try {
    json r = node.call({{"req", "kill"}, {"pid", pid}});
    s.status = render_kill(r);
    if (!s.status.empty() && s.status.back() == '\n') s.status.pop_back();
  } catch (const node_error_reply& e) {
    s.status = "kill " + pid + ": " + e.what();
  }
}

enum class outcome { none, redraw, refresh, quit };

outcome on_key(const key& k, top_state& s, node_connection& node) {
  if (!s.confirm_kill_pid.empty()) {
    std::string pid = std::exchange(s.confirm_kill_pid, "");
    if (k.kind == key_kind::character && (k.ch == 'y' || k.ch == 'Y')) {
      kill_process(node, s, pid);
      return outcome::refresh;
    }
    s.status = "kill cancelled";
    return outcome::redraw;
  }
  if (k.kind == key_kind::character) {
    switch (k.ch) {
      case 'q':
      case 'Q':
        return outcome::quit;
      case 'k': {
        const std::string& pid = s.process_view ? s.viewed_pid : s.selected_pid;
        if (pid.empty()) return outcome::none;
        s.confirm_kill_pid = pid;
        return outcome::redraw;
      }
      case 'r':
      case 'm':
      case 'b':
        if (s.process_view) return outcome::none;
        s.sort = k.ch == 'r' ? sort_key::reductions : k.ch == 'm' ? sort_key::memory : sort_key::mailbox;
        s.selected = 0;  // a new order: start from its top
        s.selected_pid.clear();
        s.status = std::string("sorted by ") + sort_name(s.sort);
        return outcome::refresh;
      case 'j':
        return on_key({key_kind::down}, s, node);
      default:
        return outcome::none;
    }
  }
  if (s.process_view) {
    if (k.kind == key_kind::escape || k.kind == key_kind::backspace) {
      s.process_view = false;
      s.process = nullptr;
      s.process_error.clear();
      return outcome::redraw;
    }
    return outcome::none;
  }
  std::size_t n = row_count(s);
  if (n == 0) return outcome::none;
  std::size_t sel = s.selected;
  switch (k.kind) {
    case key_kind::up: sel = sel > 0 ? sel - 1 : 0; break;
    case key_kind::down: sel = std::min(sel + 1, n - 1); break;
    case key_kind::page_up: sel = sel > 10 ? sel - 10 : 0; break;
    case key_kind::page_down: sel = std::min(sel + 10, n - 1); break;
    case key_kind::home: sel = 0; break;
    case key_kind::end: sel = n - 1; break;
    case key_kind::enter:
      s.process_view = true;
      s.viewed_pid = s.selected_pid;
      s.process = nullptr;
      s.process_error.clear();
      return outcome::refresh;
    default: return outcome::none;
  }
  s.selected = sel;
  s.selected_pid = s.processes.at("processes")[sel].at("pid").get<std::string>();
  return outcome::redraw;
}

}  // namespace

int run_top(const invocation& inv) {
  // Connect first: a missing node is a plain one-line error, no screen flash.
  node_connection node(inv.socket);
  terminal term;
  top_state s;
  screen_size size = term.size();
  std::string pending;
  auto next_refresh = clock_type::now();
  bool dirty = true;
  for (;;) {
    if (clock_type::now() >= next_refresh) {
      refresh(node, s, size);
      next_refresh = clock_type::now() + refresh_period;
      dirty = true;
    }
    if (dirty) {
      term.draw(render_top(s, size.rows, size.cols));
      dirty = false;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_refresh - clock_type::now()).count();
    int timeout = static_cast<int>(std::max<long long>(0, left));
    if (!pending.empty()) timeout = std::min(timeout, escape_wait_ms);
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {term.wake_fd(), POLLIN, 0}};
    int r = ::poll(fds, 2, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw node_failure(std::string("poll: ") + std::strerror(errno));
    }
    if ((fds[1].revents & POLLIN) && term.take_resize()) {
      size = term.size();
      next_refresh = clock_type::now();  // the list's length depends on the height
    }
    if (fds[0].revents & POLLIN) {
      std::string in = term.read_input();
      if (in.empty()) return 0;  // the terminal is gone: nobody to show anything to
      pending += in;
    } else if (fds[0].revents & (POLLHUP | POLLERR)) {
      return 0;
    }
    for (const key& k : decode_keys(pending, /*flush_escape=*/r == 0)) {
      switch (on_key(k, s, node)) {
        case outcome::none: break;
        case outcome::redraw: dirty = true; break;
        case outcome::refresh: next_refresh = clock_type::now(); break;
        case outcome::quit: return 0;
      }
    }
  }
}

}  // namespace observer_cli
