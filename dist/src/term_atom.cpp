// The atom table: text -> index under a shared mutex (made once, looked up
// often), index -> text without a lock. Texts live in chunks that are never
// freed or moved, so a string_view handed out stays valid for the program's
// life, as an atom does on BEAM.
#include "term_node.hpp"

#include <herd/runtime/thread_safety.hpp>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace herd {
namespace {

thread_local detail::atom_budget* tls_budget = nullptr;

// Not inlined, with a barrier: never a thread-local address kept in a
// register across a suspension (none happens inside a decode, but callers
// of the scope run on fibers).
[[gnu::noinline]] detail::atom_budget* charged_budget() noexcept {
  asm volatile("" ::: "memory");
  return tls_budget;
}
[[gnu::noinline]] void set_charged_budget(detail::atom_budget* b) noexcept {
  asm volatile("" ::: "memory");
  tls_budget = b;
}

constexpr uint32_t chunk_bits = 12;
constexpr uint32_t chunk_size = 1u << chunk_bits;
constexpr uint32_t max_chunks = 256;
constexpr uint32_t atom_limit = chunk_size * max_chunks;  // BEAM's default +t: 1,048,576

struct entry {
  const char* text;
  uint32_t len;
};

class atom_table {
 public:
  atom_table() {
    for (auto& c : chunks_) c.store(nullptr, std::memory_order_relaxed);
    rt::lock_guard lk(mu_);
    intern_locked("");  // index 0: atom() is ''
  }

  term_result<atom> make(std::string_view s) {
    {
      rt::shared_lock lk(mu_);
      if (auto it = index_.find(s); it != index_.end()) return atom::from_index(it->second);
    }
    long cps = detail::utf8_code_points(s);
    if (cps < 0) return term_error{term_errc::bad_atom, 0, "not UTF-8"};
    if (cps > 255) return term_error{term_errc::bad_atom, 0, std::to_string(cps) + " code points (at most 255)"};
    rt::lock_guard lk(mu_);
    if (auto it = index_.find(s); it != index_.end()) return atom::from_index(it->second);
    if (next_ >= atom_limit)
      return term_error{term_errc::atom_table_full, 0, std::to_string(atom_limit) + " atoms"};
    if (detail::atom_budget* b = charged_budget()) {
      // Under the table's lock: charges are counted exactly, one per atom made.
      if (b->left.load(std::memory_order_relaxed) <= 0) {
        b->spent.store(true, std::memory_order_release);
        return term_error{term_errc::atom_table_full, 0, "the sender's share of new atoms is spent"};
      }
      b->left.fetch_sub(1, std::memory_order_relaxed);
    }
    return atom::from_index(intern_locked(s));
  }

  entry get(uint32_t i) const noexcept {
    // Acquire pairs with the release store that published the chunk; the
    // entry itself was written before the index left intern_locked.
    const entry* c = chunks_[i >> chunk_bits].load(std::memory_order_acquire);
    return c[i & (chunk_size - 1)];
  }
  uint32_t count() const noexcept { return next_.load(std::memory_order_relaxed); }

 private:
  uint32_t intern_locked(std::string_view s) HERD_REQUIRES(mu_) {
    uint32_t i = next_.load(std::memory_order_relaxed);
    entry* c = chunks_[i >> chunk_bits].load(std::memory_order_relaxed);
    if (!c) {
      c = new entry[chunk_size]();
      chunks_[i >> chunk_bits].store(c, std::memory_order_release);
    }
    char* text = store(s);
    c[i & (chunk_size - 1)] = entry{text, uint32_t(s.size())};
    index_.emplace(std::string_view(text, s.size()), i);
    next_.store(i + 1, std::memory_order_release);
    return i;
  }
  // Texts are packed into 64 KiB blocks (an atom is at most 1,020 bytes).
  char* store(std::string_view s) HERD_REQUIRES(mu_) {
    constexpr std::size_t block = 64 * 1024;
    if (!cur_ || s.size() > block - used_) {
      owned_.push_back(std::make_unique<char[]>(block));
      cur_ = owned_.back().get();
      used_ = 0;
    }
    char* p = cur_ + used_;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    used_ += s.size();
    return p;
  }

  mutable rt::shared_mutex mu_;
  std::unordered_map<std::string_view, uint32_t> index_ HERD_GUARDED_BY(mu_);
  std::atomic<entry*> chunks_[max_chunks];
  std::atomic<uint32_t> next_{0};
  std::vector<std::unique_ptr<char[]>> owned_ HERD_GUARDED_BY(mu_);
  char* cur_ HERD_GUARDED_BY(mu_) = nullptr;
  std::size_t used_ HERD_GUARDED_BY(mu_) = 0;
};

atom_table& table() {
  static atom_table* t = new atom_table();  // never destroyed: atoms outlive static destructors
  return *t;
}

}  // namespace

namespace detail {
atom_charge_scope::atom_charge_scope(atom_budget* b) noexcept : prev_(charged_budget()) { set_charged_budget(b); }
atom_charge_scope::~atom_charge_scope() { set_charged_budget(prev_); }

long utf8_code_points(std::string_view s) noexcept {
  long n = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    int len;
    uint32_t cp;
    if (c < 0x80) { len = 1; cp = c; }
    else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return -1;
    if (i + len > s.size()) return -1;
    for (int k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return -1;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    i += len;
    ++n;
  }
  return n;
}
}  // namespace detail

atom::atom(std::string_view utf8) {
  auto r = make(utf8);
  if (!r) throw std::invalid_argument("herd::atom: " + r.error().message());
  i_ = r->index();
}

term_result<atom> atom::make(std::string_view utf8) { return table().make(utf8); }
uint32_t atom::max_atoms() noexcept { return atom_limit; }
uint32_t atom::count() noexcept { return table().count(); }

std::string_view atom::text() const noexcept {
  entry e = table().get(i_);
  return {e.text, e.len};
}

std::strong_ordering operator<=>(atom a, atom b) noexcept {
  if (a.i_ == b.i_) return std::strong_ordering::equal;
  // UTF-8 byte order is code point order, which is Erlang's atom order.
  int c = a.text().compare(b.text());
  return c < 0 ? std::strong_ordering::less : c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal;
}

}  // namespace herd
