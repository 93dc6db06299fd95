// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with the capability
// annotations of thread_annotations.h, so clang checks every GUARDED_BY member (libstdc++'s own
// types carry none). The shapes follow abseil's absl::Mutex / absl::MutexLock / absl::CondVar.
#ifndef DOCFEED_BASE_MUTEX_H_
#define DOCFEED_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace docfeed::internal {

class DOCFEED_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() DOCFEED_ACQUIRE() { mu_.lock(); }
  void Unlock() DOCFEED_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class DOCFEED_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) DOCFEED_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() DOCFEED_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex the caller holds. Wait() releases it while blocked and
// holds it again on return (spurious wake-ups possible: wait in a loop on the condition).
class CondVar {
 public:
  void Wait(Mutex* mu) DOCFEED_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_MUTEX_H_
