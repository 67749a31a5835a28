/* The compiled engines' inlining hints, one home: no-ops for a compiler without them. */
#ifndef RIVER_CW_INLINE_H
#define RIVER_CW_INLINE_H

#if defined(__GNUC__) || defined(__clang__)
#define RCW_ALWAYS_INLINE inline __attribute__((always_inline))
#define RCW_NOINLINE __attribute__((noinline)) /* a loop of its own: registers of its own */
/* a line wanted soon: its load started now. GCC takes a function that only prefetches for a pure
 * one and drops its calls: such a function is RCW_ALWAYS_INLINE, its loops then its caller's */
#define RCW_PREFETCH(p) __builtin_prefetch(p)
#else
#define RCW_ALWAYS_INLINE inline
#define RCW_NOINLINE
#define RCW_PREFETCH(p) ((void)0)
#endif

#endif
