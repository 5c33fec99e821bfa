// Who owns each table, by name and by owner, and what happens when an owner
// ends (tables/detail/table_base.hpp).
//
// One registry per OS process, under one mutex: id -> the table (a strong
// reference: a table lives until it is deleted, however many handles are
// about), owner -> ids, name -> id. It is touched on create, delete,
// give_away and an owner's end — never by an operation on a table's objects,
// which go straight to the table's stripes.
//
// An owner's end reaches us through actors' exit watcher (detail/
// exit_watch.hpp), before its links and monitors fire. Each table it owned
// goes to its heir when the heir is alive (the heir is then cleared, as in
// ETS), else it is deleted: marked deleted (acquire/release with the handles'
// checks), its objects freed, its name released.
//
// A new owner (give_away, an heir) can end while we hand the table over. We
// mark it for the watcher, move the table under the lock, then ask again
// whether it is alive: watch_exit's ordering (see its header) guarantees that
// either its finishing worker sees the move or this second ask sees it gone
// and we run the owner-end step ourselves. That step is idempotent.
#include <herd/actors/detail/exit_watch.hpp>
#include <herd/actors/process.hpp>
#include <herd/runtime/thread_safety.hpp>
#include <herd/tables/detail/table_base.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>

namespace herd::tables::detail {
namespace {

struct entry {
  std::shared_ptr<table_base> t;
  pid heir = no_pid;
  std::any heir_data;
};

struct transfer {
  std::shared_ptr<table_base> t;
  pid to, from;
  std::any data;
};

struct registry {
  rt::mutex m;
  uint64_t next_id HERD_GUARDED_BY(m) = 1;
  std::unordered_map<uint64_t, entry> by_id HERD_GUARDED_BY(m);
  std::unordered_multimap<pid, uint64_t> by_owner HERD_GUARDED_BY(m);
  std::unordered_map<std::string, uint64_t> by_name HERD_GUARDED_BY(m);

  void drop_owner_index(pid owner, uint64_t id) HERD_REQUIRES(m) {
    auto [b, e] = by_owner.equal_range(owner);
    for (auto it = b; it != e; ++it)
      if (it->second == id) {
        by_owner.erase(it);
        return;
      }
  }
  // Takes t out of every index; the caller marks it deleted and clears it.
  std::shared_ptr<table_base> remove(uint64_t id) HERD_REQUIRES(m) {
    auto it = by_id.find(id);
    if (it == by_id.end()) return nullptr;
    std::shared_ptr<table_base> t = std::move(it->second.t);
    by_id.erase(it);
    drop_owner_index(t->owner.load(std::memory_order_relaxed), id);
    if (!t->name.empty()) by_name.erase(t->name);
    t->deleted.store(true, std::memory_order_release);
    return t;
  }
};

registry& reg() {
  static registry* r = new registry;  // never destroyed: owners may end during static destruction
  return *r;
}

void owner_ended(pid who, const exit_reason& why) noexcept;

unsigned watcher_slot() {
  static const unsigned slot = herd::detail::register_exit_watcher(&owner_ended);
  return slot;
}

// Hands each table to `to`; a `to` that has ended gets the owner-end step.
void hand_over(std::vector<transfer>& moves) {
  for (transfer& mv : moves) {
    if (!herd::detail::watch_exit(mv.to, watcher_slot())) owner_ended(mv.to, exit_reason::normal());
    mv.t->send_transfer(mv.to, mv.from, std::move(mv.data));
  }
}

void owner_ended(pid who, const exit_reason&) noexcept {
  registry& r = reg();
  std::vector<std::shared_ptr<table_base>> gone;
  std::vector<transfer> moves;
  {
    rt::lock_guard g(r.m);
    std::vector<uint64_t> ids;
    auto [b, e] = r.by_owner.equal_range(who);
    for (auto it = b; it != e; ++it) ids.push_back(it->second);
    for (uint64_t id : ids) {
      entry& en = r.by_id.at(id);
      if (en.heir && en.heir != who) {
        r.drop_owner_index(who, id);
        en.t->owner.store(en.heir, std::memory_order_release);
        r.by_owner.emplace(en.heir, id);
        moves.push_back({en.t, en.heir, who, std::move(en.heir_data)});
        en.heir = no_pid;
        en.heir_data.reset();
      } else {
        gone.push_back(r.remove(id));
      }
    }
  }
  for (auto& t : gone) t->clear();
  try {
    hand_over(moves);
  } catch (...) {
    // An allocation failed while we told an heir: the tables are its anyway.
  }
}

}  // namespace

result<> adopt(const std::shared_ptr<table_base>& t, pid heir, std::any heir_data) {
  herd::detail::require_process("herd::table::create");  // a table needs an owner
  pid me = herd::self();
  registry& r = reg();
  unsigned slot = watcher_slot();
  {
    rt::lock_guard g(r.m);
    if (!t->name.empty() && r.by_name.count(t->name)) return error{errc::name_taken, t->name};
    t->id = r.next_id++;
    t->owner.store(me, std::memory_order_release);
    r.by_id.emplace(t->id, entry{t, heir, std::move(heir_data)});
    r.by_owner.emplace(me, t->id);
    if (!t->name.empty()) r.by_name.emplace(t->name, t->id);
  }
  herd::detail::watch_exit(me, slot);  // we are alive: true
  return {};
}

void destroy(table_base& t) {
  std::shared_ptr<table_base> gone;
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    gone = r.remove(t.id);
  }
  if (gone) gone->clear();
}

result<> give_away(table_base& t, pid to, std::any data) {
  pid from = t.owner.load(std::memory_order_acquire);
  if (to == from) return error{errc::already_owner, to.to_string()};
  if (!herd::detail::watch_exit(to, watcher_slot())) return error{errc::not_alive, to.to_string()};
  std::vector<transfer> moves;
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    auto it = r.by_id.find(t.id);
    if (it == r.by_id.end()) t.refuse("give_away", "deleted");
    r.drop_owner_index(from, t.id);
    t.owner.store(to, std::memory_order_release);
    r.by_owner.emplace(to, t.id);
    moves.push_back({it->second.t, to, from, std::move(data)});
  }
  hand_over(moves);
  return {};
}

void set_heir(table_base& t, pid heir, std::any data) {
  registry& r = reg();
  rt::lock_guard g(r.m);
  auto it = r.by_id.find(t.id);
  if (it == r.by_id.end()) t.refuse("set_heir", "deleted");
  it->second.heir = heir;
  it->second.heir_data = std::move(data);
}

std::shared_ptr<table_base> find(std::string_view name) {
  registry& r = reg();
  rt::lock_guard g(r.m);
  auto it = r.by_name.find(std::string(name));
  return it == r.by_name.end() ? nullptr : r.by_id.at(it->second).t;
}

namespace {
// "unsigned long" rather than "m": the observer shows it to people.
std::string readable(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : t.name();
  std::free(d);
  return s;
}
}  // namespace

std::vector<table_info> list() {
  std::vector<std::pair<std::shared_ptr<table_base>, pid>> all;
  {
    registry& r = reg();
    rt::lock_guard g(r.m);
    for (auto& [id, en] : r.by_id) all.emplace_back(en.t, en.heir);
  }
  std::vector<table_info> out;
  for (auto& [t, heir] : all)
    out.push_back({t->id, t->name, t->kind, t->access, t->owner.load(std::memory_order_acquire), heir, t->size(),
                   t->memory(), readable(t->key_type), readable(t->value_type)});
  return out;
}

std::string table_base::label() const {
  std::string s = "table ";
  if (!name.empty()) s += "'" + name + "' ";
  return s + "#" + std::to_string(id);
}

void table_base::refuse(const char* op, const char* why) const {
  throw table_error(std::string("herd::table::") + op + " on " + label() + ": " + why + " (owner " +
                    owner.load(std::memory_order_acquire).to_string() + ", called from " +
                    herd::self().to_string() + ")");
}

void table_base::check_read(const char* op) const {
  if (deleted.load(std::memory_order_acquire)) refuse(op, "deleted");
  if (access == table_access::private_ && owner.load(std::memory_order_acquire) != herd::self())
    refuse(op, "private: only its owner reads it");
}

void table_base::check_write(const char* op) const {
  if (deleted.load(std::memory_order_acquire)) refuse(op, "deleted");
  if (access != table_access::public_ && owner.load(std::memory_order_acquire) != herd::self())
    refuse(op, access == table_access::protected_ ? "protected: only its owner writes it"
                                                  : "private: only its owner reads or writes it");
}

}  // namespace herd::tables::detail
