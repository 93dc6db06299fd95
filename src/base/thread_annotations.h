// Clang's thread-safety analysis attributes
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), empty under other compilers. `make test`
// builds the library with clang and -Werror=thread-safety (the `tsa` preset), so a member read or
// written without the lock that guards it is a build error there.
#ifndef DOCFEED_BASE_THREAD_ANNOTATIONS_H_
#define DOCFEED_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define DOCFEED_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define DOCFEED_THREAD_ATTRIBUTE(x)
#endif

#define DOCFEED_CAPABILITY(x) DOCFEED_THREAD_ATTRIBUTE(capability(x))
#define DOCFEED_SCOPED_CAPABILITY DOCFEED_THREAD_ATTRIBUTE(scoped_lockable)
#define DOCFEED_GUARDED_BY(x) DOCFEED_THREAD_ATTRIBUTE(guarded_by(x))
#define DOCFEED_PT_GUARDED_BY(x) DOCFEED_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define DOCFEED_REQUIRES(...) DOCFEED_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define DOCFEED_EXCLUDES(...) DOCFEED_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define DOCFEED_ACQUIRE(...) DOCFEED_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define DOCFEED_RELEASE(...) DOCFEED_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define DOCFEED_NO_THREAD_SAFETY_ANALYSIS DOCFEED_THREAD_ATTRIBUTE(no_thread_safety_analysis)

#endif  // DOCFEED_BASE_THREAD_ANNOTATIONS_H_
