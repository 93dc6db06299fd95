// A byte vector whose resize() leaves new bytes uninitialized, for buffers that a read fills
// whole right after sizing them (the remote prefetcher's fetch buffers): a std::vector<uint8_t>
// would first write zeros over every byte, a pass over memory that only costs.

#ifndef DOCFEED_BASE_UNINITIALIZED_BUFFER_H_
#define DOCFEED_BASE_UNINITIALIZED_BUFFER_H_

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace docfeed::internal {

// std::allocator, except that value-initializing construction (what resize(n) and
// vector(n) do) default-initializes instead, which for bytes means not at all.
template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::construct_at(p, std::forward<Args>(args)...);
  }
};

using UninitializedBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

}  // namespace docfeed::internal

#endif  // DOCFEED_BASE_UNINITIALIZED_BUFFER_H_
