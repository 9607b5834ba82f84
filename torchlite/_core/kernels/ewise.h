/* The elementwise loop tables, filled at import with the best ISA copy of each loop. */
#ifndef TL_EWISE_H
#define TL_EWISE_H
#include "types.h"
#include "isa.h"
#include "ewise_ops.h"
#include "ewise_scalar.h"
#include "ewise_exprs.h"

static tl_loop tl_unary_loops[TL_NUNARY][TL_NDTYPES];
static tl_loop tl_binary_loops[TL_NBINARY][TL_NDTYPES];
static tl_loop tl_ternary_loops[TL_NTERNARY][TL_NDTYPES];
static tl_loop tl_cast_loops[TL_NDTYPES][TL_NDTYPES];   /* [from][to] */

#define TL_BODY_FULL 1
#define TL_SFX(name) name##_base
#include "ewise_body.h"
#undef TL_SFX
#undef TL_BODY_FULL

#if TL_X86_MULTIVERSION
#define TL_BODY_FULL 0
TL_BEGIN_TARGET_V3
#define TL_SFX(name) name##_v3
#include "ewise_body.h"
#undef TL_SFX
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_SFX(name) name##_v4
#include "ewise_body.h"
#undef TL_SFX
TL_END_TARGET
#undef TL_BODY_FULL
#endif

/* Install the loops of ISA `level` (0, 3 or 4; clamped to what was compiled); returns the
 * level installed. */
static int tl_ewise_install(int level) {
    memset(tl_unary_loops, 0, sizeof(tl_unary_loops));
    memset(tl_binary_loops, 0, sizeof(tl_binary_loops));
    memset(tl_ternary_loops, 0, sizeof(tl_ternary_loops));
    memset(tl_cast_loops, 0, sizeof(tl_cast_loops));
    tl_ewise_register_base(tl_unary_loops, tl_binary_loops, tl_ternary_loops, tl_cast_loops);
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_ewise_register_v4(tl_unary_loops, tl_binary_loops, tl_ternary_loops, tl_cast_loops);
        return 4;
    }
    if (level >= 3) {
        tl_ewise_register_v3(tl_unary_loops, tl_binary_loops, tl_ternary_loops, tl_cast_loops);
        return 3;
    }
#endif
    (void)level;
    return 0;
}
#endif
