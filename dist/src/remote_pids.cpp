#include "remote_pids.hpp"

#include <herd/runtime/thread_safety.hpp>
#include <herd/actors/detail/remote.hpp>

#include "conn_links.hpp"
#include "term_node.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <utility>
#include <vector>

namespace herd::dist::detail {

namespace {

struct entry {
  uint32_t node_no = 0;
  uint32_t id = 0, serial = 0, creation = 0;
  uint32_t gen = 0;   // the slot's generation: the herd::pid's
  uint32_t charged_to = 0;  // the node whose connection's frame made it (0: none)
  bool live = false;
  // The sweep epoch it was last interned in (a hit refreshes it under the
  // shared lock, hence atomic).
  mutable std::atomic<uint64_t> epoch{0};
};

struct node_rec {
  explicit node_rec(std::string n) : name(std::move(n)) {}
  std::string name;  // empty: a free record (in table::free_nodes)
  // The connections to the node that hold it (pin_node; more than one
  // while a new one takes over). A record exists for its connections, its
  // live entries and the live entries charged to it, and goes with the
  // last of them (release_node_locked): neither a peer naming ever new
  // nodes in pids nor a churn of short-lived nodes grows the table. Both
  // under the table's lock.
  uint32_t pins = 0;
  uint32_t entries = 0;  // live entries naming it
  mutable herd::detail::atom_budget atoms;  // atomics: charged under no lock of this table
  // Entries charged to its connections (changed under the table's lock,
  // read under none), the cap, and whether one was refused.
  mutable std::atomic<uint64_t> pids_held{0};
  mutable std::atomic<uint32_t> pids_cap{0};
  mutable std::atomic<bool> pids_spent{false};
  mutable std::atomic<bool> pids_told{false};  // the connection was told to close (once)
};

thread_local uint32_t tls_pid_charge = 0;

using key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;

constexpr std::size_t sweep_step = std::size_t(1) << 16;

struct table {
  rt::shared_mutex mu;
  // node_no - 1 -> record. Never shrinks and never moves (budgets are used
  // outside the lock); a freed record's number is reused for the next node.
  std::deque<node_rec> nodes HERD_GUARDED_BY(mu);
  std::vector<uint32_t> free_nodes HERD_GUARDED_BY(mu);
  std::map<std::string, uint32_t, std::less<>> node_numbers HERD_GUARDED_BY(mu);
  std::deque<entry> entries HERD_GUARDED_BY(mu);  // index & ~remote_pid_bit -> entry
  std::map<key, uint32_t> by_key HERD_GUARDED_BY(mu);
  std::vector<uint32_t> free_slots HERD_GUARDED_BY(mu);
  std::atomic<uint64_t> epoch{1};
  std::size_t live HERD_GUARDED_BY(mu) = 0;
  // Sweeps also run when the table has grown this far since the last one
  // (not only when a connection ends): pids nobody charges (interned, or
  // mapped from a term built here) of unconnected nodes would otherwise
  // pile up while no connection ends. Doubling keeps the cost per entry
  // constant.
  std::size_t sweep_at HERD_GUARDED_BY(mu) = sweep_step;
  std::atomic<bool> sweeping{false};
};

table& the_table() {
  static table* t = new table;  // never destroyed: remote pids may be printed during exit
  return *t;
}

uint32_t node_number_locked(table& t, std::string_view node) HERD_REQUIRES(t.mu) {
  auto n = t.node_numbers.find(node);
  if (n != t.node_numbers.end()) return n->second;
  uint32_t no;
  if (!t.free_nodes.empty()) {
    no = t.free_nodes.back();
    t.free_nodes.pop_back();
    node_rec& r = t.nodes[no - 1];
    r.name = std::string(node);
    r.entries = 0;
    r.pins = 0;
    // A new node: nothing of the record's last one carries over (pids_held
    // is 0: the record went with the last entry charged to it). The atom
    // budget does: an old message of the last node still decodes against
    // what its share had left, until a connection to the new node resets it.
    r.pids_cap.store(0, std::memory_order_relaxed);
    r.pids_spent.store(false, std::memory_order_relaxed);
    r.pids_told.store(false, std::memory_order_relaxed);
  } else {
    t.nodes.emplace_back(std::string(node));
    no = uint32_t(t.nodes.size());
  }
  t.node_numbers.emplace(std::string(node), no);
  return no;
}

// A record nothing holds any more goes; its number is reused. No pid
// handle can then name the next node to get the number: every entry naming
// the record is gone, and a gone entry's slot is reused under a new
// generation. (A number can outlive its record in etf_message::origin and
// in herd::term pids: intern_locked charges a free record nothing, and a
// reused one's new node within that node's own cap.)
void release_node_locked(table& t, uint32_t no) HERD_REQUIRES(t.mu) {
  node_rec& r = t.nodes[no - 1];
  if (r.pins != 0 || r.entries != 0 || r.name.empty() || r.pids_held.load(std::memory_order_relaxed) != 0) return;
  t.node_numbers.erase(r.name);
  std::string().swap(r.name);
  t.free_nodes.push_back(no);
}

const entry* live_entry(const table& t, herd::pid p) HERD_REQUIRES_SHARED(t.mu) {
  uint32_t i = p.index & ~remote_pid_bit;
  if (i >= t.entries.size()) return nullptr;
  const entry& e = t.entries[i];
  return e.live && e.gen == p.generation ? &e : nullptr;
}

}  // namespace

// Installed once, for the OS process's life: a remote pid can be printed
// whenever one exists, and a send to one is dropped by hook_deliver while
// distribution does not run.
void install_remote_hooks() {
  static const herd::detail::remote_hooks hooks{&hook_deliver, &format_remote};
  static std::once_flag once;
  std::call_once(once, [] { herd::detail::set_remote_hooks(&hooks); });
  install_signal_hooks();
}

namespace {
herd::pid intern_locked(table& t, const remote_pid& r, bool& sweep) HERD_REQUIRES(t.mu);
}

herd::pid intern_remote(const remote_pid& r) {
  install_remote_hooks();
  table& t = the_table();
  const uint64_t now = t.epoch.load(std::memory_order_relaxed);
  {
    rt::shared_lock g(t.mu);
    auto n = t.node_numbers.find(r.node);
    if (n != t.node_numbers.end()) {
      auto e = t.by_key.find({n->second, r.id, r.serial, r.creation});
      if (e != t.by_key.end()) {
        const entry& x = t.entries[e->second];
        if (x.epoch.load(std::memory_order_relaxed) != now)
          x.epoch.store(now, std::memory_order_relaxed);
        return herd::pid{e->second | remote_pid_bit, x.gen};
      }
    }
  }
  bool sweep = false;
  herd::pid p;
  {
    rt::lock_guard g(t.mu);
    p = intern_locked(t, r, sweep);
  }
  // Not under the table's lock: the sweep takes the distribution's first.
  if (sweep && !t.sweeping.exchange(true, std::memory_order_acq_rel)) {
    sweep_unconnected();
    t.sweeping.store(false, std::memory_order_release);
  }
  return p;
}

namespace {

herd::pid intern_locked(table& t, const remote_pid& r, bool& sweep) HERD_REQUIRES(t.mu) {
  uint32_t no = node_number_locked(t, r.node);
  auto [it, fresh] = t.by_key.try_emplace({no, r.id, r.serial, r.creation}, 0);
  uint32_t charge = tls_pid_charge;
  // A charge may name a record that went since (an old message's origin):
  // a free record is charged nothing, as it could not be released again.
  if (fresh && charge >= 1 && charge <= t.nodes.size() && !t.nodes[charge - 1].name.empty()) {
    const node_rec& payer = t.nodes[charge - 1];
    uint32_t cap = payer.pids_cap.load(std::memory_order_relaxed);
    if (cap && payer.pids_held.load(std::memory_order_relaxed) >= cap) {
      t.by_key.erase(it);
      payer.pids_spent.store(true, std::memory_order_release);
      release_node_locked(t, no);  // made for this pid only
      return herd::no_pid;
    }
    payer.pids_held.fetch_add(1, std::memory_order_relaxed);
  } else {
    charge = 0;
  }
  if (fresh) {
    uint32_t i;
    if (!t.free_slots.empty()) {
      i = t.free_slots.back();
      t.free_slots.pop_back();
    } else {
      i = uint32_t(t.entries.size());
      t.entries.emplace_back();
    }
    entry& e = t.entries[i];
    e.node_no = no;
    e.id = r.id;
    e.serial = r.serial;
    e.creation = r.creation;
    e.live = true;
    e.charged_to = charge;
    it->second = i;
    ++t.nodes[no - 1].entries;
    ++t.live;
    sweep = t.live >= t.sweep_at;
  }
  entry& e = t.entries[it->second];
  e.epoch.store(t.epoch.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return herd::pid{it->second | remote_pid_bit, e.gen};
}

}  // namespace

std::optional<remote_pid> lookup_remote(herd::pid p) {
  if (!p.is_remote()) return std::nullopt;
  table& t = the_table();
  rt::shared_lock g(t.mu);
  const entry* e = live_entry(t, p);
  if (!e) return std::nullopt;
  return remote_pid{t.nodes[e->node_no - 1].name, e->id, e->serial, e->creation};
}

std::string format_remote(herd::pid p) {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  char buf[48];
  const entry* e = live_entry(t, p);
  int n = e ? std::snprintf(buf, sizeof buf, "<%u.%u.%u>", e->node_no, e->id, e->serial)
            : std::snprintf(buf, sizeof buf, "<remote.%u.%u>", p.index & ~remote_pid_bit, p.generation);
  return std::string(buf, std::size_t(n));
}

uint32_t node_number(std::string_view node) {
  if (node.empty()) return 0;
  table& t = the_table();
  rt::shared_lock g(t.mu);
  auto n = t.node_numbers.find(node);
  return n == t.node_numbers.end() ? 0 : n->second;
}

uint32_t pin_node(std::string_view node) {
  if (node.empty()) return 0;
  table& t = the_table();
  rt::lock_guard g(t.mu);
  uint32_t no = node_number_locked(t, node);
  ++t.nodes[no - 1].pins;
  return no;
}

void unpin_node(uint32_t node_no) noexcept {
  table& t = the_table();
  rt::lock_guard g(t.mu);
  if (node_no < 1 || node_no > t.nodes.size() || t.nodes[node_no - 1].pins == 0) return;
  --t.nodes[node_no - 1].pins;
  release_node_locked(t, node_no);
}

herd::detail::atom_budget* node_atom_budget(uint32_t node_no) noexcept {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  // A deque's elements never move: the budget outlives the lock.
  return node_no >= 1 && node_no <= t.nodes.size() ? &t.nodes[node_no - 1].atoms : nullptr;
}

pid_charge_scope::pid_charge_scope(uint32_t node_no) noexcept : prev_(tls_pid_charge) { tls_pid_charge = node_no; }
pid_charge_scope::~pid_charge_scope() { tls_pid_charge = prev_; }

void reset_pid_budget(uint32_t node_no, uint32_t cap) noexcept {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  if (node_no < 1 || node_no > t.nodes.size()) return;
  t.nodes[node_no - 1].pids_cap.store(cap, std::memory_order_relaxed);
  t.nodes[node_no - 1].pids_told.store(false, std::memory_order_relaxed);
  t.nodes[node_no - 1].pids_spent.store(false, std::memory_order_release);
}

bool pid_budget_tell(uint32_t node_no) noexcept {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  if (node_no < 1 || node_no > t.nodes.size()) return false;
  const node_rec& r = t.nodes[node_no - 1];
  return r.pids_spent.load(std::memory_order_acquire) && !r.pids_told.exchange(true, std::memory_order_acq_rel);
}

uint32_t pid_charge_of_thread() noexcept { return tls_pid_charge; }
uint32_t swap_pid_charge(uint32_t node_no) noexcept { return std::exchange(tls_pid_charge, node_no); }

bool pid_budget_spent(uint32_t node_no) noexcept {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  return node_no >= 1 && node_no <= t.nodes.size() && t.nodes[node_no - 1].pids_spent.load(std::memory_order_acquire);
}

bool charge_refused() noexcept { return tls_pid_charge && pid_budget_spent(tls_pid_charge); }

std::size_t pids_held_by(uint32_t node_no) noexcept {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  return node_no >= 1 && node_no <= t.nodes.size() ? t.nodes[node_no - 1].pids_held.load(std::memory_order_relaxed) : 0;
}

std::string node_name_of(uint32_t node_no) {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  return node_no >= 1 && node_no <= t.nodes.size() ? t.nodes[node_no - 1].name : std::string();
}

std::size_t sweep_remote_pids(std::string_view ended, const std::vector<std::string>& connected) {
  table& t = the_table();
  rt::lock_guard g(t.mu);
  const uint64_t now = t.epoch.load(std::memory_order_relaxed);
  uint32_t ended_no = 0;
  if (auto n = t.node_numbers.find(ended); !ended.empty() && n != t.node_numbers.end()) ended_no = n->second;
  std::vector<char> unconnected(t.nodes.size() + 1, 0);
  for (std::size_t no = 1; no <= t.nodes.size(); ++no)
    unconnected[no] = !std::binary_search(connected.begin(), connected.end(), t.nodes[no - 1].name);
  std::size_t gone = 0;
  for (auto it = t.by_key.begin(); it != t.by_key.end();) {
    uint32_t no = std::get<0>(it->first);
    entry& e = t.entries[it->second];
    bool drop = no == ended_no || (unconnected[no] && e.epoch.load(std::memory_order_relaxed) < now);
    if (!drop) {
      ++it;
      continue;
    }
    e.live = false;
    const uint32_t payer = std::exchange(e.charged_to, 0);
    if (payer) t.nodes[payer - 1].pids_held.fetch_sub(1, std::memory_order_relaxed);
    --t.nodes[no - 1].entries;
    release_node_locked(t, no);
    if (payer && payer != no) release_node_locked(t, payer);
    // A slot whose generation would wrap is retired: an old pid must never
    // name a new process.
    if (e.gen != UINT32_MAX) {
      ++e.gen;
      t.free_slots.push_back(it->second);
    }
    it = t.by_key.erase(it);
    --t.live;
    ++gone;
  }
  t.epoch.store(now + 1, std::memory_order_relaxed);
  t.sweep_at = std::max(2 * t.live, t.live + sweep_step);
  return gone;
}

std::size_t remote_pid_count() {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  return t.live;
}

std::size_t node_record_count() {
  table& t = the_table();
  rt::shared_lock g(t.mu);
  return t.nodes.size() - t.free_nodes.size();
}

}  // namespace herd::dist::detail
