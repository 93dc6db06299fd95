// DOCFEED_CHECK / DOCFEED_DCHECK: abort on broken invariants (bugs), never on bad input.
// Bad input is reported through Status; see include/docfeed/status.h.
#ifndef DOCFEED_BASE_CHECK_H_
#define DOCFEED_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define DOCFEED_CHECK(cond)                                                                 \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: DOCFEED_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)

#ifdef NDEBUG
#define DOCFEED_DCHECK(cond) \
  do {                       \
  } while (false && (cond))
#else
#define DOCFEED_DCHECK(cond) DOCFEED_CHECK(cond)
#endif

#endif  // DOCFEED_BASE_CHECK_H_
