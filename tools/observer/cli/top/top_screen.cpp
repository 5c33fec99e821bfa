#include "top/top_screen.hpp"

#include "command_views.hpp"
#include "humanise.hpp"
#include "text_table.hpp"

#include <algorithm>
#include <ctime>

namespace observer_cli {
namespace {

using align = text_table::align;

constexpr const char* reverse_video = "\x1b[7m";
constexpr const char* bold = "\x1b[1m";
constexpr const char* plain = "\x1b[0m";

// Names come from the node: keep only printable ASCII, so a line's bytes are
// its columns and nothing in a name can move the cursor.
std::string printable(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

// A whole line in one style, cut to the width before the escapes go around it.
std::string styled(const char* style, const std::string& text, int cols) {
  return style + text.substr(0, static_cast<std::size_t>(cols)) + plain;
}

int bar_columns(const top_state& s, int cols) {
  std::size_t workers = s.overview.is_object() ? s.overview.at("workers").size() : 0;
  return workers > 2 && cols >= 80 ? 2 : 1;
}

// Scheduler bars take at most a quarter of the screen; the rest say "+N".
std::size_t bar_lines(const top_state& s, int rows, int cols) {
  std::size_t workers = s.overview.is_object() ? s.overview.at("workers").size() : 0;
  std::size_t per_line = static_cast<std::size_t>(bar_columns(s, cols));
  std::size_t want = (workers + per_line - 1) / per_line;
  return std::min(want, std::max<std::size_t>(1, static_cast<std::size_t>(rows) / 4));
}

// The header's height: title, bars, memory, rates, blank.
std::size_t header_lines(const top_state& s, int rows, int cols) { return 4 + bar_lines(s, rows, cols); }

std::string worker_bar(const json& w, int width) {
  double u = std::clamp(w.at("utilization").get<double>(), 0.0, 1.0);
  std::string label = "S";
  label += std::to_string(w.at("id").get<long long>());
  std::string tail = " ";
  tail += fit(human_percent(u), 4, align::right);
  tail += " rq ";
  tail += fit(std::to_string(w.at("run_queue").get<long long>()), 5);
  int inner = width - static_cast<int>(label.size()) - 3 - static_cast<int>(tail.size());
  if (inner < 4) inner = 4;
  int filled = static_cast<int>(u * inner + 0.5);
  return label + " [" + std::string(filled, '|') + std::string(inner - filled, ' ') + "]" + tail;
}

void header(const top_state& s, int rows, int cols, std::vector<std::string>& out) {
  const json& o = s.overview;
  char clock[16];
  std::time_t now = std::time(nullptr);
  std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
  if (!o.is_object()) {
    out.push_back(std::string("herd top  waiting for the node...  ") + clock);
    for (std::size_t i = 1; i < header_lines(s, rows, cols); ++i) out.emplace_back();
    return;
  }
  const json& node = o.at("node");
  out.push_back(styled(bold,
                       "herd top  os pid " + std::to_string(node.at("os_pid").get<long long>()) + "  up " +
                           human_duration_ms(node.at("uptime_ms").get<double>()) + "  herd " +
                           printable(node.at("herd_version").get<std::string>()) + "  " +
                           std::to_string(o.at("actors").get<long long>()) + " actors  " + clock,
                       cols));
  const json& workers = o.at("workers");
  int per_line = bar_columns(s, cols);
  int width = (cols - (per_line - 1) * 2) / per_line;
  std::size_t lines = bar_lines(s, rows, cols);
  for (std::size_t l = 0; l < lines; ++l) {
    std::string line;
    for (int c = 0; c < per_line; ++c) {
      std::size_t i = l * per_line + c;
      if (i >= workers.size()) break;
      bool last_slot = l + 1 == lines && c + 1 == per_line;
      if (last_slot && i + 1 < workers.size()) {
        line += "  +" + std::to_string(workers.size() - i) + " more schedulers";
        break;
      }
      line += (c ? "  " : "") + fit(worker_bar(workers[i], width), static_cast<std::size_t>(width));
    }
    out.push_back(line);
  }
  const json& mem = o.at("memory");
  out.push_back("mem rss " + human_bytes(mem.at("rss_bytes").get<double>()) + "  mimalloc " +
                human_bytes(mem.at("mimalloc_committed_bytes").get<double>()) + " / " +
                human_bytes(mem.at("mimalloc_peak_committed_bytes").get<double>()) + "  stacks " +
                std::to_string(mem.at("stacks_in_use").get<long long>()) + "/" +
                std::to_string(mem.at("stacks_carved").get<long long>()));
  const json& rates = o.at("rates");
  out.push_back("msgs " + human_rate(rates.at("messages_per_s").get<double>()) + "  switches " +
                human_rate(rates.at("switches_per_s").get<double>()) + "  spawns " +
                human_rate(rates.at("spawns_per_s").get<double>()));
  out.emplace_back();
}

// Fixed column widths; NAME takes what is left (at least 8). Below 72
// columns the numbers get narrower (reductions as 9.8M) so that all of them
// still show and only NAME is cut.
constexpr int narrow_screen = 72;
struct column_widths {
  std::size_t pid, status, reds, mem, mbox;
};
column_widths widths_for(int cols) {
  return cols < narrow_screen ? column_widths{9, 10, 7, 8, 6} : column_widths{11, 10, 11, 9, 8};
}

std::string process_line(const std::string& pid, const std::string& name, const std::string& status,
                         const std::string& reds, const std::string& mem, const std::string& mbox, int cols) {
  auto [pid_w, status_w, reds_w, mem_w, mbox_w] = widths_for(cols);
  std::size_t fixed = pid_w + status_w + reds_w + mem_w + mbox_w + 5;
  std::size_t name_w = static_cast<std::size_t>(cols) > fixed + 8 ? static_cast<std::size_t>(cols) - fixed : 8;
  return fit(pid, pid_w) + " " + fit(name, name_w) + " " + fit(status, status_w) + " " +
         fit(reds, reds_w, align::right) + " " + fit(mem, mem_w, align::right) + " " + fit(mbox, mbox_w, align::right);
}

// Reductions a second over the node's last interval — a running total says
// how long a process has lived more than how busy it is. "-" for the first
// refresh (no interval yet).
std::string reductions_rate(const json& p, int cols) {
  auto it = p.find("reductions_per_s");
  if (it == p.end() || !it->is_number()) return "-";
  double r = it->get<double>();
  return cols < narrow_screen || r >= 1e9 ? human_count(r) : std::to_string(static_cast<long long>(r + 0.5));
}

void process_list(const top_state& s, int cols, std::size_t capacity, std::vector<std::string>& out) {
  auto title = [&](const char* t, sort_key k) { return std::string(s.sort == k ? "*" : "") + t; };
  out.push_back(styled(bold,
                       process_line("PID", "NAME", "STATUS", title("REDS/S", sort_key::reductions),
                                    title("MEMORY", sort_key::memory), title(cols < narrow_screen ? "MBOX" : "MAILBOX", sort_key::mailbox), cols),
                       cols));
  if (!s.processes.is_object()) return;
  const json& list = s.processes.at("processes");
  for (std::size_t i = 0; i < list.size() && i < capacity; ++i) {
    const json& p = list[i];
    std::string line = process_line(printable(p.at("pid").get<std::string>()), printable(name_or_call(p)),
                                    p.at("status").get<std::string>(),
                                    reductions_rate(p, cols),
                                    human_bytes(p.at("memory").get<double>()),
                                    std::to_string(p.at("mailbox").get<long long>()), cols);
    line = fit(line, static_cast<std::size_t>(cols));
    out.push_back(i == s.selected ? reverse_video + line + plain : line);
  }
}

void process_view(const top_state& s, int cols, std::vector<std::string>& out) {
  out.push_back(styled(bold, "process " + s.viewed_pid, cols));
  if (!s.process.is_object()) {
    out.push_back(s.process_error.empty() ? "waiting for the node..." : s.process_error);
    return;
  }
  std::string text = render_process(s.process);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    out.push_back(printable(text.substr(start, nl - start)));
    start = nl + 1;
  }
}

std::string footer(const top_state& s) {
  if (!s.confirm_kill_pid.empty()) return "kill " + s.confirm_kill_pid + "? y/n";
  if (s.process_view) return "esc/backspace:back  k:kill  q:quit";
  return "r:reductions m:memory b:mailbox  up/down/j:select  enter:view  k:kill  q:quit";
}

}  // namespace

const char* sort_name(sort_key k) {
  switch (k) {
    // By reductions in the last interval (the node keeps the baseline).
    case sort_key::reductions: return "reductions_rate";
    case sort_key::memory: return "memory";
    case sort_key::mailbox: return "mailbox";
  }
  return "reductions";
}

std::size_t process_rows(const top_state& s, int rows, int cols) {
  // header + the list's title line + status line + footer
  long left = rows - static_cast<long>(header_lines(s, rows, cols)) - 3;
  return left > 0 ? static_cast<std::size_t>(left) : 1;
}

std::string render_top(const top_state& s, int rows, int cols) {
  std::vector<std::string> lines;
  header(s, rows, cols, lines);
  if (s.process_view)
    process_view(s, cols, lines);
  else
    process_list(s, cols, process_rows(s, rows, cols), lines);
  std::size_t body = rows > 2 ? static_cast<std::size_t>(rows) - 2 : 0;
  if (lines.size() > body) lines.resize(body);
  lines.resize(body);
  lines.push_back(printable(s.status));
  lines.push_back(std::string(reverse_video) + fit(footer(s), static_cast<std::size_t>(cols)) + plain);

  std::string frame = "\x1b[H";
  for (std::size_t i = 0; i < lines.size() && i < static_cast<std::size_t>(rows); ++i) {
    std::string& l = lines[i];
    // Lines with escapes are cut by their builders; plain lines are cut here.
    if (l.find('\x1b') == std::string::npos && l.size() > static_cast<std::size_t>(cols))
      l.resize(static_cast<std::size_t>(cols));
    frame += l + "\x1b[K";
    // No newline after the last row: it would scroll the screen.
    if (i + 1 < static_cast<std::size_t>(rows)) frame += "\r\n";
  }
  return frame + "\x1b[J";
}

}  // namespace observer_cli
