// Status and Result<T>: docfeed's error model.
//
// Every fallible function returns a [[nodiscard]] Status or Result<T>. No exception crosses a
// docfeed API. Messages name the file, record, offset or field that is wrong, so a user can act
// on them without a debugger. Bugs (broken invariants) abort via DOCFEED_CHECK instead.
#ifndef DOCFEED_STATUS_H_
#define DOCFEED_STATUS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace docfeed {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kCorruption,
  kIOError,
  kUnsupported,
  kResourceExhausted,
  kCancelled,
  kInternal,
  kAlreadyExists,
  kFailedPrecondition,  // the request does not fit the state (e.g. a dataset packed for another
                        // size)
};

std::string_view StatusCodeName(StatusCode code);

// A success, or an error code with a message. Cheap to copy when OK (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message without the code name; empty when OK.
  std::string_view message() const { return state_ ? std::string_view(state_->message) : ""; }
  // "Corruption: shard data-00000-of-00001.arrow: ..." or "OK".
  std::string ToString() const;

  // Returns a copy whose message is `context + ": " + message()`. Used to add the file or record
  // name as an error travels up. No-op when OK.
  Status WithContext(std::string_view context) const;

  // Marks an error as deliberately dropped.
  void IgnoreError() const {}

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status CorruptionError(std::string message);
Status IOError(std::string message);
Status UnsupportedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status CancelledError(std::string message);
Status InternalError(std::string message);
Status AlreadyExistsError(std::string message);
Status FailedPreconditionError(std::string message);

// A value of type T, or the non-OK Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // REQUIRES: !status.ok().
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = InternalError("Result constructed from OK status without value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace docfeed

#define DOCFEED_STATUS_CONCAT_INNER(a, b) a##b
#define DOCFEED_STATUS_CONCAT(a, b) DOCFEED_STATUS_CONCAT_INNER(a, b)

// Returns from the current function if `expr` (a Status) is not OK. (__COUNTER__ keeps nested
// uses, e.g. inside a lambda passed to another use, from shadowing each other.)
#define DOCFEED_RETURN_IF_ERROR(expr) \
  DOCFEED_RETURN_IF_ERROR_IMPL(DOCFEED_STATUS_CONCAT(docfeed_status_, __COUNTER__), expr)
#define DOCFEED_RETURN_IF_ERROR_IMPL(status, expr) \
  do {                                             \
    ::docfeed::Status status = (expr);             \
    if (!status.ok()) return status;               \
  } while (false)

// `DOCFEED_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or returns its error.
#define DOCFEED_ASSIGN_OR_RETURN(lhs, rexpr) \
  DOCFEED_ASSIGN_OR_RETURN_IMPL(DOCFEED_STATUS_CONCAT(docfeed_result_, __COUNTER__), lhs, rexpr)
#define DOCFEED_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                                  \
  if (!result.ok()) return result.status();               \
  lhs = std::move(result).value()

#endif  // DOCFEED_STATUS_H_
