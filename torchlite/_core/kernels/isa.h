/* Run-time choice of SIMD level, so one wheel runs on any x86-64 and still uses AVX2 or
 * AVX-512 where the CPU has them.  Kernel bodies are compiled once per level with
 * `#pragma GCC target` (see ewise.h) and the tables of the best level the CPU supports are
 * installed at import.  Levels: 0 = baseline (SSE2 on x86-64, or any other CPU),
 * 3 = x86-64-v3 (AVX2, FMA), 4 = x86-64-v4 (AVX-512 F/BW/DQ/VL). */
#ifndef TL_ISA_H
#define TL_ISA_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TL_X86_MULTIVERSION 1
#else
#define TL_X86_MULTIVERSION 0
#endif

static int tl_cpu_isa_level(void) {
#if TL_X86_MULTIVERSION
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return 3;
#endif
    return 0;
}

static int tl_compiled_isa_levels(void) {   /* bit mask of compiled levels */
#if TL_X86_MULTIVERSION
    return (1 << 0) | (1 << 3) | (1 << 4);
#else
    return 1;
#endif
}

/* The target strings of each level, for __attribute__((target(TL_TARGET_V3))). */
#define TL_TARGET_V3 "avx2,fma,bmi,bmi2,f16c,popcnt,lzcnt,movbe"
#define TL_TARGET_V4 "avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx2,fma,bmi,bmi2,f16c,popcnt,lzcnt,movbe"

/* Brackets around a kernel body compiled for one level:
 *     TL_BEGIN_TARGET_V4  #include "body.h"  TL_END_TARGET
 * `#pragma GCC target(TL_TARGET_V4)` would not work: pragmas do not expand macros (GCC
 * silently compiles the baseline), so the strings are spelled out in _Pragma here, once. */
#define TL_BEGIN_TARGET_V3 _Pragma("GCC push_options") \
    _Pragma("GCC target(\"avx2,fma,bmi,bmi2,f16c,popcnt,lzcnt,movbe\")")
#define TL_BEGIN_TARGET_V4 _Pragma("GCC push_options") \
    _Pragma("GCC target(\"avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx2,fma,bmi,bmi2,f16c,popcnt,lzcnt,movbe\")")
#define TL_END_TARGET _Pragma("GCC pop_options")

#endif
