// herd::alloc — the one allocator herd's own objects (messages, control blocks)
// go through. mimalloc in normal builds, plain malloc under sanitizers (ASan
// cannot see inside mimalloc). herd never replaces the process-wide malloc:
// Debian's libmimalloc.so exports malloc/operator new, so linking it into a
// library would silently swap every user's allocator. herd loads it privately
// (RTLD_LOCAL) instead; an executable may opt in to process-wide replacement.
#pragma once
#include <cstddef>

namespace herd::alloc {

// Any thread. 16-byte aligned; never returns nullptr (throws std::bad_alloc).
void* allocate(std::size_t bytes);
// Any thread, including one other than the allocating thread.
void deallocate(void* p) noexcept;
// Gives free memory back to the OS: the calling thread's mimalloc pages and
// glibc's arenas (malloc_trim). For a worker going idle after a burst; not
// on a hot path.
void collect() noexcept;
// Only glibc's part of collect(): malloc_trim, skipped in sanitizer builds
// (where it would race to initialise glibc's malloc). For threads that use
// plain new but are not workers (the observer's).
void trim_malloc_arenas() noexcept;
// "mimalloc" or "malloc": which allocator is in use (for reports).
const char* backend() noexcept;
// Heap statistics from the backend, for the observer (0 when unknown).
struct heap_stats { std::size_t committed = 0; std::size_t peak_committed = 0; };
heap_stats stats() noexcept;

}  // namespace herd::alloc
