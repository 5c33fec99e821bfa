// Signals: links, monitors and exit signals travel in the same mailbox as
// messages (so everything from one sender to one receiver stays in order),
// marked by message::kind, and the owner acts on them when it drains its
// mailbox at a blocking point. Links and monitors change only on their owner
// (erl_monitor_link.h's rule); everybody else sends it signals.
//
//   kind_link / kind_unlink      "add / drop me to your links"
//   kind_exit                    an exit signal (via a link, or exit/2)
//   kind_monitor / kind_demonitor "I watch you (ref) / I stop watching"
//   kind_down                    a `down` message: delivered only while the
//                                receiver still has that monitor
//   kind_alias                   a reply to a call: delivered only while the
//                                caller still waits for it (Erlang's aliases),
//                                so a late reply never reaches the mailbox
//   kind_call                    a call's request: filed as a message, and the
//                                caller now monitors this process (with the
//                                call's ref) until the reply drops it
//   kind_deferred                a source's notification (detail/deferred.hpp):
//                                materialized into messages at the drain,
//                                handed back to its source when discarded
//   kind_info                    the observer asks for links, monitors and
//                                trap_exit (sig_info): answered at the drain,
//                                dropped unanswered if the process has ended
#pragma once
#include <herd/actors/exit_reason.hpp>
#include <herd/actors/links.hpp>
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

#include "process.hpp"
#include "relation_table.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace herd::detail {

enum : uint32_t {
  kind_user = 0,
  kind_link,
  kind_unlink,
  kind_exit,
  kind_monitor,
  kind_demonitor,
  kind_down,
  kind_alias,
  kind_call,  // a call_request: a message that also sets up a monitor of the server
  kind_deferred,  // a deferred_ops note (never freed here: it belongs to its source)
  kind_info,      // sig_info: the observer's question (introspect.cpp)
};

struct sig_link {
  pid from;
};
struct sig_unlink {
  pid from;
};
struct sig_exit {
  pid from;
  exit_reason reason;
  bool via_link;
};
struct sig_monitor {
  pid from;
  uint64_t ref;
};
struct sig_demonitor {
  pid from;
  uint64_t ref;
};

struct info_answer;  // introspect.cpp: filled by the owner, waited for by the asker
struct sig_info {
  std::shared_ptr<info_answer> answer;
};
// The owner, at its drain: fills in and signals the answer.
void answer_info(process* p, info_answer& a) noexcept;

// message::reserved on a filed `down` or call reply: the first 8 bytes of its
// payload are a ref, and a finished call or a demonitor may still drop it.
inline constexpr uint32_t tagged_by_ref = 1;

// The owner: drops filed messages tagged with `ref` — those after `after` (a
// receive mark; nullptr: from the first), or all when from_start.
std::size_t drop_tagged(process* p, message* after, bool from_start, uint64_t ref);

// A process's links and monitors; allocated on first use (a process with none
// costs a null pointer), owner only. Each kind is keyed so that every signal
// finds its entry in O(1) (relation_table.hpp): links by pid, the rest by ref.
enum class ref_role : uint64_t {
  watcher = 1,     // other monitors this process (a pending call to us counts)
  monitoring = 2,  // this process monitors other (a call of ours in flight counts)
  alias = 3,       // a call of ours waits for its reply (other: unused)
};
struct link_entry {
  uint64_t key;  // pid::value(); never ~0 (an invalid pid is never linked)
};
struct ref_entry {
  uint64_t key;  // role << 62 | ref (refs stay below 2^62: new_ref)
  pid other;
};

struct relations {
  relation_table<link_entry, 2> links;
  relation_table<ref_entry, 4> refs;
  // Messages tagged_by_ref in the save queue (filed `down`s and call replies):
  // while there are none, demonitor of a monitor that already fired has no
  // `down` to look for and skips the scan of the mailbox (O(1), as OTP's
  // demonitor/1). A tagged message is filed only with `rel` allocated, and
  // `rel` stays until the process is freed.
  uint32_t tagged_filed = 0;

  static uint64_t key(ref_role r, uint64_t ref) noexcept { return (uint64_t(r) << 62) | ref; }
  static ref_role role_of(const ref_entry& e) noexcept { return ref_role(e.key >> 62); }
  static uint64_t ref_of(const ref_entry& e) noexcept { return e.key & ((uint64_t{1} << 62) - 1); }

  // The owner's process::relations_bytes (set by relations_of). Every change
  // below republishes it, so the observer's scan reads an exact figure from
  // another thread and a wait publishes nothing (issue 21: that store before
  // every park cost ~0.1 µs per echo round trip, a miss on this block).
  std::atomic<uint32_t>* published = nullptr;

  // What the tables hold: this block and their heap slots (O(1)).
  uint32_t bytes() const noexcept {
    std::size_t b = sizeof(relations) + std::size_t{links.heap_slots()} * sizeof(link_entry) +
                    std::size_t{refs.heap_slots()} * sizeof(ref_entry);
    return static_cast<uint32_t>(b < UINT32_MAX ? b : UINT32_MAX);
  }
  // Stores only when the figure moved (a table's heap grew or shrank): the
  // add/drop pair of every call leaves it as it was and the line clean.
  void publish() noexcept {
    if (!published) return;
    const uint32_t b = bytes();
    if (published->load(std::memory_order_relaxed) != b) published->store(b, std::memory_order_relaxed);
  }

  bool has_link(pid p) noexcept { return links.find(p.value()) != nullptr; }
  bool add_link(pid p) {
    bool added = links.insert(link_entry{p.value()});
    publish();
    return added;
  }
  bool drop_link(pid p) noexcept {
    bool dropped = links.erase(p.value());
    publish();
    return dropped;
  }
  bool has(ref_role r, uint64_t ref) noexcept { return refs.find(key(r, ref)) != nullptr; }
  const ref_entry* find(ref_role r, uint64_t ref) noexcept { return refs.find(key(r, ref)); }
  bool add(ref_role r, uint64_t ref, pid other) {
    bool added = refs.insert(ref_entry{key(r, ref), other});
    publish();
    return added;
  }
  // False if absent; else *other (if given) is the entry's pid.
  bool drop(ref_role r, uint64_t ref, pid* other = nullptr) noexcept {
    ref_entry e;
    bool dropped = refs.erase(key(r, ref), &e);
    publish();
    if (!dropped) return false;
    if (other) *other = e.other;
    return true;
  }
  void clear() noexcept {
    links.clear();
    refs.clear();
    publish();
  }
};

relations& relations_of(process* p);

// The owner took m out of its save queue (a receive): keeps tagged_filed.
inline void note_unfiled(process* p, const message* m) noexcept {
  if (m->reserved == tagged_by_ref) --p->rel->tagged_filed;
}

// Any thread. Sets m->kind and delivers; false (m freed) if `to` is gone.
bool send_signal(pid to, uint32_t kind, message* m) noexcept;
template <class T>
bool send_signal(pid to, uint32_t kind, T&& v) {
  return send_signal(to, kind, make_message<std::decay_t<T>>(std::forward<T>(v)));
}

// The owner, at a blocking point: moves everything pushed into the save queue,
// acting on signals on the way (a fatal exit signal sets pending_exit).
// Returns the first new message a receive can see, or nullptr.
// Inline: a request/reply drains one user message (or none) at every receive,
// and the out-of-line drain's register saves cost as much as its work.
message* drain_mixed_batch(process* p, message* oldest);  // not all user messages
inline message* drain_mailbox(process* p) {
  mailbox& mb = p->mbox;
  static_assert(kind_user == 0);  // what take_batch's all_user tests
  const mailbox::batch b = mb.take_batch();
  if (__builtin_expect(!b.all_user, 0)) return drain_mixed_batch(p, b.oldest);
  if (b.oldest) mb.append_batch(b.oldest, b.newest);  // the common case (also: nothing taken)
  return b.oldest;
}

// The worker that finishes p, after its fiber ended: answers the requests still
// queued, then sends exit signals to links and `down` to watchers.
void announce_death(process* p, const exit_reason& reason);
// After the grace period, before p is freed: answers requests that arrived
// after announce_death (link: noproc, monitor: down noproc), frees the rest.
void clear_late_signals(process* p);

}  // namespace herd::detail
