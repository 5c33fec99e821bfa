// Deferred messages: the hook the net layer turns readiness into messages
// with, without the actors layer knowing about sockets.
//
// A source (a socket) embeds one notification envelope in itself and posts it
// to its owner's mailbox when something happened (the fd became readable
// while the owner asked for active-mode messages). Posting allocates nothing
// and the source keeps at most one note queued (it tracks that itself). The
// owner's mailbox drain — always on the owner's own fiber, at a blocking
// point — calls `materialize`, which does the work there (reads the socket)
// and returns the real messages to file in its place. So reads happen on the
// worker running the owner (a later TLS transport can decrypt in the actor's
// context), and the poller's thread only flips bits and posts.
//
// A note never reaches the save queue, a receive or a handler. When it is
// taken from the mailbox (materialize or discard) it belongs to its source
// again, which may post it anew at once.
#pragma once
#include <herd/actors/message.hpp>
#include <herd/actors/pid.hpp>

namespace herd::detail {

struct deferred_ops : message_ops {
  // The process `self` draining its own mailbox, on its fiber. Returns the
  // messages to file in the note's place (made with make_message, linked
  // through `next`, oldest first, nullptr-terminated), or nullptr. May post
  // the note again (to self or to another process).
  message* (*materialize)(message* note, pid self);
  // The receiver `holder` ended with the note still queued, or the note
  // could not be delivered to it: the source gets it back (and may post it
  // to someone else). Any thread; must not block.
  void (*discard)(message* note, pid holder) noexcept;
};

// Any thread, including a worker outside any fiber (an I/O readiness
// callback). `note->ops` must point at a deferred_ops. Pushes the note into
// `to`'s mailbox and wakes it; when `to` is gone, calls discard and returns
// false. Never allocates.
bool post_deferred(pid to, message* note) noexcept;

// Any thread; only reads and prefetches. What post_deferred(to, ...) will
// touch, in two steps a little apart: stage 0 the process table's slot of
// `to`, stage 1 (the slot loaded by then) its control block's lines that the
// push and the wake-up write. For an I/O source's io_source::prefetch.
void prefetch_post(pid to, int stage) noexcept;

}  // namespace herd::detail
