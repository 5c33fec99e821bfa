// Stack memory: arenas of guarded slots, handed out through per-worker pools.
// This file: reserving, guarding and carving; the surplus and its trimming are
// stack_surplus.cpp.
//
// Layout. Each size class (16 KiB .. 64 MiB, powers of two) has its own arena, a list of
// chunks reserved lazily with mmap(PROT_READ|PROT_WRITE, MAP_NORESERVE) and
// madvise(MADV_NOHUGEPAGE): a transparent huge page would make an idle actor cost 2 MiB.
// Reserving touches nothing, so a chunk costs address space and page tables, not memory.
// A chunk is an array of equal slots, each [guard][usable stack]: stacks grow down, so the
// guard sits at the low end and an overflow runs into it. Slot sizes are whole pages, so every
// slot's top (`hi`, the initial stack pointer) is page aligned.
//
// Guards are installed once and stay for the slot's life; neither pools nor trimming touch them
// (guard markers survive MADV_DONTNEED). With madv_guard the whole chunk is guarded when it is
// reserved, batched through process_madvise(pidfd, iov[], <= IOV_MAX, MADV_GUARD_INSTALL) --
// about half the cost of one madvise per guard -- and the markers add no mapping.
// With mprotect each slot's guard is made when the slot is carved, so the number of mappings
// stays 2 x carved slots, which is what the start-up check of vm.max_map_count assumes.
//
// Metadata (stack_slot) lives outside the stacks, in an array allocated per chunk, so giving
// pages back can never lose it and an overflow cannot scribble on it.
//
// Invariants.
//  1. A chunk descriptor is written completely, then published by a release store of
//     chunk_count_; it never changes afterwards except `carved`, which only grows (release).
//     contains_guard() reads both with acquire loads: it is async-signal-safe and lock-free.
//  2. A slot is in exactly one place: carved-and-running (owned by a fiber), a pool's free list,
//     or this allocator's surplus lists. Only the owner touches `next` and `clean`.
//  3. `clean` means the usable range has no resident pages (never touched, or trimmed and not
//     used since). Surplus keeps dirty and clean slots apart so that reuse prefers warm pages
//     and trimming never scans slots that have nothing to give back; and dirty slots by age
//     (fresh, aging, stale; roll_window moves them on), so that only the stale ones, unused for
//     a whole window, are trimmed: stacks passing from one worker's pool to another's, through
//     here, keep their pages.
//  4. Nothing here runs on a steady-state spawn: pools recycle locally; carve() and trimming
//     are the only paths with syscalls. What pools call on their fast paths -- excess(),
//     roll_window() when it is not time, sample_live() when the peak does not rise -- only
//     loads, and each pool's counters are written by that pool alone.
//  5. Code reachable from carve() runs on a fiber stack (a spawning actor), possibly 16 KiB:
//     large buffers go on the heap.
//
// Under ASan the usable ranges are registered with LSan as root regions, so that objects
// referenced only from a fiber stack are not reported as leaks. LSan reads the regions it is
// given: a region must not cover a madv_guard marker (reading it faults), so with madv_guard
// each carved slot is registered on its own; PROT_NONE mappings are skipped by LSan, so with
// mprotect one region per chunk suffices.
#include <herd/runtime/sanitizers.hpp>
#include "stack_allocator.hpp"

#include "overflow_handler.hpp"

#include <sys/mman.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

#if HERD_ASAN
#include <sanitizer/lsan_interface.h>
#define HERD_STACK_LSAN 1
#endif
#if HERD_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace herd::rt {
namespace {

constexpr size_t max_chunk_bytes = size_t{1} << 30;  // bounds address space per reservation
constexpr size_t max_chunks = size_t{1} << 16;       // descriptor array, mapped lazily

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

long read_max_map_count() {
  FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r");
  if (!f) return -1;
  long value = -1;
  if (std::fscanf(f, "%ld", &value) != 1) value = -1;
  std::fclose(f);
  return value;
}

}  // namespace

struct stack_allocator::chunk {
  char* base;
  size_t bytes;
  size_t slot_bytes;
  size_t guard_bytes;
  stack_slot* slots;
  uint32_t slot_count;
  uint32_t class_index;
  std::atomic<uint32_t> carved{0};  // slots [0, carved) have been handed out; only grows
  // prefault_tops touched uncarved slots' top pages since the last trim_uncarved.
  std::atomic<bool> tops_touched{false};
  // The lowest slot whose top prefault_tops has started on (slot_count: not
  // started); carve populates the tops below it itself (populate_ahead).
  std::atomic<uint32_t> prefault_low{0};
};

const char* to_string(guard_kind kind) noexcept {
  return kind == guard_kind::madv_guard ? "madv_guard" : "mprotect";
}

guard_kind detect_guard_kind() noexcept {
  // -1 unknown; otherwise the guard_kind. Racing first callers probe twice, harmlessly.
  static std::atomic<int> cached{-1};
  int known = cached.load(std::memory_order_relaxed);
  if (known >= 0) return static_cast<guard_kind>(known);
  guard_kind kind = guard_kind::mprotect;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    if (madvise(p, page, MADV_GUARD_INSTALL) == 0) kind = guard_kind::madv_guard;
    munmap(p, 2 * page);
  }
  cached.store(static_cast<int>(kind), std::memory_order_relaxed);
  return kind;
}

bool trim_slot(stack_slot* slot) noexcept {
  if (madvise(slot->lo, slot->size(), MADV_DONTNEED) != 0) return false;
  slot->clean = true;
  return true;
}

stack_allocator::stack_allocator(const stack_options& options) : options_(options) {
  page_size_ = size_t(sysconf(_SC_PAGESIZE));
  options_.guard_size = round_up(options_.guard_size ? options_.guard_size : 1, page_size_);
  if (options_.chunk_slots == 0) options_.chunk_slots = 1;
  size_t cls = class_for(options_.default_size);
  if (cls == no_stack_class) throw std::invalid_argument("herd: default stack size above 64 MiB");
  default_class_ = uint32_t(cls);

  chunk_capacity_ = max_chunks;
  void* table = mmap(nullptr, chunk_capacity_ * sizeof(chunk), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (table == MAP_FAILED) throw std::bad_alloc();
  chunks_ = static_cast<chunk*>(table);

  if (options_.guard == guard_kind::madv_guard) pidfd_ = int(syscall(SYS_pidfd_open, getpid(), 0));
}

stack_allocator::~stack_allocator() {
  forget_overflow_allocator(this);
  size_t n = chunk_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    chunk& c = chunks_[i];
#if HERD_TSAN
    // The context switcher made one TSan fiber per slot it ran on; TSan counts them as
    // threads and dies past ~8,000, so they must go with the slots.
    for (uint32_t s = 0, carved = c.carved.load(std::memory_order_relaxed); s < carved; ++s)
      if (c.slots[s].tsan_fiber) __tsan_destroy_fiber(c.slots[s].tsan_fiber);
#endif
#ifdef HERD_STACK_LSAN
    if (options_.guard == guard_kind::madv_guard) {
      uint32_t carved = c.carved.load(std::memory_order_relaxed);
      for (uint32_t s = 0; s < carved; ++s)
        __lsan_unregister_root_region(c.slots[s].lo, c.slots[s].size());
    } else {
      __lsan_unregister_root_region(c.base, c.bytes);
    }
#endif
    munmap(c.base, c.bytes);
    delete[] c.slots;
    c.~chunk();
  }
  if (pidfd_ >= 0) close(pidfd_);
  munmap(chunks_, chunk_capacity_ * sizeof(chunk));
  for (pool_counters* p = pools_.load(std::memory_order_acquire); p;) delete std::exchange(p, p->next);
}

std::string stack_allocator::map_failure(const std::string& what, int err) const {
  std::string msg = "herd: cannot " + what + ": " + std::error_code(err, std::generic_category()).message();
  if (err != ENOMEM) return msg;
  const long current = read_max_map_count();
  const uint64_t carved = carved_.load(std::memory_order_relaxed);
  // Room for twice the stacks carved so far at two mappings each, plus the usual 1000 spare.
  const uint64_t wanted =
      round_up(std::max<uint64_t>(4 * carved + 1000, uint64_t(current > 0 ? current : 65530) * 2), 1024);
  const std::string count = current > 0 ? " (" + std::to_string(current) + ")" : "";
  const std::string fix = "sysctl -w vm.max_map_count=" + std::to_string(wanted);
  if (options_.guard == guard_kind::mprotect) {
    return msg + ". The process has probably reached vm.max_map_count" + count +
           ": mprotect stack guards take two mappings per stack. Raise it: " + fix +
           " (at least 2 x max actors + 1000)";
  }
  return msg + ". The process has reached vm.max_map_count" + count +
         " or its address-space limit (ulimit -v). Raise them: " + fix + ", ulimit -v unlimited";
}

bool stack_allocator::install_chunk_guards(chunk& c, std::string* error) {
  // Heap, not stack: this may run on a small fiber stack (invariant 5).
  const size_t batch = std::min<size_t>(c.slot_count, IOV_MAX);
  std::unique_ptr<iovec[]> iov(new (std::nothrow) iovec[batch]);
  for (uint32_t first = 0; first < c.slot_count; first += uint32_t(batch)) {
    const size_t n = std::min<size_t>(batch, c.slot_count - first);
    bool done = false;
    if (pidfd_ >= 0 && iov) {
      for (size_t i = 0; i < n; ++i) iov[i] = {c.base + (first + i) * c.slot_bytes, c.guard_bytes};
      long r = syscall(SYS_process_madvise, pidfd_, iov.get(), n, MADV_GUARD_INSTALL, 0);
      done = r == long(n * c.guard_bytes);
    }
    // Installing a guard twice is harmless, so a partial batch is simply redone slot by slot.
    for (size_t i = 0; !done && i < n; ++i) {
      if (madvise(c.base + (first + i) * c.slot_bytes, c.guard_bytes, MADV_GUARD_INSTALL) != 0) {
        const int err = errno;
        if (error) *error = map_failure("install stack guard pages (madvise MADV_GUARD_INSTALL)", err);
        return false;
      }
    }
  }
  return true;
}

stack_allocator::chunk* stack_allocator::reserve_chunk(uint32_t class_index, std::string* error) {
  const size_t slot_bytes = options_.guard_size + class_size(class_index);
  const size_t slots = std::max<size_t>(1, std::min(options_.chunk_slots, max_chunk_bytes / slot_bytes));
  const size_t bytes = slots * slot_bytes;

  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    const int err = errno;
    if (error) *error = map_failure("reserve a stack chunk of " + std::to_string(bytes) + " bytes (mmap)", err);
    return nullptr;
  }
  madvise(mem, bytes, MADV_NOHUGEPAGE);  // fails only without THP support: nothing to prevent
  char* base = static_cast<char*>(mem);

  stack_slot* meta = new (std::nothrow) stack_slot[slots];
  if (!meta) {
    munmap(mem, bytes);
    if (error) *error = "herd: out of memory for stack slot metadata";
    return nullptr;
  }
  for (size_t i = 0; i < slots; ++i) {
    meta[i].lo = base + i * slot_bytes + options_.guard_size;
    meta[i].hi = base + (i + 1) * slot_bytes;
    meta[i].class_index = class_index;
  }

  lock_guard lock(chunk_mutex_);
  size_t index = chunk_count_.load(std::memory_order_relaxed);
  if (index == chunk_capacity_) {
    munmap(mem, bytes);
    delete[] meta;
    if (error) *error = "herd: too many stack chunks (" + std::to_string(chunk_capacity_) + "); raise chunk_slots";
    return nullptr;
  }
  chunk* c = new (&chunks_[index]) chunk{base, bytes, slot_bytes, options_.guard_size, meta,
                                         uint32_t(slots), class_index};
  c->prefault_low.store(uint32_t(slots), std::memory_order_relaxed);  // published with the chunk
  if (options_.guard == guard_kind::madv_guard && !install_chunk_guards(*c, error)) {
    c->~chunk();
    munmap(mem, bytes);
    delete[] meta;
    return nullptr;
  }
#ifdef HERD_STACK_LSAN
  if (options_.guard == guard_kind::mprotect) __lsan_register_root_region(base, bytes);
#endif
  bytes_reserved_.fetch_add(bytes, std::memory_order_relaxed);
  chunk_count_.store(index + 1, std::memory_order_release);  // pairs with contains_guard()
  return c;
}

stack_slot* stack_allocator::carve(uint32_t class_index, std::string* error) {
  if (class_index >= stack_class_count) {
    if (error) *error = "herd: no stack class " + std::to_string(class_index);
    return nullptr;
  }
  class_arena& arena = classes_[class_index];
  chunk* ahead_chunk = nullptr;  // populate tops there after the lock (one syscall)
  uint32_t ahead_from = 0;
  stack_slot* slot = nullptr;
  {
    lock_guard lock(arena.carve_mutex);
    if (!arena.current || arena.next_slot == arena.current->slot_count) {
      chunk* fresh = std::exchange(arena.prepared, nullptr);
      if (!fresh) fresh = reserve_chunk(class_index, error);
      if (!fresh) return nullptr;
      arena.current = fresh;
      arena.next_slot = 0;
    }
    // Past the first chunk a class is growing: prepare the next chunk as soon as
    // this one starts; for the first, only once it is half used (a small
    // program never pays for a second chunk).
    if (arena.next_slot == arena.current->slot_count / 2 ||
        (arena.next_slot == 0 && arena.carved.load(std::memory_order_relaxed) > 0))
      prepare_next(arena, class_index);
    chunk& c = *arena.current;
    slot = &c.slots[arena.next_slot];
    if (options_.guard == guard_kind::mprotect && mprotect(slot->lo - c.guard_bytes, c.guard_bytes, PROT_NONE) != 0) {
      const int err = errno;
      if (error) *error = map_failure("install a stack guard page (mprotect)", err);
      return nullptr;  // the slot stays uncarved; a later carve retries it
    }
#ifdef HERD_STACK_LSAN
    if (options_.guard == guard_kind::madv_guard) __lsan_register_root_region(slot->lo, slot->size());
#endif
    // Every populate_ahead-th slot, the tops of the next populate_ahead slots
    // (this one's included) unless the background prefault already covers them.
    if (pidfd_ >= 0 && arena.next_slot % populate_ahead == 0 &&
        arena.next_slot + populate_ahead <= c.prefault_low.load(std::memory_order_relaxed)) {
      ahead_chunk = &c;
      ahead_from = arena.next_slot;
      c.tops_touched.store(true, std::memory_order_relaxed);  // trim_uncarved gives back the rest
    }
    ++arena.next_slot;
    c.carved.store(arena.next_slot, std::memory_order_release);  // pairs with contains_guard()
    arena.carved.store(arena.carved.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    carved_.fetch_add(1, std::memory_order_relaxed);
  }
  // Outside the lock: another worker carving the class need not wait for it.
  // The slot descriptors never change, and a populate is only a hint.
  if (ahead_chunk) populate_tops(*ahead_chunk, ahead_from, ahead_from + populate_ahead);
  return slot;
}

void stack_allocator::populate_tops(chunk& c, uint32_t first, uint32_t end) noexcept {
  iovec iov[populate_ahead];  // carve runs on a fiber stack (invariant 5): a small array
  while (first < end) {
    const uint32_t n = std::min(end - first, populate_ahead);
    for (uint32_t i = 0; i < n; ++i) iov[i] = {c.slots[first + i].hi - page_size_, page_size_};
    syscall(SYS_process_madvise, pidfd_, iov, size_t(n), MADV_POPULATE_WRITE, 0);
    first += n;
  }
}

namespace {
struct prepare_job {
  stack_allocator* self;
  uint32_t class_index;
};
}  // namespace

void stack_allocator::prepare_next(class_arena& arena, uint32_t class_index) {
  if (!background_ || arena.prepared || arena.preparing) return;
  auto* job = new (std::nothrow) prepare_job{this, class_index};
  if (!job) return;
  arena.preparing = true;
  background_(background_ctx_, [](void* a) {
    auto* j = static_cast<prepare_job*>(a);
    stack_allocator& me = *j->self;
    class_arena& ar = me.classes_[j->class_index];
    chunk* c = me.reserve_chunk(j->class_index, nullptr);  // on failure, carve retries inline
    {
      lock_guard lock(ar.carve_mutex);
      ar.prepared = c;
      ar.preparing = false;
    }
    if (c) me.prefault_tops(*c);
    delete j;
  }, job);
}

void stack_allocator::prefault_tops(chunk& c) noexcept {
  // The page a fiber's first frames live in. From the chunk's end backwards,
  // in small batches, while carving takes slots from its start: the two meet
  // in the middle, each core taking the faults of half the chunk (first
  // touches cost microseconds in a VM). Best effort: a failure only leaves
  // the faults to the fibers.
  //
  // A populate, then a user-mode touch of each page. On a PVM guest (this
  // project's CI VM) the host builds its own entry on the first *user* access
  // to a page, which a populate from the kernel does not do. Measured per page
  // (docs/design.md): fresh user touch 9-14 us; populate 0.5-1.3 us, then a
  // user touch 4-5 us; after both, the fiber's touch 0.04 us. A touch alone
  // costs the most CPU in all; the populate first makes the pair the cheapest.
  if (pidfd_ < 0) return;
  c.tops_touched.store(true, std::memory_order_relaxed);
  constexpr uint32_t batch = populate_batch;
  for (uint32_t end = c.slot_count; end > 0;) {
    const uint32_t first = end > batch ? end - batch : 0;
    // relaxed: only a hint to carve, which at worst populates a batch twice.
    c.prefault_low.store(first, std::memory_order_relaxed);
    if (c.carved.load(std::memory_order_acquire) >= end) return;  // carving got here first
    populate_tops(c, first, end);
#if !HERD_TSAN  // TSan would see the touch race with the fiber's own plain writes to its frames
    for (uint32_t i = end; i-- > first;) touch_page(c.slots[i].hi - 64);
#endif
    end = first;
  }
}

size_t stack_allocator::trim_uncarved() {
  size_t pages = 0;
  for (class_arena& arena : classes_) {
    lock_guard lock(arena.carve_mutex);
    for (chunk* c : {arena.current, arena.prepared}) {
      // relaxed: a prefault still running may touch more tops after this; a later quiet
      // period gives those back (it sets the flag again when it starts).
      if (!c || !c->tops_touched.exchange(false, std::memory_order_relaxed)) continue;
      const uint32_t from = c == arena.current ? arena.next_slot : 0;
      for (uint32_t i = from; i < c->slot_count; ++i)
        if (madvise(c->slots[i].hi - page_size_, page_size_, MADV_DONTNEED) == 0) ++pages;
    }
  }
  return pages;
}

bool stack_allocator::contains_guard(const void* addr, const stack_slot** slot_out) const noexcept {
  const char* a = static_cast<const char*>(addr);
  const size_t n = chunk_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    const chunk& c = chunks_[i];
    if (a < c.base || a >= c.base + c.bytes) continue;
    const size_t offset = size_t(a - c.base);
    const size_t index = offset / c.slot_bytes;
    if (index >= c.carved.load(std::memory_order_acquire)) return false;
    if (offset - index * c.slot_bytes >= c.guard_bytes) return false;
    if (slot_out) *slot_out = &c.slots[index];
    return true;
  }
  return false;
}

stack_allocator_stats stack_allocator::stats() const noexcept {
  stack_allocator_stats s;
  s.slots_carved = carved_.load(std::memory_order_relaxed);
  s.slots_surplus = surplus_.load(std::memory_order_relaxed);
  s.slots_trimmed = trimmed_.load(std::memory_order_relaxed);
  s.bytes_reserved = bytes_reserved_.load(std::memory_order_relaxed);
  s.chunks = chunk_count_.load(std::memory_order_relaxed);
  s.guard = options_.guard;
  uint64_t pooled = 0;
  for (const pool_counters* p = pools_.load(std::memory_order_acquire); p; p = p->next)
    pooled += p->free_slots.load(std::memory_order_relaxed);
  // The counters are read at slightly different moments; never report a negative count.
  uint64_t idle = s.slots_surplus + pooled;
  s.slots_in_use = s.slots_carved > idle ? s.slots_carved - idle : 0;
  return s;
}

}  // namespace herd::rt
