// Must NOT compile under `clang++ -Wthread-safety -Werror` (make test-thread-safety checks that
// it fails): proves that the analysis is on and that base/mutex.h's annotations are seen, so a
// clean build of the library means something.
#include "base/mutex.h"

namespace docfeed::internal {

class Counter {
 public:
  void Unguarded() { ++value_; }  // writes value_ without holding mu_
  void Guarded() {
    MutexLock lock(&mu_);
    ++value_;
  }

 private:
  Mutex mu_;
  int value_ DOCFEED_GUARDED_BY(mu_) = 0;
};

}  // namespace docfeed::internal
