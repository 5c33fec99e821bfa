// mimalloc is resolved with dlopen(RTLD_LOCAL) so its exported malloc does not
// interpose on the rest of the process (see alloc.hpp). If it cannot be loaded,
// or HERD_ALLOC=malloc is set, or this is a sanitizer build, plain malloc is used.
#include <herd/runtime/sanitizers.hpp>
#include <herd/runtime/alloc.hpp>

#include <dlfcn.h>
#include <malloc.h>
#include <cstdlib>
#include <cstring>
#include <new>

namespace herd::alloc {
namespace {

using malloc_fn = void* (*)(std::size_t);
using free_fn = void (*)(void*);
using stats_fn = void (*)(std::size_t*, std::size_t*, std::size_t*, std::size_t*,
                          std::size_t*, std::size_t*, std::size_t*, std::size_t*);

struct backend_table {
  malloc_fn do_malloc = &std::malloc;
  free_fn do_free = &std::free;
  stats_fn process_info = nullptr;
  void (*collect)(bool) = nullptr;
  const char* name = "malloc";

  backend_table() {
#if !HERD_ASAN && !HERD_TSAN
    const char* env = std::getenv("HERD_ALLOC");
    if (env && std::strcmp(env, "malloc") == 0) return;
    void* h = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    auto m = reinterpret_cast<malloc_fn>(dlsym(h, "mi_malloc"));
    auto f = reinterpret_cast<free_fn>(dlsym(h, "mi_free"));
    if (!m || !f) return;
    do_malloc = m;
    do_free = f;
    process_info = reinterpret_cast<stats_fn>(dlsym(h, "mi_process_info"));
    collect = reinterpret_cast<void (*)(bool)>(dlsym(h, "mi_collect"));
    name = "mimalloc";
#endif
  }
};

// Constructed before main (and before any herd object can allocate) because
// every allocation path goes through table(), a function-local static.
backend_table& table() {
  static backend_table t;
  return t;
}
[[maybe_unused]] const backend_table& eager = table();

}  // namespace

void* allocate(std::size_t bytes) {
  void* p = table().do_malloc(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void deallocate(void* p) noexcept { table().do_free(p); }

void collect() noexcept {
  if (auto f = table().collect) f(false);
  trim_malloc_arenas();
}

void trim_malloc_arenas() noexcept {
  // What herd and its users allocate with plain new (std::function, strings,
  // vectors) lives in glibc's arenas, which keep freed pages until trimmed.
  // Callers do it once per quiet period (worker::park, the observer's loop),
  // so its walk of the arenas is never on a busy path.
#if !HERD_ASAN && !HERD_TSAN
  ::malloc_trim(0);
#endif
  // Not in a sanitizer build: there the sanitizer's allocator serves every
  // malloc, glibc's may never have been initialised, and malloc_trim does it
  // from whichever thread trims first. Two workers parking at once both ran
  // that (unsynchronised) initialisation: a SEGV inside mtrim, or glibc's
  // "attached_threads > 0" abort when the threads exited (churn_ghost_test,
  // 3 runs in 12 under ASan).
}

const char* backend() noexcept { return table().name; }

heap_stats stats() noexcept {
  heap_stats s;
  if (auto f = table().process_info) {
    std::size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
    f(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
    s.committed = commit;
    s.peak_committed = peak_commit;
  }
  return s;
}

}  // namespace herd::alloc
