#include "sched/qsbr.hpp"

#include "io/poller.hpp"

namespace herd::rt {

qsbr::qsbr(unsigned workers, poller* io) : n_(workers), io_(io), slots_(new slot[workers]) {
  for (unsigned i = 0; i < n_; ++i) {
    slots_[i].snap.resize(n_);
    slots_[i].snap_offline.resize(n_);
  }
}

bool qsbr::grace_over(unsigned w) const noexcept {
  const slot& me = slots_[w];
  for (unsigned i = 0; i < n_; ++i) {
    if (i == w || me.snap_offline[i]) continue;
    if (slots_[i].offline.load(std::memory_order_seq_cst)) continue;
    if (slots_[i].count.load(std::memory_order_seq_cst) <= me.snap[i]) return false;
  }
  if (io_ && io_->ended() < me.snap_poll) {
    io_->notify();  // a poll that began before the batch is still going: wake it
    return false;
  }
  return foreign_readers_.load(std::memory_order_seq_cst) == 0;
}

void qsbr::reclaim(unsigned w) {
  slot& me = slots_[w];
  if (foreign_has_.load(std::memory_order_relaxed)) {
    lock_guard<mutex> g(foreign_m_);
    me.pending.insert(me.pending.end(), foreign_.begin(), foreign_.end());
    foreign_.clear();
    foreign_has_.store(false, std::memory_order_relaxed);
  }
  if (!me.sealed.empty()) {
    if (!grace_over(w)) return;
    for (auto& r : me.sealed) r.fn(r.obj);
    me.sealed.clear();
  }
  if (me.pending.empty()) return;
  me.sealed.swap(me.pending);
  for (unsigned i = 0; i < n_; ++i) {
    me.snap_offline[i] = slots_[i].offline.load(std::memory_order_seq_cst);
    me.snap[i] = slots_[i].count.load(std::memory_order_seq_cst);
  }
  me.snap_poll = io_ ? io_->begun() : 0;
}

void qsbr::retire_foreign(void* obj, void (*fn)(void*)) {
  lock_guard<mutex> g(foreign_m_);
  foreign_.push_back({obj, fn});
  foreign_has_.store(true, std::memory_order_relaxed);
}

void qsbr::reclaim_all() {
  // A freed object may retire another (a process drops its last message), so
  // repeat until nothing is left.
  for (;;) {
    std::vector<retired> batch;
    for (unsigned w = 0; w < n_; ++w) {
      batch.insert(batch.end(), slots_[w].sealed.begin(), slots_[w].sealed.end());
      batch.insert(batch.end(), slots_[w].pending.begin(), slots_[w].pending.end());
      slots_[w].sealed.clear();
      slots_[w].pending.clear();
    }
    {
      lock_guard<mutex> g(foreign_m_);
      batch.insert(batch.end(), foreign_.begin(), foreign_.end());
      foreign_.clear();
      foreign_has_.store(false, std::memory_order_relaxed);
    }
    if (batch.empty()) return;
    for (auto& r : batch) r.fn(r.obj);
  }
}

std::size_t qsbr::pending_count() const {
  std::size_t n = 0;
  for (unsigned w = 0; w < n_; ++w) n += slots_[w].pending.size() + slots_[w].sealed.size();
  lock_guard<mutex> g(foreign_m_);
  return n + foreign_.size();
}

}  // namespace herd::rt
