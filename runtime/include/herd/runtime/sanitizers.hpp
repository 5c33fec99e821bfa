// HERD_ASAN / HERD_TSAN: 1 in a build with AddressSanitizer / ThreadSanitizer.
// g++ defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang (14 here)
// defines neither and answers __has_feature instead. Testing only the macros
// left clang builds without the fiber-switch annotations and the larger
// sanitizer stacks, so every check goes through these.
#pragma once

#if defined(__has_feature)
#define HERD_SAN_FEATURE_(x) __has_feature(x)
#else
#define HERD_SAN_FEATURE_(x) 0
#endif

#if defined(__SANITIZE_ADDRESS__) || HERD_SAN_FEATURE_(address_sanitizer)
#define HERD_ASAN 1
#else
#define HERD_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__) || HERD_SAN_FEATURE_(thread_sanitizer)
#define HERD_TSAN 1
#else
#define HERD_TSAN 0
#endif
