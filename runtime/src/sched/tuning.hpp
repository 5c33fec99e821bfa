// The scheduler's fixed numbers, each with why it has its value. Changing one
// is a benchmark question (tools/actorbench, tools/connbench), not a test one.
#pragma once
#include <cstdint>

namespace herd::rt::tuning {

// A worker's ring of runnable fibers. A power of two for the index mask. What
// does not fit spills into the worker's overflow queue, whose fibers get a
// turn only every global_queue_every picks (or when the ring runs dry): so
// the ring should hold the runnable fibers of a busy worker — 1,000 ping-pong
// pairs on 2 workers keep ~500 runnable on each (256: 24.5M msgs/s, 1,024:
// ~29M). Not larger: with 10,000 pairs, 4,096 cycled all 5,000 through the
// cache (19.7M against 1,024's 20.6M and 256's 22.9M). Stealing half is a
// copy of 4 KiB. (Go and tokio use 256; their fan-in sinks are not starved by
// a long ring, ours is not either since a receive out of budget with mail
// waiting runs next: yield_for_budget_fed.)
inline constexpr uint32_t ring_capacity = 1024;

// Every this many picks the global injection and low-priority queues get a
// turn even while local work never runs dry (Go's 1/61 rule: prime, so it
// does not fall into step with a periodic local pattern).
inline constexpr uint32_t global_queue_every = 61;

// Maintenance (timers, a non-blocking I/O poll, a reclamation report) runs at
// least this often in picks — and at least every 1 ms by the TSC, below.
inline constexpr uint32_t maintenance_every = 61;

// The TSC is read only every this many picks: an rdtsc costs ~10-30 ns in
// this VM, as much as a whole switch.
inline constexpr uint32_t clock_read_every = 8;

// "Run next" may win this many picks in a row before the ring gets one: a
// ping-pong pair stays hot in cache, but cannot starve the ring.
inline constexpr uint32_t run_next_streak_max = 3;

// At most this many fibers are taken from the injection queue at once (and at
// most half the ring's free room): the rest stay where other workers find them.
inline constexpr uint32_t inject_batch_max = 64;

// A busy worker polls I/O in maintenance only with at least this much ring
// room, and takes that room less this margin of ready sources: what it takes
// must fit its ring (overflow would land in the injection queue, which a busy
// worker visits once every global_queue_every picks), with room left for the
// wake-ups the new events cause.
inline constexpr uint32_t poll_min_room = 32;
inline constexpr uint32_t poll_room_margin = 16;

// A worker spinning before it parks (runtime_options::busy_wait) looks at the
// queues it can see without a system call (its ring and run next, the global
// queues, its migrants) on every turn, and every this many nanoseconds at
// everything else: it polls I/O without blocking (epoll_wait is a system call
// of about a microsecond; polling it back to back would be most of the spin),
// steals, and fires its due timers.
inline constexpr uint64_t spin_poll_every_ns = 2000;

// Queued sends (send_ring.hpp) go to the kernel when the worker runs dry, or
// once this many fibers ran after the first of them was queued: a sender
// waits at most that many slices behind fibers that keep the ring busy.
inline constexpr uint32_t send_batch_picks = 32;
}  // namespace herd::rt::tuning
