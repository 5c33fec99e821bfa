// The logger (see <herd/actors/logger.hpp>).
//
// The ring: Vyukov's bounded multi-producer queue over 4,096 fixed slots in
// static storage (zero pages until first touched: no allocation, ever).
// Each slot has a sequence word; slot i's effective sequence is its stored
// value + i, so the all-zero start state is the queue's initial state
// (slot i expects position i) without a constructor.
//   producer at position pos: slot seq == pos       -> CAS head pos -> pos+1, fill,
//                                                       publish seq = pos+1
//                             slot seq <  pos       -> full: drop, count
//   consumer at position tail: slot seq == tail+1   -> read; free: seq = tail+4096
// Only the logger thread consumes. A producer stalled between its CAS and its
// publish holds up only the consumer, which picks the rest up next time.
//
// Giving the ring's pages back: a storm touches all 2 MiB of it, and a node
// that logs a report now and then touches a new page every 8 reports — its
// RSS would creep up for hours until the ring is all resident. So the
// consumer frees slots a whole page at a time (a run of up to 8 pages at
// once): it reads every slot of the run, gives the run's text pages back
// (MADV_DONTNEED), and only then frees the slots. No producer can hold a slot
// of a page being given back — each slot's next position is ahead of every
// producer until it is freed — so nothing written is ever zeroed. The
// sequence words live in an array of their own (32 KiB, always resident):
// zeroing a freed slot's word would corrupt the queue. Up to 7 read slots
// wait for the rest of their page (capacity 4,089 at worst); a producer
// faults a zero page in once per 8 reports of a storm.
//
// Waking (the only syscall a producer may make, once per idle period):
//   producer: publish (seq_cst store), then load `sleeping` (seq_cst); if it
//             was 1, exchange it to 0 and futex-wake the thread.
//   thread:   store sleeping = 1 (seq_cst), then look at the next slot
//             (seq_cst load); sleep on the futex only if it is not ready.
// Both sides are seq_cst, so at least one sees the other: either the producer
// sees `sleeping` and wakes the thread, or the thread sees the report and
// does not sleep. Later producers see sleeping == 0 and make no syscall.
//
// The thread, once woken, sleeps 10 ms (cut short by log_flush or exit) so
// that whatever follows lands in the same batch, then formats every ready
// slot into a 64 KiB buffer and writes it with one write(2) per full buffer.
#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/logger.hpp>
#include <herd/runtime/sched.hpp>

#include "node_state.hpp"
#include "process.hpp"
#include "names.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace herd::detail {
namespace {

constexpr uint64_t slot_count = 4096;  // a power of two; 10 ms of a 400k/s crash storm
constexpr uint64_t slot_mask = slot_count - 1;
constexpr std::size_t slot_bytes = 512;

struct alignas(64) slot {
  uint64_t wall_ms = 0;  // written by the producer before publishing
  uint32_t len = 0;
  char text[slot_bytes - 12] = {};
};
static_assert(sizeof(slot) == slot_bytes);
constexpr std::size_t ring_page = 4096;
constexpr uint64_t slots_per_page = ring_page / slot_bytes;
constexpr uint64_t release_run = 8 * slots_per_page;  // slots freed (and pages given back) at once

alignas(ring_page) slot g_ring[slot_count];        // constant-initialized: .bss
std::atomic<uint64_t> g_seq[slot_count] = {};     // per slot: effective sequence - slot index

alignas(64) std::atomic<uint64_t> g_head{0};     // producers' next position
alignas(64) std::atomic<uint64_t> g_tail{0};     // consumer's next position (written by the thread only)
alignas(64) std::atomic<uint32_t> g_sleeping{0}; // 1: the thread waits for a first report (futex word)
std::atomic<uint32_t> g_kick{0};                 // bumped to cut the 10 ms wait short (futex word)
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint64_t> g_batches{0};              // written by the thread only
std::atomic<uint64_t> g_wakeups{0};
std::atomic<bool> g_enabled{true};
std::atomic<bool> g_started{false};
std::atomic<bool> g_stop{false};

herd::rt::mutex g_sink_m;  // held by the thread while it writes
int g_fd HERD_GUARDED_BY(g_sink_m) = 2;
bool g_sink_on HERD_GUARDED_BY(g_sink_m) = true;

long futex(std::atomic<uint32_t>* w, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, val, ts, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* w) { futex(w, FUTEX_WAKE_PRIVATE, 1, nullptr); }

uint64_t wall_ms() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);  // vDSO: no syscall
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

// The logger thread's state (only it touches these).
class flusher {
 public:
  void run() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals are for the program's own threads
    pthread_setname_np(pthread_self(), "herd-logger");
    buf_ = std::make_unique<char[]>(buf_cap);
    for (;;) {
      pause_10ms();
      drain();
      if (g_stop.load(std::memory_order_acquire)) {
        drain();
        return;
      }
      if (!next_ready()) wait_for_first_report();
      if (g_stop.load(std::memory_order_acquire) && !next_ready()) return;
    }
  }

 private:
  static constexpr std::size_t buf_cap = 64 * 1024;

  bool next_ready() const {
    uint64_t t = g_tail.load(std::memory_order_relaxed);
    // seq_cst: the Dekker pair with a producer's publish (see the top).
    return g_seq[t & slot_mask].load(std::memory_order_seq_cst) + (t & slot_mask) == t + 1;
  }

  void wait_for_first_report() {
    // A flush that asked while the thread was draining has been served by
    // that drain (every report it waits for is written, or its producer will
    // wake the thread). Left pending, its kick would cut the next batching
    // pause short: the next burst's first report would be written alone, and
    // the second would wake the thread again.
    seen_kick_ = g_kick.load(std::memory_order_acquire);
    g_sleeping.store(1, std::memory_order_seq_cst);
    while (!next_ready() && !g_stop.load(std::memory_order_acquire) &&
           g_sleeping.load(std::memory_order_seq_cst) == 1)
      futex(&g_sleeping, FUTEX_WAIT_PRIVATE, 1, nullptr);
    g_sleeping.store(0, std::memory_order_seq_cst);
  }

  void pause_10ms() {
    uint32_t k = g_kick.load(std::memory_order_acquire);
    if (k != seen_kick_) {
      seen_kick_ = k;
      return;  // a flush was asked for: write now
    }
    timespec ts{0, 10 * 1000 * 1000};
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    while (g_kick.load(std::memory_order_acquire) == k && !g_stop.load(std::memory_order_acquire)) {
      futex(&g_kick, FUTEX_WAIT_PRIVATE, k, &ts);
      auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) break;
      ts.tv_nsec = long(std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
    }
    seen_kick_ = g_kick.load(std::memory_order_acquire);
  }

  void put(const char* p, std::size_t n) {
    if (used_ + n > buf_cap) out();
    std::memcpy(buf_.get() + used_, p, n);
    used_ += n;
  }

  void put_line(uint64_t ms, const char* text, std::size_t len) {
    char pre[32];
    uint64_t s = ms / 1000 % 86400;
    int n = std::snprintf(pre, sizeof pre, "[herd %02u:%02u:%02u.%03u] ", unsigned(s / 3600), unsigned(s / 60 % 60),
                          unsigned(s % 60), unsigned(ms % 1000));
    put(pre, std::size_t(n));
    put(text, len);
    put("\n", 1);
  }

  void out() {
    if (used_ && sink_on_) write_all(fd_, buf_.get(), used_);
    used_ = 0;
  }

  void drain() {
    herd::rt::lock_guard<herd::rt::mutex> g(g_sink_m);
    fd_ = g_fd;
    sink_on_ = g_sink_on;
    uint64_t t = g_tail.load(std::memory_order_relaxed);
    bool any = false;
    for (;;) {
      const uint64_t i = t & slot_mask;
      // acquire: pairs with the producer's publish; the text is complete.
      if (g_seq[i].load(std::memory_order_acquire) + i != t + 1) break;
      put_line(g_ring[i].wall_ms, g_ring[i].text, g_ring[i].len);
      ++t;
      any = true;
      if (t - freed_ >= release_run) release(t);
    }
    release(t & ~(slots_per_page - 1));
    uint64_t d = g_dropped.load(std::memory_order_relaxed);
    if (d != dropped_seen_) {
      char line[96];
      int n = std::snprintf(line, sizeof line, "herd logger: %llu report(s) dropped (ring full)",
                            static_cast<unsigned long long>(d - dropped_seen_));
      put_line(wall_ms(), line, std::size_t(n));
      dropped_seen_ = d;
      any = true;
    }
    out();
    // release: log_flush's acquire load then knows these lines are written.
    g_tail.store(t, std::memory_order_release);
    if (any) g_batches.store(g_batches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Gives back the text pages of the read slots [freed_, upto) — whole pages:
  // both ends are multiples of slots_per_page — then frees the slots.
  void release(uint64_t upto) {
    if (upto <= freed_) return;
    const uint64_t a = freed_ & slot_mask, n = upto - freed_;
    auto give_back = [](uint64_t first, uint64_t count) {
      ::madvise(&g_ring[first], count * slot_bytes, MADV_DONTNEED);
    };
    if (a + n <= slot_count) {
      give_back(a, n);
    } else {  // the run wraps around the ring's end
      give_back(a, slot_count - a);
      give_back(0, a + n - slot_count);
    }
    for (uint64_t p = freed_; p < upto; ++p)
      // release: the producer that reuses the slot sees our reads done.
      g_seq[p & slot_mask].store(p + slot_count - (p & slot_mask), std::memory_order_release);
    freed_ = upto;
  }

  std::unique_ptr<char[]> buf_;
  uint64_t freed_ = 0;  // positions below are free again; [freed_, g_tail) read, held for their page
  std::size_t used_ = 0;
  int fd_ = 2;
  bool sink_on_ = true;
  uint32_t seen_kick_ = 0;
  uint64_t dropped_seen_ = 0;
};

// Owns the thread; its destructor (at exit) writes what is left and joins.
struct logger_thread {
  std::thread t;
  herd::rt::mutex m;  // start vs. stop
  ~logger_thread() {
    herd::rt::lock_guard<herd::rt::mutex> g(m);
    if (!t.joinable()) return;
    g_stop.store(true, std::memory_order_release);
    g_kick.fetch_add(1, std::memory_order_acq_rel);
    futex_wake(&g_kick);
    g_sleeping.store(0, std::memory_order_seq_cst);
    futex_wake(&g_sleeping);
    t.join();
    herd::rt::lock_guard<herd::rt::mutex> s(g_sink_m);
    if (g_fd != 2) ::close(g_fd);
    g_fd = 2;
  }
};
logger_thread g_thread;

// Once per process, by the first report (a thread creation on a worker, once).
[[gnu::noinline]] void start_thread() {
  herd::rt::lock_guard<herd::rt::mutex> g(g_thread.m);
  if (g_stop.load(std::memory_order_acquire)) return;
  g_thread.t = std::thread([] {
    pthread_setname_np(pthread_self(), "herd-logger");
    flusher().run();
  });
}

void close_if_file(int fd) {
  if (fd != 2 && fd >= 0) ::close(fd);
}

}  // namespace
}  // namespace herd::detail

namespace herd {

using namespace detail;

void log_report(std::string_view text) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  if (!g_started.load(std::memory_order_acquire) && !g_started.exchange(true, std::memory_order_acq_rel)) {
    try {
      start_thread();
    } catch (...) {
      // No thread, no output: reports stay in the ring until it fills.
    }
  }
  uint64_t pos = g_head.load(std::memory_order_relaxed);
  slot* s;
  for (;;) {
    s = &g_ring[pos & slot_mask];
    // acquire: pairs with the thread's release when it freed the slot.
    uint64_t seq = g_seq[pos & slot_mask].load(std::memory_order_acquire) + (pos & slot_mask);
    auto dif = static_cast<int64_t>(seq - pos);
    if (dif == 0) {
      if (g_head.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (dif < 0) {
      g_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    } else {
      pos = g_head.load(std::memory_order_relaxed);
    }
  }
  std::size_t cap = sizeof s->text;
  std::size_t n = text.size();
  std::size_t keep = n <= cap ? n : cap - 3;
  for (std::size_t i = 0; i < keep; ++i) {
    char c = text[i];
    s->text[i] = c == '\n' ? ' ' : c;  // one report, one line
  }
  if (keep < n) std::memcpy(s->text + keep, "...", 3), keep += 3;
  s->len = static_cast<uint32_t>(keep);
  s->wall_ms = wall_ms();
  // seq_cst: publishes the text (release) and is the first half of the
  // Dekker pair with the thread's `sleeping` store (see the top).
  g_seq[pos & slot_mask].store(pos + 1 - (pos & slot_mask), std::memory_order_seq_cst);
  if (g_sleeping.load(std::memory_order_seq_cst) == 1 && g_sleeping.exchange(0, std::memory_order_seq_cst) == 1) {
    g_wakeups.fetch_add(1, std::memory_order_relaxed);
    futex_wake(&g_sleeping);
  }
}

bool set_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  int old;
  {
    herd::rt::lock_guard<herd::rt::mutex> g(g_sink_m);
    old = g_fd;
    g_fd = fd;
    g_sink_on = true;
  }
  close_if_file(old);
  return true;
}

void set_log_stderr() {
  int old;
  {
    herd::rt::lock_guard<herd::rt::mutex> g(g_sink_m);
    old = g_fd;
    g_fd = 2;
    g_sink_on = true;
  }
  close_if_file(old);
}

void set_logging(bool on) noexcept { g_enabled.store(on, std::memory_order_relaxed); }
bool logging_enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

logger_stats log_stats() noexcept {
  logger_stats s;
  s.reported = g_head.load(std::memory_order_relaxed);
  s.written = g_tail.load(std::memory_order_relaxed);
  s.dropped = g_dropped.load(std::memory_order_relaxed);
  s.batches = g_batches.load(std::memory_order_relaxed);
  s.wakeups = g_wakeups.load(std::memory_order_relaxed);
  unsigned char vec[sizeof g_ring / ring_page];
  if (::mincore(static_cast<void*>(g_ring), sizeof g_ring, vec) == 0)
    for (unsigned char v : vec) s.ring_resident_bytes += (v & 1) ? ring_page : 0;
  return s;
}

void log_flush() {
  if (rt::on_worker() || !g_started.load(std::memory_order_acquire)) return;
  uint64_t target = g_head.load(std::memory_order_acquire);
  if (g_tail.load(std::memory_order_acquire) >= target) return;
  // Cuts the 10 ms batching pause short. The thread asleep for a first
  // report is not woken here: every report below `target` is either
  // published (then the thread saw it or its producer woke it) or about to
  // be (its producer will). Waking it anyway cost an uncounted wake-up and
  // a needless 10 ms pause when the thread had drained on its own just
  // before (CI stop 32: the idle-logger test saw one switch too many).
  g_kick.fetch_add(1, std::memory_order_acq_rel);
  futex_wake(&g_kick);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (g_tail.load(std::memory_order_acquire) < target && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

std::string process_label(pid p) {
  std::string s = p.to_string();
  node_state* n = current_node();
  if (!n || !p) return s;
  // On a worker the control block and its name stay valid until this
  // worker's next quiescent point (nothing here suspends); a foreign thread
  // counts as a reader while the guard lives.
  rt::foreign_read_guard g;
  if (process* proc = n->table.lookup(p))
    if (interned_name* in = proc->name.load(std::memory_order_acquire)) {
      s += " (";
      s += in->text;
      s += ')';
    }
  return s;
}

}  // namespace herd
