#include "top/terminal.hpp"

#include "cli_error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace observer_cli {
namespace {

constexpr char enter_screen[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr char leave_screen[] = "\x1b[0m\x1b[?25h\x1b[?1049l";

// Process-wide, for the signal handlers. `active` is only read by a handler
// that interrupted this thread, so sig_atomic_t is the ordering needed.
termios saved_termios;
volatile sig_atomic_t active = 0;
int wake_pipe[2] = {-1, -1};

constexpr int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // a terminal that went away: nothing left to restore
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void restore_now() {
  if (!active) return;
  active = 0;
  write_all(STDOUT_FILENO, leave_screen, sizeof leave_screen - 1);
  ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
}

void on_fatal_signal(int sig) {
  int saved_errno = errno;
  restore_now();
  // SA_RESETHAND put the default action back; it runs when the handler returns.
  ::raise(sig);
  errno = saved_errno;
}

void on_winch(int) {
  int saved_errno = errno;
  char b = 1;
  [[maybe_unused]] ssize_t r = ::write(wake_pipe[1], &b, 1);  // full pipe: a wake-up is already pending
  errno = saved_errno;
}

sigset_t fatal_set() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : fatal_signals) sigaddset(&s, sig);
  return s;
}

}  // namespace

terminal::terminal() {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) throw usage_error("top needs a terminal on stdin and stdout");
  if (::tcgetattr(STDIN_FILENO, &saved_termios) != 0)
    throw usage_error(std::string("top: cannot read the terminal's settings (") + std::strerror(errno) + ")");
  if (::pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw node_failure(std::string("pipe: ") + std::strerror(errno));

  struct sigaction sa{};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_RESETHAND;
  for (int sig : fatal_signals) ::sigaction(sig, &sa, nullptr);
  sa.sa_handler = on_winch;
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGWINCH, &sa, nullptr);

  termios raw = saved_termios;
  raw.c_lflag &= ~(ICANON | ECHO | IEXTEN);
  raw.c_iflag &= ~(IXON);  // Ctrl-S must not freeze the view
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  sigset_t fatal = fatal_set(), old;
  ::pthread_sigmask(SIG_BLOCK, &fatal, &old);
  ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
  write_all(STDOUT_FILENO, enter_screen, sizeof enter_screen - 1);
  active = 1;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

terminal::~terminal() {
  sigset_t fatal = fatal_set(), old;
  ::pthread_sigmask(SIG_BLOCK, &fatal, &old);
  restore_now();
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  struct sigaction sa{};
  sa.sa_handler = SIG_DFL;
  for (int sig : fatal_signals) ::sigaction(sig, &sa, nullptr);
  ::sigaction(SIGWINCH, &sa, nullptr);
  ::close(wake_pipe[0]);
  ::close(wake_pipe[1]);
  wake_pipe[0] = wake_pipe[1] = -1;
}

screen_size terminal::size() const {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    return {ws.ws_row, ws.ws_col};
  return {};
}

int terminal::wake_fd() const { return wake_pipe[0]; }

bool terminal::take_resize() {
  char buf[64];
  bool any = false;
  while (::read(wake_pipe[0], buf, sizeof buf) > 0) any = true;
  return any;
}

void terminal::draw(const std::string& frame) {
  sigset_t fatal = fatal_set(), old;
  ::pthread_sigmask(SIG_BLOCK, &fatal, &old);
  write_all(STDOUT_FILENO, frame.data(), frame.size());
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

std::string terminal::read_input() {
  char buf[256];
  ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace observer_cli
