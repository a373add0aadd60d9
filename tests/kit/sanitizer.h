/* sanitizer.h -- whether a test is built under AddressSanitizer: UNDER_ASAN
 * is 1 then, 0 otherwise (gcc says so with __SANITIZE_ADDRESS__, clang
 * with __has_feature). Tests whose bounds ASan's allocator or its checks
 * change (resident memory: freed blocks wait in its quarantine; time: -O1
 * and every access checked) read it. Header only. */
#ifndef STRAUM_TESTS_KIT_SANITIZER_H
#define STRAUM_TESTS_KIT_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#endif
