#include <herd/dist/term_registry.hpp>
#include <herd/runtime/thread_safety.hpp>

#include <unordered_map>

namespace herd::detail {

namespace {

struct registry {
  rt::shared_mutex mu;
  struct entry {
    term_encoder enc;
    uint32_t holders;
  };
  std::unordered_map<uint64_t, entry> by_type HERD_GUARDED_BY(mu);
};

// Never destroyed: registrations in other files end during static
// destruction, in an order nobody controls.
registry& reg() {
  static registry* r = new registry;
  return *r;
}

}  // namespace

void register_term_encoder(uint64_t type, term_encoder enc, bool add) noexcept {
  registry& r = reg();
  rt::lock_guard g(r.mu);
  try {
    if (add) {
      ++r.by_type.try_emplace(type, registry::entry{enc, 0}).first->second.holders;
    } else if (auto it = r.by_type.find(type); it != r.by_type.end() && --it->second.holders == 0) {
      r.by_type.erase(it);
    }
  } catch (...) {
    // Out of memory at registration: sends of this type are then refused
    // with a logged error, not lost silently.
  }
}

term_encoder find_term_encoder(uint64_t type) noexcept {
  registry& r = reg();
  rt::shared_lock g(r.mu);
  auto it = r.by_type.find(type);
  return it == r.by_type.end() ? nullptr : it->second.enc;
}

}  // namespace herd::detail
