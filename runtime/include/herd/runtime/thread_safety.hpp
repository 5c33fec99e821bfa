// Lock rules the compiler checks: clang's thread-safety analysis
// (-Wthread-safety; tools/test.sh has a clang stage that makes its warnings
// errors). A field a mutex guards says so (HERD_GUARDED_BY), a function that
// must be called with it held says so (HERD_REQUIRES), and the analysis
// proves every access. Other compilers see empty macros.
//
// std::mutex and std::lock_guard carry no annotations in libstdc++, so herd's
// own code locks through the thin wrappers below; they compile to the same
// calls. A condition variable waits on unique_lock::native(); write the wait
// as a loop in the function that holds the lock (a predicate lambda is a
// function of its own to the analysis, holding nothing).
#pragma once
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define HERD_TSA(x) __attribute__((x))
#else
#define HERD_TSA(x)
#endif

#define HERD_CAPABILITY(name) HERD_TSA(capability(name))
#define HERD_SCOPED_CAPABILITY HERD_TSA(scoped_lockable)
#define HERD_GUARDED_BY(m) HERD_TSA(guarded_by(m))
#define HERD_PT_GUARDED_BY(m) HERD_TSA(pt_guarded_by(m))
#define HERD_REQUIRES(...) HERD_TSA(requires_capability(__VA_ARGS__))
#define HERD_EXCLUDES(...) HERD_TSA(locks_excluded(__VA_ARGS__))
#define HERD_ACQUIRE(...) HERD_TSA(acquire_capability(__VA_ARGS__))
#define HERD_ACQUIRE_SHARED(...) HERD_TSA(acquire_shared_capability(__VA_ARGS__))
#define HERD_RELEASE_SHARED(...) HERD_TSA(release_shared_capability(__VA_ARGS__))
#define HERD_REQUIRES_SHARED(...) HERD_TSA(requires_shared_capability(__VA_ARGS__))
#define HERD_RELEASE(...) HERD_TSA(release_capability(__VA_ARGS__))
#define HERD_TRY_ACQUIRE(...) HERD_TSA(try_acquire_capability(__VA_ARGS__))
#define HERD_ACQUIRED_AFTER(...) HERD_TSA(acquired_after(__VA_ARGS__))
#define HERD_RETURN_CAPABILITY(x) HERD_TSA(lock_returned(x))
#define HERD_NO_THREAD_SAFETY_ANALYSIS HERD_TSA(no_thread_safety_analysis)

namespace herd::rt {

// std::mutex, annotated.
class HERD_CAPABILITY("mutex") mutex {
 public:
  void lock() HERD_ACQUIRE() { m_.lock(); }
  void unlock() HERD_RELEASE() { m_.unlock(); }
  bool try_lock() HERD_TRY_ACQUIRE(true) { return m_.try_lock(); }
  std::mutex& native() { return m_; }

 private:
  std::mutex m_;
};

// std::lock_guard for any annotated lock.
template <class M>
class HERD_SCOPED_CAPABILITY lock_guard {
 public:
  explicit lock_guard(M& m) HERD_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~lock_guard() HERD_RELEASE() { m_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  M& m_;
};

// std::unique_lock<std::mutex> for herd::rt::mutex: unlock and lock again in
// the middle of its scope, and wait on a std::condition_variable via native().
class HERD_SCOPED_CAPABILITY unique_lock {
 public:
  explicit unique_lock(mutex& m) HERD_ACQUIRE(m) : l_(m.native()) {}
  ~unique_lock() HERD_RELEASE() = default;
  void lock() HERD_ACQUIRE() { l_.lock(); }
  void unlock() HERD_RELEASE() { l_.unlock(); }
  std::unique_lock<std::mutex>& native() { return l_; }

 private:
  std::unique_lock<std::mutex> l_;
};

// std::shared_mutex, annotated: readers share it, a writer holds it alone.
class HERD_CAPABILITY("shared_mutex") shared_mutex {
 public:
  void lock() HERD_ACQUIRE() { m_.lock(); }
  void unlock() HERD_RELEASE() { m_.unlock(); }
  void lock_shared() HERD_ACQUIRE_SHARED() { m_.lock_shared(); }
  void unlock_shared() HERD_RELEASE_SHARED() { m_.unlock_shared(); }

 private:
  std::shared_mutex m_;
};

// std::shared_lock for herd::rt::shared_mutex.
class HERD_SCOPED_CAPABILITY shared_lock {
 public:
  explicit shared_lock(shared_mutex& m) HERD_ACQUIRE_SHARED(m) : m_(m) { m_.lock_shared(); }
  ~shared_lock() HERD_RELEASE() { m_.unlock_shared(); }
  shared_lock(const shared_lock&) = delete;
  shared_lock& operator=(const shared_lock&) = delete;

 private:
  shared_mutex& m_;
};

}  // namespace herd::rt
