/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one shim between the portable cores and their two homes: kernel
 * types in the kernel, their <stdint.h> equivalents everywhere else.
 */
#ifndef RC_TYPES_H
#define RC_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <linux/math64.h>
#include <linux/kernel.h>
#include <linux/bitops.h>

static inline u64 rc_div64(u64 a, u64 b)
{
	return div64_u64(a, b);
}

/* floor(log2(@x)), 0 for 0 and 1. */
static inline u32 rc_log2(u64 x)
{
	return x ? fls64(x) - 1 : 0;
}
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
typedef uint64_t u64;
typedef int64_t s64;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint16_t u16;
typedef uint8_t u8;

static inline u64 rc_div64(u64 a, u64 b)
{
	return a / b;
}

static inline u32 rc_log2(u64 x)
{
	return x ? 63 - (u32)__builtin_clzll(x) : 0;
}
#endif

#endif
