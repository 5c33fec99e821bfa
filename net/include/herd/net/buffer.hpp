// Received bytes. A buffer owns one block from herd's per-thread block pool
// (net/src/buffer_pool.cpp): on the steady state a read allocates nothing —
// the block comes from the worker's cache and goes back to whichever
// thread's cache destroys the buffer. Move-only; any thread may read or
// destroy it (it is an ordinary value once delivered).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace herd::net {

namespace detail {
struct block;
struct buffer_access;
}  // namespace detail

class buffer {
 public:
  buffer() noexcept = default;
  buffer(buffer&& o) noexcept : b_(std::exchange(o.b_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      release();
      b_ = std::exchange(o.b_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { release(); }

  const char* data() const noexcept;
  char* data() noexcept;  // the bytes may be changed in place (e.g. decoded)
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::string_view view() const noexcept { return {data(), size_}; }
  std::string to_string() const { return std::string(view()); }

  // Any thread: a pooled copy of `bytes` (tests, messages made by hand).
  static buffer copy_of(std::string_view bytes);

 private:
  friend struct detail::buffer_access;
  void release() noexcept;
  detail::block* b_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace herd::net
