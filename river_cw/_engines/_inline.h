/* The compiled engines' inlining hints, one home: no-ops for a compiler without them. */
#ifndef RIVER_CW_INLINE_H
#define RIVER_CW_INLINE_H

#if defined(__GNUC__) || defined(__clang__)
#define RCW_ALWAYS_INLINE inline __attribute__((always_inline))
#define RCW_NOINLINE __attribute__((noinline)) /* a loop of its own: registers of its own */
#else
#define RCW_ALWAYS_INLINE inline
#define RCW_NOINLINE
#endif

#endif
