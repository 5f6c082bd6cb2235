// run_block_pipeline: a ring of slots handed between the reading thread and the workers under one
// mutex; workers take queued slots, the reader consumes finished ones in order.
#include "data/block_pipeline.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/check.h"

namespace nanogpt {

namespace {

enum class SlotState { kFree, kQueued, kDone };

struct Slot {
  Block block;
  std::vector<uint16_t> tokens;
  std::exception_ptr error;
  SlotState state = SlotState::kFree;
};

// The workers and what they share; the destructor stops and joins them (also on an exception).
class Workers {
 public:
  Workers(std::vector<Slot>& slots, int threads, const BlockWork& work)
      : slots_(slots), work_(work) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t] { loop(t); });
  }
  ~Workers() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    queued_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void queue(size_t slot) {
    {
      std::lock_guard lock(mutex_);
      slots_[slot].state = SlotState::kQueued;
      queue_.push_back(slot);
    }
    queued_cv_.notify_one();
  }
  bool done(size_t slot) {
    std::lock_guard lock(mutex_);
    return slots_[slot].state == SlotState::kDone;
  }
  void wait_done(size_t slot) {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return slots_[slot].state == SlotState::kDone; });
  }
  void release(size_t slot) {
    std::lock_guard lock(mutex_);
    slots_[slot].state = SlotState::kFree;
  }

 private:
  void loop(int worker) {
    while (true) {
      size_t index;
      {
        std::unique_lock lock(mutex_);
        queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        index = queue_.front();
        queue_.pop_front();
      }
      Slot& slot = slots_[index];
      slot.tokens.clear();
      slot.error = nullptr;
      try {
        work_(worker, slot.block, slot.tokens);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        slot.state = SlotState::kDone;
      }
      done_cv_.notify_all();
    }
  }

  std::vector<Slot>& slots_;
  const BlockWork& work_;
  std::mutex mutex_;
  std::condition_variable queued_cv_;
  std::condition_variable done_cv_;
  std::deque<size_t> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

void run_block_pipeline(BlockReader& reader, int threads, int slots, const BlockWork& work,
                        const BlockConsume& consume) {
  CHECK(threads >= 1 && slots >= 1, "run_block_pipeline: threads {} and slots {} must be >= 1",
        threads, slots);
  std::vector<Slot> ring(static_cast<size_t>(slots));
  Workers workers(ring, threads, work);
  int64_t read = 0;      // blocks read (queued) so far
  int64_t consumed = 0;  // blocks consumed so far
  bool exhausted = false;
  const auto n = static_cast<int64_t>(ring.size());
  while (true) {
    const auto oldest = static_cast<size_t>(consumed % n);
    if (consumed < read && workers.done(oldest)) {
      Slot& slot = ring[oldest];
      if (slot.error) std::rethrow_exception(slot.error);
      consume(slot.block, slot.tokens);
      workers.release(oldest);
      ++consumed;
      continue;
    }
    if (!exhausted && read - consumed < n) {
      const auto next = static_cast<size_t>(read % n);
      if (reader.next(ring[next].block)) {
        workers.queue(next);
        ++read;
      } else {
        exhausted = true;
      }
      continue;
    }
    if (consumed == read) break;
    workers.wait_done(oldest);
  }
}

}  // namespace nanogpt
